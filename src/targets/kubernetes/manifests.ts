/**
 * One planned run as Kubernetes objects (issue #38): an Indexed Job with one pod per node, a headless Service
 * that gives pod 0 the stable DNS name torchrun's c10d rendezvous needs, as Kubernetes documents for a "Job with
 * Pod-to-Pod Communication", and a NetworkPolicy that lets only the run's own pods reach them (issue #49). Typed
 * objects (kubernetes-models), each validated against the Kubernetes OpenAPI schema before anyone sees it; never
 * string templates. Pure, but for the rendezvous Secret's random value (rendezvousSecret).
 *
 * The pods pass Pod Security "restricted" unless the campaign needs more (./pod-security.ts checks it): no service
 * account token, a user that is not root (testbed.runAsUser), the runtime's seccomp profile, no capabilities, no
 * privilege escalation; shapeInPod's init container alone runs as root with NET_ADMIN.
 *
 * The rendezvous id torchrun's agents share is a per-run Secret's random value (RINGLAB_RDZV_SECRET): whoever reaches
 * the c10d store and knows the id can write what every agent unpickles. The Secret is created through the API for
 * each attempt and written nowhere: not in the manifests ringlab prints or saves.
 *
 * A pod runs the worker image as a node of the local testbed or AWS runs its worker container: the same
 * entrypoint (ringlab-worker), job and arguments, and the RINGLAB_* environment the launcher reads (its node rank
 * is the pod's completion index). The shared storage is a PersistentVolumeClaim mounted at /ringlab in every pod;
 * the result goes to /ringlab/runs/<run>/result.json there, as on the other testbeds, and into rank 0's log, where
 * `ringlab campaign` reads it (./run.ts).
 */
import { createHash, randomBytes } from "node:crypto";
import { dump as dumpYaml } from "js-yaml";
import { Job } from "kubernetes-models/batch/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { Secret, Service } from "kubernetes-models/v1";
import type { IContainer, IEnvVar, IPodSpec } from "kubernetes-models/v1";
import { bandwidthGbps } from "../../rules/bandwidth.ts";
import type { PlannedRun } from "../../campaign/plan.ts";
import type { KubernetesTestbed } from "../../config/schema.ts";
import { KUBERNETES_DEFAULTS } from "./target.ts";
import { checkPodSecurity, describeViolation, reasonsForLevel, type PodSecurityLevel } from "./pod-security.ts";

/** torchrun's c10d rendezvous port on pod 0 (the worker role's worker_rdzv_port). */
export const RENDEZVOUS_PORT = 29400;
/** The worker containers' /dev/shm (the worker role's worker_shm_size): DataLoader workers and NCCL use it. */
const SHM_SIZE = "8Gi";
/** tc's tbf latency, and its burst: at least 256 KiB, or 2 ms at the rate (the net_shaping role's defaults). */
const TBF_LATENCY = "50ms";
const TBF_MIN_BURST_BYTES = 262144;
/** A pod's hostname is "<job>-<index>" and must be a DNS label (63): room for a 4-digit index. */
const JOB_NAME_MAX = 58;
/** The worker's variable for the rendezvous id, and the key of the run's Secret that holds it. */
export const RDZV_SECRET_ENV = "RINGLAB_RDZV_SECRET";
export const RDZV_SECRET_KEY = "rdzvSecret";
/** The init container that shapes a pod's egress (shapeInPod). */
const SHAPING_CONTAINER = "shape-link";

export interface RunManifests {
  readonly runId: string;
  /**
   * The NetworkPolicy first, then the Service, then the Job: `kubectl apply -f` creates them in this order. The
   * run's Secret (rendezvousSecret) is not among them: it is created through the API, before the Job, and never
   * written.
   */
  readonly objects: readonly [NetworkPolicy, Service, Job];
}

/**
 * The labels every object and pod of a run carries: its Service, its pods' anti-affinity and its removal select by
 * them.
 */
export function runLabels(testbed: KubernetesTestbed, run: PlannedRun): Record<string, string> {
  return { "ringlab.testbed": testbed.name, "ringlab.run": labelSafe(run.id) };
}

export function runManifests(
  run: PlannedRun,
  testbed: KubernetesTestbed,
  campaign: string,
  runTimeoutSeconds: number,
): RunManifests {
  const name = objectName(testbed.name, run.id);
  const labels = { ...runLabels(testbed, run), "ringlab.campaign": labelSafe(campaign) };
  const metadata = { name, namespace: testbed.namespace, labels, annotations: { "ringlab.run-id": run.id } };
  const service = new Service({
    metadata,
    spec: {
      clusterIP: "None",
      // The rendezvous must resolve while the pods start, before any is ready.
      publishNotReadyAddresses: true,
      selector: runLabels(testbed, run),
      ports: [{ name: "rendezvous", port: RENDEZVOUS_PORT, targetPort: RENDEZVOUS_PORT }],
    },
  });
  const job = new Job({
    metadata,
    spec: {
      completionMode: "Indexed",
      completions: run.nodes,
      parallelism: run.nodes,
      // A failed rank fails the run, as on the other testbeds: restarts are the worker's (torchrun --max-restarts).
      backoffLimit: 0,
      activeDeadlineSeconds: runTimeoutSeconds,
      template: { metadata: { labels }, spec: podSpec(run, testbed, name) },
    },
  });
  // Only the run's own pods reach its pods, on any port (rendezvous, NCCL, Gloo); what leaves them is not limited.
  const networkPolicy = new NetworkPolicy({
    metadata,
    spec: {
      podSelector: { matchLabels: runLabels(testbed, run) },
      policyTypes: ["Ingress"],
      ingress: [{ from: [{ podSelector: { matchLabels: runLabels(testbed, run) } }] }],
    },
  });
  networkPolicy.validate();
  service.validate();
  job.validate();
  return { runId: run.id, objects: [networkPolicy, service, job] };
}

/**
 * The run's Secret: the rendezvous id, 32 random hex digits, fresh for every attempt; the Job's pods read it
 * (RINGLAB_RDZV_SECRET). Named and labelled as the run's other objects, deleted with them. Never written to a file.
 */
export function rendezvousSecret(manifests: RunManifests): Secret {
  const { name, namespace, labels, annotations } = manifests.objects[2].metadata!;
  const secret = new Secret({
    metadata: { name: name!, namespace: namespace!, labels: { ...labels }, annotations: { ...annotations } },
    type: "Opaque",
    stringData: { [RDZV_SECRET_KEY]: randomBytes(16).toString("hex") },
  });
  secret.validate();
  return secret;
}

function podSpec(run: PlannedRun, testbed: KubernetesTestbed, name: string): IPodSpec {
  const shared = KUBERNETES_DEFAULTS.sharedMountPath;
  const shaping = shapingContainer(run, testbed);
  return {
    restartPolicy: "Never",
    // Pod i is "<name>-i.<name>" in the namespace: pod 0 holds the rendezvous.
    subdomain: name,
    // The worker never speaks to the API: no token of the namespace's service account in its pods.
    automountServiceAccountToken: false,
    // Not root (testbed.runAsUser; 0 is root, and needs Pod Security "baseline"); fsGroup makes the claim's files
    // the group's where its volume supports it. The runtime's seccomp profile, as "restricted" requires.
    securityContext: {
      ...(testbed.runAsUser === 0 ? {} : { runAsNonRoot: true }),
      runAsUser: testbed.runAsUser,
      runAsGroup: testbed.runAsUser,
      fsGroup: testbed.runAsUser,
      seccompProfile: { type: "RuntimeDefault" },
    },
    ...(testbed.hostNetwork ? { hostNetwork: true, dnsPolicy: "ClusterFirstWithHostNet" } : {}),
    ...(Object.keys(testbed.nodeSelector).length === 0 ? {} : { nodeSelector: { ...testbed.nodeSelector } }),
    // One pod per node, as a node of the other testbeds: pods of one run on one machine would measure no network.
    affinity: {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { labelSelector: { matchLabels: runLabels(testbed, run) }, topologyKey: "kubernetes.io/hostname" },
        ],
      },
    },
    ...(shaping === undefined ? {} : { initContainers: [shaping] }),
    containers: [
      {
        name: "worker",
        image: testbed.workerImage,
        // The image's entrypoint is tini -- ringlab-worker, as in the worker containers elsewhere.
        args: [run.job, ...run.workerArgs, "--output", `${shared}/runs/${run.id}/result.json`],
        env: workerEnv(run, testbed, name),
        ports: [{ name: "rendezvous", containerPort: RENDEZVOUS_PORT }],
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
        ...(testbed.gpusPerPod > 0 ? { resources: { limits: { "nvidia.com/gpu": String(testbed.gpusPerPod) } } } : {}),
        volumeMounts: [
          { name: "shared", mountPath: shared },
          { name: "shm", mountPath: "/dev/shm" },
        ],
      },
    ],
    volumes: [
      { name: "shared", persistentVolumeClaim: { claimName: testbed.sharedClaim } },
      { name: "shm", emptyDir: { medium: "Memory", sizeLimit: SHM_SIZE } },
    ],
  };
}

function workerEnv(run: PlannedRun, testbed: KubernetesTestbed, name: string): IEnvVar[] {
  const value = (key: string, text: string): IEnvVar => ({ name: key, value: text });
  return [
    value("RINGLAB_NUM_NODES", String(run.nodes)),
    // The pod's index in the Indexed Job is its node rank (Kubernetes writes it into this annotation).
    {
      name: "RINGLAB_NODE_RANK",
      valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } },
    },
    value("RINGLAB_HEAD_ADDR", `${name}-0.${name}.${testbed.namespace}.svc`),
    value("RINGLAB_RDZV_PORT", String(RENDEZVOUS_PORT)),
    value("RINGLAB_RUN_ID", run.id),
    // The rendezvous id: the run's Secret, which ringlab creates before the Job (the run id is public).
    { name: RDZV_SECRET_ENV, valueFrom: { secretKeyRef: { name, key: RDZV_SECRET_KEY } } },
    value("RINGLAB_SHARED_DIR", KUBERNETES_DEFAULTS.sharedMountPath),
    value("RINGLAB_IMAGE", testbed.workerImage),
    // ringlab reads rank 0's result from its pod's log: the claim is the cluster's, not this machine's.
    value("RINGLAB_RESULT_IN_LOG", "1"),
    ...(run.processesPerNode === undefined ? [] : [value("RINGLAB_NPROC_PER_NODE", String(run.processesPerNode))]),
    // A pod's own network has one interface, eth0; on the node's network ringlab cannot know its name and leaves
    // it to the worker (whose launcher keeps NCCL off loopback and docker0) and to Gloo.
    ...(testbed.hostNetwork
      ? []
      : ["RINGLAB_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"].map((key) => value(key, "eth0"))),
  ];
}

/**
 * With shapeInPod, an init container shapes the pod's egress with tc before the worker starts (the pod's
 * containers share one network namespace), as the local testbed shapes each node's; it needs NET_ADMIN, and root
 * (a capability a container adds is effective for root only: Kubernetes sets no ambient capabilities), which the
 * cluster must allow: Pod Security "privileged", as no other level lets a container add NET_ADMIN. The campaign refuses
 * a shaped rate without shapeInPod, and shapeInPod with hostNetwork.
 */
function shapingContainer(run: PlannedRun, testbed: KubernetesTestbed): IContainer | undefined {
  const gbps = run.bandwidth === null ? null : bandwidthGbps(run.bandwidth);
  if (gbps === null || gbps === undefined || !testbed.shapeInPod) return undefined;
  const bits = Math.round(gbps * 1e9);
  const burst = Math.max(TBF_MIN_BURST_BYTES, Math.floor(bits / 4000));
  return {
    name: SHAPING_CONTAINER,
    image: testbed.workerImage,
    command: [
      "tc",
      "qdisc",
      "replace",
      "dev",
      "eth0",
      "root",
      "tbf",
      "rate",
      `${bits}bit`,
      "burst",
      String(burst),
      "latency",
      TBF_LATENCY,
    ],
    securityContext: {
      runAsUser: 0,
      runAsNonRoot: false,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"], add: ["NET_ADMIN"] },
    },
  };
}

/**
 * "<testbed>-<run>" where that is a DNS label short enough for a pod's hostname; else made one ("1.5gbit" has a dot)
 * and shortened, with a hash of the whole to keep it unique. The run's own id is in the annotation ringlab.run-id.
 */
export function objectName(testbed: string, runId: string): string {
  const full = `${testbed}-${runId}`;
  const label = full.toLowerCase().replace(/[^a-z0-9-]+/g, "-");
  if (label === full && full.length <= JOB_NAME_MAX) return full;
  return `${label.slice(0, JOB_NAME_MAX - 9).replace(/-+$/, "")}-${shortHash(full)}`;
}

/** A run id or campaign name as a label value (at most 63 characters): shortened with a hash where longer. */
function labelSafe(text: string): string {
  if (text.length <= 63) return text;
  return `${text.slice(0, 54).replace(/[-_.]+$/, "")}-${shortHash(text)}`;
}

/** 8 hex digits of the text's SHA-256: keeps a shortened name unique. */
function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 8);
}

/**
 * One run's objects as YAML documents for `kubectl apply -f`, under comments saying what they are, how to create
 * the run's Secret first (its value is in no file), what Pod Security level the pods need, and how to remove it all.
 */
export function manifestsYaml(manifests: RunManifests, testbed: KubernetesTestbed): string {
  const kubectl = testbed.context === undefined ? "kubectl" : `kubectl --context ${JSON.stringify(testbed.context)}`;
  const [, , job] = manifests.objects;
  const name = job.metadata!.name!;
  const labels = job.metadata!.labels!;
  const security = podSecurityOfRuns([job.spec!.template.spec!]);
  const header = [
    `ringlab run ${manifests.runId}: ${kubectl} apply -f this file after creating its rendezvous Secret; its result is written to runs/${manifests.runId}/result.json on the claim ${testbed.sharedClaim}.`,
    "First the Secret (a random rendezvous id, the same for every pod of the run, written in no file), labelled as the run's other objects:",
    // The value through standard input: an argument of kubectl's would be in `ps` for every user of the machine.
    `  openssl rand -hex 16 | tr -d '\\n' | ${kubectl} create secret generic ${name} -n ${testbed.namespace} --from-file=${RDZV_SECRET_KEY}=/dev/stdin`,
    `  ${kubectl} label secret ${name} -n ${testbed.namespace} ${Object.entries(labels)
      .map(([key, value]) => `${key}=${value}`)
      .join(" ")}`,
    podSecurityLine(security),
    ...(networkPolicyWarning(testbed) === undefined ? [] : [networkPolicyWarning(testbed)!]),
    `Remove it with: ${kubectl} delete -n ${testbed.namespace} job,service,networkpolicy,secret -l ringlab.testbed=${labels["ringlab.testbed"]},ringlab.run=${labels["ringlab.run"]}`,
  ];
  return (
    header.map((line) => `# ${line}\n`).join("") +
    manifests.objects.map((object) => `---\n${dumpYaml(object.toJSON(), { noRefs: true, lineWidth: -1 })}`).join("")
  );
}

/** What the runs' pods need from their namespace's Pod Security admission, the most any run needs, and why. */
export interface RunsPodSecurity {
  readonly level: PodSecurityLevel;
  /** Why (the rules of the level below that the pods of those runs break), each once. */
  readonly reasons: readonly string[];
  /** How many of the runs need that level, of how many. */
  readonly runs: number;
  readonly of: number;
}

const LEVEL_ORDER: readonly PodSecurityLevel[] = ["restricted", "baseline", "privileged"];

/** The pod specs' Pod Security levels together: the highest, and why the pods that need it do. */
export function podSecurityOfRuns(specs: readonly IPodSpec[]): RunsPodSecurity {
  const checked = specs.map((spec) => checkPodSecurity(spec));
  const level = LEVEL_ORDER[Math.max(0, ...checked.map((security) => LEVEL_ORDER.indexOf(security.level)))]!;
  const needing = checked.filter((security) => security.level === level);
  const reasons = [
    ...new Set(
      needing.flatMap((security) =>
        reasonsForLevel(security).map((violation) =>
          violation.where !== "pod" && violation.where.container === SHAPING_CONTAINER
            ? `shapeInPod's ${describeViolation(violation)}`
            : describeViolation(violation),
        ),
      ),
    ),
  ];
  return { level, reasons, runs: needing.length, of: specs.length };
}

/** A campaign's pods' Pod Security level, for `ringlab plan` and `ringlab manifests`. */
export function campaignPodSecurity(
  runs: readonly PlannedRun[],
  testbed: KubernetesTestbed,
  campaign: string,
  runTimeoutSeconds: number,
): RunsPodSecurity {
  return podSecurityOfRuns(
    runs.map((run) => runManifests(run, testbed, campaign, runTimeoutSeconds).objects[2].spec!.template.spec!),
  );
}

/**
 * "pods need the namespace's Pod Security level 'privileged': shapeInPod's init container shape-link adds NET_ADMIN
 * ...".
 */
export function podSecurityLine(security: RunsPodSecurity): string {
  const some =
    security.runs === security.of ? "" : ` (the pods of ${security.runs} of the ${security.of} runs; the others less)`;
  if (security.level === "restricted")
    return "pods pass the namespace's Pod Security level 'restricted', the strictest (pod-security.kubernetes.io/enforce)";
  return `pods need the namespace's Pod Security level '${security.level}'${some}: ${security.reasons.join("; ")}`;
}

/** With hostNetwork a NetworkPolicy does not apply to the pods: they are in their nodes' network namespace. */
export function networkPolicyWarning(testbed: KubernetesTestbed): string | undefined {
  if (!testbed.hostNetwork) return undefined;
  return (
    `with hostNetwork the pods are in their nodes' network namespace, where the run's NetworkPolicy does not apply: ` +
    `whatever reaches the nodes reaches the rendezvous (port ${RENDEZVOUS_PORT}) and the workers' ports`
  );
}

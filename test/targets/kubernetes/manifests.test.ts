/** A Kubernetes campaign's runs as objects (src/targets/kubernetes/manifests.ts): what `kubectl apply -f` gets. */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load, loadAll } from "js-yaml";
import { Job } from "kubernetes-models/batch/v1";
import { describe, expect, it } from "vitest";
import { planCampaign, type PlannedRun } from "../../../src/campaign/plan.ts";
import { validateCampaign, type KubernetesTestbed } from "../../../src/config/schema.ts";
import {
  campaignPodSecurity,
  manifestsYaml,
  objectName,
  podSecurityLine,
  rendezvousSecret,
  runManifests,
} from "../../../src/targets/kubernetes/manifests.ts";
import { checkPodSecurity, describeViolation } from "../../../src/targets/kubernetes/pod-security.ts";

const TESTBED =
  "{target: kubernetes, name: eks, nodes: 3, namespace: ringlab, sharedClaim: ringlab-shared, workerImage: registry.example/ringlab/worker:gpu";

function planned(
  testbedExtra = "",
  campaign = "{matrix: {nodes: [1, 3], model: resnet50, batchSize: 64, bandwidth: [unlimited]}, train: {precision: amp}}",
) {
  const result = validateCampaign(load(`{testbed: ${TESTBED}${testbedExtra}}, campaign: ${campaign}}`));
  if (!result.ok) throw new Error(result.problems.map((problem) => `${problem.path}: ${problem.message}`).join("\n"));
  const file = result.value;
  if (file.testbed.target !== "kubernetes") throw new Error("not a kubernetes testbed");
  return {
    testbed: file.testbed as KubernetesTestbed,
    runs: planCampaign(file, "k8s").runs,
    timeout: file.campaign!.runTimeoutSeconds,
  };
}

const byId = (runs: readonly PlannedRun[], id: string) => runs.find((run) => run.id === id)!;

describe("a run's Kubernetes objects", () => {
  it("are a NetworkPolicy, a headless Service and an Indexed Job, one pod per node, written as YAML for kubectl apply (snapshot)", async () => {
    const { testbed, runs, timeout } = planned();
    const yaml = manifestsYaml(
      runManifests(byId(runs, "train-resnet50-b64-n3-unlimited-r1"), testbed, "k8s", timeout),
      testbed,
    );
    await expect(yaml).toMatchFileSnapshot("__snapshots__/train-resnet50-b64-n3-unlimited-r1.yaml");
  });

  it("give every pod its node rank, pod 0's stable DNS name as the rendezvous, the claim and the GPU it asks for", () => {
    const { testbed, runs, timeout } = planned();
    const [, service, job] = runManifests(
      byId(runs, "train-resnet50-b64-n3-unlimited-r1"),
      testbed,
      "k8s",
      timeout,
    ).objects;
    const name = "eks-train-resnet50-b64-n3-unlimited-r1";
    expect(service.spec).toMatchObject({
      clusterIP: "None",
      publishNotReadyAddresses: true,
      selector: { "ringlab.testbed": "eks", "ringlab.run": "train-resnet50-b64-n3-unlimited-r1" },
    });
    expect(job.spec).toMatchObject({
      completionMode: "Indexed",
      completions: 3,
      parallelism: 3,
      backoffLimit: 0,
      activeDeadlineSeconds: timeout,
    });
    const pod = job.spec!.template.spec!;
    expect(pod.subdomain).toBe(name);
    // No two pods of the run on one machine: they would measure no network.
    expect(pod.affinity!.podAntiAffinity!.requiredDuringSchedulingIgnoredDuringExecution).toEqual([
      { labelSelector: { matchLabels: service.spec!.selector }, topologyKey: "kubernetes.io/hostname" },
    ]);
    expect(job.spec!.template.metadata!.labels).toMatchObject(service.spec!.selector!);
    const env = Object.fromEntries(
      pod.containers[0]!.env!.map((variable) => [
        variable.name,
        variable.value ?? variable.valueFrom?.fieldRef?.fieldPath,
      ]),
    );
    expect(env).toMatchObject({
      RINGLAB_NUM_NODES: "3",
      RINGLAB_NODE_RANK: "metadata.annotations['batch.kubernetes.io/job-completion-index']",
      RINGLAB_HEAD_ADDR: `${name}-0.${name}.ringlab.svc`,
      RINGLAB_RDZV_PORT: "29400",
      RINGLAB_SHARED_DIR: "/ringlab",
      RINGLAB_SOCKET_IFNAME: "eth0",
    });
    expect(pod.containers[0]!.args!.slice(-2)).toEqual([
      "--output",
      "/ringlab/runs/train-resnet50-b64-n3-unlimited-r1/result.json",
    ]);
    // Pods start when their nodes have the image, maybe minutes apart: the rendezvous waits the run's whole limit
    // (other testbeds start every worker at once and give it 120 s).
    const args = pod.containers[0]!.args!;
    expect(args[args.indexOf("--timeout-seconds") + 1]).toBe(String(timeout));
    expect(timeout).toBe(900);
    expect(pod.containers[0]!.resources).toEqual({ limits: { "nvidia.com/gpu": "1" } });
    expect(pod.volumes![0]).toEqual({ name: "shared", persistentVolumeClaim: { claimName: "ringlab-shared" } });
  });

  it("shape each pod's egress in an init container, as root with NET_ADMIN alone, when the campaign shapes links (shapeInPod), and only then", () => {
    const { testbed, runs, timeout } = planned(
      ", shapeInPod: true",
      "{matrix: {nodes: [1, 2], model: resnet50, batchSize: 64, bandwidth: [1gbit, unlimited]}}",
    );
    const init = (id: string) =>
      runManifests(byId(runs, id), testbed, "k8s", timeout).objects[2].spec!.template.spec!.initContainers;
    expect(init("train-resnet50-b64-n2-1gbit-r1")).toEqual([
      {
        name: "shape-link",
        image: "registry.example/ringlab/worker:gpu",
        command: [
          "tc",
          "qdisc",
          "replace",
          "dev",
          "eth0",
          "root",
          "tbf",
          "rate",
          "1000000000bit",
          "burst",
          "262144",
          "latency",
          "50ms",
        ],
        securityContext: {
          runAsUser: 0,
          runAsNonRoot: false,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ["ALL"], add: ["NET_ADMIN"] },
        },
      },
    ]);
    expect(init("train-resnet50-b64-n2-unlimited-r1")).toBeUndefined();
    expect(init("train-resnet50-b64-n1-r1")).toBeUndefined();
  });

  it("use the nodes' network when asked (EFA), leaving the interface to NCCL and Gloo, and ask for no GPU in a CPU pod", () => {
    const { testbed, runs, timeout } = planned(
      ", hostNetwork: true, gpusPerPod: 0",
      "{matrix: {nodes: [2], model: resnet50, batchSize: 64, bandwidth: [unlimited]}}",
    );
    const pod = runManifests(byId(runs, "train-resnet50-b64-n2-unlimited-r1"), testbed, "k8s", timeout).objects[2].spec!
      .template.spec!;
    expect(pod).toMatchObject({ hostNetwork: true, dnsPolicy: "ClusterFirstWithHostNet" });
    expect(pod.containers[0]!.env!.map((variable) => variable.name)).not.toContain("RINGLAB_SOCKET_IFNAME");
    expect(pod.containers[0]!.resources).toBeUndefined();
  });

  it("name objects so a pod's hostname stays a DNS label: long or dotted run ids are shortened with a hash, kept whole in an annotation", () => {
    expect(objectName("eks", "train-resnet50-b64-n2-1gbit-r1")).toBe("eks-train-resnet50-b64-n2-1gbit-r1");
    const long = objectName("a-rather-long-testbed", "train-inception_v3-b96-n10-p8-1.5gbit-r12");
    expect(long).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(long.length).toBeLessThanOrEqual(58);
    expect(long).not.toBe(objectName("a-rather-long-testbed", "train-inception_v3-b96-n10-p8-1.5gbit-r13"));
    expect(objectName("eks", "train-x-1.5gbit-r1")).toMatch(/^eks-train-x-1-5gbit-r1-[0-9a-f]{8}$/);
  });

  it("let only the run's own pods reach its pods, on every port, through a NetworkPolicy of the run's name and labels", () => {
    const { testbed, runs, timeout } = planned();
    const [policy, service, job] = runManifests(
      byId(runs, "train-resnet50-b64-n3-unlimited-r1"),
      testbed,
      "k8s",
      timeout,
    ).objects;
    const own = { "ringlab.testbed": "eks", "ringlab.run": "train-resnet50-b64-n3-unlimited-r1" };
    expect(policy.toJSON()).toEqual({
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: job.metadata,
      spec: {
        podSelector: { matchLabels: own },
        policyTypes: ["Ingress"],
        ingress: [{ from: [{ podSelector: { matchLabels: own } }] }],
      },
    });
    expect(service.spec!.selector).toEqual(own);
    expect(job.spec!.template.metadata!.labels).toMatchObject(own);
  });

  it("give the worker its rendezvous id from the run's Secret, a fresh random one each time, never in the written manifests", () => {
    const { testbed, runs, timeout } = planned();
    const manifests = runManifests(byId(runs, "train-resnet50-b64-n3-unlimited-r1"), testbed, "k8s", timeout);
    const name = "eks-train-resnet50-b64-n3-unlimited-r1";
    const env = manifests.objects[2].spec!.template.spec!.containers[0]!.env!;
    expect(env.find((variable) => variable.name === "RINGLAB_RDZV_SECRET")).toEqual({
      name: "RINGLAB_RDZV_SECRET",
      valueFrom: { secretKeyRef: { name, key: "rdzvSecret" } },
    });
    const secret = rendezvousSecret(manifests);
    expect(secret.toJSON()).toMatchObject({
      apiVersion: "v1",
      kind: "Secret",
      type: "Opaque",
      metadata: manifests.objects[2].metadata,
      stringData: { rdzvSecret: expect.stringMatching(/^[0-9a-f]{32}$/) },
    });
    expect(rendezvousSecret(manifests).stringData!["rdzvSecret"]).not.toBe(secret.stringData!["rdzvSecret"]);
    // The file has no Secret: its header says how to make one, labelled as the run's other objects.
    const yaml = manifestsYaml(manifests, testbed);
    expect((loadAll(yaml) as { kind: string }[]).map((document) => document.kind)).toEqual([
      "NetworkPolicy",
      "Service",
      "Job",
    ]);
    expect(yaml).not.toContain(secret.stringData!["rdzvSecret"]);
    expect(yaml).toContain(
      `\n#   openssl rand -hex 16 | tr -d '\\n' | kubectl create secret generic ${name} -n ringlab --from-file=rdzvSecret=/dev/stdin\n`,
    );
    expect(yaml).toContain(
      `\n#   kubectl label secret ${name} -n ringlab ringlab.testbed=eks ringlab.run=train-resnet50-b64-n3-unlimited-r1 ringlab.campaign=k8s\n`,
    );
    expect(yaml).toContain(
      "kubectl delete -n ringlab job,service,networkpolicy,secret -l ringlab.testbed=eks,ringlab.run=train-resnet50-b64-n3-unlimited-r1",
    );
  });

  it("say how to make the Secret with its value on kubectl's standard input, never in its arguments (#67)", () => {
    const { testbed, runs, timeout } = planned();
    const yaml = manifestsYaml(
      runManifests(byId(runs, "train-resnet50-b64-n3-unlimited-r1"), testbed, "k8s", timeout),
      testbed,
    );
    const line = yaml
      .split("\n")
      .find((text) => text.includes("create secret"))!
      .replace(/^#\s+/, "");
    // The line as a user runs it, with a kubectl that keeps its arguments and the value it was given (file or literal).
    const dir = mkdtempSync(join(tmpdir(), "ringlab-kubectl-"));
    writeFileSync(
      join(dir, "kubectl"),
      `#!/bin/bash\nprintf '%s\\n' "$@" > ${dir}/argv\nfor a in "$@"; do case $a in --from-file=*=*) cat "\${a#*=*=}";; --from-literal=*=*) printf %s "\${a#*=*=}";; esac; done > ${dir}/value\n`,
      { mode: 0o755 },
    );
    execFileSync("bash", ["-euo", "pipefail", "-c", line], {
      env: { ...process.env, PATH: `${dir}:${process.env["PATH"]}` },
    });
    const value = readFileSync(join(dir, "value"), "utf8");
    expect(value).toMatch(/^[0-9a-f]{32}$/);
    expect(readFileSync(join(dir, "argv"), "utf8")).not.toContain(value);
  });

  it("run as a user that is not root, with no service account token, no capabilities, no privilege escalation and the runtime's seccomp profile", () => {
    const { testbed, runs, timeout } = planned();
    const pod = runManifests(byId(runs, "train-resnet50-b64-n3-unlimited-r1"), testbed, "k8s", timeout).objects[2].spec!
      .template.spec!;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      fsGroup: 1000,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(pod.containers[0]!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
    const other = planned(", runAsUser: 2000").testbed;
    expect(
      runManifests(byId(runs, "train-resnet50-b64-n3-unlimited-r1"), other, "k8s", timeout).objects[2].spec!.template
        .spec!.securityContext,
    ).toMatchObject({ runAsNonRoot: true, runAsUser: 2000, runAsGroup: 2000, fsGroup: 2000 });
  });

  it("pass Pod Security 'restricted' by default; need 'baseline' as root, 'privileged' with shapeInPod (NET_ADMIN) or hostNetwork, saying why", () => {
    const security = (extra: string, campaign?: string) => {
      const { testbed, runs, timeout } = planned(extra, campaign);
      const checked = runs.map((run) =>
        checkPodSecurity(runManifests(run, testbed, "k8s", timeout).objects[2].spec!.template.spec!),
      );
      const levels = Object.fromEntries(runs.map((run, index) => [run.id, checked[index]!.level]));
      return {
        checked,
        levels,
        line: podSecurityLine(campaignPodSecurity(runs, testbed, "k8s", timeout)),
        yaml: manifestsYaml(runManifests(runs.at(-1)!, testbed, "k8s", timeout), testbed),
      };
    };
    const restricted = security("");
    expect(new Set(Object.values(restricted.levels))).toEqual(new Set(["restricted"]));
    expect(restricted.checked.flatMap((result) => result.violations)).toEqual([]);
    expect(restricted.line).toBe(
      "pods pass the namespace's Pod Security level 'restricted', the strictest (pod-security.kubernetes.io/enforce)",
    );
    expect(restricted.yaml).toContain(`\n# ${restricted.line}\n`);

    const root = security(", runAsUser: 0");
    expect(new Set(Object.values(root.levels))).toEqual(new Set(["baseline"]));
    expect(root.checked[0]!.violations.map(describeViolation)).toEqual([
      "the pod runs as root (runAsUser: 0)",
      "container worker does not run with runAsNonRoot: true (its own or the pod's)",
    ]);
    expect(root.line).toBe(
      "pods need the namespace's Pod Security level 'baseline': the pod runs as root (runAsUser: 0); container worker does not run with runAsNonRoot: true (its own or the pod's)",
    );

    const shaped = security(
      ", shapeInPod: true",
      "{matrix: {nodes: [1, 2], model: resnet50, batchSize: 64, bandwidth: [1gbit, unlimited]}}",
    );
    // Only a run with a shaped link has the init container.
    expect(shaped.levels).toEqual({
      "allreduce-n2-1gbit-r1": "privileged",
      "allreduce-n2-unlimited-r1": "restricted",
      "train-resnet50-b64-n1-r1": "restricted",
      "train-resnet50-b64-n1-r2": "restricted",
      "train-resnet50-b64-n2-1gbit-r1": "privileged",
      "train-resnet50-b64-n2-unlimited-r1": "restricted",
    });
    expect(shaped.line).toBe(
      "pods need the namespace's Pod Security level 'privileged' (the pods of 2 of the 6 runs; the others less): " +
        "shapeInPod's init container shape-link adds NET_ADMIN (baseline allows adding only AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT)",
    );

    const host = security(", hostNetwork: true");
    expect(new Set(Object.values(host.levels))).toEqual(new Set(["privileged"]));
    expect(host.line).toBe(
      "pods need the namespace's Pod Security level 'privileged': the pod sets hostNetwork: true (baseline forbids sharing the node's namespaces)",
    );
    // On the node's network a NetworkPolicy does not apply: the file says so.
    expect(host.yaml).toMatch(
      /\n# with hostNetwork the pods are in their nodes' network namespace, where the run's NetworkPolicy does not apply/,
    );
    expect(restricted.yaml).not.toContain("hostNetwork");
  });

  it("are checked against the Kubernetes OpenAPI schema, which refuses a malformed object", () => {
    const { testbed, runs, timeout } = planned();
    for (const run of runs) expect(() => runManifests(run, testbed, "k8s", timeout)).not.toThrow();
    expect(() =>
      new Job({
        metadata: { name: "x" },
        spec: { completions: "three" as unknown as number, template: { spec: { containers: [{ name: "w" }] } } },
      }).validate(),
    ).toThrow();
  });
});

/**
 * A Kubernetes campaign against a loopback server that answers as the Kubernetes API does (./fake-api.ts): what
 * ringlab creates, how it follows a Job to its end (done, a worker that failed, a pod that never schedules, an image
 * that cannot be pulled, a container that cannot be made, a shaping init container that failed, its deadline), what
 * it records, and that nothing of a run is left in the namespace. The Job's end comes as a cluster of Kubernetes 1.31
 * and later says it (FailureTarget or SuccessCriteriaMet first), and, where ringlab must read both, as an older one
 * does. No live cluster runs here; README "Kubernetes" says how to try one.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  loadKubernetesCampaignFile,
  type AnyLoadedCampaignFile,
  type LoadedKubernetesCampaignFile,
} from "../../../src/config/load.ts";
import type { Context } from "../../../src/context/context.ts";
import { EXIT, PrerequisiteError } from "../../../src/util/errors.ts";
import { Cluster } from "../../../src/targets/kubernetes/cluster.ts";
import type { ClusterRunOptions } from "../../../src/targets/kubernetes/campaign.ts";
import { runCampaign, type CampaignOutcome } from "../../../src/campaign/execute.ts";
import { runManifests } from "../../../src/targets/kubernetes/manifests.ts";
import { runOnCluster } from "../../../src/targets/kubernetes/run.ts";
import { planCampaign } from "../../../src/campaign/plan.ts";
import { silentReporter } from "../../fixtures/silent-reporter.ts";
import { ResultsStore } from "../../../src/results/store.ts";
import { probeRecord, trainRecord } from "../../report/fixtures/records.ts";
import { JOB_CONTROLLERS, startFakeCluster, type FakeCluster, type PodState, type Scenario } from "./fake-api.ts";

/** A Kubernetes campaign through the campaign's flow, with the cluster's options: what `ringlab campaign` does. */
function runKubernetesCampaign(
  ctx: Context,
  file: LoadedKubernetesCampaignFile,
  options: ClusterRunOptions & { readonly resultsDir?: string } = {},
): Promise<CampaignOutcome> {
  const { resultsDir, ...cluster } = options;
  return runCampaign(ctx, file as AnyLoadedCampaignFile, {
    ...(resultsDir === undefined ? {} : { resultsDir }),
    targetOptions: { kubernetes: cluster },
  });
}

const NAMESPACE = "ringlab";
const TESTBED = `testbed: {target: kubernetes, name: kind, nodes: 2, namespace: ${NAMESPACE}, sharedClaim: shared, workerImage: "registry.example/ringlab/worker:cpu", gpusPerPod: 0}`;
const CAMPAIGN =
  "campaign: {matrix: {nodes: [2], model: tiny, batchSize: 8, bandwidth: [unlimited]}, runTimeoutSeconds: 60}";
/**
 * One train run, no probe, a 10 s deadline: a run that ought to fail at once and does not fails at its deadline (and 30
 * s of grace), with its own words, within the test's time.
 */
const ONE_RUN =
  "campaign: {matrix: {nodes: [2], model: tiny, batchSize: 8, bandwidth: [unlimited]}, probe: {enabled: false}, runTimeoutSeconds: 10}";

let clusters: FakeCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.map((cluster) => cluster.close()));
  clusters = [];
});

async function fake(options: Partial<Parameters<typeof startFakeCluster>[0]> = {}): Promise<FakeCluster> {
  const cluster = await startFakeCluster({ namespace: NAMESPACE, claims: ["shared"], ...options });
  clusters.push(cluster);
  return cluster;
}

function campaignFile(text = `${TESTBED}\n${CAMPAIGN}\n`) {
  const dir = mkdtempSync(join(tmpdir(), "ringlab-k8s-campaign-"));
  const path = join(dir, "k8s.yaml");
  writeFileSync(path, text);
  return { file: loadKubernetesCampaignFile(path), resultsDir: join(dir, "results") };
}

function context(signal = new AbortController().signal): Context {
  const dir = mkdtempSync(join(tmpdir(), "ringlab-k8s-state-"));
  return { repoDir: process.cwd(), stateDir: dir, reporter: silentReporter, logFile: join(dir, "log"), signal };
}

/** The worker's line with rank 0's result, as docker/worker/ringlab_worker/jobs.py prints it. */
function resultLine(job: "train" | "allreduce"): string {
  const result =
    job === "train"
      ? trainRecord({ model: "tiny", batchSize: 8, nodes: 2, throughput: 40 }).result
      : probeRecord({ nodes: 2, bandwidth: "unlimited", busbw: [[1048576, 3.2]] }).result;
  return `ringlab-result: ${JSON.stringify(result)}`;
}

/** Pending, then Running, then Complete with rank 0's result in its log (the job named by the pod's first argument). */
const completes: Scenario = (look, job) => {
  const kind = job.spec.template.spec.containers[0].args[0] as "train" | "allreduce";
  const done = (index: number): PodState => ({
    phase: "Succeeded",
    worker: { terminated: { exitCode: 0, reason: "Completed" } },
    log: index === 0 ? `[rank0]: training\n${resultLine(kind)}\n` : "rank 1 done\n",
  });
  const pods = [0, 1].map(
    (index): PodState => (look === 0 ? { phase: "Pending" } : look === 1 ? { phase: "Running" } : done(index)),
  );
  return look < 2 ? { pods } : { conditions: [{ type: "Complete", status: "True" }], pods };
};

async function campaignOn(cluster: FakeCluster, text?: string, signal?: AbortSignal) {
  const { file, resultsDir } = campaignFile(text);
  const outcome = await runKubernetesCampaign(context(signal), file, {
    resultsDir,
    cluster: { env: { KUBECONFIG: cluster.kubeconfig() } },
    pollMs: 5,
  });
  return { outcome, resultsDir, records: ResultsStore.open(resultsDir, () => {}).records() };
}

const EMPTY = { jobs: [], services: [], networkPolicies: [], secrets: [], pods: [] };

/** Every file under a folder, read. */
function filesUnder(dir: string): { path: string; text: string }[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => ({
      path: join(entry.parentPath, entry.name),
      text: readFileSync(join(entry.parentPath, entry.name), "latin1"),
    }));
}

describe("a Kubernetes campaign", () => {
  it.each(JOB_CONTROLLERS)(
    "runs each run as a NetworkPolicy, a Secret, a Service and an Indexed Job, records rank 0's result from its log, keeps the manifests and every pod's log, and leaves nothing (Job controller: %s)",
    async (jobController) => {
      const cluster = await fake({ scenario: completes, jobController });
      const { outcome, resultsDir, records } = await campaignOn(cluster);
      expect(outcome).toMatchObject({ ok: 2, failed: 0, planned: 2, teardown: "done" });
      expect(records.map((record) => [record.runId, record.status, record.testbed.target])).toEqual([
        ["allreduce-n2-unlimited-r1", "ok", "kubernetes"],
        ["train-tiny-b8-n2-unlimited-r1", "ok", "kubernetes"],
      ]);
      const train = records.find((record) => record.params.job === "train")!;
      expect(train.result).toMatchObject({ job: "train", metrics: { imagesPerSecondTotal: { mean: 40 } } });
      const logs = join(resultsDir, train.logsDir);
      expect(readdirSync(logs).sort()).toEqual(["manifests.yaml", "result.json", "worker-0.log", "worker-1.log"]);
      expect(readFileSync(join(logs, "manifests.yaml"), "utf8")).toMatch(
        /^# ringlab run train-tiny-b8-n2-unlimited-r1: kubectl apply -f this file/,
      );
      expect(readFileSync(join(logs, "worker-1.log"), "utf8")).toBe("rank 1 done\n");
      // The NetworkPolicy before any pod can exist, the Secret before the Job, each run; the objects are the
      // manifests'.
      const names = ["kind-allreduce-n2-unlimited-r1", "kind-train-tiny-b8-n2-unlimited-r1"];
      expect(cluster.created.map((object) => `${object.kind} ${object.metadata.name}`)).toEqual(
        names.flatMap((name) => ["NetworkPolicy", "Secret", "Service", "Job"].map((kind) => `${kind} ${name}`)),
      );
      expect(cluster.created[3]).toMatchObject({
        spec: { completionMode: "Indexed", completions: 2, activeDeadlineSeconds: 60 },
      });
      expect(cluster.created[0]).toMatchObject({
        spec: {
          podSelector: { matchLabels: { "ringlab.testbed": "kind", "ringlab.run": "allreduce-n2-unlimited-r1" } },
          policyTypes: ["Ingress"],
        },
      });
      expect(cluster.left()).toEqual(EMPTY);
      expect(cluster.unexpected).toEqual([]);
      expect(existsSync(join(resultsDir, "report.md"))).toBe(true);

      // Run again: every run is done, so the cluster is not even asked.
      const again = await runKubernetesCampaign(context(), campaignFile().file, {
        resultsDir,
        cluster: { env: { KUBECONFIG: cluster.kubeconfig() } },
        pollMs: 5,
      });
      expect(again).toMatchObject({ alreadyDone: 2, ok: 0, teardown: "not needed" });
    },
  );

  it("gives each run's pods a rendezvous id of their own in a Secret, created before the Job, deleted after it, and written nowhere", async () => {
    const cluster = await fake({ scenario: completes });
    const { outcome, resultsDir } = await campaignOn(cluster);
    expect(outcome).toMatchObject({ ok: 2, failed: 0 });
    const secrets = cluster.created.filter((object) => object.kind === "Secret");
    expect(secrets.map((secret) => [secret.metadata.name, secret.type, Object.keys(secret.stringData)])).toEqual([
      ["kind-allreduce-n2-unlimited-r1", "Opaque", ["rdzvSecret"]],
      ["kind-train-tiny-b8-n2-unlimited-r1", "Opaque", ["rdzvSecret"]],
    ]);
    const values = secrets.map((secret) => secret.stringData.rdzvSecret as string);
    for (const value of values) expect(value).toMatch(/^[0-9a-f]{32}$/);
    expect(values[0]).not.toBe(values[1]);
    expect(secrets[0]!.metadata.labels).toEqual({
      "ringlab.testbed": "kind",
      "ringlab.run": "allreduce-n2-unlimited-r1",
      "ringlab.campaign": "k8s",
    });
    // Each Job's pods read their run's Secret, which exists before the Job does.
    for (const secret of secrets) {
      const job = cluster.created.find(
        (object) => object.kind === "Job" && object.metadata.name === secret.metadata.name,
      )!;
      expect(cluster.created.indexOf(secret)).toBeLessThan(cluster.created.indexOf(job));
      expect(job.spec.template.spec.containers[0].env).toContainEqual({
        name: "RINGLAB_RDZV_SECRET",
        valueFrom: { secretKeyRef: { name: secret.metadata.name, key: "rdzvSecret" } },
      });
    }
    const secretRequests = cluster.requests.filter((request) => /\/secrets/.test(request));
    expect(secretRequests.filter((request) => request.startsWith("DELETE"))).toEqual(
      ["kind-allreduce-n2-unlimited-r1", "kind-train-tiny-b8-n2-unlimited-r1"].map(
        (name) => `DELETE /api/v1/namespaces/ringlab/secrets/${name}`,
      ),
    );
    expect(cluster.left().secrets).toEqual([]);
    // Not in the saved manifests, logs, records or report; not in their base64 either.
    const files = filesUnder(resultsDir);
    expect(files.map((file) => file.path)).toContainEqual(expect.stringMatching(/manifests\.yaml$/));
    for (const value of values) {
      for (const file of files) {
        expect(file.text.includes(value), file.path).toBe(false);
        expect(file.text.includes(Buffer.from(value).toString("base64")), file.path).toBe(false);
      }
    }
  });

  // An older cluster's Job says Failed with its pods already removed: the reason is the one seen at the look before.
  it.each(JOB_CONTROLLERS)(
    "records a run whose pods never schedule as failed at its deadline, with the scheduler's reason, and deletes it (Job controller: %s)",
    async (jobController) => {
      const reason =
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.";
      const unschedulable: PodState = {
        phase: "Pending",
        conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message: reason }],
      };
      // The scheduler's reason shows while the pods wait; at the deadline the Job controller fails the Job and removes
      // them.
      const cluster = await fake({
        jobController,
        scenario: (look) =>
          look < 3
            ? { pods: [unschedulable, unschedulable] }
            : {
                conditions: [
                  {
                    type: "Failed",
                    status: "True",
                    reason: "DeadlineExceeded",
                    message: "Job was active longer than specified deadline",
                  },
                ],
                pods: [],
              },
      });
      const { outcome, records } = await campaignOn(
        cluster,
        `${TESTBED}\ncampaign: {matrix: {nodes: [2], model: tiny, batchSize: 8, bandwidth: [unlimited]}, probe: {enabled: false}, runTimeoutSeconds: 60}\n`,
      );
      expect(outcome).toMatchObject({ ok: 0, failed: 1 });
      expect(records[0]!.error).toContain(
        `its pods were not all placed before the deadline (activeDeadlineSeconds): pod kind-train-tiny-b8-n2-unlimited-r1-0-x0k not scheduled (Unschedulable: ${reason})`,
      );
      expect(cluster.left()).toEqual(EMPTY);
    },
  );

  it.each(JOB_CONTROLLERS)(
    "does not blame the scheduler for a deadline its pods were placed before (a node that took a minute to join) (Job controller: %s)",
    async (jobController) => {
      const waiting: PodState = {
        phase: "Pending",
        conditions: [
          {
            type: "PodScheduled",
            status: "False",
            reason: "Unschedulable",
            message: "0/2 nodes are available: 2 Insufficient cpu.",
          },
        ],
      };
      const placed: PodState = { phase: "Running", conditions: [{ type: "PodScheduled", status: "True" }] };
      const cluster = await fake({
        jobController,
        scenario: (look) =>
          look === 0
            ? { pods: [waiting, waiting] }
            : look < 3
              ? { pods: [placed, placed] }
              : {
                  conditions: [
                    {
                      type: "Failed",
                      status: "True",
                      reason: "DeadlineExceeded",
                      message: "Job was active longer than specified deadline",
                    },
                  ],
                  pods: [],
                },
      });
      const { records } = await campaignOn(
        cluster,
        `${TESTBED}\ncampaign: {matrix: {nodes: [2], model: tiny, batchSize: 8, bandwidth: [unlimited]}, probe: {enabled: false}, runTimeoutSeconds: 60}\n`,
      );
      expect(records[0]!.error).toMatch(
        /^the Job failed \(DeadlineExceeded: Job was active longer than specified deadline\); worker logs: /,
      );
    },
  );

  it("fails a run at once when the cluster refuses to create its pods (admission, quota), with the Job controller's message", async () => {
    const refusal =
      'pods "kind-allreduce-n2-unlimited-r1-0-abcde" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (container "shape-link" must not include "NET_ADMIN" in securityContext.capabilities.add)';
    const cluster = await fake({ scenario: (look) => ({ pods: [], failedCreate: look === 0 ? [] : [refusal] }) });
    const { records } = await campaignOn(cluster);
    expect(records[0]!.error).toMatch(
      /^the cluster refused to create the Job's pods: pods "kind-allreduce-n2-unlimited-r1-0-abcde" is forbidden: violates PodSecurity/,
    );
    expect(cluster.left()).toEqual(EMPTY);
  });

  it("fails a run whose Job someone deleted, at once rather than at its deadline", async () => {
    const cluster = await fake({
      scenario: () => ({ pods: [{ phase: "Running" }, { phase: "Running" }] }),
      failWith: (request, earlier) =>
        request.startsWith("GET /apis/batch/v1/namespaces/ringlab/jobs/") && earlier >= 2 ? 404 : undefined,
    });
    const { records } = await campaignOn(cluster);
    expect(records[0]!.error).toMatch(
      /^the Job was deleted before it ended \(kubectl delete, `ringlab down` from elsewhere/,
    );
  });

  it("asks again while the cluster blips (503), and records a run as failed, going on with the next, when it stays away", async () => {
    const blips = await fake({
      scenario: completes,
      failWith: (request, earlier) =>
        request === "GET /apis/batch/v1/namespaces/ringlab/jobs/kind-allreduce-n2-unlimited-r1" && earlier < 2
          ? 503
          : undefined,
    });
    expect((await campaignOn(blips)).records.map((record) => record.status)).toEqual(["ok", "ok"]);
    const away = await fake({
      scenario: completes,
      failWith: (request) =>
        request === "GET /apis/batch/v1/namespaces/ringlab/jobs/kind-allreduce-n2-unlimited-r1" ? 500 : undefined,
    });
    const { file, resultsDir } = campaignFile();
    await runKubernetesCampaign(context(), file, {
      resultsDir,
      cluster: { env: { KUBECONFIG: away.kubeconfig() }, followPatienceMs: 700 },
      pollMs: 5,
    });
    const records = ResultsStore.open(resultsDir, () => {}).records();
    expect(records.map((record) => record.status)).toEqual(["failed", "ok"]);
    expect(records[0]!.error).toMatch(
      /^lost touch with the cluster while following the Job: read Job kind-allreduce-n2-unlimited-r1: the API answered 500 InternalError/,
    );
  });

  it("records a run whose Job's name is taken as failed, saying by what, and goes on", async () => {
    const taken = { metadata: { name: "kind-allreduce-n2-unlimited-r1", labels: { app: "someone-else" } }, spec: {} };
    const cluster = await fake({ scenario: completes, existing: { jobs: [taken] } });
    const { records } = await campaignOn(cluster);
    expect(records.map((record) => record.status)).toEqual(["failed", "ok"]);
    expect(records[0]!.error).toMatch(
      /^create Job kind-allreduce-n2-unlimited-r1: the API answered 409 jobs\.batch "kind-allreduce-n2-unlimited-r1" already exists: another campaign with testbed name kind runs in namespace ringlab/,
    );
  });

  it("fails a run whose image pull keeps failing after a while, naming the image and the kubelet's message; one that recovers runs", async () => {
    const pull: PodState = {
      phase: "Pending",
      worker: {
        waiting: {
          reason: "ImagePullBackOff",
          message: 'Back-off pulling image "registry.example/ringlab/worker:cpu"',
        },
      },
    };
    const cluster = await fake({
      scenario: (look) => ({ pods: look === 0 ? [{ phase: "Pending" }, { phase: "Pending" }] : [pull, pull] }),
    });
    const { file, resultsDir } = campaignFile();
    const outcome = await runKubernetesCampaign(context(), file, {
      resultsDir,
      cluster: { env: { KUBECONFIG: cluster.kubeconfig() } },
      pollMs: 20,
      pullPatienceSeconds: 0.2,
    });
    const records = ResultsStore.open(resultsDir, () => {}).records();
    expect(outcome).toMatchObject({ ok: 0, failed: 2 });
    expect(records[0]!.error).toMatch(
      /^pod kind-allreduce-n2-unlimited-r1-0-x0k: container worker cannot start \(image registry\.example\/ringlab\/worker:cpu\): ImagePullBackOff: Back-off pulling image "registry\.example\/ringlab\/worker:cpu" \(failing for 0 s\); worker logs: /,
    );
    expect(cluster.left()).toEqual(EMPTY);

    // A registry's rate limit that clears: the kubelet's next try pulls the image, and the run goes on.
    const recovers = await fake({
      scenario: (look, job) => (look === 0 ? { pods: [pull, pull] } : completes(look, job)),
    });
    const again = campaignFile();
    await runKubernetesCampaign(context(), again.file, {
      resultsDir: again.resultsDir,
      cluster: { env: { KUBECONFIG: recovers.kubeconfig() } },
      pollMs: 20,
      pullPatienceSeconds: 10,
    });
    expect(
      ResultsStore.open(again.resultsDir, () => {})
        .records()
        .map((record) => record.status),
    ).toEqual(["ok", "ok"]);
  });

  it("fails a run at once when its image name is invalid", async () => {
    const invalid: PodState = {
      phase: "Pending",
      worker: {
        waiting: {
          reason: "InvalidImageName",
          message:
            'Failed to apply default image tag "registry.example/ringlab/worker:cpu": couldn\'t parse image name',
        },
      },
    };
    const cluster = await fake({ scenario: () => ({ pods: [invalid, invalid] }) });
    const { records } = await campaignOn(cluster);
    expect(records[0]!.error).toMatch(
      /^pod kind-allreduce-n2-unlimited-r1-0-x0k: container worker cannot start \(image registry\.example\/ringlab\/worker:cpu\): InvalidImageName: Failed to apply default image tag/,
    );
    expect(
      cluster.requests.filter((request) =>
        request.startsWith("GET /apis/batch/v1/namespaces/ringlab/jobs/kind-allreduce"),
      ).length,
    ).toBe(1);
  });

  it("fails a run whose image is not in the registry after a while, naming the image and why the pull failed (ErrImagePull and back-off in turn)", async () => {
    // What containerd says of a tag the registry does not have; a kubelet of 1.32 or later repeats it while it backs
    // off (kubernetes/kubernetes#127918; an older one says only "Back-off pulling image").
    const notFound =
      'rpc error: code = NotFound desc = failed to pull and unpack image "registry.example/ringlab/worker:cpu": failed to resolve reference "registry.example/ringlab/worker:cpu": registry.example/ringlab/worker:cpu: not found';
    const pullFailed: PodState = {
      phase: "Pending",
      worker: { waiting: { reason: "ErrImagePull", message: notFound } },
    };
    const backOff: PodState = {
      phase: "Pending",
      worker: {
        waiting: {
          reason: "ImagePullBackOff",
          message: `Back-off pulling image "registry.example/ringlab/worker:cpu": ErrImagePull: ${notFound}`,
        },
      },
    };
    // The kubelet's tries and back-offs, a look each: a run that counted only the back-offs would start counting anew
    // at every try.
    const cluster = await fake({
      scenario: (look) => ({
        pods:
          look === 0
            ? [{ phase: "Pending" }, { phase: "Pending" }]
            : look % 2 === 1
              ? [pullFailed, pullFailed]
              : [backOff, backOff],
      }),
    });
    const { file, resultsDir } = campaignFile(`${TESTBED}\n${ONE_RUN}\n`);
    await runKubernetesCampaign(context(), file, {
      resultsDir,
      cluster: { env: { KUBECONFIG: cluster.kubeconfig() } },
      pollMs: 20,
      pullPatienceSeconds: 0.2,
    });
    const [record] = ResultsStore.open(resultsDir, () => {}).records();
    expect(record!.error).toMatch(
      /^pod kind-train-tiny-b8-n2-unlimited-r1-0-x0k: container worker cannot start \(image registry\.example\/ringlab\/worker:cpu\): (ErrImagePull|ImagePullBackOff): .*registry\.example\/ringlab\/worker:cpu: not found \(failing for 0 s\); worker logs: /,
    );
    // The kubelet's word for the missing log, in the log file.
    expect(readFileSync(join(resultsDir, record!.logsDir, "worker-0.log"), "utf8")).toMatch(
      /is waiting to start: (image can't be pulled|trying and failing to pull image)\)$/m,
    );
    expect(cluster.left()).toEqual(EMPTY);
  });

  it("fails a run at once when its container cannot be made, naming the configuration the kubelet lacks and no image (CreateContainerConfigError)", async () => {
    // The run's Secret gone before the pods started (a policy, `ringlab down` from elsewhere): the kubelet cannot fill
    // secretKeyRef.
    const noSecret: PodState = {
      phase: "Pending",
      worker: {
        waiting: {
          reason: "CreateContainerConfigError",
          message: 'secret "kind-train-tiny-b8-n2-unlimited-r1" not found',
        },
      },
    };
    const cluster = await fake({
      scenario: (look) => ({ pods: look === 0 ? [{ phase: "Pending" }, { phase: "Pending" }] : [noSecret, noSecret] }),
    });
    const { records } = await campaignOn(cluster, `${TESTBED}\n${ONE_RUN}\n`);
    expect(records[0]!.error).toMatch(
      /^pod kind-train-tiny-b8-n2-unlimited-r1-0-x0k: container worker cannot start: CreateContainerConfigError: secret "kind-train-tiny-b8-n2-unlimited-r1" not found; worker logs: /,
    );
    expect(
      cluster.requests.filter((request) => request.startsWith("GET /apis/batch/v1/namespaces/ringlab/jobs/kind-train"))
        .length,
    ).toBe(2);
    expect(cluster.left()).toEqual(EMPTY);
  });

  it.each(JOB_CONTROLLERS)(
    "names the pod and node rank whose worker failed, and keeps every pod's log (Job controller: %s)",
    async (jobController) => {
      const cluster = await fake({
        jobController,
        scenario: (look) =>
          look === 0
            ? { pods: [{ phase: "Running" }, { phase: "Running" }] }
            : {
                conditions: [
                  {
                    type: "Failed",
                    status: "True",
                    reason: "BackoffLimitExceeded",
                    message: "Job has reached the specified backoff limit",
                  },
                ],
                pods: [
                  {
                    phase: "Failed",
                    worker: { terminated: { exitCode: 143, reason: "Error" } },
                    log: "waiting for rank 1\n",
                  },
                  {
                    phase: "Failed",
                    worker: { terminated: { exitCode: 1, reason: "Error" } },
                    log: "RuntimeError: out of memory\n",
                  },
                ],
              },
      });
      const { records, resultsDir } = await campaignOn(cluster);
      expect(records[0]!.error).toMatch(
        /^the Job failed \(BackoffLimitExceeded: Job has reached the specified backoff limit\); pod kind-allreduce-n2-unlimited-r1-0-x0k \(node rank 0\): worker exited with code 143 \(Error\); pod kind-allreduce-n2-unlimited-r1-1-x1k \(node rank 1\): worker exited with code 1 \(Error\); worker logs: /,
      );
      expect(readFileSync(join(resultsDir, records[0]!.logsDir, "worker-1.log"), "utf8")).toBe(
        "RuntimeError: out of memory\n",
      );
      expect(cluster.left()).toEqual(EMPTY);
    },
  );

  it("keeps the log of a rank the Job controller stops when another fails: a current cluster's FailureTarget ends the run while that pod terminates, before Failed comes without it", async () => {
    const cluster = await fake({
      jobController: "current",
      scenario: (look) =>
        look === 0
          ? { pods: [{ phase: "Running", log: "waiting for rank 1\n" }, { phase: "Running" }] }
          : {
              conditions: [
                {
                  type: "Failed",
                  status: "True",
                  reason: "BackoffLimitExceeded",
                  message: "Job has reached the specified backoff limit",
                },
              ],
              // Rank 1 failed; rank 0, stopped by the controller, is gone by the time the Job says Failed.
              pods: [
                {
                  index: 1,
                  phase: "Failed",
                  worker: { terminated: { exitCode: 1, reason: "Error" } },
                  log: "RuntimeError: out of memory\n",
                },
              ],
            },
    });
    const { records, resultsDir } = await campaignOn(cluster, `${TESTBED}\n${ONE_RUN}\n`);
    expect(records[0]!.error).toMatch(
      /^the Job failed \(BackoffLimitExceeded: Job has reached the specified backoff limit\); pod kind-train-tiny-b8-n2-unlimited-r1-1-x1k \(node rank 1\): worker exited with code 1 \(Error\); worker logs: /,
    );
    const logs = join(resultsDir, records[0]!.logsDir);
    expect(readFileSync(join(logs, "worker-0.log"), "utf8")).toBe("waiting for rank 1\n");
    expect(readFileSync(join(logs, "worker-1.log"), "utf8")).toBe("RuntimeError: out of memory\n");
    expect(cluster.left()).toEqual(EMPTY);
  });

  it("keeps the shaping init container's log for a pod whose worker never started, and names the init container that failed", async () => {
    const shaped = `${TESTBED.replace("gpusPerPod: 0}", "gpusPerPod: 0, shapeInPod: true}")}\ncampaign: {matrix: {nodes: [2], model: tiny, batchSize: 8, bandwidth: [1gbit]}, probe: {enabled: false}, runTimeoutSeconds: 10}\n`;
    const initializing: PodState = {
      phase: "Pending",
      init: { running: {} },
      worker: { waiting: { reason: "PodInitializing" } },
    };
    const tcFailed: PodState = {
      phase: "Failed",
      init: { terminated: { exitCode: 2, reason: "Error" } },
      initLog: "RTNETLINK answers: Operation not permitted\n",
      worker: { waiting: { reason: "PodInitializing" } },
    };
    const cluster = await fake({
      scenario: (look) =>
        look === 0
          ? { pods: [initializing, initializing] }
          : {
              conditions: [
                {
                  type: "Failed",
                  status: "True",
                  reason: "BackoffLimitExceeded",
                  message: "Job has reached the specified backoff limit",
                },
              ],
              pods: [tcFailed, tcFailed],
            },
    });
    const { records, resultsDir } = await campaignOn(cluster, shaped);
    const pod = "kind-train-tiny-b8-n2-1gbit-r1-0-x0k";
    expect(records[0]!.error).toMatch(
      new RegExp(
        `^the Job failed \\(BackoffLimitExceeded: Job has reached the specified backoff limit\\); pod ${pod} \\(node rank 0\\): shape-link exited with code 2 \\(Error\\); `,
      ),
    );
    expect(readFileSync(join(resultsDir, records[0]!.logsDir, "worker-0.log"), "utf8")).toBe(
      `(no log from pod ${pod}: read pod ${pod}'s worker log: the API answered 400 container "worker" in pod "${pod}" is waiting to start: PodInitializing)\n` +
        "(its init container shape-link:)\nRTNETLINK answers: Operation not permitted\n",
    );
    expect(cluster.left()).toEqual(EMPTY);
  });

  it("fails a completed Job whose rank 0 printed no result, saying so", async () => {
    const cluster = await fake();
    const { records } = await campaignOn(cluster);
    expect(records[0]!.status).toBe("failed");
    expect(records[0]!.error).toMatch(
      /^the Job completed but no line starting "ringlab-result:" in node rank 0's log; worker logs: /,
    );
  });

  it("deletes the run in flight when interrupted, and what an earlier invocation left before its first run; another testbed's objects stay", async () => {
    const other = {
      metadata: { name: "other-run", labels: { "ringlab.testbed": "other", "ringlab.run": "x" } },
      spec: {},
    };
    const leftover = {
      metadata: { name: "kind-old-run", labels: { "ringlab.testbed": "kind", "ringlab.run": "old" } },
      spec: {},
    };
    const controller = new AbortController();
    const cluster = await fake({
      existing: {
        jobs: [other, leftover],
        services: [other, leftover],
        networkPolicies: [other, leftover],
        secrets: [other, leftover],
      },
      scenario: (look) => {
        if (look === 2) controller.abort(new Error("SIGINT"));
        return { pods: [{ phase: "Running" }, { phase: "Running" }] };
      },
    });
    const { file, resultsDir } = campaignFile();
    const options = { resultsDir, cluster: { env: { KUBECONFIG: cluster.kubeconfig() } }, pollMs: 5 };
    await expect(runKubernetesCampaign(context(controller.signal), file, options)).rejects.toThrow("SIGINT");
    expect(cluster.created.map((object) => object.kind)).toEqual(["NetworkPolicy", "Secret", "Service", "Job"]);
    // The interrupted run's pods terminate for a while; the next invocation waits for them before it starts.
    expect(cluster.left()).toMatchObject({
      jobs: ["other-run"],
      services: ["other-run"],
      networkPolicies: ["other-run"],
      secrets: ["other-run"],
    });
    await cluster.close();
    const resumed = await fake({
      scenario: completes,
      existing: {
        pods: [
          {
            metadata: {
              name: "kind-allreduce-n2-unlimited-r1-0-old",
              labels: { "ringlab.testbed": "kind", "ringlab.run": "allreduce-n2-unlimited-r1" },
            },
          },
        ],
      },
    });
    const outcome = await runKubernetesCampaign(context(), file, {
      ...options,
      cluster: { env: { KUBECONFIG: resumed.kubeconfig() } },
    });
    expect(outcome).toMatchObject({ ok: 2, failed: 0 });
    const records = ResultsStore.open(resultsDir, () => {}).records();
    expect(readFileSync(join(resultsDir, records[0]!.logsDir, "worker-0.log"), "utf8")).toContain("ringlab-result: ");
    expect(resumed.left()).toEqual(EMPTY);
  });

  it("deletes a run's NetworkPolicy only once none of its pods is left, terminating ones included (#67)", async () => {
    const controller = new AbortController();
    // Interrupted while its pods run: they terminate through their grace period after their deletion.
    const cluster = await fake({
      scenario: (look) => {
        if (look === 2) controller.abort(new Error("SIGINT"));
        return { pods: [{ phase: "Running" }, { phase: "Running" }] };
      },
    });
    const { file, resultsDir } = campaignFile();
    const options = { resultsDir, cluster: { env: { KUBECONFIG: cluster.kubeconfig() } }, pollMs: 5 };
    await expect(runKubernetesCampaign(context(controller.signal), file, options)).rejects.toThrow("SIGINT");
    const run = "allreduce-n2-unlimited-r1";
    const deleted = cluster.requests.indexOf(
      `DELETE /apis/networking.k8s.io/v1/namespaces/ringlab/networkpolicies/kind-${run}`,
    );
    expect(deleted, cluster.requests.join("\n")).toBeGreaterThanOrEqual(0);
    const gone = cluster.podsGone.filter((pod) => pod.run === run);
    expect(gone.length).toBeGreaterThan(0);
    for (const pod of gone) expect(pod.afterRequests).toBeLessThanOrEqual(deleted);
    expect(cluster.left()).toEqual(EMPTY);
  });
});

describe("one run on a cluster", () => {
  it("gives up on a Job that outlives its deadline and the grace its controller gets, reads only its own pods, and deletes it", async () => {
    // A pod of an earlier attempt at the run, still terminating: same labels, same index, another owner (a Job of the
    // same name, deleted). Its name sorts after the new pod's, and the API lists pods by name: a reader that took every
    // pod with the run's labels would write its log over the new rank 1's.
    const stale = {
      metadata: {
        name: "kind-allreduce-n2-unlimited-r1-1-zq7wd",
        labels: { "ringlab.testbed": "kind", "ringlab.run": "allreduce-n2-unlimited-r1" },
        annotations: { "batch.kubernetes.io/job-completion-index": "1" },
        deletionTimestamp: "2026-11-26T00:00:10Z",
        ownerReferences: [
          {
            apiVersion: "batch/v1",
            kind: "Job",
            name: "kind-allreduce-n2-unlimited-r1",
            uid: "an-earlier-job",
            controller: true,
          },
        ],
      },
      spec: { containers: [{ name: "worker", image: "registry.example/ringlab/worker:cpu" }] },
      status: {
        phase: "Running",
        containerStatuses: [{ name: "worker", image: "registry.example/ringlab/worker:cpu", state: { running: {} } }],
      },
    };
    const cluster = await fake({
      scenario: () => ({ pods: [{ phase: "Running" }, { phase: "Running", log: "still training\n" }] }),
      existing: { pods: [stale], logs: { [stale.metadata.name]: { worker: "rank 1 of the earlier attempt\n" } } },
    });
    const { file, resultsDir } = campaignFile();
    const connected = await Cluster.connect(file.testbed, { env: { KUBECONFIG: cluster.kubeconfig() } });
    const run = planCampaign(file, "k8s").runs[0]!;
    const outcome = await runOnCluster(context(), connected, {
      run,
      testbed: file.testbed,
      manifests: runManifests(run, file.testbed, "k8s", 60),
      deadlineSeconds: 0,
      graceSeconds: 0,
      pollMs: 5,
      collectDir: join(resultsDir, "run"),
    });
    expect(outcome.status).toBe("failed");
    expect(outcome.error).toMatch(
      /^the Job did not end within its deadline \(0 s, runTimeoutSeconds\) and 0 s more; worker logs: /,
    );
    expect(readFileSync(join(resultsDir, "run", "worker-1.log"), "utf8")).toBe("still training\n");
    // Its pods terminate (their grace period), still under their NetworkPolicy; the campaign's end waits for them.
    expect(cluster.left()).toMatchObject({
      jobs: [],
      services: [],
      networkPolicies: ["kind-allreduce-n2-unlimited-r1"],
      secrets: [],
    });
  });
});

describe("a Kubernetes cluster is checked before anything is created", () => {
  const testbed = () => campaignFile().file.testbed;

  it("refuses a missing kubeconfig, one that does not read, and a context it does not have (exit 2)", async () => {
    const cluster = await fake();
    const dir = mkdtempSync(join(tmpdir(), "ringlab-kubeconfig-bad-"));
    await expect(Cluster.connect(testbed(), { env: { KUBECONFIG: join(dir, "none") } })).rejects.toThrow(
      `no kubeconfig at ${join(dir, "none")} (KUBECONFIG)`,
    );
    writeFileSync(join(dir, "broken"), "clusters: [\n");
    await expect(Cluster.connect(testbed(), { env: { KUBECONFIG: join(dir, "broken") } })).rejects.toThrow(
      /^the kubeconfig .*broken cannot be read: /,
    );
    const refused = Cluster.connect(
      { ...testbed(), context: "prod" },
      { env: { KUBECONFIG: cluster.kubeconfig("kind-ringlab") } },
    );
    await expect(refused).rejects.toThrow('the kubeconfig has no context "prod" (testbed.context)');
    await expect(refused).rejects.toMatchObject({
      exitCode: EXIT.badInput,
      hint: "its contexts: kind-ringlab; set testbed.context to one",
    });
    expect(cluster.requests).toEqual([]);
  });

  it("refuses a namespace or a claim the cluster does not have (exit 2), naming the fix", async () => {
    const cluster = await fake({ claims: [] });
    const env = { KUBECONFIG: cluster.kubeconfig() };
    const noNamespace = Cluster.connect({ ...testbed(), namespace: "nowhere" }, { env });
    await expect(noNamespace).rejects.toThrow(
      `namespace nowhere does not exist on the cluster of context fake (${cluster.url})`,
    );
    await expect(noNamespace).rejects.toMatchObject({
      exitCode: EXIT.badInput,
      hint: expect.stringContaining("kubectl --context fake create namespace nowhere"),
    });
    await expect(Cluster.connect(testbed(), { env })).rejects.toThrow(
      "namespace ringlab has no PersistentVolumeClaim shared (testbed.sharedClaim)",
    );
    // Only deleting needs no claim.
    await expect(Cluster.connect(testbed(), { env }, "delete")).resolves.toBeInstanceOf(Cluster);
    expect(cluster.requests.filter((request) => !request.startsWith("GET"))).toEqual([]);
  });

  it("refuses a user who may not read the namespace or the claim (exit 2), listing what a campaign needs", async () => {
    const forbidden = await fake({
      failWith: (request) => (request.includes("persistentvolumeclaims") ? 403 : undefined),
    });
    const refused = Cluster.connect(testbed(), { env: { KUBECONFIG: forbidden.kubeconfig() } });
    await expect(refused).rejects.toThrow(
      /^the kubeconfig's user may not do what a campaign needs: read the shared claim: the API answered 403 .*forbidden/,
    );
    await expect(refused).rejects.toMatchObject({
      exitCode: EXIT.badInput,
      hint: expect.stringContaining("kubectl --context fake auth can-i --list -n ringlab"),
    });
    const expired = await fake({ failWith: () => 401 });
    await expect(Cluster.connect(testbed(), { env: { KUBECONFIG: expired.kubeconfig() } })).rejects.toThrow(
      "the kubeconfig's user may not do what a campaign needs: read the namespace: the API answered 401 Unauthorized",
    );
  });

  it("reads KUBECONFIG's files as kubectl does: the first file's current-context holds, a file that is not there is passed over", async () => {
    const cluster = await fake();
    const first = cluster.kubeconfig("first");
    const second = cluster.kubeconfig("second");
    const dir = mkdtempSync(join(tmpdir(), "ringlab-kubeconfig-list-"));
    const connected = await Cluster.connect(testbed(), {
      env: { KUBECONFIG: [join(dir, "missing"), first, second].join(":") },
    });
    expect(connected.context).toBe("first");
  });

  it("names a cluster that does not answer, refused or silent (exit 3)", async () => {
    const closed = await fake();
    const env = { KUBECONFIG: closed.kubeconfig() };
    await closed.close();
    clusters = clusters.filter((cluster) => cluster !== closed);
    const refused = Cluster.connect(testbed(), { env });
    await expect(refused).rejects.toBeInstanceOf(PrerequisiteError);
    await expect(refused).rejects.toThrow(
      new RegExp(
        `^the cluster of context fake \\(${closed.url.replace(/\./g, "\\.")}\\) does not answer: read the namespace on .*ECONNREFUSED`,
      ),
    );
    const silent = await fake({ hang: true });
    const started = Date.now();
    await expect(
      Cluster.connect(testbed(), { env: { KUBECONFIG: silent.kubeconfig() }, requestTimeoutMs: 300 }),
    ).rejects.toThrow(/does not answer: read the namespace on .*: no answer within 0\.3 s/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("takes a certificate that does not verify as the kubeconfig's to fix (exit 2), not as a cluster that does not answer", async () => {
    const cluster = await fake();
    const dir = mkdtempSync(join(tmpdir(), "ringlab-kubeconfig-tls-"));
    // The certificate is for 127.0.0.1, not localhost; and without the CA nothing vouches for it.
    const text = readFileSync(cluster.kubeconfig(), "utf8");
    writeFileSync(join(dir, "other-name"), text.replace("https://127.0.0.1:", "https://localhost:"));
    writeFileSync(join(dir, "no-ca"), text.replace(/, certificate-authority-data: [^}]+/, ""));
    for (const [file, reason] of [
      ["other-name", /ERR_TLS_CERT_ALTNAME_INVALID|does not match certificate/],
      ["no-ca", /self-signed certificate/],
    ] as const) {
      const refused = Cluster.connect(testbed(), { env: { KUBECONFIG: join(dir, file) } });
      await expect(refused).rejects.toThrow(
        /^read the namespace: the kubeconfig's context fake \(https:\/\/(localhost|127\.0\.0\.1):\d+\) cannot be used: /,
      );
      await expect(refused).rejects.toThrow(reason);
      await expect(refused).rejects.toMatchObject({ exitCode: EXIT.badInput });
    }
    expect(cluster.requests).toEqual([]);
  });
});

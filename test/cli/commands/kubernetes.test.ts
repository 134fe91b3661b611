/**
 * `ringlab campaign` and `ringlab down` on a Kubernetes campaign as a user runs them: the real CLI, its kubeconfig
 * ($KUBECONFIG) pointing at a loopback server that answers as the Kubernetes API does (test/kubernetes/fake-api.ts).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeCluster, type FakeCluster, type Scenario } from "../../targets/kubernetes/fake-api.ts";

const BIN = resolve("src/bin/ringlab.mjs");

/** The CLI in a child process, awaited (the fake API server answers from this process meanwhile). */
function cli(args: string[], kubeconfig: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const state = mkdtempSync(join(tmpdir(), "ringlab-k8s-cli-"));
  return new Promise((done) => {
    const child = spawn(process.execPath, [BIN, "--state-dir", join(state, "state"), ...args], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("close", (status) => done({ status, stdout, stderr }));
  });
}

function campaign(context?: string): { file: string; results: string } {
  const dir = mkdtempSync(join(tmpdir(), "ringlab-k8s-cli-campaign-"));
  const file = join(dir, "k8s.yaml");
  writeFileSync(
    file,
    [
      `testbed: {target: kubernetes, name: kind, nodes: 2, namespace: ringlab, sharedClaim: shared, workerImage: "registry.example/ringlab/worker:cpu", gpusPerPod: 0${context === undefined ? "" : `, context: ${context}`}}`,
      "campaign: {matrix: {nodes: [2], model: tiny, batchSize: 8, bandwidth: [unlimited]}, probe: {enabled: false}, runTimeoutSeconds: 60}",
      "",
    ].join("\n"),
  );
  return { file, results: join(dir, "results") };
}

/** The Job fails at the first look: its worker exited 1. */
const failsAtOnce: Scenario = () => ({
  conditions: [
    {
      type: "Failed",
      status: "True",
      reason: "BackoffLimitExceeded",
      message: "Job has reached the specified backoff limit",
    },
  ],
  pods: [
    { phase: "Failed", worker: { terminated: { exitCode: 1, reason: "Error" } }, log: "boom\n" },
    { phase: "Running", log: "\n" },
  ],
});

let cluster: FakeCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

describe("ringlab campaign and down on a Kubernetes cluster", () => {
  it("runs the campaign as Jobs, records and reports a failed run with exit 5, leaves nothing; down deletes what a kill left", async () => {
    const leftover = {
      metadata: { name: "kind-killed", labels: { "ringlab.testbed": "kind", "ringlab.run": "killed" } },
      spec: {},
    };
    cluster = await startFakeCluster({ namespace: "ringlab", claims: ["shared"], scenario: failsAtOnce });
    const { file, results } = campaign();
    const ran = await cli(["campaign", file, "--results", results], cluster.kubeconfig());
    expect(ran.status, ran.stderr).toBe(5);
    expect(ran.stdout + ran.stderr).toMatch(/cluster: context fake \(https:\/\/127\.0\.0\.1:\d+\)/);
    expect(ran.stderr).toMatch(/run train-tiny-b8-n2-unlimited-r1 failed: the Job failed \(BackoffLimitExceeded/);
    expect(ran.stdout + ran.stderr).toMatch(/campaign finished: 0 ok, 1 failed, 0 already done \(of 1\)/);
    expect(cluster.left()).toEqual({ jobs: [], services: [], networkPolicies: [], secrets: [], pods: [] });
    await cluster.close();

    cluster = await startFakeCluster({
      namespace: "ringlab",
      existing: { jobs: [leftover], services: [leftover], networkPolicies: [leftover], secrets: [leftover] },
    });
    const down = await cli(["down", file], cluster.kubeconfig());
    expect(down.status, down.stderr).toBe(0);
    expect(down.stdout + down.stderr).toMatch(
      /deleted 4 objects labelled ringlab\.testbed=kind in namespace ringlab \(context fake\)/,
    );
    expect(cluster.left()).toEqual({ jobs: [], services: [], networkPolicies: [], secrets: [], pods: [] });
  });

  it("refuses a context the kubeconfig lacks (exit 2) and a cluster that does not answer (exit 3), creating nothing", async () => {
    cluster = await startFakeCluster({ namespace: "ringlab", claims: ["shared"] });
    const wrong = await cli(["campaign", campaign("prod").file], cluster.kubeconfig());
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toMatch(
      /the kubeconfig has no context "prod" \(testbed.context\)\nhint: its contexts: fake; set testbed.context to one/,
    );
    const kubeconfig = cluster.kubeconfig();
    await cluster.close();
    cluster = undefined;
    const gone = await cli(["campaign", campaign().file], kubeconfig);
    expect(gone.status).toBe(3);
    expect(gone.stderr).toMatch(
      /the cluster of context fake \(https:\/\/127\.0\.0\.1:\d+\) does not answer: .*ECONNREFUSED/,
    );
  });
});

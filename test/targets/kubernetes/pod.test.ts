/**
 * A run's pods, as the Job's template starts them, with the real worker (Debian's torch, Gloo on loopback): each
 * pod's arguments and environment exactly as the manifests say, except what only a cluster provides, put in by
 * hand as Kubernetes would: the node rank from the completion index, the run's Secret (the rendezvous id, one random
 * value for both pods), pod 0's DNS name (here 127.0.0.1), the claim's mount (a folder) and the pod's interface (lo).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { planCampaign } from "../../../src/campaign/plan.ts";
import { validateCampaign, type KubernetesTestbed } from "../../../src/config/schema.ts";
import { resultFromLog } from "../../../src/targets/kubernetes/follow.ts";
import { runManifests } from "../../../src/targets/kubernetes/manifests.ts";

const WORKER_DIR = resolve("docker/worker");
/** The worker's Python and torch, as npm run test:python runs the worker's tests (.venv-worker, npm run setup:test). */
const PYTHON = resolve(".venv-worker/bin/python");

function freePort(): Promise<number> {
  return new Promise((done) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

function runPod(
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(PYTHON, ["-m", "ringlab_worker", ...args], {
      cwd: WORKER_DIR,
      env: { PATH: process.env["PATH"]!, PYTHONPATH: WORKER_DIR, ...env },
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("close", (code) => done({ code, output }));
  });
}

describe("a run's pods", () => {
  it("train together from the Job's arguments and environment, and rank 0 writes the result where the claim holds it and into its log", async () => {
    const result = validateCampaign({
      testbed: {
        target: "kubernetes",
        name: "kind",
        nodes: 2,
        namespace: "ringlab",
        sharedClaim: "shared",
        workerImage: "ringlab/worker:cpu",
        gpusPerPod: 0,
      },
      campaign: {
        matrix: { nodes: [2], model: "tiny", batchSize: 8, bandwidth: ["unlimited"] },
        train: { numWarmupBatches: 1, numBatchesPerIter: 2, numIters: 2, imageSize: 32 },
      },
    });
    if (!result.ok || result.value.testbed.target !== "kubernetes") throw new Error("the test's campaign is invalid");
    const testbed = result.value.testbed as KubernetesTestbed;
    const run = planCampaign(result.value, "pods").runs.find((planned) => planned.job === "train")!;
    const container = runManifests(run, testbed, "pods", 120).objects[2].spec!.template.spec!.containers[0]!;

    const claim = mkdtempSync(join(tmpdir(), "ringlab-claim-"));
    const port = await freePort();
    const secret = randomBytes(16).toString("hex");
    const envOf = (index: number) =>
      Object.fromEntries(
        container.env!.map(({ name, value, valueFrom }) => {
          if (valueFrom?.fieldRef?.fieldPath === "metadata.annotations['batch.kubernetes.io/job-completion-index']")
            return [name, String(index)];
          if (valueFrom?.secretKeyRef !== undefined) {
            expect(valueFrom.secretKeyRef).toEqual({ name: expect.any(String), key: "rdzvSecret" });
            return [name, secret];
          }
          const cluster: Record<string, string> = {
            RINGLAB_HEAD_ADDR: "127.0.0.1",
            RINGLAB_RDZV_PORT: String(port),
            RINGLAB_SHARED_DIR: claim,
          };
          return [name, cluster[name] ?? (value === "eth0" ? "lo" : value!)];
        }),
      );
    const args = container.args!.map((arg) => arg.replace(/^\/ringlab\//, `${claim}/`));
    const pods = await Promise.all([0, 1].map((index) => runPod(args, envOf(index))));

    expect(
      pods.map((pod) => pod.code),
      pods.map((pod) => pod.output).join("\n----\n"),
    ).toEqual([0, 0]);
    const resultFile = join(claim, "runs", run.id, "result.json");
    expect(existsSync(resultFile)).toBe(true);
    const record = JSON.parse(readFileSync(resultFile, "utf8"));
    expect(record).toMatchObject({
      job: "train",
      world: { size: 2, nodes: 2, backend: "gloo" },
      knobs: { batchSize: 8 },
    });
    // What `ringlab campaign` reads from pod 0's log (the claim is the cluster's) is the same result.
    const fromLog = resultFromLog(pods[0]!.output);
    expect("text" in fromLog && JSON.parse(fromLog.text)).toEqual(record);
    expect(resultFromLog(pods[1]!.output)).toEqual({
      error: expect.stringMatching(/^no line starting "ringlab-result:"/),
    });
  });
});

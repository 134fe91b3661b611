/**
 * The main job end to end: `ringlab campaign campaigns/local-smoke.yaml`, interrupted twice (Ctrl-C-like
 * SIGTERM, then a SIGKILL that allows no cleanup) and rerun to completion. Nothing measured may be lost,
 * nothing finished may run twice, and nothing may be left running.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { docker, everythingLabeled, exited, labeled, ringlab, scratch, sleep, startRingLab, writeFile } from "./cli.ts";

const TESTBED = "smoke";
const dir = scratch("campaign");
const state = join(dir, "state");
const results = join(dir, "results");
const args = ["campaign", "campaigns/local-smoke.yaml", "--results", results];

/** The records a campaign wrote to <resultsDir>/runs.jsonl, in order. */
function runsJsonl(resultsDir: string): any[] {
  return readFileSync(join(resultsDir, "runs.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line));
}

function records(): Map<string, { status: string; startedAt: string }> {
  const runs = join(results, "runs");
  if (!existsSync(runs)) return new Map();
  return new Map(readdirSync(runs).filter((f) => f.endsWith(".json") && !f.startsWith(".")).map((file) => {
    const record = JSON.parse(readFileSync(join(runs, file), "utf8"));
    return [record.runId, { status: record.status, startedAt: record.startedAt }];
  }));
}

async function waitForRecords(count: number, child: { output: () => string }): Promise<void> {
  const deadline = Date.now() + 8 * 60_000;
  while (records().size < count) {
    if (Date.now() > deadline) throw new Error(`fewer than ${count} records after 8 min; output:\n${child.output()}`);
    await sleep(500);
  }
}

describe("a campaign on the local testbed", { timeout: 25 * 60_000 }, () => {
  let afterTerm = new Map<string, { status: string; startedAt: string }>();
  let afterKill = new Map<string, { status: string; startedAt: string }>();

  it("stops on SIGTERM: keeps every finished run, tears the testbed down, exits 130", async () => {
    expect(everythingLabeled(TESTBED)).toEqual([]);
    const child = startRingLab(state, args);
    await waitForRecords(2, child);
    process.kill(-child.pid!, "SIGTERM");
    const { code } = await exited(child);
    expect(code, child.output()).toBe(130);
    expect(child.output()).toMatch(/interrupted: \d+ runs recorded this time; rerun the same command to resume/);
    expect(everythingLabeled(TESTBED)).toEqual([]);
    afterTerm = records();
    expect(afterTerm.size).toBeGreaterThanOrEqual(2);
  });

  it("loses nothing when killed outright (SIGKILL: no cleanup possible)", async () => {
    const child = startRingLab(state, args);
    await waitForRecords(afterTerm.size + 2, child);
    process.kill(-child.pid!, "SIGKILL");
    await exited(child);
    afterKill = records();
    for (const [runId, record] of afterTerm) expect(afterKill.get(runId), runId).toEqual(record);
    // Nothing could tear down: the testbed is still there for the next invocation to reuse.
    expect(labeled("container", TESTBED).length).toBeGreaterThanOrEqual(3);
  });

  it("resumes to completion without repeating finished runs, writes results and report, and leaves nothing behind", async () => {
    const run = await ringlab(state, args);
    expect(run.code, run.stderr).toBe(0);
    const finished = [...afterKill.values()].filter((r) => r.status === "ok").length;
    expect(run.stderr).toMatch(new RegExp(`9 runs planned, ${finished} already done, ${9 - finished} to run`));
    expect(run.stderr).toMatch(/testbed smoke already exists with 3 nodes: reusing it/);
    expect(run.stderr).toMatch(/testbed: torn down/);

    const final = records();
    expect(final.size).toBe(9);
    expect([...final.values()].every((r) => r.status === "ok")).toBe(true);
    for (const [runId, record] of afterKill) {
      if (record.status === "ok") expect(final.get(runId), `${runId} ran again`).toEqual(record);
    }

    const jsonl = readFileSync(join(results, "runs.jsonl"), "utf8").trim().split("\n");
    expect(jsonl).toHaveLength(9);
    expect(readFileSync(join(results, "summary.csv"), "utf8").trim().split("\n")).toHaveLength(10);
    expect(readFileSync(join(results, "campaign.yaml"), "utf8")).toBe(readFileSync("campaigns/local-smoke.yaml", "utf8"));
    const html = readFileSync(join(results, "report.html"), "utf8");
    // Throughput, efficiency, bus bandwidth, and the probe's fitted model against the training measurements.
    expect(html.match(/<svg/g)?.length).toBe(4);
    expect(html).toMatch(/Ideal/);
    expect(html).toContain("<b>Fitted model against measurement.</b>");
    expect(readFileSync(join(results, "report.md"), "utf8")).toMatch(/small · batch 32 \| 1gbit \| 3 \|/);
    for (const { runId, logsDir } of jsonl.map((line) => JSON.parse(line))) {
      expect(logsDir, runId).toMatch(new RegExp(`^logs/${runId}/attempt-\\d+$`));
      expect(existsSync(join(results, logsDir, "worker-0.log")), runId).toBe(true);
    }
    expect(everythingLabeled(TESTBED)).toEqual([]);
  });
});

describe("a campaign with runs that fail", { timeout: 10 * 60_000 }, () => {
  it("records each failed run with its error and logs, goes on with the rest, and exits 5", async () => {
    const work = scratch("failing");
    const file = writeFile(work, "failing.yaml", `
testbed: {target: local, name: e2efail, nodes: 2, subnet: 10.75.0.0/24}
campaign:
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit, numIters: [2, 1000000]}
  train: {numWarmupBatches: 1, numBatchesPerIter: 2}
  probe: {enabled: false}
  runTimeoutSeconds: 15
`);
    const out = join(work, "results");
    const run = await ringlab(join(work, "state"), ["campaign", file, "--results", out]);
    expect(run.code, run.stderr).toBe(5);
    expect(run.stderr).toMatch(/campaign finished: 2 ok, 2 failed/);
    const byId = new Map(readFileSync(join(out, "runs.jsonl"), "utf8").trim().split("\n").map((line) => {
      const record = JSON.parse(line);
      return [record.runId, record];
    }));
    expect([...byId.keys()]).toEqual([
      "train-tiny-b8-n1-numiters-2-r1", "train-tiny-b8-n1-numiters-1000000-r1",
      "train-tiny-b8-n2-1gbit-numiters-2-r1", "train-tiny-b8-n2-1gbit-numiters-1000000-r1",
    ]);
    const slow = byId.get("train-tiny-b8-n2-1gbit-numiters-1000000-r1");
    expect(slow.status).toBe("failed");
    expect(slow.error).toMatch(/timed out after 15 s and was stopped/);
    expect(existsSync(join(out, slow.logsDir, "worker-1.log"))).toBe(true);
    expect(byId.get("train-tiny-b8-n2-1gbit-numiters-2-r1").status).toBe("ok");
    expect(readFileSync(join(out, "report.md"), "utf8")).toMatch(/train-tiny-b8-n1-numiters-1000000-r1/);
    expect(everythingLabeled("e2efail")).toEqual([]);
  });
});

describe("a campaign that loses a node", { timeout: 10 * 60_000 }, () => {
  it("recreates the lost node container, reconfigures it, and the later runs succeed; the record says so", async () => {
    const work = scratch("lost");
    const file = writeFile(work, "lost.yaml", `
testbed: {target: local, name: e2elost, nodes: 3, subnet: 10.74.0.0/24}
campaign:
  matrix: {nodes: [2, 3], model: tiny, batchSize: 8, bandwidth: 1gbit}
  repeats: 2
  train: {numWarmupBatches: 1, numBatchesPerIter: 2, numIters: 2}
  probe: {enabled: false}
`);
    const out = join(work, "results");
    const child = startRingLab(join(work, "state"), ["campaign", file, "--results", out]);
    // Run 1 uses nodes 0 and 1; node 2 dies under it, and run 2 (3 nodes) needs it back.
    const deadline = Date.now() + 5 * 60_000;
    while (!/run 1\/4: /.test(child.output())) {
      if (Date.now() > deadline) throw new Error(`run 1 never started:\n${child.output()}`);
      await sleep(200);
    }
    docker(["kill", "ringlab-e2elost-node-2"]);
    const { code } = await exited(child);
    expect(code, child.output()).toBe(0);
    expect(child.output()).toMatch(/recreate lost node e2elost-node-2/);
    const byId = new Map(readFileSync(join(out, "runs.jsonl"), "utf8").trim().split("\n").map((line) => {
      const record = JSON.parse(line);
      return [record.runId, record];
    }));
    expect([...byId.values()].map((r) => r.status)).toEqual(["ok", "ok", "ok", "ok"]);
    expect(byId.get("train-tiny-b8-n3-1gbit-r1").nodeRecovery).toMatchObject({ recreated: ["e2elost-node-2"] });
    expect(everythingLabeled("e2elost")).toEqual([]);
  });
});

describe("a campaign of reductions and placements", { timeout: 10 * 60_000 }, () => {
  it("runs a parameter server on 1 node × 2 and 2 nodes × 1, records the placement, and the report compares them", async () => {
    const work = scratch("placement");
    const file = writeFile(work, "placement.yaml", `
testbed: {target: local, name: e2eplace, nodes: 2, subnet: 10.73.0.0/24}
campaign:
  matrix: {nodes: [1, 2], processesPerNode: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit, reduction: parameter-server}
  maxWorkers: 2
  train: {numWarmupBatches: 1, numBatchesPerIter: 2, numIters: 2}
  probe: {maxBytes: 1048576, iters: 2}
`);
    const out = join(work, "results");
    const run = await ringlab(join(work, "state"), ["campaign", file, "--results", out]);
    expect(run.code, run.stderr).toBe(0);
    const byId = new Map(readFileSync(join(out, "runs.jsonl"), "utf8").trim().split("\n").map((line) => {
      const record = JSON.parse(line);
      return [record.runId, record];
    }));
    expect([...byId.keys()]).toEqual([
      "train-tiny-b8-n1-reduction-parameter-server-r1", "allreduce-n1-p2-parameter-server-r1", "train-tiny-b8-n1-p2-reduction-parameter-server-r1",
      "allreduce-n2-1gbit-parameter-server-r1", "train-tiny-b8-n2-1gbit-reduction-parameter-server-r1",
    ]);
    const inOneNode = byId.get("train-tiny-b8-n1-p2-reduction-parameter-server-r1");
    expect(inOneNode.params).toMatchObject({ nodes: 1, processesPerNode: 2, bandwidth: null, knobs: { reduction: "parameter-server" } });
    expect(inOneNode.result.world).toMatchObject({ size: 2, nodes: 1, procsPerNode: 2 });
    expect(inOneNode.result.knobs.reduction).toBe("parameter-server");
    expect(byId.get("allreduce-n2-1gbit-parameter-server-r1").result.metrics.rows.every((row: { wrong: number }) => row.wrong === 0)).toBe(true);
    expect(readFileSync(join(out, "report.md"), "utf8")).toMatch(/^- Placements, tiny · batch 8 · 1gbit · 2 workers: .* was fastest/m);
    expect(everythingLabeled("e2eplace")).toEqual([]);
  });
});

describe("a campaign with launcher slurm", { timeout: 10 * 60_000 }, () => {
  it("makes the testbed a Slurm cluster, runs every run as one sbatch job whose script it keeps, and status shows Slurm's nodes", async () => {
    const work = scratch("slurm");
    const file = writeFile(work, "slurm.yaml", `
testbed: {target: local, name: e2eslurm, nodes: 2, subnet: 10.72.0.0/24}
campaign:
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit}
  train: {numWarmupBatches: 1, numBatchesPerIter: 2, numIters: 2}
  probe: {maxBytes: 1048576, iters: 2}
  launcher: slurm
  keep: true
`);
    const state = join(work, "state");
    const out = join(work, "results");
    try {
      const run = await ringlab(state, ["campaign", file, "--results", out]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/configure 2 nodes as a Slurm cluster/);
      const records = runsJsonl(out);
      expect(records.map((r) => [r.runId, r.status, r.params.launcher])).toEqual([
        ["train-tiny-b8-n1-r1", "ok", "slurm"], ["allreduce-n2-1gbit-r1", "ok", "slurm"], ["train-tiny-b8-n2-1gbit-r1", "ok", "slurm"],
      ]);
      const twoNodes = join(out, records[2].logsDir);
      expect(readdirSync(twoNodes).sort()).toEqual(["job.sbatch", "outcome.json", "result.json", "slurm.out", "worker-0.log", "worker-1.log"]);
      const script = readFileSync(join(twoNodes, "job.sbatch"), "utf8");
      expect(script).toMatch(/^#SBATCH --nodes=2$/m);
      expect(script).toMatch(/^#SBATCH --job-name=ringlab-train-tiny-b8-n2-1gbit-r1$/m);
      expect(script).toMatch(/ringlab-slurm worker --run-id train-tiny-b8-n2-1gbit-r1 --cpus [0-9.]+ \\\n {2}train --model tiny /);
      expect(records[2].result.world).toMatchObject({ size: 2, nodes: 2 });

      const status = await ringlab(state, ["status"]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/^Slurm \(launcher slurm\):$/m);
      expect(status.stdout).toMatch(/^e2eslurm-node-0 ringlab\* idle /m);
      expect(status.stdout).toMatch(/^e2eslurm-node-1 ringlab\* idle /m);
      // `up` on a testbed still running reuses it, and it stays a Slurm cluster.
      const again = await ringlab(state, ["up", file]);
      expect(again.stderr).toMatch(/testbed e2eslurm already exists with 2 nodes: reusing it/);
      expect((await ringlab(state, ["status"])).stdout).toMatch(/^e2eslurm-node-0 ringlab\* idle /m);
    } finally {
      await ringlab(state, ["down", "e2eslurm"]);
    }
    expect(everythingLabeled("e2eslurm")).toEqual([]);
  });
});

describe("a campaign on a dataset, with a rank killed mid-training, then a node lost", { timeout: 10 * 60_000 }, () => {
  it("writes the dataset once, trains to a held-out accuracy, restarts the killed rank from its checkpoint, goes on without a lost node and reports time to train", async () => {
    const work = scratch("data");
    const file = writeFile(work, "data.yaml", `
testbed: {target: local, name: e2edata, nodes: 2, subnet: 10.73.0.0/24}
campaign:
  matrix: {nodes: [1, 2], model: small, batchSize: 16, bandwidth: 1gbit}
  dataset: {name: shapes, classes: 4, imagesPerClass: 40, imageSize: 32}
  train: {data: dataset, epochs: 2, learningRate: 0.02, momentum: 0.9, loaderWorkers: 1, checkpointEvery: 2, maxRestarts: 1, failAtStep: 3, failRank: 0}
  probe: {enabled: false}
  keep: true
`);
    const state = join(work, "state");
    const out = join(work, "results");
    try {
      const run = await ringlab(state, ["campaign", file, "--results", out]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/dataset shapes: 4 classes x 40 images of 32 px on the shared storage/);
      const records = runsJsonl(out);
      expect(records.map((r) => [r.runId, r.status])).toEqual([["train-small-b16-n1-r1", "ok"], ["train-small-b16-n2-1gbit-r1", "ok"]]);
      for (const record of records) {
        const metrics = record.result.metrics;
        // Killed after step 3, resumed from the checkpoint of step 2: one step redone.
        expect([metrics.restarts, metrics.stepsRedone, metrics.recovery[0].resumedFromStep]).toEqual([1, 1, 2]);
        expect(metrics.epochs).toHaveLength(2);
        expect(metrics.data).toMatchObject({ kind: "folder", classes: 4, trainImages: 128, valImages: 32 });
        expect(metrics.timeToTrainSeconds).toBeGreaterThan(0);
        expect(readFileSync(join(out, record.logsDir, "worker-0.log"), "utf8")).toMatch(/fault injection: killing this process after step 3/);
      }
      const report = readFileSync(join(out, "report.md"), "utf8");
      expect(report).toMatch(/^## Real data and time to train$/m);
      expect(report).toMatch(/^\| train-small-b16-n2-1gbit-r1 \| small · batch 16 · 2 nodes × 1 · 1gbit \| [0-9.]+ \| n\/a \| [0-9.]+% \| [0-9.]+ s \| 2 \| [0-9.]+% \| 1 \| 1 \| [0-9.]+ s \|$/m);
      // The 2-node run again (the same run id; the testbed was kept, so its folder on the shared storage is still
      // there), now losing node 1 after step 3: node 1's worker container is killed, and node 0 goes on alone
      // (minNodes 1) from the checkpoint of step 2 -- this run's own, never the finished run's of the last campaign.
      const lossFile = writeFile(work, "data-node-loss.yaml", readFileSync(file, "utf8")
        .replace("nodes: [1, 2]", "nodes: [2]").replace("failRank: 0", "failNode: 1, minNodes: 1"));
      const second = await ringlab(state, ["campaign", lossFile, "--results", join(work, "results-2")]);
      expect(second.code, second.stderr).toBe(0);
      const [lost] = runsJsonl(join(work, "results-2"));
      expect([lost.runId, lost.status, lost.result.metrics.restarts, lost.result.metrics.recovery[0].resumedFromStep]).toEqual(["train-small-b16-n2-1gbit-r1", "ok", 1, 2]);
      expect([lost.result.metrics.nodesAtStart, lost.result.world.nodes, lost.result.metrics.recovery[0].worldSizeAfter]).toEqual([2, 1, 1]);
      expect(lost.result.metrics.recovery[0].recoverySeconds).toBeLessThan(30);
      expect(readFileSync(join(work, "results-2", lost.logsDir, "worker-1.log"), "utf8")).toMatch(/fault injection: node 1 is lost after step 3/);
      expect(readFileSync(join(work, "results-2", "report.md"), "utf8")).toMatch(/\| 1 \(lost 1 of 2 nodes, went on with 1\) \| 1 \| [0-9.]+ s \|$/m);
      // The dataset is there once: writing it again changes nothing.
      const again = await ringlab(state, ["dataset", file]);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(/dataset shapes: already at .*\/datasets\/shapes, unchanged/);
    } finally {
      await ringlab(state, ["down", "e2edata"]);
    }
    expect(everythingLabeled("e2edata")).toEqual([]);
  });
});

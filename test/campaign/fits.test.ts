/**
 * What plan and campaign refuse before anything starts (src/campaign/fits.ts): a layout whose degrees do not divide its
 * workers, and a run the memory model says will not fit the node (naming what would).
 */
import { describe, expect, it } from "vitest";
import { memoryConstantsFor, planProblems } from "../../src/campaign/fits.ts";
import { planCampaign } from "../../src/campaign/plan.ts";
import { parseCampaign } from "../../src/config/load.ts";
import { ASSUMED_MEMORY, isMemoryPrediction, predictMemory } from "../../src/predict/memory.ts";

const GIB = 2 ** 30;
const campaign = (memory: string, train: string, nodes = "[1, 3]") =>
  parseCampaign(
    `testbed: {target: local, name: t, nodes: 3${memory}}
campaign:
  matrix: {nodes: ${nodes}, model: gpt-mini, batchSize: 16, bandwidth: 1gbit}
  train: {${train}}
`,
    "c.yaml",
  );
const problemsOf = (file: ReturnType<typeof campaign>) =>
  planProblems(planCampaign(file, "c"), file, memoryConstantsFor(file, 0.5));

/** What the model predicts one node holds for gpt-mini at batch 16 with AdamW, on 3 nodes, laid out by `knobs`. */
function nodeBytes(knobs: Record<string, unknown>, nodes = 3): number {
  const prediction = predictMemory(
    { model: "gpt-mini", batchSize: 16, nodes, knobs: { optimizer: "adamw", ...knobs } },
    ASSUMED_MEMORY.cpu,
  );
  if (!isMemoryPrediction(prediction)) throw new Error(prediction.problem);
  return prediction.nodeBytes;
}

describe("what plan refuses before anything starts", () => {
  it("refuses a replica that does not fit the node, naming its memory, the limit and the layout that fits", () => {
    const ddp = nodeBytes({});
    const sharded = nodeBytes({ parallelism: "fsdp" });
    expect(sharded).toBeLessThan(ddp);
    const limit = ((ddp + sharded) / 2 / GIB).toFixed(3);
    const problems = problemsOf(campaign(`, memoryPerNodeGiB: ${limit}`, "optimizer: adamw"));
    // The single-node baseline and the 3-node run hold the same replica.
    expect(problems).toHaveLength(2);
    for (const [problem, run, nodes] of [
      [problems[0]!, "train-gpt-mini-b16-n1", 1],
      [problems[1]!, "train-gpt-mini-b16-n3-1gbit", 3],
    ] as const) {
      // What plan offers: FSDP full shard on the run's own node count, else on the testbed's 3, whichever fits first
      // (on one node FSDP shards nothing, but it keeps no DDP buckets: with this fit it can be the one that fits).
      const fitting = [...new Set([nodes, 3])].find(
        (count) => nodeBytes({ parallelism: "fsdp" }, count) <= Number(limit) * GIB,
      )!;
      expect(problem).toMatch(
        new RegExp(
          `^${run} does not fit: [0-9.]+ GiB predicted per rank, ${(ddp / GIB).toFixed(2)} GiB per node, ` +
            `${Number(limit).toFixed(2)} GiB per node \\(testbed.memoryPerNodeGiB\\); fits with fsdp full shard on ${fitting} node${fitting === 1 ? "" : "s"}: ` +
            `${(nodeBytes({ parallelism: "fsdp" }, fitting) / GIB).toFixed(2)} GiB`,
        ),
      );
      expect(problem).toContain("assumed: ringlab's fit of its own single CPU workers");
    }
  });

  it("lets the same runs through where they fit, and checks nothing without a limit", () => {
    const ddp = nodeBytes({});
    expect(problemsOf(campaign(`, memoryPerNodeGiB: ${((1.05 * ddp) / GIB).toFixed(3)}`, "optimizer: adamw"))).toEqual(
      [],
    );
    expect(problemsOf(campaign("", "optimizer: adamw"))).toEqual([]);
  });

  it("refuses a limit below what one worker's process needs before its model, where no layout can fit", () => {
    // 0.25 GiB, the least the schema takes: under the launcher and one process's baseline (0.45 GiB assumed).
    expect(ASSUMED_MEMORY.cpu.launcherBytes + ASSUMED_MEMORY.cpu.baselineBytes).toBeGreaterThan(0.25 * GIB);
    const problems = problemsOf(campaign(", memoryPerNodeGiB: 0.25", "optimizer: adamw, parallelism: fsdp", "[3]"));
    expect(problems).toEqual([
      expect.stringMatching(
        /^train-gpt-mini-b16-n3-1gbit does not fit: .*0\.25 GiB per node \(testbed\.memoryPerNodeGiB\); no layout fits: a node holds 0\.45 GiB before any model \(its launcher and each worker process's baseline\), more than the limit; raise it/,
      ),
    ]);
  });

  it("refuses degrees that do not divide a run's workers, naming the run", () => {
    expect(problemsOf(campaign("", "parallelism: pipeline, pipelineStages: 2", "[3]"))).toEqual([
      "train-gpt-mini-b16-n3-1gbit: pipelineStages 2 does not divide the run's 3 workers",
    ]);
  });

  it("refuses a tensor degree that does not divide the model's key and value heads, naming the run", () => {
    const file = parseCampaign(
      `testbed: {target: local, name: t, nodes: 2}
campaign:
  matrix: {nodes: 2, processesPerNode: [1, 2], model: llama-mini, batchSize: 4, bandwidth: 1gbit}
  train: {parallelism: tensor}
`,
      "c.yaml",
    );
    // llama-mini's 8 query heads share 2 key and value heads: 2 ranks split them, 4 cannot.
    expect(problemsOf(file)).toEqual([
      "train-llama-mini-b4-n2-p2-1gbit: tensorDegree 4 must divide llama-mini's 8 heads and 2 key and value heads (each rank computes whole heads, and the query heads that share them): choose a divisor of both",
    ]);
  });

  it("refuses a pipeline whose micro-batches the worker would refuse: 1F1B with fewer than its stages, or not dividing the batch", () => {
    // The worker exited 2 on the third node's run of campaigns/local-layouts-baselines.yaml (1f1b, 2 micro-batches, 3
    // stages) after plan had taken it.
    expect(
      problemsOf(campaign("", "parallelism: pipeline, pipelineSchedule: 1f1b, microBatches: 2", "[2, 3]")),
    ).toEqual([
      "train-gpt-mini-b16-n3-1gbit: pipelineSchedule 1f1b needs at least as many micro-batches as stages: microBatches 2 < 3 stages (torch's Schedule1F1B refuses it)",
    ]);
    expect(
      problemsOf(campaign("", "parallelism: pipeline, pipelineSchedule: gpipe, microBatches: 2", "[2, 3]")),
    ).toEqual([]);
    expect(problemsOf(campaign("", "parallelism: pipeline, microBatches: 3", "[2]"))).toEqual([
      "train-gpt-mini-b16-n2-1gbit: batchSize 16 must be a multiple of microBatches 3",
    ]);
  });
});

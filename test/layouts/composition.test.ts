/**
 * Degrees that compose (src/layouts/composition.ts): tp × cp × pp × dp on a cluster, what is refused and why, which
 * nodes each group spans, a pipeline's bubble, and a CPU campaign's knobs as a composition.
 */
import { describe, expect, it } from "vitest";
import {
  compositionProblems,
  compositionMemory,
  compositionProblemsAt,
  globalBatch,
  groupSpans,
  pipelineBubbleShare,
  type Composition,
} from "../../src/layouts/composition.ts";
import { compositionOf, dimsOf, memoryTermsOf } from "../../src/layouts/index.ts";
import { predictLayoutStep } from "../../src/results/layout-model.ts";
import { rankMemory } from "../../src/workload/memory.ts";

const eightByEight = { nodes: 8, gpusPerNode: 8 };
// Llama 3.1 70B's shape on 64 GPUs, as torchtitan's configurations lay it out: tp inside a node, pipelines across.
const seventy: Composition = {
  tp: 8,
  cp: 1,
  pp: 4,
  dp: 2,
  dpSharding: "full",
  schedule: "interleaved-1f1b",
  virtualStages: 2,
  microBatchSize: 1,
  microBatches: 8,
  gradientAccumulation: 4,
};

describe("a composition of degrees", () => {
  it("runs when its degrees multiply to the GPUs and each group lies where it should", () => {
    expect(compositionProblems(seventy, eightByEight)).toEqual([]);
    expect(globalBatch(seventy)).toBe(64);
    expect(groupSpans(seventy, eightByEight)).toEqual([
      { dimension: "pp", size: 4, nodesSpanned: 4, ranksPerNode: 1 },
      { dimension: "dp_shard", size: 2, nodesSpanned: 2, ranksPerNode: 1 },
      { dimension: "tp", size: 8, nodesSpanned: 1, ranksPerNode: 8 },
    ]);
  });

  it("refuses degrees whose product is not the GPU count, and says what dp would fill it", () => {
    expect(compositionProblems({ ...seventy, dp: 3 }, eightByEight)).toEqual([
      "tp 8 × cp 1 × pp 4 × dp 3 = 96 ranks, but the cluster has 64 GPUs (8 nodes × 8): the degrees must multiply to the GPU count; with tp 8 × cp 1 × pp 4, dp 2 fills it",
    ]);
    expect(compositionProblems({ ...seventy, dp: 0 }, eightByEight)).toEqual([
      "dp 0: a count of ranks or samples, a whole number of at least 1",
    ]);
  });

  it("refuses tensor parallelism across nodes unless told to, and groups that straddle two nodes", () => {
    const wide = { ...seventy, tp: 16, pp: 2 };
    expect(compositionProblems(wide, eightByEight)).toEqual([
      "tp 16 is larger than a node's 8 GPUs: its collectives on every block would cross the network; keep tp at most 8, or set allowCrossNodeTensor (predict --cluster's --allow-cross-node-tensor) to mean it",
    ]);
    const allowed = { ...wide, allowCrossNodeTensor: true };
    expect(compositionProblems(allowed, eightByEight)).toEqual([]);
    expect(groupSpans(allowed, eightByEight).find((group) => group.dimension === "tp")).toEqual({
      dimension: "tp",
      size: 16,
      nodesSpanned: 2,
      ranksPerNode: 8,
    });
    expect(compositionProblems({ ...seventy, tp: 3, pp: 1, dp: 1 }, { nodes: 1, gpusPerNode: 3 })).toEqual([]);
    expect(compositionProblems({ ...seventy, tp: 3, pp: 1, dp: 8 }, { nodes: 3, gpusPerNode: 8 })).toEqual([
      "tp 3 and a node's 8 GPUs: neither divides the other, so some tensor-parallel groups would straddle two nodes; choose a tp that divides 8",
    ]);
  });

  it("refuses shard groups that do not divide the data-parallel ranks, or shard nothing", () => {
    expect(compositionProblems({ ...seventy, dpShard: 3 }, eightByEight)).toEqual([
      "dpShard 3 does not divide dp 2: the data-parallel ranks form shard groups of dpShard, replicated dp / dpShard times",
    ]);
    expect(compositionProblems({ ...seventy, dpSharding: "none", dpShard: 2 }, eightByEight)).toEqual([
      "dpShard 2 with dpSharding none: nothing is sharded; set dpSharding, or leave dpShard out",
    ]);
    // HSDP: shards of 2 inside a node's data-parallel ranks, replicated across nodes.
    const hybrid: Composition = { ...seventy, tp: 4, pp: 1, dp: 16, dpShard: 2 };
    expect(compositionProblems(hybrid, eightByEight)).toEqual([]);
    expect(groupSpans(hybrid, eightByEight).map((group) => [group.dimension, group.nodesSpanned])).toEqual([
      ["dp_replicate", 8],
      ["dp_shard", 1],
      ["tp", 1],
    ]);
  });

  it("refuses the micro-batch counts torch's schedules refuse", () => {
    expect(
      compositionProblems({ ...seventy, schedule: "1f1b", virtualStages: 1, microBatches: 3 }, eightByEight),
    ).toEqual([
      "schedule 1f1b needs at least as many micro-batches as stages: microBatches 3 < pp 4 (torch's Schedule1F1B refuses it)",
    ]);
    expect(compositionProblems({ ...seventy, microBatches: 10 }, eightByEight)).toEqual([]);
    expect(compositionProblems({ ...seventy, microBatches: 9 }, eightByEight)).toEqual([
      "schedule interleaved-1f1b runs microBatches in 2 rounds of pp 4 or more, which 9 does not divide into (torch's ScheduleInterleaved1F1B refuses it); use a multiple of 2, or of pp",
    ]);
    expect(compositionProblems({ ...seventy, schedule: "gpipe" }, eightByEight)).toEqual([
      "virtualStages 2 with schedule gpipe: only interleaved-1f1b holds several chunks per rank",
    ]);
    // Fewer micro-batches than stages: one round, which torch's interleaved schedule runs.
    expect(compositionProblems({ ...seventy, microBatches: 3 }, eightByEight)).toEqual([]);
  });

  it("refuses an interleaved pipeline of one chunk per rank, and more chunks than the model has blocks", () => {
    expect(compositionProblemsAt({ ...seventy, virtualStages: 1 }, eightByEight)).toEqual([
      {
        field: "virtualStages",
        message:
          "virtualStages 1 with schedule interleaved-1f1b: interleaving needs 2 or more chunks per rank; set virtualStages 2 or more, or use schedule 1f1b",
      },
    ]);
    // Llama 3.1 70B's 80 blocks take 4 stages × 2 chunks; a 6-block model does not.
    expect(compositionProblems(seventy, eightByEight, 80)).toEqual([]);
    expect(compositionProblemsAt(seventy, eightByEight, 6)).toEqual([
      {
        field: "pp",
        message:
          "pp 4 × virtualStages 2 = 8 chunks of the model, but it has 6 blocks: a chunk holds one block at least",
      },
    ]);
  });

  it("names the field at fault: dp for a product that misses the GPUs, tp for a group past a node", () => {
    expect(compositionProblemsAt({ ...seventy, dp: 3 }, eightByEight).map((problem) => problem.field)).toEqual(["dp"]);
    expect(compositionProblemsAt({ ...seventy, tp: 16, pp: 2 }, eightByEight).map((problem) => problem.field)).toEqual([
      "tp",
    ]);
  });
});

describe("a pipeline's bubble", () => {
  it("is (p−1)/(v·m+p−1) of the step: Narayanan et al. 2021's (p−1)/m of the ideal time, over v when interleaved", () => {
    expect(pipelineBubbleShare(4, 8)).toBeCloseTo(3 / 11, 15);
    expect(pipelineBubbleShare(4, 8, 2)).toBeCloseTo(3 / 19, 15);
    // Bubble over ideal time: (p−1)/m and (1/v)(p−1)/m.
    const overIdeal = (share: number) => share / (1 - share);
    expect(overIdeal(pipelineBubbleShare(4, 8))).toBeCloseTo(3 / 8, 12);
    expect(overIdeal(pipelineBubbleShare(4, 8, 2))).toBeCloseTo(3 / 16, 12);
  });

  it("shortens an interleaved pipeline's step by its bubble and sends v times the messages", () => {
    const step = (virtualStages: number) =>
      predictLayoutStep({
        computeSeconds: 8,
        collectives: [{ op: "send", bytes: 16e6, calls: 16, ranks: 2 }],
        linkOf: () => ({ alphaSeconds: 0, betaSecondsPerByte: 1e-9 }),
        overlapShare: 0,
        pipeline: { stages: 4, microBatches: 8, slowestStageShare: 0.25, virtualStages },
      });
    // A micro-batch's stage computes 8 / 8 × 0.25 = 0.25 s: 8 + 3 slots, or 8 + 3/2 interleaved.
    expect(step(1).computeSeconds).toBeCloseTo(11 * 0.25, 12);
    expect(step(2).computeSeconds).toBeCloseTo(9.5 * 0.25, 12);
    expect(step(2).bubbleShare).toBeCloseTo(3 / 19, 15);
    // Each slot's two 1 MB messages at 1 ns a byte: 2 ms, v times over.
    expect(step(1).communicationSeconds).toBeCloseTo(11 * 2e-3, 12);
    expect(step(2).communicationSeconds).toBeCloseTo(9.5 * 2 * 2e-3, 12);
  });
});

describe("a CPU campaign's knobs as a composition", () => {
  it("maps each layout's knobs onto degrees, sharding and micro-batches", () => {
    expect(compositionOf({}, 3, 3, 6)).toEqual({
      tp: 1,
      cp: 1,
      pp: 1,
      dp: 3,
      dpShard: 1,
      dpSharding: "none",
      microBatchSize: 6,
      allowCrossNodeTensor: false,
    });
    expect(compositionOf({ parallelism: "fsdp", fsdpSharding: "grad-op" }, 3, 3, 6)).toMatchObject({
      dp: 3,
      dpShard: 3,
      dpSharding: "gradients",
    });
    expect(compositionOf({ parallelism: "fsdp", tensorDegree: 2 }, 4, 2, 6)).toMatchObject({
      tp: 2,
      dp: 2,
      dpSharding: "full",
      allowCrossNodeTensor: true,
    });
    const pipeline = compositionOf({ parallelism: "pipeline", pipelineSchedule: "1f1b", microBatches: 6 }, 3, 3, 6);
    expect(pipeline).toMatchObject({ pp: 3, dp: 1, schedule: "1f1b", microBatches: 6, microBatchSize: 1 });
    expect(compositionOf({ parallelism: "tensor", tensorDegree: 2 }, 3, 3, 6)).toEqual({
      problem: "tensorDegree 2 does not divide the run's 3 workers",
    });
  });

  it("gives a composition the memory terms its layout unit gives the knobs (a cluster's layouts have no unit)", () => {
    const layouts: [Record<string, unknown>, number, number][] = [
      [{}, 3, 3],
      [{}, 1, 1],
      [{ parallelism: "fsdp" }, 3, 3],
      [{ parallelism: "fsdp", fsdpSharding: "grad-op", tensorDegree: 2 }, 4, 2],
      [{ parallelism: "tensor" }, 3, 3],
      [{ parallelism: "pipeline", microBatches: 3 }, 3, 3],
      [{ parallelism: "pipeline", pipelineSchedule: "1f1b", microBatches: 3 }, 6, 3],
    ];
    for (const [knobs, workers, nodes] of layouts) {
      const composition = compositionOf(knobs, workers, nodes, 6);
      const layout = dimsOf(knobs, workers, nodes);
      if ("problem" in composition || !layout.ok) throw new Error(JSON.stringify(knobs));
      const { dims, terms } = compositionMemory(composition);
      const unit = memoryTermsOf(knobs, layout.dims);
      const what = `${JSON.stringify(knobs)} on ${workers}`;
      expect(dims, what).toEqual(layout.dims);
      expect([terms.sharding, terms.gradientBuckets], what).toEqual([unit.sharding, unit.gradientBuckets]);
      const stages = Array.from({ length: dims.pp }, (_, stage) => stage);
      expect(
        stages.map((stage) => terms.samplesInFlight(6, stage)),
        what,
      ).toEqual(stages.map((stage) => unit.samplesInFlight(6, stage)));
    }
    // FSDP's NO_SHARD all-reduces each unit without DDP's buckets, which a composition (replicas, nothing sharded) has.
    const control = { parallelism: "fsdp", fsdpSharding: "none" };
    const layout = dimsOf(control, 3, 3);
    if (!layout.ok) throw new Error(layout.problem);
    expect(memoryTermsOf(control, layout.dims).gradientBuckets).toBe(false);
  });

  it("shards ZeRO-1's optimizer state over every data-parallel rank, and keeps DDP's buckets beside it", () => {
    // Llama 3.1 8B in two stages over 64 replicas, AdamW in bf16 as PyTorch trains it: ZeRO-0 against ZeRO-1.
    const twoStages: Composition = {
      tp: 1,
      cp: 1,
      pp: 2,
      dp: 64,
      dpSharding: "none",
      microBatchSize: 1,
      microBatches: 2,
    };
    const statesOf = (dpSharding: Composition["dpSharding"]) => {
      const { dims, terms } = compositionMemory({ ...twoStages, dpSharding });
      const knobs = { precision: "bf16", optimizer: "adamw" };
      return rankMemory({ model: "llama3.1-8b", batchSize: 2, knobs, dims, recipe: "pytorch" }, terms)[0]!;
    };
    const [replicated, zeroOne] = [statesOf("none"), statesOf("optimizer")];
    expect(zeroOne.optimizer).toBeCloseTo(replicated.optimizer / 64, 0);
    expect(zeroOne.buckets).toBe(replicated.buckets);
    expect(zeroOne.buckets).toBeGreaterThan(0);
    // ZeroRedundancyOptimizer under DDP: the fp32 weights and autocast's activations of ZeRO-0 (the recipe's words).
    expect([zeroOne.parameters, zeroOne.gradients, zeroOne.activations]).toEqual([
      replicated.parameters,
      replicated.gradients,
      replicated.activations,
    ]);
  });

  it("gives compositions that check out on the local testbed, one worker a node", () => {
    const layouts = [
      {},
      { parallelism: "fsdp" },
      { parallelism: "tensor" },
      { parallelism: "pipeline", microBatches: 3 },
    ];
    for (const knobs of layouts) {
      const composition = compositionOf(knobs, 3, 3, 6);
      if ("problem" in composition) throw new Error(composition.problem);
      expect(compositionProblems(composition, { nodes: 3, gpusPerNode: 1 }), JSON.stringify(knobs)).toEqual([]);
    }
  });
});

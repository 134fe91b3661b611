/**
 * pipeline: the blocks cut into stages (one per node unless pipelineStages says otherwise) that pass each
 * micro-batch's activations forward and its gradients back, under GPipe (every forward, then every backward) or 1F1B
 * (one forward, one backward in turn); the workers left over are replicas of each stage, their gradients averaged in
 * DDP's buckets (parallel/pipeline.py).
 */
import { TRAIN_KNOBS, shapeOf } from "../config/registry.ts";

import { pipelineTraffic } from "../workload/traffic.ts";
import { tensorWithout } from "./ddp.ts";
import { pipelineSamplesInFlight } from "./composition.ts";
import { degreeOf, dimsWith, numberKnob, refused } from "./dims.ts";
import type { Knobs, LayoutUnit } from "./unit.ts";

const scheduleOf = (knobs: Knobs) => String(knobs["pipelineSchedule"] ?? TRAIN_KNOBS.pipelineSchedule.default);

export const pipeline: LayoutUnit = {
  sumsWithReduction: false,
  dims(knobs, workers, nodes) {
    const tensorDegree = numberKnob(knobs, "tensorDegree");
    if (tensorDegree !== undefined && tensorDegree !== 1) return refused(tensorWithout("pipeline"));
    const pp = degreeOf(
      "pipelineStages",
      numberKnob(knobs, "pipelineStages"),
      workers > 1 ? Math.max(nodes, 2) : 1,
      workers,
    );
    if (typeof pp === "string") return refused(pp);
    return dimsWith({ pp, dpReplicate: workers / pp });
  },
  // The worker's own checks (parallel/pipeline.py), message for message, so that plan refuses the run before it starts.
  problem(knobs, batchSize, dims) {
    const microBatches = Number(knobs["microBatches"] ?? TRAIN_KNOBS.microBatches.default);
    if (batchSize % microBatches !== 0)
      return `batchSize ${batchSize} must be a multiple of microBatches ${microBatches}`;
    if (scheduleOf(knobs) === "1f1b" && microBatches < dims.pp) {
      return `pipelineSchedule 1f1b needs at least as many micro-batches as stages: microBatches ${microBatches} < ${dims.pp} stages (torch's Schedule1F1B refuses it)`;
    }
    return undefined;
  },
  traffic: (question, parts) => (parts.shape === undefined ? [] : pipelineTraffic(question, parts.shape)),
  memory(knobs, dims) {
    const microBatches = typeof knobs["microBatches"] === "number" ? knobs["microBatches"] : 4;
    return {
      sharding: "none",
      gradientBuckets: dims.dpReplicate > 1,
      samplesInFlight: (batchSize, stage) =>
        pipelineSamplesInFlight(
          batchSize,
          microBatches,
          knobs["pipelineSchedule"] === "1f1b" ? "1f1b" : "gpipe",
          dims.pp,
          stage,
        ),
    };
  },
  compose(knobs, batchSize) {
    const microBatches = Number(knobs["microBatches"] ?? TRAIN_KNOBS.microBatches.default);
    return {
      dpSharding: "none",
      schedule: scheduleOf(knobs) === "1f1b" ? "1f1b" : "gpipe",
      microBatches,
      microBatchSize: batchSize / microBatches,
    };
  },
  step: (knobs, dims, shares) => ({
    pipeline: {
      stages: dims.pp,
      microBatches: Number(knobs["microBatches"] ?? 4),
      slowestStageShare: shares.slowestStage,
    },
  }),
  label: (knobs) => `pipeline ${scheduleOf(knobs)}, ${String(knobs["microBatches"] ?? 4)} micro-batches`,
  splitLabel: (knobs, _tensorDegree, nodes) =>
    `pipeline ${String(knobs["pipelineSchedule"])} ×${String(knobs["microBatches"])} over ${nodes} stages`,
  /**
   * One stage per node under both schedules, with every micro-batch count that divides the batch from one per stage up
   * to four per stage (a language model; problem() says what the worker takes). Counts that only the stage count
   * suggests (2 and 4 on 2 stages) missed the measured winner at batch 6, which was 3 micro-batches
   * (test/bench/README.md, "Layouts on 2 and 3 CPU nodes").
   */
  candidates({ model, batchSize, knobs, workers, nodes }) {
    const layout = pipeline.dims({}, workers, nodes);
    if (shapeOf(model, knobs) === undefined || workers < 2 || !layout.ok) return [];
    return microBatchCounts(batchSize, layout.dims.pp).flatMap((microBatches) =>
      ["gpipe", "1f1b"]
        .map((schedule) => ({ parallelism: "pipeline", pipelineSchedule: schedule, microBatches }))
        .filter((candidate) => pipeline.problem!(candidate, batchSize, layout.dims) === undefined),
    );
  },
};

/** Each count that divides the batch, from one micro-batch per stage to four per stage. */
function microBatchCounts(batchSize: number, stages: number): number[] {
  const counts: number[] = [];
  for (let count = stages; count <= Math.min(batchSize, 4 * stages); count++)
    if (batchSize % count === 0) counts.push(count);
  return counts;
}

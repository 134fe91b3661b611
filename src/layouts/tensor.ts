/**
 * tensor: each block's matrices split over every worker (Megatron's column and row parallel layers), two all-reduces
 * of the activations per block in forward and two in backward (parallel/tensor.py). With fewer ranks per group than
 * workers the rest would be data-parallel: that is fsdp with a tensorDegree.
 */
import { shapeOf } from "../config/registry.ts";
import { tensorTraffic } from "../workload/traffic.ts";
import { degreeOf, dimsWith, numberKnob, refused } from "./dims.ts";
import { tensorSplitLabel, wholeBatch, type LayoutUnit } from "./unit.ts";

export const tensor: LayoutUnit = {
  sumsWithReduction: false,
  dims(knobs, workers) {
    const tp = degreeOf("tensorDegree", numberKnob(knobs, "tensorDegree"), workers, workers);
    if (typeof tp === "string") return refused(tp);
    if (tp < workers) {
      return refused(
        `parallelism tensor with tensorDegree ${tp} of ${workers} workers: the other dimension would be data-parallel; use parallelism fsdp with tensorDegree ${tp} (FSDP x tensor, the 2-D layout torch supports)`,
      );
    }
    return dimsWith({ tp });
  },
  traffic: (question, parts) => (parts.shape === undefined ? [] : [tensorTraffic(question, parts.shape)]),
  memory: () => ({ sharding: "none", gradientBuckets: false, samplesInFlight: wholeBatch }),
  compose: (_knobs, batchSize) => ({ dpSharding: "none", microBatchSize: batchSize }),
  step: (_knobs, dims, shares) => (dims.tp > 1 ? { tensor: { degree: dims.tp, splitShare: shares.split } } : {}),
  label: () => "tensor",
  splitLabel: (_knobs, tensorDegree, _nodes, counted) => tensorSplitLabel(tensorDegree, counted),
  // Every worker one group: the heads must divide among them.
  candidates({ model, knobs, workers }) {
    const shape = shapeOf(model, knobs);
    return shape === undefined || workers < 2 || shape.heads % workers !== 0 ? [] : [{ parallelism: "tensor" }];
  },
};

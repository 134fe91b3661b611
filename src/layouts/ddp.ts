/**
 * ddp: a full replica of the model on every worker, its gradients summed by the run's reduction (src/reductions/) in
 * DDP's buckets, or by Horovod (parallel/ddp.py, parallel/horovod.py).
 */
import { bucketedAllReduce } from "../workload/traffic.ts";
import { dimsWith, numberKnob, refused } from "./dims.ts";
import { tensorSplitLabel, wholeBatch, type LayoutUnit } from "./unit.ts";

export const ddp: LayoutUnit = {
  sumsWithReduction: true,
  dims(knobs, workers) {
    const tensorDegree = numberKnob(knobs, "tensorDegree");
    if (tensorDegree !== undefined && tensorDegree !== 1) return refused(tensorWithout("ddp"));
    return dimsWith({ dpReplicate: workers });
  },
  traffic: (question, parts) => [bucketedAllReduce(question, parts.whole)],
  memory: () => ({ sharding: "none", gradientBuckets: true, samplesInFlight: wholeBatch }),
  compose: (_knobs, batchSize) => ({ dpSharding: "none", microBatchSize: batchSize }),
  step: () => ({}),
  label: () => "ddp",
  splitLabel: (_knobs, tensorDegree, _nodes, counted) => tensorSplitLabel(tensorDegree, counted),
  candidates: () => [{ parallelism: "ddp" }],
};

/** A layout without tensor parallelism given a tensor degree (the worker's message). */
export function tensorWithout(parallelism: string): string {
  return `tensorDegree with parallelism ${parallelism}: tensor parallelism goes with fsdp (FSDP x tensor, the 2-D layout torch supports) or parallelism tensor`;
}

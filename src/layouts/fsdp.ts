/**
 * fsdp: parameters, gradients and optimizer state sharded over the workers (PyTorch's fully_shard, ZeRO-3 under full,
 * ZeRO-2 under grad-op), optionally over tensor-parallel groups (FSDP × tensor, torch's 2-D layout); fsdpSharding none
 * shards nothing, the control (parallel/fsdp.py).
 */
import { shardedTraffic, tensorTraffic } from "../workload/traffic.ts";
import type { DataParallelSharding } from "./composition.ts";
import { degreeOf, dimsWith, numberKnob, refused } from "./dims.ts";
import { tensorSplitLabel, wholeBatch, type Knobs, type LayoutUnit } from "./unit.ts";

const shardingOf = (knobs: Knobs) => String(knobs["fsdpSharding"] ?? "full");

/** FSDP's shardings as ZeRO's stages: full shards the parameters too (ZeRO-3), grad-op the gradients (ZeRO-2). */
const DP_SHARDING: Readonly<Record<string, DataParallelSharding>> = { full: "full", "grad-op": "gradients" };
const dpShardingOf = (knobs: Knobs): DataParallelSharding => DP_SHARDING[shardingOf(knobs)] ?? "none";

export const fsdp: LayoutUnit = {
  sumsWithReduction: false,
  dims(knobs, workers) {
    const tp = degreeOf("tensorDegree", numberKnob(knobs, "tensorDegree"), 1, workers);
    if (typeof tp === "string") return refused(tp);
    if (shardingOf(knobs) === "none") {
      return tp > 1
        ? refused("fsdpSharding none with tensorDegree: the control shards nothing; use full")
        : dimsWith({ dpReplicate: workers });
    }
    return dimsWith({ dpShard: workers / tp, tp });
  },
  traffic(question, parts) {
    const sharded = shardedTraffic(question, parts);
    return question.dims.tp > 1 && parts.shape !== undefined
      ? [...sharded, tensorTraffic(question, parts.shape)]
      : sharded;
  },
  memory: (knobs) => ({ sharding: dpShardingOf(knobs), gradientBuckets: false, samplesInFlight: wholeBatch }),
  compose: (knobs, batchSize) => ({ dpSharding: dpShardingOf(knobs), microBatchSize: batchSize }),
  step: (_knobs, dims, shares) => (dims.tp > 1 ? { tensor: { degree: dims.tp, splitShare: shares.split } } : {}),
  label: (knobs) =>
    `fsdp ${shardingOf(knobs)}${knobs["tensorDegree"] === undefined ? "" : ` × tensor ${String(knobs["tensorDegree"])}`}`,
  splitLabel: (_knobs, tensorDegree, _nodes, counted) => tensorSplitLabel(tensorDegree, counted),
  candidates: () => [
    { parallelism: "fsdp", fsdpSharding: "full" },
    { parallelism: "fsdp", fsdpSharding: "grad-op" },
  ],
};

/**
 * sharded-parameter-server: rank r serves the r-th 1/W of every bucket. Every rank sends each other node's P ranks
 * their shards (S/W each) and gets the sums back, so a node's link carries (N-1)/N · P · S each phase:
 * t >= 2(N-1)/N · P · S/B.
 */
import { gbpsToBytesPerSecond } from "../results/cost-model.ts";
import { fp16Factor, type ReductionUnit } from "./unit.ts";

export const shardedParameterServer: ReductionUnit = {
  lowerBoundSeconds: (bytes, { nodes, processesPerNode: perNode }, linkGbps) =>
    (((2 * (nodes - 1)) / nodes) * perNode * bytes) / gbpsToBytesPerSecond(linkGbps),
  wireBytesPerStep: (gradientBytes, knobs) => gradientBytes * fp16Factor(knobs),
};

/**
 * ring: torch.distributed's all-reduce (DDP's own, or Horovod's). A ring of W = N·P ranks crosses each node's link
 * once per direction and every ring edge carries 2(W-1)/W · S, so t >= 2(W-1)/W · S/B (P = 1: Patarasuk & Yuan's
 * 2(N-1)/N).
 */
import { ringAllReduceLowerBoundSeconds } from "../results/cost-model.ts";
import { fp16Factor, type ReductionUnit } from "./unit.ts";

export const ring: ReductionUnit = {
  lowerBoundSeconds: (bytes, { nodes, processesPerNode }, linkGbps) =>
    ringAllReduceLowerBoundSeconds(bytes, nodes * processesPerNode, linkGbps),
  wireBytesPerStep: (gradientBytes, knobs) => gradientBytes * fp16Factor(knobs),
};

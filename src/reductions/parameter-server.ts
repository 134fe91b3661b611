/**
 * parameter-server: every rank to rank 0 and back.
 * - On full-duplex links of B each way (a switch port): the server's link receives the (N-1)·P gradients of the other
 *   nodes, then sends as many back, t >= 2(N-1)·P · S/B.
 * - On links shaped on egress only (as ringlab's tc shaping is): each other node pushes its P gradients through its
 *   own link at once and the server's unshaped ingress takes them all, so only the way back is (N-1)-fold:
 *   t >= (P + (N-1)·P) · S/B = N·P · S/B.
 */
import { gbpsToBytesPerSecond } from "../results/cost-model.ts";
import { fp16Factor, type ReductionUnit } from "./unit.ts";

export const parameterServer: ReductionUnit = {
  lowerBoundSeconds: (bytes, { nodes, processesPerNode: perNode }, linkGbps, egressShaped) =>
    ((egressShaped ? nodes * perNode : 2 * (nodes - 1) * perNode) * bytes) / gbpsToBytesPerSecond(linkGbps),
  wireBytesPerStep: (gradientBytes, knobs) => gradientBytes * fp16Factor(knobs),
};

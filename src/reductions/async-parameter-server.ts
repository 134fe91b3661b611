/**
 * async-parameter-server: the parameter server's exchange (the gradient in, the parameters out, each whole), of which
 * one rank's step pays only its share. Its probe, the parameter server's, times every rank's exchange at once (W·S/B
 * through the server's egress-shaped link, W ranks); one rank's step waits only for its own gradient in and its
 * parameters out, 2·S/B, and the steps of a round cannot outpace the server's link sending the other W-1 ranks their
 * parameters, (W-1)·S/B: max(2, W-1)/W.
 */
import { parameterServer } from "./parameter-server.ts";
import type { ReductionUnit } from "./unit.ts";

const share = (ranks: number) => (ranks > 1 ? Math.max(2, ranks - 1) / ranks : 1);

export const asyncParameterServer: ReductionUnit = {
  lowerBoundSeconds: (bytes, placement, linkGbps, egressShaped) =>
    share(placement.nodes * placement.processesPerNode) *
    parameterServer.lowerBoundSeconds(bytes, placement, linkGbps, egressShaped),
  wireBytesPerStep: (gradientBytes) => gradientBytes,
  exchangeShare: share,
};

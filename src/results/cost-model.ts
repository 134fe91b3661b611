/**
 * The ring all-reduce cost model and the efficiency numbers the report puts next to every measurement. Pure
 * arithmetic, a leaf: it imports nothing, not even the worker's registry (test/results/imports.test.ts); units are
 * in the names.
 */

/** Gbit/s to bytes per second. */
export function gbpsToBytesPerSecond(gbps: number): number {
  return (gbps * 1e9) / 8;
}

/**
 * Lower bound on one ring all-reduce of `bytes` over `ranks` ranks on links of `linkGbps`, latency `latencySeconds`
 * per hop: t >= 2(N-1)·a + 2(N-1)/N · S/B (Patarasuk & Yuan 2009). Zero for a single rank.
 */
export function ringAllReduceLowerBoundSeconds(bytes: number, ranks: number, linkGbps: number, latencySeconds = 0): number {
  if (ranks <= 1) return 0;
  const steps = 2 * (ranks - 1);
  return steps * latencySeconds + ((steps / ranks) * bytes) / gbpsToBytesPerSecond(linkGbps);
}

/**
 * How gradients are summed across ranks: the reductions the bounds below cover, which are the worker's --reduction
 * choices (docker/worker/ringlab_worker/registry.json, src/config/registry.ts; test/config/registry.test.ts checks
 * that both list the same). This order is the report's order of probe series.
 */
export const REDUCTIONS = ["ring", "parameter-server", "sharded-parameter-server", "powersgd", "local-sgd", "async-parameter-server"] as const;
export type Reduction = (typeof REDUCTIONS)[number];

/** Where the ranks run: `nodes` nodes with `processesPerNode` ranks each, node by node in rank order. */
export interface Placement {
  readonly nodes: number;
  readonly processesPerNode: number;
}

/**
 * Lower bound on summing `bytes` (S) over every rank of `placement` with `reduction`, on node links of B =
 * `linkGbps`; W = N·P ranks, and what stays inside a node costs nothing here. Zero on one node.
 * - ring: a ring of W ranks crosses each node's link once per direction and every ring edge carries
 *   2(W-1)/W · S, so t >= 2(W-1)/W · S/B (P = 1: Patarasuk & Yuan's 2(N-1)/N).
 * - sharded parameter server: every rank sends each other node's P ranks their shards (S/W each) and gets the
 *   sums back, so a node's link carries (N-1)/N · P · S each phase: t >= 2(N-1)/N · P · S/B.
 * - parameter server on full-duplex links of B each way (a switch port): the server's link receives the
 *   (N-1)·P gradients of the other nodes, then sends as many back, t >= 2(N-1)·P · S/B.
 * - parameter server on links shaped on egress only (`egressShaped`, as ringlab's tc shaping is): each other
 *   node pushes its P gradients through its own link at once and the server's unshaped ingress takes them
 *   all, so only the way back is (N-1)-fold: t >= (P + (N-1)·P) · S/B = N·P · S/B.
 * - powersgd and local-sgd: ring all-reduces of fewer bytes, so the ring's bound with S their bytes per step
 *   (PowerSGD's factors and uncompressed tensors; local SGD's parameters / its period: the worker's wireBytesPerStep).
 * - async-parameter-server: the parameter server's exchange, of which one rank's step pays only its share
 *   (exchangeShare): no barrier, so a step waits for its own gradient in and its own parameters out.
 */
export function reductionLowerBoundSeconds(reduction: Reduction, bytes: number, placement: Placement, linkGbps: number, egressShaped: boolean): number {
  const { nodes, processesPerNode: perNode } = placement;
  if (nodes <= 1) return 0;
  const ranks = nodes * perNode;
  const rate = gbpsToBytesPerSecond(linkGbps);
  switch (reduction) {
    case "ring": case "powersgd": case "local-sgd": return ringAllReduceLowerBoundSeconds(bytes, ranks, linkGbps);
    case "sharded-parameter-server": return (2 * (nodes - 1) / nodes) * perNode * bytes / rate;
    case "parameter-server": return (egressShaped ? nodes * perNode : 2 * (nodes - 1) * perNode) * bytes / rate;
    case "async-parameter-server": return exchangeShare(reduction, ranks) * reductionLowerBoundSeconds("parameter-server", bytes, placement, linkGbps, egressShaped);
  }
}

/**
 * The share of its probe's exchange that one training step pays: 1, except for the asynchronous server. Its probe,
 * the parameter server's, times every rank's exchange at once (W·S/B through the server's egress-shaped link, W
 * ranks); one rank's step waits only for its own gradient in and its parameters out, 2·S/B, and the steps of a round
 * cannot outpace the server's link sending the other W-1 ranks their parameters, (W-1)·S/B: max(2, W-1)/W.
 */
export function exchangeShare(reduction: Reduction, ranks: number): number {
  return reduction === "async-parameter-server" && ranks > 1 ? Math.max(2, ranks - 1) / ranks : 1;
}

export function isReduction(value: unknown): value is Reduction {
  return (REDUCTIONS as readonly unknown[]).includes(value);
}

/** nccl-tests' algorithm bandwidth: bytes moved per second of one all-reduce, in Gbit/s. */
export function algorithmBandwidthGbps(bytes: number, seconds: number): number {
  return (bytes * 8) / seconds / 1e9;
}

/** nccl-tests' bus bandwidth: algbw · 2(N-1)/N, comparable with the link rate whatever N is. */
export function busBandwidthGbps(algorithmGbps: number, ranks: number): number {
  return ranks <= 1 ? 0 : (algorithmGbps * 2 * (ranks - 1)) / ranks;
}

/** Throughput over n nodes against n times the single-node throughput. */
export function scalingEfficiency(throughput: number, nodes: number, singleNodeThroughput: number): number {
  return throughput / (nodes * singleNodeThroughput);
}

export interface EfficiencyCeiling {
  /** Compute and all-reduce one after the other: t_c / (t_c + t_ar). */
  readonly noOverlap: number;
  /** All-reduce hidden behind compute as far as possible: min(1, t_c / t_ar). */
  readonly perfectOverlap: number;
}

/** The best scaling efficiency a step with compute `computeSeconds` and all-reduce `allReduceSeconds` can reach. */
export function efficiencyCeiling(computeSeconds: number, allReduceSeconds: number): EfficiencyCeiling {
  if (allReduceSeconds <= 0) return { noOverlap: 1, perfectOverlap: 1 };
  return {
    noOverlap: computeSeconds / (computeSeconds + allReduceSeconds),
    perfectOverlap: Math.min(1, computeSeconds / allReduceSeconds),
  };
}

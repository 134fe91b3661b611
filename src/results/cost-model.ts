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
export function ringAllReduceLowerBoundSeconds(
  bytes: number,
  ranks: number,
  linkGbps: number,
  latencySeconds = 0,
): number {
  if (ranks <= 1) return 0;
  const steps = 2 * (ranks - 1);
  return steps * latencySeconds + ((steps / ranks) * bytes) / gbpsToBytesPerSecond(linkGbps);
}

/** Where the ranks run: `nodes` nodes with `processesPerNode` ranks each, node by node in rank order. */
export interface Placement {
  readonly nodes: number;
  readonly processesPerNode: number;
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

/**
 * The ring all-reduce cost model (../shared/ANCHORS.md) and the efficiency numbers the report puts next to
 * every measurement. Pure arithmetic, a leaf: it imports nothing from ringlab; units are in the names.
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

/** A mean of n samples and the half-width of its 95% confidence interval. */
export interface MeanWithInterval {
  readonly mean: number;
  /** Student's t; 0 for one sample, which gives no interval. */
  readonly halfWidth95: number;
  readonly n: number;
}

export function meanWithInterval(samples: readonly number[]): MeanWithInterval {
  const n = samples.length;
  if (n === 0) return { mean: Number.NaN, halfWidth95: Number.NaN, n };
  const mean = samples.reduce((a, b) => a + b, 0) / n;
  if (n === 1) return { mean, halfWidth95: 0, n };
  const variance = samples.reduce((sum, x) => sum + (x - mean) ** 2, 0) / (n - 1);
  return { mean, halfWidth95: studentT975(n - 1) * Math.sqrt(variance / n), n };
}

/** Two-sided 95% quantile of Student's t for `df` degrees of freedom. */
export function studentT975(df: number): number {
  const table = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131,
    2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];
  return df <= table.length ? table[df - 1]! : 1.96;
}

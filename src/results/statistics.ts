/**
 * The statistics ringlab reads measurements with: a mean with its Student-t 95% interval, the median and the spread
 * beside it, and quantiles. Pure arithmetic, a leaf like the cost model (test/results/imports.test.ts).
 */

/** A mean of n samples and the half-width of its 95% confidence interval, with the median and the spread beside it. */
export interface MeanWithInterval {
  readonly mean: number;
  /** Student's t; 0 for one sample, which gives no interval. */
  readonly halfWidth95: number;
  readonly n: number;
  /** The middle sample (the mean of the middle two for an even n): what one outlying repeat cannot drag. */
  readonly median: number;
  /** Sample standard deviation / mean; null for fewer than two samples (no spread to speak of) or a zero mean. */
  readonly coefficientOfVariation: number | null;
}

export function meanWithInterval(samples: readonly number[]): MeanWithInterval {
  const n = samples.length;
  if (n === 0)
    return { mean: Number.NaN, halfWidth95: Number.NaN, n, median: Number.NaN, coefficientOfVariation: null };
  const mean = samples.reduce((a, b) => a + b, 0) / n;
  const sorted = [...samples].sort((a, b) => a - b);
  const middle = Math.floor(n / 2);
  const median = n % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  if (n === 1) return { mean, halfWidth95: 0, n, median, coefficientOfVariation: null };
  const variance = samples.reduce((sum, x) => sum + (x - mean) ** 2, 0) / (n - 1);
  return {
    mean,
    halfWidth95: studentT975(n - 1) * Math.sqrt(variance / n),
    n,
    median,
    coefficientOfVariation: mean === 0 ? null : Math.sqrt(variance) / mean,
  };
}

/** Two-sided 95% quantile of Student's t for `df` degrees of freedom. */
export function studentT975(df: number): number {
  const table = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
    2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
  ];
  return df <= table.length ? table[df - 1]! : 1.96;
}

/** Quantile of sorted values by linear interpolation between order statistics (R's type 7). */
export function quantile(sorted: readonly number[], probability: number): number {
  const position = probability * (sorted.length - 1);
  const below = Math.floor(position);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below]! + (position - below) * (sorted[above]! - sorted[below]!);
}

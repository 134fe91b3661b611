/**
 * A communication model fitted from a campaign's own all-reduce probe, and the training step it predicts.
 * Ring all-reduce of S bytes over N ranks: t(S) = 2(N-1)·α + 2(N-1)/N · S·β, with α the latency of one ring
 * step and β the time per byte on a link (Patarasuk & Yuan 2009). Pure arithmetic, a leaf like cost-model.ts.
 */

export interface ProbeSample {
  readonly sizeBytes: number;
  readonly timeSeconds: number;
}

export interface AlphaBetaFit {
  /** Seconds per ring step, the latency part. */
  readonly alphaSeconds: number;
  /** Seconds per byte on each link. */
  readonly betaSecondsPerByte: number;
  /** 8 / β: the link rate the probe behaved as, in Gbit/s (comparable with busbw). */
  readonly effectiveGbps: number;
  /** Coefficient of determination of the fit over the samples' times; 1 for exact data. */
  readonly rSquared: number;
  readonly samples: number;
}

/** Steps of one ring all-reduce: N-1 to reduce-scatter, N-1 to all-gather. */
export function ringSteps(ranks: number): number {
  return 2 * (ranks - 1);
}

/** A collective as the worker's layouts record it (parallel/*.py traffic()). */
export type CollectiveOp = "all_reduce" | "all_gather" | "reduce_scatter" | "send";

/**
 * Ring steps and the share of S one rank sends, per call of a collective over `ranks` (S: the all-reduced buffer,
 * the gathered whole, or one message): an all-reduce 2(N−1) steps and 2(N−1)/N of S, an all-gather or a
 * reduce-scatter half of that, a send one step and all of S.
 */
export function collectiveShape(op: CollectiveOp, ranks: number): { steps: number; share: number } {
  if (op === "send") return { steps: 1, share: 1 };
  if (op === "all_reduce") return { steps: ringSteps(ranks), share: ringSteps(ranks) / ranks };
  return { steps: ranks - 1, share: (ranks - 1) / ranks };
}

/**
 * Least squares of t = a + b·S over the samples, then α = a / 2(N-1) and β = b·N / 2(N-1) (another collective: a over
 * its steps, b over its share, collectiveShape). A negative intercept
 * (no latency can be negative) is refitted through the origin: the constrained least-squares optimum then lies
 * on α = 0. Null with fewer than two distinct sizes or one rank, which determine no line.
 */
export function fitAlphaBeta(
  samples: readonly ProbeSample[],
  ranks: number,
  op: CollectiveOp = "all_reduce",
): AlphaBetaFit | null {
  if (ranks < 2 || new Set(samples.map((sample) => sample.sizeBytes)).size < 2) return null;
  const line = leastSquaresLine(samples);
  const { intercept, slope } = line.intercept >= 0 ? line : { intercept: 0, slope: slopeThroughOrigin(samples) };
  const { steps, share } = collectiveShape(op, ranks);
  const betaSecondsPerByte = slope / share;
  return {
    alphaSeconds: intercept / steps,
    betaSecondsPerByte,
    effectiveGbps: betaSecondsPerByte > 0 ? 8 / betaSecondsPerByte / 1e9 : Number.POSITIVE_INFINITY,
    rSquared: rSquared(samples, (size) => intercept + slope * size),
    samples: samples.length,
  };
}

/** The fitted time of one all-reduce of `bytes` over `ranks` ranks. */
export function allReduceSeconds(
  fit: Pick<AlphaBetaFit, "alphaSeconds" | "betaSecondsPerByte">,
  bytes: number,
  ranks: number,
): number {
  if (ranks < 2) return 0;
  const steps = ringSteps(ranks);
  return steps * fit.alphaSeconds + (steps / ranks) * bytes * fit.betaSecondsPerByte;
}

function leastSquaresLine(samples: readonly ProbeSample[]): { intercept: number; slope: number } {
  const n = samples.length;
  const meanSize = samples.reduce((sum, s) => sum + s.sizeBytes, 0) / n;
  const meanTime = samples.reduce((sum, s) => sum + s.timeSeconds, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const { sizeBytes, timeSeconds } of samples) {
    covariance += (sizeBytes - meanSize) * (timeSeconds - meanTime);
    variance += (sizeBytes - meanSize) ** 2;
  }
  const slope = covariance / variance;
  return { intercept: meanTime - slope * meanSize, slope };
}

function slopeThroughOrigin(samples: readonly ProbeSample[]): number {
  const sizeTimesTime = samples.reduce((sum, s) => sum + s.sizeBytes * s.timeSeconds, 0);
  const sizeSquared = samples.reduce((sum, s) => sum + s.sizeBytes ** 2, 0);
  return sizeTimesTime / sizeSquared;
}

function rSquared(samples: readonly ProbeSample[], predict: (sizeBytes: number) => number): number {
  const meanTime = samples.reduce((sum, s) => sum + s.timeSeconds, 0) / samples.length;
  const residual = samples.reduce((sum, s) => sum + (s.timeSeconds - predict(s.sizeBytes)) ** 2, 0);
  const total = samples.reduce((sum, s) => sum + (s.timeSeconds - meanTime) ** 2, 0);
  return total === 0 ? (residual === 0 ? 1 : 0) : 1 - residual / total;
}

/** PyTorch DDP's default bucket_cap_mb; DDP counts it in MiB (bucket_cap_mb · 1024 · 1024 bytes). */
export const DDP_DEFAULT_BUCKET_CAP_MB = 25;

export interface TrainingStepInput {
  /** t_c: one step's compute on one node, batch size / single-node throughput per worker. */
  readonly computeSeconds: number;
  /** Bytes every rank all-reduces per step. */
  readonly gradientBytes: number;
  readonly ranks: number;
  /** @default DDP_DEFAULT_BUCKET_CAP_MB */
  readonly bucketCapMb?: number;
  /**
   * Ring all-reduces per step, each paying its 2(N-1)·α (allReducesPerStep); default: one per DDP bucket of
   * gradientBytes.
   */
  readonly allReduces?: number;
}

export interface TrainingStepPrediction {
  readonly buckets: number;
  /** Σ over buckets of each bucket's all-reduce, each paying its own 2(N-1)·α. */
  readonly allReduceSeconds: number;
  /** t_c + Σ t_ar: compute, then communication. */
  readonly noOverlapStepSeconds: number;
  /** max(t_c, Σ t_ar): communication hidden behind compute as far as it can be. */
  readonly fullOverlapStepSeconds: number;
  /** t_c over the step time: throughput against n × one node, which steps in t_c. */
  readonly noOverlapEfficiency: number;
  readonly fullOverlapEfficiency: number;
}

/** One data-parallel step under the fitted model, at both overlap bounds. */
export function predictTrainingStep(
  fit: Pick<AlphaBetaFit, "alphaSeconds" | "betaSecondsPerByte">,
  input: TrainingStepInput,
): TrainingStepPrediction {
  const { gradientBytes, ranks } = input;
  const buckets = bucketsOf(input);
  // The buckets' sizes add up to the gradient: the bandwidth term is paid once, the latency term per bucket.
  const latencySeconds = ranks < 2 ? 0 : (input.allReduces ?? buckets) * ringSteps(ranks) * fit.alphaSeconds;
  return stepOf(
    input.computeSeconds,
    buckets,
    latencySeconds +
      allReduceSeconds({ alphaSeconds: 0, betaSecondsPerByte: fit.betaSecondsPerByte }, gradientBytes, ranks),
  );
}

export interface HierarchicalStepInput extends Omit<TrainingStepInput, "ranks"> {
  readonly nodes: number;
  /** Ranks on each node (GPUs per node). */
  readonly perNode: number;
}

/**
 * One step with a two-level all-reduce (Horovod's hierarchical all-reduce; NCCL's rings inside and between nodes):
 * reduce-scatter inside each node over the node's own link (NVLink, PCIe), all-reduce between nodes of each rank's
 * 1/G share (G rings at once through the node's network, together 2(N−1)/N · S per node), all-gather inside the node:
 * 2(G−1)α_in + 2(G−1)/G · S·β_in + 2(N−1)α_net + 2(N−1)/N · S·β_net, the latency per bucket.
 */
export function predictHierarchicalStep(
  inside: Pick<AlphaBetaFit, "alphaSeconds" | "betaSecondsPerByte">,
  between: Pick<AlphaBetaFit, "alphaSeconds" | "betaSecondsPerByte">,
  input: HierarchicalStepInput,
): TrainingStepPrediction {
  const { gradientBytes, nodes, perNode } = input;
  const buckets = bucketsOf(input);
  const latencySeconds =
    buckets *
    ((perNode < 2 ? 0 : ringSteps(perNode) * inside.alphaSeconds) +
      (nodes < 2 ? 0 : ringSteps(nodes) * between.alphaSeconds));
  const bandwidthSeconds =
    allReduceSeconds({ alphaSeconds: 0, betaSecondsPerByte: inside.betaSecondsPerByte }, gradientBytes, perNode) +
    allReduceSeconds({ alphaSeconds: 0, betaSecondsPerByte: between.betaSecondsPerByte }, gradientBytes, nodes);
  return stepOf(input.computeSeconds, buckets, latencySeconds + bandwidthSeconds);
}

function bucketsOf(input: Pick<TrainingStepInput, "gradientBytes" | "bucketCapMb">): number {
  const bucketBytes = (input.bucketCapMb ?? DDP_DEFAULT_BUCKET_CAP_MB) * 1024 * 1024;
  return Math.max(1, Math.ceil(input.gradientBytes / bucketBytes));
}

function stepOf(computeSeconds: number, buckets: number, allReduce: number): TrainingStepPrediction {
  const noOverlapStepSeconds = computeSeconds + allReduce;
  const fullOverlapStepSeconds = Math.max(computeSeconds, allReduce);
  return {
    buckets,
    allReduceSeconds: allReduce,
    noOverlapStepSeconds,
    fullOverlapStepSeconds,
    noOverlapEfficiency: computeSeconds / noOverlapStepSeconds,
    fullOverlapEfficiency: computeSeconds / fullOverlapStepSeconds,
  };
}

/**
 * The share φ of the hideable time, min(t_c, Σ t_ar), that DDP hid behind backward in a measured step:
 * measured = t_c + Σ t_ar − φ·min(t_c, Σ t_ar). 0 is no overlap, 1 full overlap; below 0 a step slower than the
 * no-overlap model (something besides the link cost time), above 1 faster than full overlap allows.
 */
export function overlapShare(computeSeconds: number, allReduceSeconds: number, measuredStepSeconds: number): number {
  return (computeSeconds + allReduceSeconds - measuredStepSeconds) / Math.min(computeSeconds, allReduceSeconds);
}

/** φ as a step can have it: no less than no overlap (0), no more than full overlap (1). */
export function boundedShare(phi: number): number {
  return Math.min(1, Math.max(0, phi));
}

/**
 * One step with a share φ (bounded to 0..1) of the hideable time hidden: between the no-overlap and full-overlap
 * bounds.
 */
export function overlappedStepSeconds(computeSeconds: number, allReduceSeconds: number, phi: number): number {
  return computeSeconds + allReduceSeconds - boundedShare(phi) * Math.min(computeSeconds, allReduceSeconds);
}

/**
 * One training step on any layout (issue #52, #53): its compute and its collectives, each timed from a link's α and β
 * (results/comm-model.ts, the ring's: α a step's latency, β a byte's time on one link). Pure arithmetic, a leaf.
 *
 *   all-reduce of S over N      2(N−1)·α + 2(N−1)/N·S·β   (ring: reduce-scatter, then all-gather)
 *   all-gather, reduce-scatter  (N−1)·α + (N−1)/N·S·β     (half of it; S the gathered whole)
 *   send of S                   α + S·β                   (one step on one link)
 *
 * With a probe of the collective itself its own α and β are used (nccl-tests' all_gather_perf and reduce_scatter_perf
 * have it so); without one they are the ring all-reduce's, and the time is labelled derived. A step on a data-parallel
 * or sharded layout is its compute and its collectives, less the share φ of the smaller that the calibration's own
 * runs of the layout hid (comm-model.ts overlappedStepSeconds); tensor parallelism divides the split matrices' compute
 * by tp; a pipeline of p stages runs m micro-batches in m + p − 1 slots of its slowest stage (GPipe and 1F1B alike: the
 * bubble is (p−1)/(m+p−1) of the step), each slot a micro-batch's forward and backward and the two messages across a
 * boundary, less φ of the smaller likewise. Interleaved 1F1B with v chunks per rank fills the p − 1 warm-up and drain
 * slots in 1/v of the time each, m + (p−1)/v slots (bubble (p−1)/(v·m+p−1)), and each micro-batch crosses v times as
 * many boundaries (Narayanan et al. 2021, §2.2.2: "the amount of communication also increases by v").
 */
import { pipelineBubbleShare } from "../layouts/composition.ts";
import { boundedShare, collectiveShape, overlappedStepSeconds, type CollectiveOp } from "./comm-model.ts";

export type { CollectiveOp };

export interface LinkCoefficients {
  readonly alphaSeconds: number;
  readonly betaSecondsPerByte: number;
}

export interface StepCollective {
  readonly op: CollectiveOp;
  /** Bytes of all the step's calls together. */
  readonly bytes: number;
  readonly calls: number;
  readonly ranks: number;
}

/** The time of a step's calls of one collective. */
export function collectiveSeconds(collective: StepCollective, link: LinkCoefficients): number {
  if (collective.ranks < 2) return 0;
  const { steps, share } = collectiveShape(collective.op, collective.ranks);
  return collective.calls * steps * link.alphaSeconds + share * collective.bytes * link.betaSecondsPerByte;
}

export interface LayoutStepInput {
  /** The layout's compute of one step on one worker holding the whole model (its single-node run). */
  readonly computeSeconds: number;
  readonly collectives: readonly StepCollective[];
  /** The link of each collective. */
  readonly linkOf: (op: CollectiveOp) => LinkCoefficients;
  /** φ, the share of min(compute, communication) hidden: the calibration's for the layout, 0 where none measured it. */
  readonly overlapShare: number;
  /** Tensor parallelism: the ranks a block's matrices are split over, and the share of the compute in them. */
  readonly tensor?: { readonly degree: number; readonly splitShare: number };
  /**
   * A pipeline: its stages, micro-batches, and the slowest stage's share of the compute; `measuredSeconds`, where a run
   * of the same pipeline measured its compute over all its slots (bubble included), replaces the model's of it.
   */
  readonly pipeline?: {
    readonly stages: number;
    readonly microBatches: number;
    readonly slowestStageShare: number;
    readonly measuredSeconds?: number;
    /** Model chunks per rank under interleaved 1F1B; absent: 1. */
    readonly virtualStages?: number;
  };
}

export interface LayoutStep {
  /** This rank's compute of the step, the slots a pipeline idles in included. */
  readonly computeSeconds: number;
  /** Every collective's time, one after another. */
  readonly communicationSeconds: number;
  readonly stepSeconds: number;
  /** A pipeline's idle share of the step, (p−1)/(v·m+p−1); 0 elsewhere. */
  readonly bubbleShare: number;
}

export function predictLayoutStep(input: LayoutStepInput): LayoutStep {
  const timed = (op: CollectiveOp) =>
    input.collectives.filter((c) => c.op === op).reduce((sum, c) => sum + collectiveSeconds(c, input.linkOf(op)), 0);
  const sends = input.collectives.filter((c) => c.op === "send");
  const others = timed("all_reduce") + timed("all_gather") + timed("reduce_scatter");
  if (input.pipeline !== undefined) {
    const { stages, microBatches, slowestStageShare } = input.pipeline;
    const virtualStages = input.pipeline.virtualStages ?? 1;
    const slots = microBatches + (stages - 1) / virtualStages;
    const perMicroBatch = (input.computeSeconds / microBatches) * slowestStageShare;
    // Each slot sends one micro-batch's activations forward and receives one's gradients: two messages.
    const message = sends.reduce(
      (sum, c) => sum + collectiveSeconds({ ...c, calls: 1, bytes: c.bytes / c.calls }, input.linkOf("send")),
      0,
    );
    const computeSeconds = input.pipeline.measuredSeconds ?? slots * perMicroBatch;
    const communicationSeconds = slots * 2 * virtualStages * message + others;
    return {
      computeSeconds,
      communicationSeconds,
      stepSeconds: overlappedStepSeconds(computeSeconds, communicationSeconds, input.overlapShare),
      bubbleShare: pipelineBubbleShare(stages, microBatches, virtualStages),
    };
  }
  const computeSeconds =
    input.tensor === undefined
      ? input.computeSeconds
      : input.computeSeconds * (1 - input.tensor.splitShare * (1 - 1 / input.tensor.degree));
  return {
    computeSeconds,
    communicationSeconds: others,
    stepSeconds: overlappedStepSeconds(computeSeconds, others, input.overlapShare),
    bubbleShare: 0,
  };
}

/**
 * The compute of a step measured as `stepSeconds` with `communicationSeconds` of collectives of which φ of the smaller
 * was hidden: the inverse of overlappedStepSeconds, so that a measured step less its collectives is its compute.
 */
export function computeOfStep(stepSeconds: number, communicationSeconds: number, overlapShare: number): number {
  const phi = boundedShare(overlapShare);
  const largerCompute = stepSeconds - (1 - phi) * communicationSeconds;
  if (largerCompute >= communicationSeconds || phi >= 1) return largerCompute;
  return (stepSeconds - communicationSeconds) / (1 - phi);
}

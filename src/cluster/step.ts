/**
 * A training step on a GPU cluster before anyone rents it (issue #69): one GPU's compute (./compute.ts) split by the
 * layout, each process group's collectives timed on the tiers it spans (./groups.ts, ./collectives.ts), what compute
 * hides of them (./overlap.ts), and the no-overlap and full-overlap bounds. Pure.
 */
import {
  collectiveTime,
  tierShares,
  type CollectiveTime,
  type GroupCollective,
  type PublishedCollectives,
} from "./collectives.ts";
import {
  computeOnGpu,
  type ComputeAnswer,
  type ComputeQuestion,
  type ImageCompute,
  type LanguageCompute,
} from "./compute.ts";
import { workerCount, type Cluster, type Sourced } from "./description.ts";
import {
  contextParallelCollectives,
  dataParallelCollectives,
  pipelineSends,
  tensorParallelCollectives,
  type LayoutDegrees,
  type StepShape,
} from "./groups.ts";
import { exposedCommunication, OVERLAP_SOURCE, withBubble } from "./overlap.ts";
import {
  computeWithSoftware,
  interNodeCap,
  PLAIN_SOFTWARE,
  withAsyncTensorParallel,
  type RunSoftware,
} from "./software.ts";

export interface ClusterQuestion {
  readonly cluster: Cluster;
  readonly workload: (LanguageCompute | ImageCompute) & { readonly parameters: number };
  readonly layout: LayoutDegrees;
  /** Samples a data-parallel replica computes in one micro-batch (a case's batch.micro). */
  readonly microSamples: number;
  readonly gradientAccumulation: number;
  readonly precision: string;
  readonly optimizer: string;
  readonly measured?: ComputeQuestion["measured"];
  readonly published: PublishedCollectives;
  /** torch.compile, Float8, async TP and the transport (./software.ts); default: none, the NICs' own transport. */
  readonly software?: RunSoftware;
}

export interface TimedGroupCollective extends GroupCollective, CollectiveTime {
  readonly exposedSeconds: number;
}

export interface ClusterPrediction {
  readonly gpus: number;
  /** Forward and backward on one GPU, its pipeline's bubble included. */
  readonly computeSeconds: number;
  readonly bubbleSeconds: number;
  readonly optimizerSeconds: number;
  readonly collectives: readonly TimedGroupCollective[];
  readonly exposedCommunicationSeconds: number;
  readonly stepSeconds: number;
  /** Every collective after compute: the slowest a step can be. */
  readonly noOverlapStepSeconds: number;
  /** Compute and communication side by side: the fastest. */
  readonly fullOverlapStepSeconds: number;
  /** Tokens (language) or images per second, per GPU: predicted, and at the no- and full-overlap bounds. */
  readonly perGpu: { readonly predicted: number; readonly noOverlap: number; readonly fullOverlap: number };
  readonly unit: "tokens" | "images";
  /** One GPU alone on the same per-GPU samples, without collectives or bubble, over the step: predicted and bounds. */
  readonly scalingEfficiency: { readonly predicted: number; readonly noOverlap: number; readonly fullOverlap: number };
  /** Model FLOPs per second per GPU (language models), recomputation not counted. */
  readonly modelTflopsPerGpu?: number;
  readonly computeBasis: ComputeAnswer["basis"];
  readonly sources: {
    readonly compute: string;
    readonly intraNode: Sourced;
    readonly interNode: Sourced;
    readonly overlap: string;
  };
}

/** A step's prediction, or what is missing to make one. */
export function predictClusterStep(question: ClusterQuestion): ClusterPrediction | { readonly missing: string } {
  const { cluster, layout, workload } = question;
  if (cluster.node.device.kind !== "gpu") return { missing: "a cluster of CPU nodes is predicted from a calibration" };
  const software = question.software ?? PLAIN_SOFTWARE;
  const samplesPerReplica = question.microSamples * layout.microBatches * question.gradientAccumulation;
  const samplesPerGpu = samplesPerReplica / (layout.pp * layout.cp);
  const gpu = cluster.node.device.gpu;
  const derived = computeOnGpu({
    gpu,
    precision: question.precision,
    workload,
    tensorParallel: layout.tp,
    samplesPerGpu,
    optimizerParameters: optimizerShare(question),
    optimizer: question.optimizer,
    ...(question.measured === undefined ? {} : { measured: question.measured }),
  });
  if ("missing" in derived) return derived;
  const compute = computeWithSoftware(
    derived,
    software,
    workload.kind === "language"
      ? {
          gpu,
          workload,
          tensorParallel: layout.tp,
          tokensPerGpu: samplesPerGpu * workload.sequence,
          tokensPerCall: (question.microSamples * workload.sequence) / layout.cp,
        }
      : undefined,
  );
  if ("missing" in compute) return compute;
  const collectives = stepCollectives(question);
  const cap = interNodeCap(software);
  const shares = {
    ...tierShares(cluster.node, question.published, cluster.nodes),
    ...(cap === undefined ? {} : { interNodeCapGBps: cap }),
  };
  const timed = collectives.map((collective) => ({ collective, ...collectiveTime(collective, cluster, shares) }));
  const overlap = exposedCommunication(timed, compute.seconds, layout);
  const computeSeconds = withBubble(compute.seconds, layout);
  const stepSeconds = computeSeconds + overlap.exposedSeconds + compute.optimizerSeconds;
  const noOverlap = computeSeconds + overlap.totalSeconds + compute.optimizerSeconds;
  const fullOverlap = Math.max(computeSeconds, overlap.totalSeconds) + compute.optimizerSeconds;
  const gpus = workerCount(cluster);
  const unitsPerSample = workload.kind === "language" ? workload.sequence : 1;
  const stepUnitsPerGpu = (layout.dp * samplesPerReplica * unitsPerSample) / gpus;
  const alone = compute.seconds + compute.optimizerSeconds;
  return {
    gpus,
    computeSeconds,
    bubbleSeconds: computeSeconds - compute.seconds,
    optimizerSeconds: compute.optimizerSeconds,
    collectives: timed.map(({ collective, seconds, algorithm, bottleneck }, index) => ({
      ...collective,
      seconds,
      algorithm,
      bottleneck,
      exposedSeconds: overlap.exposedEach[index]!,
    })),
    exposedCommunicationSeconds: overlap.exposedSeconds,
    stepSeconds,
    noOverlapStepSeconds: noOverlap,
    fullOverlapStepSeconds: fullOverlap,
    perGpu: {
      predicted: stepUnitsPerGpu / stepSeconds,
      noOverlap: stepUnitsPerGpu / noOverlap,
      fullOverlap: stepUnitsPerGpu / fullOverlap,
    },
    unit: workload.kind === "language" ? "tokens" : "images",
    scalingEfficiency: {
      predicted: alone / stepSeconds,
      noOverlap: alone / noOverlap,
      fullOverlap: alone / fullOverlap,
    },
    ...(workload.kind === "language"
      ? { modelTflopsPerGpu: (stepUnitsPerGpu * workload.flopsPerToken) / stepSeconds / 1e12 }
      : {}),
    computeBasis: compute.basis,
    sources: {
      compute: compute.source,
      intraNode: shares.intraNode,
      interNode:
        cap === undefined
          ? shares.interNode
          : {
              ...shares.interNode,
              source: `${shares.interNode.source}; at most ${cap.value} GB/s a node: ${cap.source}`,
            },
      overlap: OVERLAP_SOURCE,
    },
  };
}

/** The parameters whose optimizer step one GPU takes: its tensor and pipeline share, over dp·cp beyond ZeRO-0. */
function optimizerShare(question: ClusterQuestion): number {
  const { layout, workload } = question;
  const rank = workload.parameters / (layout.tp * layout.pp);
  return layout.dpSharding === "none" ? rank : rank / (layout.dp * layout.cp);
}

/** Every process group's collectives in one step. */
export function stepCollectives(question: ClusterQuestion): GroupCollective[] {
  const { layout, workload } = question;
  const perNode = question.cluster.node.devicesPerNode.value;
  const step: StepShape = {
    microSamples: question.microSamples,
    microBatchesPerStep: layout.microBatches * question.gradientAccumulation,
    precision: question.precision,
  };
  const rankParameters = workload.parameters / (layout.tp * layout.pp);
  // FSDP wraps each block and the root; DDP buckets ignore units.
  const units = workload.kind === "language" ? Math.ceil(workload.layers / layout.pp) + 1 : 1;
  const dataParallel = dataParallelCollectives(layout, rankParameters, units, question.precision, perNode);
  if (workload.kind !== "language") return dataParallel;
  // Forward runs 2 all-gathers and 2 reduce-scatters a block and micro-batch (./groups.ts): what async TP hides there.
  const forwardTensorCalls = 2 * Math.ceil(workload.layers / layout.pp) * step.microBatchesPerStep;
  return [
    ...dataParallel,
    ...withAsyncTensorParallel(
      tensorParallelCollectives(layout, workload, step, perNode),
      question.software ?? PLAIN_SOFTWARE,
      forwardTensorCalls,
    ),
    ...contextParallelCollectives(layout, workload, step, perNode),
    ...pipelineSends(layout, workload, step, perNode),
  ];
}

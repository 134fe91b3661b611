/**
 * Rough duration and cost of a campaign before it starts, for `ringlab plan`. Pure. The throughputs are
 * coarse guesses (documented below, and an image model's beside its figures in the worker's registry); the
 * all-reduce part comes from the ring lower bound.
 */
import { bandwidthGbps } from "../rules/bandwidth.ts";
import { checkpointingOf, recomputeFlopsPerToken, trainingFlopsPerToken } from "../workload/transformer.ts";
import { onDemandUsdPerHour } from "../catalogue/aws-instance-types.ts";
import { PARAMETER_COUNT, planningOf, TRAIN_KNOBS, shapeOf } from "../config/registry.ts";
import type { CampaignFile } from "../config/schema.ts";
import { isReduction, reductionLowerBoundSeconds } from "../reductions/index.ts";
import type { Placement } from "../results/cost-model.ts";
import type { WorkerImageSource } from "../rules/worker-image.ts";
import { InternalError } from "../util/errors.ts";
import { targetOf, type TargetEstimate } from "../targets/index.ts";
import { computeInput, inputQuestionOf, isMissing } from "../predict/inputs.ts";
import type { CampaignPlan, PlannedRun } from "./plan.ts";

/**
 * fp32 parameter counts of the worker's models (its registry: torchvision's counts, which its own definitions match;
 * inception_v3 without the aux head).
 */
export { PARAMETER_COUNT };

/**
 * A language model's training speed on one local testbed worker (one container with 2 cores to itself), to size
 * estimates only: a coarse planning figure for fp32 matrix products on 2 cores (the worker's own calibration measures
 * 7 GFLOP/s per CPU-second at 256 x 256). An image model's is its planning figure in the worker's registry
 * (registry.json: planning.cpuImagesPerSecond, beside where it came from). An AWS run's compute is what `ringlab
 * predict` takes for its instance type's GPU (src/predict/inputs.ts: published, scaled or assumed figures).
 */
const CPU_TRAINING_GFLOPS = 12;
/** Any language model on a GPU, to size estimates only: 30 % of a T4's 8.1 fp32 TFLOP/s. */
const GPU_TRAINING_GFLOPS = 2_400;

/**
 * One step's compute of a language model at `gflops`, activation checkpointing's recomputation included; undefined for
 * an image model.
 */
function languageStepSeconds(run: PlannedRun, gflops: number): number | undefined {
  const shape = shapeOf(run.model!, run.knobs);
  if (shape === undefined) return undefined;
  const perToken =
    trainingFlopsPerToken(shape, shape.sequenceLength) +
    recomputeFlopsPerToken(shape, shape.sequenceLength, checkpointingOf(run.knobs));
  return (run.batchSize! * shape.sequenceLength * perToken) / (gflops * 1e9);
}

/**
 * What the testbed's target says its machines take (src/targets/): the fastest all-reduce assumed, the orchestration
 * per run (ansible, start and remove workers, collect) and per campaign (up, configure, shape, down), how its nodes
 * get the worker image. A target without them (a Kubernetes cluster, whose machines ringlab does not know) is not
 * estimated.
 */
function estimateOf(file: CampaignFile): TargetEstimate {
  const estimate = targetOf(file.testbed).estimate;
  if (estimate === undefined)
    throw new InternalError(
      `a ${file.testbed.target} campaign has no estimate: its target does not say what its machines take`,
    );
  return estimate;
}
/** A worker's start: imports, torchrun, rendezvous, model set-up. */
const WORKER_START_SECONDS = 5;
/** The worker's defaults for the knobs that set a run's length (docker/worker/ringlab_worker/registry.json). */
const WORKER_DEFAULTS = {
  numWarmupBatches: TRAIN_KNOBS.numWarmupBatches.default,
  numBatchesPerIter: TRAIN_KNOBS.numBatchesPerIter.default,
  numIters: TRAIN_KNOBS.numIters.default,
};

/**
 * Getting the worker image onto the nodes, once per campaign. Building on the node pulls NVIDIA's PyTorch base
 * (about 9 GB compressed from nvcr.io, several Gbit/s inside AWS), extracts it and builds ringlab's layer: about 8
 * minutes, all nodes at once; pulling a finished image from a registry about 5. A tarball goes out through the
 * operator's uplink once per node (Ansible copies to all nodes at once, so they share it).
 */
const IMAGE_DELIVERY_SECONDS = { build: 8 * 60, registry: 5 * 60, present: 0 } as const;
/**
 * A `docker save` of the gpu worker image (NVIDIA's PyTorch base and ringlab's layer), when the file is not at hand.
 */
export const ASSUMED_TARBALL_BYTES = 18e9;
/** The operator's upload rate to AWS, when not given: a typical office or home uplink. */
export const ASSUMED_ADMIN_UPLINK_GBPS = 0.1;

export interface ImageDeliveryEstimate {
  readonly source: WorkerImageSource;
  readonly seconds: number;
  /** Tarball only: bytes sent from the operator's machine (size x nodes) and what the figure assumes. */
  readonly uploadBytes?: number;
  readonly assumption?: string;
}

export interface CampaignEstimate {
  /** Every planned run; with repeatUntil, every configuration to maxRepeats: the most it takes. */
  readonly seconds: number;
  /** With repeatUntil: every configuration precise after minRepeats, no conditional round needed. */
  readonly fewestSeconds?: number;
  /** Included in `seconds`. */
  readonly imageDelivery: ImageDeliveryEstimate;
  /** Instance-hours of the whole campaign (AWS only). */
  readonly instanceHours?: number;
  /** Undefined when the instance type's price is not in the catalogue (src/catalogue/aws-instance-types.ts). */
  readonly costUsd?: number;
  readonly hourlyPriceUsd?: number;
  /**
   * Training runs whose steps were timed at the calibration's predicted step (EstimateOptions.predictedStepSeconds), of
   * how many.
   */
  readonly predictedSteps?: { readonly runs: number; readonly of: number };
}

export interface EstimateOptions {
  /** CPU cores of the machine that hosts a local testbed: its nodes share them. @default 2 */
  readonly localCores?: number;
  /** Size of workerImageTarball, when the file exists. @default ASSUMED_TARBALL_BYTES */
  readonly workerImageTarballBytes?: number;
  /** The operator's upload rate in Gbit/s. @default ASSUMED_ADMIN_UPLINK_GBPS */
  readonly adminUplinkGbps?: number;
  /**
   * Each training run's step as `ringlab plan` predicts it from a calibration (run id to seconds): measured compute
   * and links of this machine, where the coarse figures above can be several times off (a CPU generation apart).
   * It replaces a run's compute and all-reduce bound; the worker's start and the orchestration stay as estimated.
   */
  readonly predictedStepSeconds?: ReadonlyMap<string, number>;
}

export function estimateImageDelivery(file: CampaignFile, options: EstimateOptions = {}): ImageDeliveryEstimate {
  const tb = file.testbed;
  const source = estimateOf(file).workerImageSource(tb);
  if (source !== "tarball") return { source, seconds: IMAGE_DELIVERY_SECONDS[source] };
  const tarballBytes = options.workerImageTarballBytes ?? ASSUMED_TARBALL_BYTES;
  const uplinkGbps = options.adminUplinkGbps ?? ASSUMED_ADMIN_UPLINK_GBPS;
  const uploadBytes = tarballBytes * tb.nodes;
  const size =
    options.workerImageTarballBytes === undefined
      ? `an assumed ${tarballBytes / 1e9} GB tarball (the file is not here)`
      : `${(tarballBytes / 1e9).toFixed(1)} GB`;
  const uplink =
    options.adminUplinkGbps === undefined ? `an assumed ${uplinkGbps * 1000} Mbit/s uplink` : `${uplinkGbps} Gbit/s`;
  return {
    source,
    seconds: (uploadBytes * 8) / (uplinkGbps * 1e9),
    uploadBytes,
    assumption: `${size} × ${tb.nodes} nodes at ${uplink}`,
  };
}

/**
 * One process per node unless the run says more (GPU nodes may run one per GPU by default: the estimate ignores that).
 */
function placementOf(run: PlannedRun): Placement {
  return { nodes: run.nodes, processesPerNode: run.processesPerNode ?? 1 };
}

export function estimateRunSeconds(run: PlannedRun, file: CampaignFile, options: EstimateOptions = {}): number {
  const estimate = estimateOf(file);
  const fastest = estimate.fastestAllReduceGbps;
  const link = run.bandwidth === null ? null : Math.min(bandwidthGbps(run.bandwidth) ?? fastest, fastest);
  let jobSeconds = WORKER_START_SECONDS;
  const reduction = isReduction(run.knobs.reduction) ? run.knobs.reduction : "ring";
  if (run.job === "allreduce") {
    const probe = file.campaign!.probe;
    for (let bytes = probe.minBytes; bytes <= probe.maxBytes; bytes *= probe.stepFactor) {
      jobSeconds +=
        (probe.warmupIters + probe.iters) *
        (reductionLowerBoundSeconds(reduction, bytes, placementOf(run), link ?? fastest, true) +
          2 * (run.nodes * (run.processesPerNode ?? 1) - 1) * 1e-4);
    }
  } else {
    const knobs = { ...WORKER_DEFAULTS, ...run.knobs };
    const steps =
      knobs.epochs === undefined
        ? Number(knobs.numWarmupBatches) + Number(knobs.numIters) * Number(knobs.numBatchesPerIter)
        : Number(knobs.epochs) * epochSteps(file, run);
    const predicted = options.predictedStepSeconds?.get(run.id);
    if (predicted !== undefined) return estimate.overheadSeconds.run + jobSeconds + steps * predicted;
    const instanceType = targetOf(file.testbed).instanceTypeOf?.(file.testbed);
    const computeSeconds =
      instanceType !== undefined
        ? gpuComputeSeconds(run, instanceType)
        : // Without instance types (the local testbed) the worker processes share this machine's cores: each gets 2 only while there are enough.
          (languageStepSeconds(run, CPU_TRAINING_GFLOPS) ??
            run.batchSize! / planningOf(run.model!).cpuImagesPerSecond) *
          Math.max(1, (2 * run.nodes * (run.processesPerNode ?? 1)) / (options.localCores ?? 2));
    const gradientBytes = PARAMETER_COUNT[run.model!] * (knobs.fp16Allreduce === true ? 2 : 4);
    const allReduceSeconds =
      link === null ? 0 : reductionLowerBoundSeconds(reduction, gradientBytes, placementOf(run), link, true);
    jobSeconds += steps * (computeSeconds + allReduceSeconds);
  }
  return estimate.overheadSeconds.run + jobSeconds;
}

/**
 * One step's compute on the instance type's GPU, as `ringlab predict` takes it (published, scaled from ringlab's
 * measured model ratios, or a T4's assumed figure); a GPU none of those covers (an A10G, an L4) gets the T4's
 * figure (the registry's planning.t4Fp32ImagesPerSecond), which no newer GPU is slower than.
 */
function gpuComputeSeconds(run: PlannedRun, instanceType: string): number {
  const input = computeInput(inputQuestionOf({ ...run, model: run.model!, batchSize: run.batchSize! }), {
    instanceType,
  });
  const language = languageStepSeconds(run, GPU_TRAINING_GFLOPS);
  if (language !== undefined) return language;
  return isMissing(input) ? run.batchSize! / planningOf(run.model!).t4Fp32ImagesPerSecond : input.seconds.mean;
}

/**
 * Time to train: the steps of one epoch over the campaign's dataset (every epoch, as if the target were never reached).
 */
function epochSteps(file: CampaignFile, run: PlannedRun): number {
  const dataset = file.campaign?.dataset;
  if (dataset === undefined) return 0;
  // A dataset placed by hand (generate: false) has a size the file does not say: the generated default stands in.
  const trainImages = dataset.classes * (dataset.imagesPerClass - Math.round(dataset.imagesPerClass * dataset.heldOut));
  return Math.floor(trainImages / (run.nodes * (run.processesPerNode ?? 1) * run.batchSize!));
}

export function estimateCampaign(
  plan: CampaignPlan,
  file: CampaignFile,
  options: EstimateOptions = {},
): CampaignEstimate {
  const overhead = estimateOf(file).overheadSeconds;
  const imageDelivery = estimateImageDelivery(file, options);
  const runsSeconds = (runs: readonly PlannedRun[]) =>
    overhead.campaign +
    imageDelivery.seconds +
    runs.reduce((sum, run) => sum + estimateRunSeconds(run, file, options), 0);
  const seconds = runsSeconds(plan.runs);
  const fewest =
    plan.repeatUntil === undefined ? {} : { fewestSeconds: runsSeconds(plan.runs.filter((run) => !run.conditional)) };
  const training = plan.runs.filter((run) => run.job === "train");
  const predictedSteps =
    options.predictedStepSeconds === undefined
      ? {}
      : {
          predictedSteps: {
            runs: training.filter((run) => options.predictedStepSeconds!.has(run.id)).length,
            of: training.length,
          },
        };
  // Instance-hours where the target rents its nodes by instance type (AWS).
  const instanceType = targetOf(file.testbed).instanceTypeOf?.(file.testbed);
  if (instanceType === undefined) return { seconds, ...fewest, imageDelivery, ...predictedSteps };
  const instanceHours = (plan.nodesToProvision * seconds) / 3600;
  // On-demand us-east-1 list price: spot is usually cheaper and other regions differ; check before you spend.
  const hourlyPriceUsd = onDemandUsdPerHour(instanceType);
  return {
    seconds,
    ...fewest,
    imageDelivery,
    ...predictedSteps,
    instanceHours,
    ...(hourlyPriceUsd === undefined ? {} : { hourlyPriceUsd, costUsd: instanceHours * hourlyPriceUsd }),
  };
}

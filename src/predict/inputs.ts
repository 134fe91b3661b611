/**
 * What a prediction starts from, and where each number came from, in order of trust (issue #35):
 *   compute: the user's own measurement (a calibration) > a published figure for the instance type's GPU
 *            (src/catalogue/published-throughput.ts) > that GPU's published ResNet-50 figure scaled by the model's
 *            throughput over ResNet-50's that ringlab measured (src/catalogue/measured-throughput.ts), said to be
 *            scaled > ringlab's planning figure, said to be assumed (a T4 only);
 *   link:    the user's own probe (measured, or derived from another node count) > the instance type's baseline
 *            bandwidth from the catalogue, with the latency left out, said so;
 *   overlap: the share φ the user's own shaped training runs hid (at this node count, or derived from another) >
 *            none, said to be assumed (the no-overlap step: the slowest the model allows).
 * Anything else is missing, with how to measure it: never a silent guess. Pure.
 */
import { bandwidthGbps } from "../rules/bandwidth.ts";
import { instanceTypeFacts, SOURCES } from "../catalogue/aws-instance-types.ts";
import { modelRatio } from "../catalogue/measured-throughput.ts";
import { describeCitation, publishedThroughput } from "../catalogue/published-throughput.ts";
import { PARAMETER_COUNT, PLANNING } from "../config/registry.ts";
import type { CampaignFile, TrainKnobName } from "../config/schema.ts";
import { isBaseLayout, layoutName, sumsWithReduction } from "../layouts/index.ts";
import { targetOf } from "../targets/index.ts";
import { computeWorkload } from "../workload/transformer.ts";
import {
  canonicalJson,
  describeSource,
  splitLabel,
  type Calibration,
  type ComputeEntry,
  type LinkEntry,
  type SplitStepEntry,
} from "./calibration.ts";

/** What the question is asked against: the user's measurements, and the machine the runs would use. */
export interface PredictionContext {
  readonly calibration?: Calibration;
  /** Local testbed: the CPU quota per worker the runs get (calibrations are per quota). */
  readonly cpusPerNode?: number;
  /** AWS: the instance type, whose GPU the published table and whose network the catalogue describe. */
  readonly instanceType?: string;
  /**
   * The link inside a node as the user states it (`ringlab predict --intra-node-bandwidth`), where no probe measured
   * it.
   */
  readonly intraNodeBandwidth?: string;
}

/** The part of a question the inputs depend on. */
export interface InputQuestion {
  readonly model: string;
  readonly batchSize: number;
  readonly nodes: number;
  readonly processesPerNode?: number;
  readonly bandwidth: string | null;
  readonly precision: string;
  /** The channelsLast knob: a calibration's compute counts only for runs of the same memory layout. */
  readonly channelsLast?: boolean;
  readonly reduction: string;
  /** The collective whose link is asked (a layout's all-gather, reduce-scatter or sends); absent: the all-reduce. */
  readonly collective?: string;
  /**
   * Language models: the shape and knobs that set one worker's compute (computeWorkload); an entry counts only for the
   * same.
   */
  readonly workload?: Readonly<Record<string, string | number | boolean>>;
}

export interface ComputeInput {
  /** One step's compute on one worker, with the half-width of its 95 % interval (or a stated default). */
  readonly seconds: { readonly mean: number; readonly halfWidth95: number };
  readonly gradientBytes: number;
  readonly source: string;
  /**
   * The calibration's CPU check on the runs that measured it (ComputeEntry.cpuCheckGflops); absent where they had none,
   * or nothing measured it.
   */
  readonly cpuCheckGflops?: number;
}

export interface LinkInput {
  readonly alphaSeconds: number;
  readonly betaSecondsPerByte: number;
  readonly source: string;
}

export interface OverlapInput {
  /** φ, the share of min(t_c, Σ t_ar) hidden behind backward, with the half-width of its 95 % interval. */
  readonly share: { readonly mean: number; readonly halfWidth95: number };
  readonly source: string;
}

export interface Missing {
  readonly missing: string;
}

/**
 * Published figures of one GPU differ (DeepLearningExamples' A100 AMP 2470 img/s, Lambda's on a p4d 1313): one figure
 * alone gets ±30 %.
 */
export const ONE_FIGURE_HALF_WIDTH = 0.3;
/** ringlab's planning figures are coarse guesses: ±50 %. */
export const ASSUMED_HALF_WIDTH = 0.5;
const T4 = "NVIDIA T4";
/** What predictions made without a calibration come from, as predictions.json and plan name it. */
export const PUBLISHED_ONLY = "published figures and the instance catalogue (no calibration)";

/**
 * What a campaign's runs are predicted from: its calibration, and on AWS its instance type (published figures and
 * the catalogue answer where no calibration does). Undefined when there is nothing: a local campaign without one.
 */
export function predictionContextFor(
  file: CampaignFile,
  cpusPerNode: number | undefined,
  calibration: Calibration | undefined,
): PredictionContext | undefined {
  const instanceType = targetOf(file.testbed).instanceTypeOf?.(file.testbed);
  if (calibration === undefined && instanceType === undefined) return undefined;
  return {
    ...(calibration === undefined ? {} : { calibration }),
    ...(cpusPerNode === undefined ? {} : { cpusPerNode }),
    ...(instanceType === undefined ? {} : { instanceType }),
  };
}

/** A training run's question from its knobs, the one place that reads precision, layout and reduction for it. */
export function inputQuestionOf(run: {
  readonly model: string;
  readonly batchSize: number;
  readonly nodes: number;
  readonly bandwidth: string | null;
  readonly processesPerNode?: number;
  readonly knobs: Readonly<Partial<Record<TrainKnobName, string | number | boolean>>>;
}): InputQuestion {
  const workload = computeWorkload(run.model, run.knobs);
  return {
    model: run.model,
    batchSize: run.batchSize,
    nodes: run.nodes,
    bandwidth: run.bandwidth,
    precision: String(run.knobs.precision ?? "fp32"),
    channelsLast: run.knobs.channelsLast === true,
    reduction: String(run.knobs.reduction ?? "ring"),
    ...(run.processesPerNode === undefined ? {} : { processesPerNode: run.processesPerNode }),
    ...(workload === undefined ? {} : { workload }),
  };
}

export function isMissing(value: object | null): value is Missing {
  return value !== null && "missing" in value;
}

/**
 * A batch size between two measured ones: a step's compute is a fixed part (optimizer step, launches, the loader) plus
 * a part a sample, so the straight line through the two nearest measured batches on either side (t = a + b·B). Scaling
 * one batch's compute per sample leaves the fixed part out: batch 24 from batch 32's per-sample time predicted 177
 * img/s where the second-day check measured 142-157 (test/bench/README.md, "Predictions"). Outside the measured
 * batches, or with a negative fixed part, undefined: the nearest batch's compute per sample.
 */
function computeLine(
  entries: readonly ComputeEntry[],
  batchSize: number,
): { seconds: { mean: number; halfWidth95: number }; from: readonly [ComputeEntry, ComputeEntry] } | undefined {
  const below = entries.find((entry) => entry.batchSize < batchSize);
  const above = entries.find((entry) => entry.batchSize > batchSize);
  if (below === undefined || above === undefined) return undefined;
  const perSample = (above.computeSeconds.mean - below.computeSeconds.mean) / (above.batchSize - below.batchSize);
  const fixed = below.computeSeconds.mean - perSample * below.batchSize;
  if (perSample <= 0 || fixed < 0) return undefined;
  // Interpolated: the interval is the two ends' intervals weighted as the means are.
  const w = (batchSize - below.batchSize) / (above.batchSize - below.batchSize);
  return {
    seconds: {
      mean: fixed + perSample * batchSize,
      halfWidth95: (1 - w) * below.computeSeconds.halfWidth95 + w * above.computeSeconds.halfWidth95,
    },
    from: [below, above],
  };
}

/**
 * One step's compute on one worker: from the calibration where it has the model on this machine, else from published
 * or assumed figures for the instance type's GPU, else missing with how to measure it.
 */
export function computeInput(question: InputQuestion, context: PredictionContext): ComputeInput | Missing {
  const facts = context.instanceType === undefined ? undefined : instanceTypeFacts(context.instanceType);
  if (context.instanceType !== undefined && (facts === undefined || facts.gpuModel === null)) {
    return {
      missing: `instance type ${context.instanceType} is not a GPU type of ringlab's catalogue (src/catalogue/aws-instance-types.ts): nothing says which GPU its figures are for`,
    };
  }
  const gpu = facts?.gpuModel ?? undefined;
  const { candidates, layoutNote } = calibratedCandidates(question, context, gpu);
  const devices = [...new Set(candidates.map((entry) => entry.deviceModel))];
  if (devices.length > 1) {
    return {
      missing:
        `the calibration has ${question.model} (${question.precision}) measured on ${devices.join(" and ")}: ` +
        (gpu === undefined ? "say which with --instance-type" : `ringlab cannot tell which is the ${gpu}`),
    };
  }
  return fromCalibration(candidates, question.batchSize, layoutNote) ?? fromGpuFigures(question, context, gpu);
}

/**
 * The calibration's compute entries for the question's machine and workload, and a note for the source when they are
 * the same workload's DDP compute standing in for a layout no single-node run measured ("" otherwise).
 */
function calibratedCandidates(
  question: InputQuestion,
  context: PredictionContext,
  gpu: string | undefined,
): { candidates: readonly ComputeEntry[]; layoutNote: string } {
  const quota = context.cpusPerNode ?? null;
  // The same model, precision, quota and (on AWS) GPU: at this batch size, or another one's compute per image.
  const sameMachine = (context.calibration?.compute ?? []).filter(
    (entry) =>
      entry.model === question.model &&
      entry.precision === question.precision &&
      (entry.channelsLast === true) === (question.channelsLast === true) &&
      entry.cpusPerNode === quota &&
      (gpu === undefined || runsOn(entry, gpu)),
  );
  const exact = sameMachine.filter(
    (entry) => canonicalJson(entry.workload ?? null) === canonicalJson(question.workload ?? null),
  );
  // A layout no single-node run measured: the same workload's DDP compute (one worker computes the same step whatever
  // the layout, which splits it only across workers), said to be derived.
  const asDdp =
    question.workload === undefined || isBaseLayout(question.workload) ? undefined : ddpWorkload(question.workload);
  const fromDdp =
    exact.length > 0 || asDdp === undefined
      ? []
      : sameMachine.filter((entry) => canonicalJson(entry.workload ?? null) === canonicalJson(asDdp));
  const layoutNote =
    fromDdp.length > 0
      ? `derived: ${layoutName(question.workload!)} from the same workload's ddp compute on one worker; `
      : "";
  return { candidates: exact.length > 0 ? exact : fromDdp, layoutNote };
}

/**
 * From the calibration's entries: measured at this batch size, else a straight line through the batches either side,
 * else the nearest batch per sample; undefined without any.
 */
function fromCalibration(
  candidates: readonly ComputeEntry[],
  batchSize: number,
  layoutNote: string,
): ComputeInput | undefined {
  const measured = candidates.find((entry) => entry.batchSize === batchSize);
  if (measured !== undefined) {
    return {
      seconds: measured.computeSeconds,
      gradientBytes: measured.gradientBytes,
      source: `${layoutNote}${measuredComputeText(measured)}`,
      ...cpuCheckOf([measured]),
    };
  }
  const byDistance = [...candidates].sort(
    (a, b) => Math.abs(Math.log(a.batchSize / batchSize)) - Math.abs(Math.log(b.batchSize / batchSize)),
  );
  const line = computeLine(byDistance, batchSize);
  if (line !== undefined) {
    return {
      seconds: line.seconds,
      gradientBytes: line.from[0].gradientBytes,
      ...cpuCheckOf(line.from),
      source: `${layoutNote}derived: a straight line through batch ${line.from[0].batchSize}'s and ${line.from[1].batchSize}'s compute (a fixed part a step and a part a sample), at batch ${batchSize}; ${line.from.map(measuredComputeText).join("; ")}`,
    };
  }
  const nearest = byDistance[0];
  if (nearest === undefined) return undefined;
  const scale = batchSize / nearest.batchSize;
  return {
    seconds: { mean: nearest.computeSeconds.mean * scale, halfWidth95: nearest.computeSeconds.halfWidth95 * scale },
    gradientBytes: nearest.gradientBytes,
    ...cpuCheckOf([nearest]),
    source: `${layoutNote}derived: batch ${nearest.batchSize}'s compute per sample, at batch ${batchSize}; ${measuredComputeText(nearest)}`,
  };
}

/** The mean CPU check of the entries a compute came from, where every one has it. */
function cpuCheckOf(entries: readonly ComputeEntry[]): Pick<ComputeInput, "cpuCheckGflops"> {
  const checks = entries.flatMap((entry) => entry.cpuCheckGflops ?? []);
  return checks.length === 0 || checks.length < entries.length
    ? {}
    : { cpuCheckGflops: checks.reduce((sum, value) => sum + value, 0) / checks.length };
}

/**
 * From figures for the instance type's GPU, in order of trust: published for the model, ResNet-50's scaled, ringlab's
 * T4 assumption; else missing.
 */
function fromGpuFigures(
  question: InputQuestion,
  context: PredictionContext,
  gpu: string | undefined,
): ComputeInput | Missing {
  if (gpu === undefined) return noCompute(question, context, gpu, "measured");
  const parameters = (PARAMETER_COUNT as Readonly<Record<string, number>>)[question.model];
  if (parameters === undefined)
    return { missing: `no gradient size for model ${question.model}: not a model of the worker's registry` };
  const gradientBytes = parameters * 4;
  return (
    publishedCompute(question, gpu, gradientBytes) ??
    scaledCompute(question, gpu, gradientBytes) ??
    assumedCompute(question, gpu, gradientBytes) ??
    noCompute(question, context, gpu, "measured or published")
  );
}

/** The GPU's published figures for this model and precision; undefined without one. */
function publishedCompute(question: InputQuestion, gpu: string, gradientBytes: number): ComputeInput | undefined {
  const published = publishedThroughput(gpu, question.model, question.precision);
  if (published.length === 0) return undefined;
  const figures = published.map(
    (row) =>
      `${row.imagesPerSecond} img/s at batch ${row.batchSize} (${row.card}, ${row.framework}; ${describeCitation(row.throughputAt)})`,
  );
  return fromFigures(
    published.map((row) => row.imagesPerSecond),
    question.batchSize,
    gradientBytes,
    `published: ${gpu}, ${question.model} ${question.precision}: ${figures.join("; ")}`,
  );
}

/**
 * No figure for this model on this GPU: the GPU's published ResNet-50 figures, scaled by how much slower ringlab
 * measured the model than ResNet-50 on a GPU of its own (src/catalogue/measured-throughput.ts); undefined without
 * either.
 */
function scaledCompute(question: InputQuestion, gpu: string, gradientBytes: number): ComputeInput | undefined {
  const resnet50 = publishedThroughput(gpu, "resnet50", question.precision);
  const ratio = modelRatio(question.model, question.precision);
  if (resnet50.length === 0 || ratio === undefined) return undefined;
  const figures = resnet50.map(
    (row) => `${row.imagesPerSecond} img/s (${row.card}; ${describeCitation(row.throughputAt)})`,
  );
  const measured =
    `${ratio.model.imagesPerSecond} / ${ratio.resnet50.imagesPerSecond} img/s at batch ${ratio.model.batchSize} on an ${ratio.model.gpuModel}, ` +
    `measured by ringlab's GPU benchmark on ${ratio.model.measuredOn} (${ratio.model.results})`;
  return fromFigures(
    resnet50.map((row) => row.imagesPerSecond * ratio.ratio),
    question.batchSize,
    gradientBytes,
    `scaled: ${gpu}'s published resnet50 ${question.precision} figures, ${figures.join("; ")}, times ${ratio.ratio.toFixed(3)}, ` +
      `${question.model}'s throughput over resnet50's (${measured})`,
  );
}

/**
 * A T4 with no published figure: ringlab's planning figure for the model, ±50 %; undefined on another GPU or without
 * one.
 */
function assumedCompute(question: InputQuestion, gpu: string, gradientBytes: number): ComputeInput | undefined {
  const imagesPerSecond = (PLANNING as Readonly<Record<string, { t4Fp32ImagesPerSecond: number } | undefined>>)[
    question.model
  ]?.t4Fp32ImagesPerSecond;
  if (gpu !== T4 || imagesPerSecond === undefined) return undefined;
  return {
    seconds: {
      mean: question.batchSize / imagesPerSecond,
      halfWidth95: (ASSUMED_HALF_WIDTH * question.batchSize) / imagesPerSecond,
    },
    gradientBytes,
    source:
      `assumed: ringlab's planning figure of ${imagesPerSecond} img/s for ${question.model} on a T4 in fp32 (registry.json: planning.t4Fp32ImagesPerSecond), ±${ASSUMED_HALF_WIDTH * 100} %: ` +
      `no published T4 training figure was found${question.precision === "fp32" ? "" : `; the fp32 figure for ${question.precision}, which a T4's tensor cores run faster`}`,
  };
}

/** Missing compute: the question it was asked for (workload, quota, GPU) and how to measure it. */
function noCompute(
  question: InputQuestion,
  context: PredictionContext,
  gpu: string | undefined,
  what: "measured" | "measured or published",
): Missing {
  const quota = context.cpusPerNode ?? null;
  const layout =
    question.workload === undefined
      ? ""
      : `, ${Object.entries(question.workload)
          .map(([knob, value]) => `${knob} ${String(value)}`)
          .join(", ")}`;
  const where = `${question.model} at batch ${question.batchSize} (${question.precision}${layout}${quota === null ? "" : `, ${quota} cores per worker`}${gpu === undefined ? "" : ` on an ${gpu}`})`;
  const howToMeasure = `run its single-node baseline (a campaign with nodes: [1]${context.instanceType === undefined ? "" : ` on ${context.instanceType}`}) and add its results with \`ringlab calibrate\``;
  return { missing: `no ${what} compute for ${where}: ${howToMeasure}` };
}

/**
 * Compute per image from published (or scaled) figures at their batches, taken at the question's batch: their
 * per-image mean, and their spread as the interval (one figure: ±30 % stated).
 */
function fromFigures(
  imagesPerSecond: readonly number[],
  batchSize: number,
  gradientBytes: number,
  source: string,
): ComputeInput {
  // Per image: the figures' batches (112-1280) are larger than a campaign's, and a GPU runs a small batch less well.
  const perImage = imagesPerSecond.map((rate) => 1 / rate);
  const mean = perImage.reduce((sum, value) => sum + value, 0) / perImage.length;
  const spread =
    perImage.length === 1 ? ONE_FIGURE_HALF_WIDTH * mean : Math.max(...perImage.map((value) => Math.abs(value - mean)));
  return {
    seconds: { mean: mean * batchSize, halfWidth95: spread * batchSize },
    gradientBytes,
    source:
      `${source}; ${perImage.length === 1 ? `one figure, ±${ONE_FIGURE_HALF_WIDTH * 100} % stated` : "their per-image mean, their spread as the interval"}; ` +
      `taken per image at batch ${batchSize}, where a GPU is less busy: the throughput is an upper bound`,
  };
}

/**
 * A tensor-parallel group's or a pipeline's step measured over an unshaped link for this very question (the same
 * workload, node count, placement, tensor degree and CPU quota): the calibration's SplitStepEntry, for predict.ts to
 * take its collectives out of. Undefined where none was measured.
 */
export function splitStepInput(
  question: InputQuestion,
  tensorDegree: number,
  context: PredictionContext,
): { readonly entry: SplitStepEntry; readonly source: string } | undefined {
  const quota = context.cpusPerNode ?? null;
  const entry = (context.calibration?.splitSteps ?? []).find(
    (candidate) =>
      candidate.model === question.model &&
      candidate.batchSize === question.batchSize &&
      candidate.precision === question.precision &&
      canonicalJson(candidate.workload) === canonicalJson(question.workload ?? null) &&
      candidate.nodes === question.nodes &&
      candidate.processesPerNode === (question.processesPerNode ?? 1) &&
      candidate.tensorDegree === tensorDegree &&
      candidate.cpusPerNode === quota,
  );
  return entry === undefined
    ? undefined
    : {
        entry,
        source: `the step of ${splitLabel(entry, true)} measured over an unshaped link, ${describeSource(entry.source)} (${entry.stepSeconds.repeats} repeat${entry.stepSeconds.repeats === 1 ? "" : "s"})`,
      };
}

/** A language model's workload as DDP would run it: the layout and its own knobs replaced by DDP's. */
function ddpWorkload(
  workload: Readonly<Record<string, string | number | boolean>>,
): Readonly<Record<string, string | number | boolean>> {
  const {
    fsdpSharding: _sharding,
    fsdpPrefetch: _prefetch,
    microBatches: _micro,
    pipelineSchedule: _schedule,
    ...rest
  } = workload;
  return { ...rest, parallelism: "ddp" };
}

/** The link's alpha and beta; null for one worker. */
export function linkInput(question: InputQuestion, context: PredictionContext): LinkInput | Missing | null {
  const ppn = question.processesPerNode ?? 1;
  if (question.nodes * ppn === 1) return null;
  const quota = context.cpusPerNode ?? null;
  const measured =
    context.calibration === undefined
      ? undefined
      : measuredLink(question, quota, context.instanceType ?? null, context.calibration);
  if (measured !== undefined) return measured;
  const facts = context.instanceType === undefined ? undefined : instanceTypeFacts(context.instanceType);
  const rate = question.bandwidth === null ? null : (bandwidthGbps(question.bandwidth) ?? null);
  if (facts !== undefined && question.nodes > 1) {
    if (question.reduction !== "ring") {
      return {
        missing:
          `no probe of ${question.reduction} at ${question.bandwidth ?? "the link"} on ${context.instanceType}: without one only the ring is predicted ` +
          "(from the catalogue); run the probe with that reduction and add its results with `ringlab calibrate`",
      };
    }
    if (rate === null) {
      return {
        missing:
          `no probe of the unshaped link between ${context.instanceType} nodes: what it gives depends on the flows, the placement and EFA, ` +
          "of which ringlab has no figure; probe it (a campaign with bandwidth unlimited) and add its results with `ringlab calibrate`, or ask about a shaped rate",
      };
    }
    const gbps = Math.min(rate, facts.baselineNetworkGbps);
    const source = SOURCES.baselineNetworkGbps[0]!;
    return {
      alphaSeconds: 0,
      betaSecondsPerByte: 8 / (gbps * 1e9),
      source:
        `catalogue: ${context.instanceType} sustains ${facts.baselineNetworkGbps} Gbit/s (${source.url}, read ${source.retrieved}), the link shaped to ` +
        `${question.bandwidth}; assumed: the all-reduce reaches the full ${gbps} Gbit/s and α = 0 ` +
        `(no latency term${ppn > 1 ? "; hops inside a node no slower than the network" : ""}): measure both with the probe and \`ringlab calibrate\``,
    };
  }
  return {
    missing:
      `no probe of the link ${question.bandwidth ?? "in one node"} (${question.reduction}, ${ppn} per node${quota === null ? "" : `, ${quota} cores`}): ` +
      "run the all-reduce probe there (a campaign with that bandwidth and probe enabled) and add its results with `ringlab calibrate`",
  };
}

/**
 * How much of its communication a multi-node step hides (DDP: behind backward); φ = 0 (assumed) where no run of the
 * layout (`parallelism`) measured it.
 */
export function overlapInput(question: InputQuestion, context: PredictionContext, parallelism = "ddp"): OverlapInput {
  const ppn = question.processesPerNode ?? 1;
  const comparable = (context.calibration?.overlap ?? []).filter(
    (entry) =>
      (entry.parallelism ?? "ddp") === parallelism &&
      entry.reduction === question.reduction &&
      entry.processesPerNode === ppn &&
      entry.cpusPerNode === (context.cpusPerNode ?? null) &&
      (entry.instanceType ?? null) === (context.instanceType ?? null),
  );
  const nearest = [...comparable].sort(
    (a, b) => Math.abs(a.nodes - question.nodes) - Math.abs(b.nodes - question.nodes),
  )[0];
  if (nearest === undefined) {
    const what = sumsWithReduction({ parallelism }) ? question.reduction : parallelism;
    return {
      share: { mean: 0, halfWidth95: 0 },
      source:
        `assumed: no overlap (φ = 0): no shaped training run of ${what}, ${ppn} per node measured it; ` +
        "the run can be faster, up to the full-overlap figure: add such a campaign's results with `ringlab calibrate`",
    };
  }
  const { mean, halfWidth95, points } = nearest.share;
  const measured = `φ ${mean.toFixed(2)} ± ${halfWidth95.toFixed(2)} over ${points} ${nearest.nodes}-node training point${points === 1 ? "" : "s"}, ${describeSource(nearest.source)}`;
  return {
    share: { mean, halfWidth95 },
    source:
      nearest.nodes === question.nodes
        ? `overlap ${measured}`
        : `derived: overlap ${measured}, for ${question.nodes} nodes`,
  };
}

/**
 * The link between a node's own processes, for a hierarchical all-reduce: a probe of one node with that many processes
 * (measured), or the rate the user states (NVLink, PCIe: α = 0 assumed), or missing with how to get it.
 */
export function insideNodeInput(question: InputQuestion, context: PredictionContext): LinkInput | Missing {
  const ppn = question.processesPerNode ?? 1;
  const probe = context.calibration?.links.find(
    (entry) =>
      entry.bandwidth === "in one node" &&
      entry.nodes === 1 &&
      entry.processesPerNode === ppn &&
      entry.reduction === "ring" &&
      entry.collective === undefined &&
      entry.cpusPerNode === (context.cpusPerNode ?? null) &&
      (entry.instanceType ?? null) === (context.instanceType ?? null),
  );
  if (probe !== undefined)
    return linkOf(probe, `inside a node: ${describeSource(probe.source)} (probe of ${ppn} processes in one node)`);
  const gbps = context.intraNodeBandwidth === undefined ? undefined : bandwidthGbps(context.intraNodeBandwidth);
  if (gbps !== undefined && gbps !== null) {
    return {
      alphaSeconds: 0,
      betaSecondsPerByte: 8 / (gbps * 1e9),
      source: `inside a node: stated (--intra-node-bandwidth ${context.intraNodeBandwidth}); assumed: α = 0`,
    };
  }
  return {
    missing:
      `no figure for the link between ${ppn} processes inside a node: probe it (a campaign with nodes: [1], processesPerNode: ${ppn} and the probe on) ` +
      "and add its results with `ringlab calibrate`, or state its rate with --intra-node-bandwidth (e.g. 2400gbit for 300 GB/s of NVLink per direction)",
  };
}

/**
 * The calibration's probe of the question's link (and collective), measured or derived from another probe; undefined
 * without one.
 */
export function probedLinkInput(question: InputQuestion, context: PredictionContext): LinkInput | undefined {
  return context.calibration === undefined
    ? undefined
    : measuredLink(question, context.cpusPerNode ?? null, context.instanceType ?? null, context.calibration);
}

/**
 * The link's fit: measured at this node count, or derived from another node count at the same rate, placement and
 * reduction (α and β are properties of the link; the ring's steps carry the node count).
 */
function measuredLink(
  question: InputQuestion,
  quota: number | null,
  instanceType: string | null,
  calibration: Calibration,
): LinkInput | undefined {
  const bandwidth = question.bandwidth ?? "in one node";
  const ppn = question.processesPerNode ?? 1;
  // Probes of this placement, reduction and quota, on this instance type (an AWS probe says nothing of another type's
  // network).
  const comparable = calibration.links.filter(
    (entry) =>
      entry.reduction === question.reduction &&
      entry.processesPerNode === ppn &&
      entry.cpusPerNode === quota &&
      (entry.instanceType ?? null) === instanceType &&
      (entry.collective ?? "all-reduce") === (question.collective ?? "all-reduce"),
  );
  const same = comparable.filter((entry) => entry.bandwidth === bandwidth);
  const exact = same.find((entry) => entry.nodes === question.nodes);
  if (exact !== undefined) return linkOf(exact, `${describeSource(exact.source)} (${exact.nodes}-node probe)`);
  const nearest = closestNodes(same, question.nodes);
  if (nearest !== undefined)
    return linkOf(
      nearest,
      `derived: α and β of the ${nearest.nodes}-node probe at ${bandwidth} (${describeSource(nearest.source)}) for ${question.nodes} nodes`,
    );
  // Another shaped rate: its β scaled by the rates (the shaped link, not the workers' CPU, taken to set the pace),
  // never above the fastest rate probed, past which the CPU may set it instead.
  const rate = question.bandwidth === null ? null : (bandwidthGbps(question.bandwidth) ?? null);
  if (rate === null) return undefined;
  const shaped = comparable.filter((entry) => (bandwidthGbps(entry.bandwidth) ?? null) !== null);
  if (shaped.length === 0 || rate > Math.max(...shaped.map((entry) => bandwidthGbps(entry.bandwidth)!)))
    return undefined;
  const closestRate = (entry: LinkEntry) => Math.abs(Math.log(bandwidthGbps(entry.bandwidth)! / rate));
  const best = Math.min(...shaped.map(closestRate));
  const other = closestNodes(
    shaped.filter((entry) => closestRate(entry) === best),
    question.nodes,
  )!;
  const ratio = bandwidthGbps(other.bandwidth)! / rate;
  return {
    alphaSeconds: other.alphaSeconds,
    betaSecondsPerByte: other.betaSecondsPerByte * ratio,
    source:
      `derived: α and β of the ${other.nodes}-node probe at ${other.bandwidth} (${describeSource(other.source)}), β scaled by ${other.bandwidth}/${question.bandwidth} ` +
      `for ${question.nodes} nodes at ${question.bandwidth} (assumed: the shaped link, not the workers' CPU, sets the pace)`,
  };
}

function closestNodes(entries: readonly LinkEntry[], nodes: number): LinkEntry | undefined {
  return [...entries].sort((a, b) => Math.abs(a.nodes - nodes) - Math.abs(b.nodes - nodes))[0];
}

function linkOf(entry: LinkEntry, source: string): LinkInput {
  return { alphaSeconds: entry.alphaSeconds, betaSecondsPerByte: entry.betaSecondsPerByte, source };
}

/**
 * Whether a measured entry ran on this catalogue GPU ("NVIDIA V100" and torch's "Tesla V100-SXM2-16GB"; L4 is not
 * L40S).
 */
function runsOn(entry: ComputeEntry, gpuModel: string): boolean {
  const name = gpuModel.replace(/^NVIDIA /, "");
  return entry.device === "cuda" && new RegExp(`\\b${name}\\b`).test(entry.deviceModel);
}

function measuredComputeText(entry: ComputeEntry): string {
  return `${describeSource(entry.source)} (${entry.model} at batch ${entry.batchSize} on ${entry.deviceModel}, ${entry.computeSeconds.repeats} repeat${entry.computeSeconds.repeats === 1 ? "" : "s"})`;
}

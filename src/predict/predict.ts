/**
 * A planned training run's throughput and scaling efficiency before it runs, from a calibration (calibration.ts):
 * t_c from the configuration's measured single-node compute, the all-reduce from the link's alpha-beta fit, one step
 * as the report's model has it (results/comm-model.ts: every DDP bucket pays its latency; no overlap, and full
 * overlap as the bound). Pure. Every input names its source; a run whose inputs the calibration lacks is not guessed
 * at: the prediction says what is missing and how to get it.
 */
import type { PlannedRun } from "../campaign/plan.ts";
import { predictTrainingStep } from "../results/comm-model.ts";
import { describeSource, type Calibration, type ComputeEntry, type LinkEntry } from "./calibration.ts";

export interface RunPrediction {
  readonly runId: string;
  /** t_c, one step's compute on one worker (the calibration's). */
  readonly computeSeconds: number;
  /** Σ t_ar over the step's DDP buckets; 0 on one worker. */
  readonly allReduceSeconds: number;
  readonly stepSeconds: number;
  /** Over every worker of the run. */
  readonly imagesPerSecond: number;
  /** Against workers × one worker alone: no overlap (the prediction), with its 95 % interval from t_c's. */
  readonly scalingEfficiency: { readonly value: number; readonly low: number; readonly high: number };
  /** The same with the all-reduce hidden behind compute as far as it can be: the most the run can reach. */
  readonly fullOverlapEfficiency: number;
  /** Where each input came from. */
  readonly sources: { readonly compute: string; readonly link: string };
}

export interface MissingInput {
  readonly runId: string;
  readonly missing: string;
}

/** A training configuration to predict: a planned run's, or one nobody runs (`ringlab predict`). */
export interface TrainingQuestion {
  /** What the prediction is called: the run's id. */
  readonly runId: string;
  readonly model: string;
  readonly batchSize: number;
  readonly nodes: number;
  readonly processesPerNode?: number;
  /** The link rate, "unlimited", or null for one node. */
  readonly bandwidth: string | null;
  readonly knobs: PlannedRun["knobs"];
}

/** What the calibration predicts for a planned run; probes predict nothing. */
export function predictRun(run: PlannedRun, cpusPerNode: number | undefined, calibration: Calibration): RunPrediction | MissingInput | null {
  if (run.job !== "train" || run.model === undefined || run.batchSize === undefined) return null;
  return predictTraining({ runId: run.id, model: run.model, batchSize: run.batchSize, nodes: run.nodes, bandwidth: run.bandwidth, knobs: run.knobs,
    ...(run.processesPerNode === undefined ? {} : { processesPerNode: run.processesPerNode }) }, cpusPerNode, calibration);
}

/** What the calibration predicts for a training configuration at a node count. */
export function predictTraining(run: TrainingQuestion, cpusPerNode: number | undefined, calibration: Calibration): RunPrediction | MissingInput {
  const quota = cpusPerNode ?? null;
  const precision = String(run.knobs.precision ?? "fp32");
  const compute = calibration.compute.find((entry) => entry.model === run.model && entry.batchSize === run.batchSize
    && entry.precision === precision && entry.cpusPerNode === quota);
  if (compute === undefined) {
    return { runId: run.runId, missing: `no measured compute for ${run.model} at batch ${run.batchSize} (${precision}${quota === null ? "" : `, ${quota} cores per worker`}): ` +
      "run its single-node baseline (a campaign with nodes: [1]) and add its results with `ringlab calibrate`" };
  }
  const ppn = run.processesPerNode ?? 1;
  const ranks = run.nodes * ppn;
  const link = run.nodes === 1 && ppn === 1 ? null : linkFor(run, quota, calibration);
  if (link === undefined) {
    return { runId: run.runId, missing: `no probe of the link ${run.bandwidth ?? "in one node"} (${String(run.knobs.reduction ?? "ring")}, ${ppn} per node${quota === null ? "" : `, ${quota} cores`}): ` +
      "run the all-reduce probe there (a campaign with that bandwidth and probe enabled) and add its results with `ringlab calibrate`" };
  }
  const gradientBytes = compute.gradientBytes * (run.knobs.fp16Allreduce === true ? 0.5 : 1);
  const bucketCapMb = typeof run.knobs.bucketCapMb === "number" ? run.knobs.bucketCapMb : undefined;
  const at = (computeSeconds: number) => link === null
    ? { allReduceSeconds: 0, noOverlapStepSeconds: computeSeconds, noOverlapEfficiency: 1, fullOverlapEfficiency: 1 }
    : predictTrainingStep(link.entry, { computeSeconds, gradientBytes, ranks, ...(bucketCapMb === undefined ? {} : { bucketCapMb }) });
  const step = at(compute.computeSeconds.mean);
  // A slower compute leaves the all-reduce a smaller share: the interval of t_c bounds the efficiency's.
  const slow = at(compute.computeSeconds.mean + compute.computeSeconds.halfWidth95);
  const fast = at(Math.max(1e-9, compute.computeSeconds.mean - compute.computeSeconds.halfWidth95));
  return {
    runId: run.runId,
    computeSeconds: compute.computeSeconds.mean,
    allReduceSeconds: step.allReduceSeconds,
    stepSeconds: step.noOverlapStepSeconds,
    imagesPerSecond: (ranks * run.batchSize) / step.noOverlapStepSeconds,
    scalingEfficiency: { value: step.noOverlapEfficiency, low: Math.min(fast.noOverlapEfficiency, slow.noOverlapEfficiency), high: Math.max(fast.noOverlapEfficiency, slow.noOverlapEfficiency) },
    fullOverlapEfficiency: step.fullOverlapEfficiency,
    sources: { compute: computeSourceText(compute), link: link === null ? "no link (one node)" : link.source },
  };
}

/**
 * The link's fit: measured at this node count, or derived from another node count at the same rate, placement and
 * reduction (α and β are properties of the link; the ring's steps carry the node count).
 */
function linkFor(run: TrainingQuestion, quota: number | null, calibration: Calibration): { entry: LinkEntry; source: string } | undefined {
  const bandwidth = run.bandwidth ?? "in one node";
  const reduction = String(run.knobs.reduction ?? "ring");
  const ppn = run.processesPerNode ?? 1;
  const same = calibration.links.filter((entry) => entry.bandwidth === bandwidth && entry.reduction === reduction
    && entry.processesPerNode === ppn && entry.cpusPerNode === quota);
  const exact = same.find((entry) => entry.nodes === run.nodes);
  if (exact !== undefined) return { entry: exact, source: `${describeSource(exact.source)} (${exact.nodes}-node probe)` };
  const nearest = [...same].sort((a, b) => Math.abs(a.nodes - run.nodes) - Math.abs(b.nodes - run.nodes))[0];
  if (nearest === undefined) return undefined;
  return { entry: nearest, source: `derived: α and β of the ${nearest.nodes}-node probe at ${bandwidth} (${describeSource(nearest.source)}) for ${run.nodes} nodes` };
}

function computeSourceText(entry: ComputeEntry): string {
  return `${describeSource(entry.source)} (${entry.model} at batch ${entry.batchSize} on ${entry.deviceModel}, ${entry.computeSeconds.repeats} repeat${entry.computeSeconds.repeats === 1 ? "" : "s"})`;
}

export function isPrediction(value: RunPrediction | MissingInput | null): value is RunPrediction {
  return value !== null && "stepSeconds" in value;
}

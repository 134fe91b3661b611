/**
 * A planned training run's throughput and scaling efficiency before it runs: t_c and the link's alpha and beta from
 * the best source there is (inputs.ts: the user's calibration, published figures, the catalogue), one step
 * as the report's model has it (results/comm-model.ts: every DDP bucket pays its latency; no overlap, and full
 * overlap as the bound). Pure. Every input names its source; a run whose inputs the calibration lacks is not guessed
 * at: the prediction says what is missing and how to get it.
 */
import type { PlannedRun } from "../campaign/plan.ts";
import { predictTrainingStep } from "../results/comm-model.ts";
import { computeInput, isMissing, linkInput, type InputQuestion, type PredictionContext } from "./inputs.ts";

export type { PredictionContext } from "./inputs.ts";

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

/** What the inputs predict for a planned run; probes predict nothing. */
export function predictRun(run: PlannedRun, context: PredictionContext): RunPrediction | MissingInput | null {
  if (run.job !== "train" || run.model === undefined || run.batchSize === undefined) return null;
  return predictTraining({ runId: run.id, model: run.model, batchSize: run.batchSize, nodes: run.nodes, bandwidth: run.bandwidth, knobs: run.knobs,
    ...(run.processesPerNode === undefined ? {} : { processesPerNode: run.processesPerNode }) }, context);
}

/** What the inputs (inputs.ts: measured, published, assumed) predict for a training configuration at a node count. */
export function predictTraining(run: TrainingQuestion, context: PredictionContext): RunPrediction | MissingInput {
  const question: InputQuestion = {
    model: run.model, batchSize: run.batchSize, nodes: run.nodes, bandwidth: run.bandwidth,
    precision: String(run.knobs.precision ?? "fp32"), reduction: String(run.knobs.reduction ?? "ring"),
    ...(run.processesPerNode === undefined ? {} : { processesPerNode: run.processesPerNode }),
  };
  const compute = computeInput(question, context);
  if (isMissing(compute)) return { runId: run.runId, missing: compute.missing };
  const link = linkInput(question, context);
  if (link !== null && isMissing(link)) return { runId: run.runId, missing: link.missing };
  const ranks = run.nodes * (run.processesPerNode ?? 1);
  const gradientBytes = compute.gradientBytes * (run.knobs.fp16Allreduce === true ? 0.5 : 1);
  const bucketCapMb = typeof run.knobs.bucketCapMb === "number" ? run.knobs.bucketCapMb : undefined;
  const at = (computeSeconds: number) => link === null
    ? { allReduceSeconds: 0, noOverlapStepSeconds: computeSeconds, noOverlapEfficiency: 1, fullOverlapEfficiency: 1 }
    : predictTrainingStep(link, { computeSeconds, gradientBytes, ranks, ...(bucketCapMb === undefined ? {} : { bucketCapMb }) });
  const step = at(compute.seconds.mean);
  // A slower compute leaves the all-reduce a smaller share: the interval of t_c bounds the efficiency's.
  const slow = at(compute.seconds.mean + compute.seconds.halfWidth95);
  const fast = at(Math.max(1e-9, compute.seconds.mean - compute.seconds.halfWidth95));
  return {
    runId: run.runId,
    computeSeconds: compute.seconds.mean,
    allReduceSeconds: step.allReduceSeconds,
    stepSeconds: step.noOverlapStepSeconds,
    imagesPerSecond: (ranks * run.batchSize) / step.noOverlapStepSeconds,
    scalingEfficiency: { value: step.noOverlapEfficiency, low: Math.min(fast.noOverlapEfficiency, slow.noOverlapEfficiency), high: Math.max(fast.noOverlapEfficiency, slow.noOverlapEfficiency) },
    fullOverlapEfficiency: step.fullOverlapEfficiency,
    sources: { compute: compute.source, link: link === null ? "no link (one node)" : link.source },
  };
}

export function isPrediction(value: RunPrediction | MissingInput | null): value is RunPrediction {
  return value !== null && "stepSeconds" in value;
}

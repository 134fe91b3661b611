/**
 * A planned training run's throughput and scaling efficiency before it runs: t_c and the link's alpha and beta from
 * the best source there is (inputs.ts: the user's calibration, published figures, the catalogue), one step
 * as the report's model has it (results/comm-model.ts: every DDP bucket pays its latency), less the share φ of
 * min(t_c, Σ t_ar) that the calibration's own runs hid behind backward (none where no run measured it); no overlap
 * and full overlap stay beside it as the bounds. Pure. Every input names its source; a run whose inputs the calibration
 * lacks is not guessed at: the prediction says what is missing and how to get it.
 */
import type { PlannedRun } from "../campaign/plan.ts";
import {
  COLLECTIVE_OP,
  COLLECTIVES,
  numericKnob,
  probedAs,
  type Collective,
  type Reduction,
} from "../config/registry.ts";
import {
  boundedShare,
  overlappedStepSeconds,
  predictHierarchicalStep,
  predictTrainingStep,
} from "../results/comm-model.ts";
import { allReducesPerStep, exchangeShare, wireBytesPerStep } from "../reductions/index.ts";
import { throughputUnit } from "../config/registry.ts";
import {
  computeOfStep,
  predictLayoutStep,
  type CollectiveOp,
  type LayoutStepInput,
  type LinkCoefficients,
  type StepCollective,
} from "../results/layout-model.ts";
import { dataParallel } from "../workload/layout.ts";
import { dimsOf, layoutName, stepShapeOf, stepTraffic, sumsWithReduction } from "../layouts/index.ts";
import { unitsPerSample } from "../workload/transformer.ts";
import {
  computeInput,
  inputQuestionOf,
  insideNodeInput,
  isMissing,
  linkInput,
  overlapInput,
  probedLinkInput,
  splitStepInput,
  type ComputeInput,
  type InputQuestion,
  type LinkInput,
  type PredictionContext,
} from "./inputs.ts";

export type { PredictionContext } from "./inputs.ts";

export interface RunPrediction {
  readonly runId: string;
  /** t_c, one step's compute on one worker (the calibration's). */
  readonly computeSeconds: number;
  /** Σ t_ar over the step's DDP buckets; 0 on one worker. */
  readonly allReduceSeconds: number;
  readonly stepSeconds: number;
  /** Over every worker of the run, in `unit` (images, or tokens). */
  readonly throughput: number;
  readonly unit: "images" | "tokens";
  /** A pipeline's idle share of the step; absent elsewhere. */
  readonly bubbleShare?: number;
  /** φ, the share of min(t_c, Σ t_ar) the step hides (0 on one worker, or where no run measured it). */
  readonly overlapShare: number;
  /**
   * Against workers × one worker alone, with φ's overlap: the prediction, with its 95 % interval from t_c's and φ's.
   */
  readonly scalingEfficiency: { readonly value: number; readonly low: number; readonly high: number };
  /** The bounds: compute then communication (the slowest the model allows), and everything hidden that can be. */
  readonly noOverlapEfficiency: number;
  readonly fullOverlapEfficiency: number;
  /** Where each input came from. */
  readonly sources: { readonly compute: string; readonly link: string; readonly overlap: string };
  /**
   * The CPU check of the runs that measured the compute (ComputeInput.cpuCheckGflops), for the report to compare the
   * run's own with.
   */
  readonly cpuCheckGflops?: number;
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
  /**
   * A two-level all-reduce (inside each node, then between nodes: results/comm-model.ts predictHierarchicalStep)
   * instead of one ring over every rank; only `ringlab predict` asks it (DDP on Gloo runs the flat ring).
   */
  readonly hierarchical?: boolean;
}

/** What the inputs predict for a planned run; probes predict nothing. */
export function predictRun(run: PlannedRun, context: PredictionContext): RunPrediction | MissingInput | null {
  if (run.job !== "train" || run.model === undefined || run.batchSize === undefined) return null;
  return predictTraining(
    {
      runId: run.id,
      model: run.model,
      batchSize: run.batchSize,
      nodes: run.nodes,
      bandwidth: run.bandwidth,
      knobs: run.knobs,
      ...(run.processesPerNode === undefined ? {} : { processesPerNode: run.processesPerNode }),
    },
    context,
  );
}

/** What the inputs (inputs.ts: measured, published, assumed) predict for a training configuration at a node count. */
export function predictTraining(run: TrainingQuestion, context: PredictionContext): RunPrediction | MissingInput {
  const question = inputQuestionOf(run);
  const compute = computeInput(question, context);
  if (isMissing(compute)) return { runId: run.runId, missing: compute.missing };
  if (!sumsWithReduction(run.knobs)) return predictLayoutTraining(run, compute, context);
  const reduction = question.reduction as Reduction;
  const wireBytes = wireBytesPerStep(reduction, compute.gradientBytes, run.knobs);
  if (typeof wireBytes !== "number") return { runId: run.runId, missing: wireBytes.missing };
  const ranks = run.nodes * (run.processesPerNode ?? 1);
  const twoLevel = run.hierarchical === true && run.nodes > 1 && (run.processesPerNode ?? 1) > 1;
  // Two levels: the network between nodes carries one flow per node (the probe of one process per node), the link
  // inside a node its own. Local SGD all-reduces over the ring's link: the ring's probe measures it.
  const linkQuestion = { ...question, reduction: probedAs(reduction) };
  const link = linkInput(twoLevel ? { ...linkQuestion, processesPerNode: 1 } : linkQuestion, context);
  if (link !== null && isMissing(link)) return { runId: run.runId, missing: link.missing };
  const inside = twoLevel ? insideNodeInput(question, context) : null;
  if (inside !== null && isMissing(inside)) return { runId: run.runId, missing: inside.missing };
  // What a step sends (local SGD: the parameters every H steps), of which a step pays its share (the asynchronous
  // server's).
  const gradientBytes = wireBytes * exchangeShare(reduction, ranks);
  const bucketCapMb = numericKnob(run.knobs, "bucketCapMb");
  const allReduces = allReducesPerStep(reduction, compute.gradientBytes, run.knobs);
  const stepInput = (computeSeconds: number) => ({
    computeSeconds,
    gradientBytes,
    ...(bucketCapMb === undefined ? {} : { bucketCapMb }),
    ...(allReduces === undefined ? {} : { allReduces }),
  });
  const overlap = link === null ? null : overlapInput(question, context);
  const at = (computeSeconds: number, phi: number) => {
    if (link === null)
      return {
        allReduceSeconds: 0,
        stepSeconds: computeSeconds,
        efficiency: 1,
        noOverlapEfficiency: 1,
        fullOverlapEfficiency: 1,
      };
    const step =
      inside === null
        ? predictTrainingStep(link, { ...stepInput(computeSeconds), ranks })
        : predictHierarchicalStep(inside, link, {
            ...stepInput(computeSeconds),
            nodes: run.nodes,
            perNode: run.processesPerNode!,
          });
    const stepSeconds = overlappedStepSeconds(computeSeconds, step.allReduceSeconds, phi);
    return {
      allReduceSeconds: step.allReduceSeconds,
      stepSeconds,
      efficiency: computeSeconds / stepSeconds,
      noOverlapEfficiency: step.noOverlapEfficiency,
      fullOverlapEfficiency: step.fullOverlapEfficiency,
    };
  };
  const phi = overlap?.share ?? { mean: 0, halfWidth95: 0 };
  const step = at(compute.seconds.mean, phi.mean);
  // A slower compute leaves the all-reduce a smaller share, a larger φ hides more of it: the intervals of t_c and φ
  // bound the efficiency's, at their corners.
  const corners = [
    compute.seconds.mean + compute.seconds.halfWidth95,
    Math.max(1e-9, compute.seconds.mean - compute.seconds.halfWidth95),
  ].flatMap((computeSeconds) =>
    [phi.mean - phi.halfWidth95, phi.mean + phi.halfWidth95].map((share) => at(computeSeconds, share).efficiency),
  );
  return {
    runId: run.runId,
    computeSeconds: compute.seconds.mean,
    allReduceSeconds: step.allReduceSeconds,
    stepSeconds: step.stepSeconds,
    throughput: (ranks * run.batchSize * unitsPerSample(run.model, run.knobs)) / step.stepSeconds,
    unit: throughputUnit(run.model),
    overlapShare: link === null ? 0 : boundedShare(phi.mean),
    scalingEfficiency: { value: step.efficiency, low: Math.min(...corners), high: Math.max(...corners) },
    noOverlapEfficiency: step.noOverlapEfficiency,
    fullOverlapEfficiency: step.fullOverlapEfficiency,
    sources: {
      compute: compute.source,
      link:
        link === null
          ? "no link (one node)"
          : inside === null
            ? link.source
            : `between nodes: ${link.source}; ${inside.source}`,
      overlap: overlap === null ? "no link (one node)" : overlap.source,
    },
    ...cpuCheckOf(compute),
  };
}

export function isPrediction(value: RunPrediction | MissingInput | null): value is RunPrediction {
  return value !== null && "stepSeconds" in value;
}

/**
 * The probe's name of a layout's collective (registry.json "collectives"): all_gather → all-gather, send → sendrecv.
 */
const COLLECTIVE_OF_OP = Object.fromEntries(COLLECTIVES.map((name) => [COLLECTIVE_OP[name], name])) as Readonly<
  Record<CollectiveOp, Collective>
>;

/**
 * A run on a layout other than DDP (results/layout-model.ts): its single-node compute, its collectives
 * (src/workload/traffic.ts) each timed on the ring's link (the probe's α and β at the run's rate and node count; a
 * collective no probe measured is derived from them, and said so), tensor parallelism's split of the compute and a
 * pipeline's slots, less the share φ of the smaller of compute and collectives that the calibration's shaped-link runs
 * of the same layout hid (layout-overlap.ts; none assumed where no such run measured it).
 */
function predictLayoutTraining(
  run: TrainingQuestion,
  compute: ComputeInput,
  context: PredictionContext,
): RunPrediction | MissingInput {
  const workers = run.nodes * (run.processesPerNode ?? 1);
  const layout = dimsOf(run.knobs, workers, run.nodes);
  if (!layout.ok) return { runId: run.runId, missing: layout.problem };
  const dims = layout.dims;
  const collectives = stepTraffic({ model: run.model, batchSize: run.batchSize, knobs: run.knobs, dims });
  const link =
    workers === 1 || collectives.length === 0
      ? null
      : linkInput({ ...inputQuestionOf(run), reduction: "ring" }, context);
  if (link !== null && isMissing(link)) return { runId: run.runId, missing: link.missing };
  const ops = [...new Set(collectives.map((collective) => collective.op))].filter((op) => op !== "all_reduce");
  const ownLink = link === null ? new Map<CollectiveOp, LinkInput>() : ownLinks(inputQuestionOf(run), ops, context);
  const linkOf = (op: CollectiveOp): LinkCoefficients =>
    ownLink.get(op) ?? link ?? { alphaSeconds: 0, betaSecondsPerByte: 0 };
  const derived = ops.filter((op) => !ownLink.has(op));
  const shape = stepShapeOf(run.model, run.knobs, dims);
  const overlap =
    link === null ? null : overlapInput({ ...inputQuestionOf(run), reduction: "ring" }, context, layoutName(run.knobs));
  const phi = overlap?.share ?? { mean: 0, halfWidth95: 0 };
  const stages = shape.pipeline;
  // Where the calibration measured this tensor group's or pipeline's step, its compute is that step's; else the model's
  // split of it.
  const split =
    shape.tensor !== undefined || stages !== undefined
      ? measuredSplitCompute(run, collectives, dims.tp, phi.mean, context, stages)
      : undefined;
  const stepAt = (computeSeconds: number, overlapShare: number) => {
    const measured = split === undefined ? undefined : split.seconds * (computeSeconds / compute.seconds.mean);
    return predictLayoutStep({
      computeSeconds: measured === undefined || stages !== undefined ? computeSeconds : measured,
      collectives,
      linkOf,
      overlapShare,
      ...(shape.tensor !== undefined && split === undefined && stages === undefined ? { tensor: shape.tensor } : {}),
      ...(stages === undefined
        ? {}
        : { pipeline: { ...stages, ...(measured === undefined ? {} : { measuredSeconds: measured }) } }),
    });
  };
  const step = stepAt(compute.seconds.mean, phi.mean);
  // Throughput against every worker computing a single node's step alone: a tensor group or a pipeline is one replica.
  const efficiencyOf = (stepSeconds: number, computeSeconds = compute.seconds.mean) =>
    (dataParallel(dims) * computeSeconds) / (workers * stepSeconds);
  // The intervals of t_c and φ bound the efficiency's, at their corners (as DDP's).
  const corners = [
    compute.seconds.mean + compute.seconds.halfWidth95,
    Math.max(1e-9, compute.seconds.mean - compute.seconds.halfWidth95),
  ].flatMap((seconds) =>
    [phi.mean - phi.halfWidth95, phi.mean + phi.halfWidth95].map((share) =>
      efficiencyOf(stepAt(seconds, share).stepSeconds, seconds),
    ),
  );
  return {
    runId: run.runId,
    computeSeconds: step.computeSeconds,
    allReduceSeconds: step.communicationSeconds,
    stepSeconds: step.stepSeconds,
    throughput: (dataParallel(dims) * run.batchSize * unitsPerSample(run.model, run.knobs)) / step.stepSeconds,
    unit: throughputUnit(run.model),
    ...(stages === undefined ? {} : { bubbleShare: step.bubbleShare }),
    overlapShare: link === null ? 0 : boundedShare(phi.mean),
    scalingEfficiency: { value: efficiencyOf(step.stepSeconds), low: Math.min(...corners), high: Math.max(...corners) },
    noOverlapEfficiency: efficiencyOf(stepAt(compute.seconds.mean, 0).stepSeconds),
    fullOverlapEfficiency: efficiencyOf(stepAt(compute.seconds.mean, 1).stepSeconds),
    sources: {
      compute: split === undefined ? compute.source : `${compute.source}; ${split.source}`,
      link:
        link === null
          ? "no link (one worker, or nothing crosses it)"
          : [
              link.source,
              ...[...ownLink].map(([op, own]) => `${COLLECTIVE_OF_OP[op]}: ${own.source}`),
              ...(derived.length === 0
                ? []
                : [
                    `${derived.map((op) => COLLECTIVE_OF_OP[op]).join(", ")} derived from the ring all-reduce's α and β (no probe of ${derived.length === 1 ? "it" : "them"})`,
                  ]),
            ].join("; "),
      overlap: overlap === null ? "no link (one worker, or nothing crosses it)" : overlap.source,
    },
    ...cpuCheckOf(compute),
  };
}

function cpuCheckOf(compute: ComputeInput): Pick<RunPrediction, "cpuCheckGflops"> {
  return compute.cpuCheckGflops === undefined ? {} : { cpuCheckGflops: compute.cpuCheckGflops };
}

/**
 * Each collective (not the all-reduce) on its own probe where the calibration has one at the question's rate
 * (probe.collective).
 */
function ownLinks(
  question: InputQuestion,
  ops: readonly CollectiveOp[],
  context: PredictionContext,
): ReadonlyMap<CollectiveOp, LinkInput> {
  return new Map(
    ops.flatMap((op) => {
      const own = probedLinkInput({ ...question, reduction: "ring", collective: COLLECTIVE_OF_OP[op] }, context);
      return own === undefined ? [] : [[op, own] as const];
    }),
  );
}

/**
 * Tensor parallelism's compute on its group, or a pipeline's over its slots (bubble included), where the calibration
 * measured the same layout's step over an unshaped link (inputs.ts splitStepInput): that step less its collectives at
 * that link, timed on the unshaped probes' α and β. On this machine's CPU quota a split matrix computes at less than
 * 1/tp of the whole's time less often than the model's share says (test/bench/README.md, "Layouts, predicted before the
 * run"), and GPipe's many micro-batches cost more than the bubble that the model gives both schedules ("Layouts on a
 * newer CPU"). Undefined where nothing was measured.
 */
function measuredSplitCompute(
  run: TrainingQuestion,
  collectives: readonly StepCollective[],
  tensorDegree: number,
  overlapShare: number,
  context: PredictionContext,
  pipeline: LayoutStepInput["pipeline"],
): { seconds: number; source: string } | undefined {
  const unshaped = { ...inputQuestionOf(run), bandwidth: "unlimited" };
  const measured = splitStepInput(unshaped, tensorDegree, context);
  const ring = measured === undefined ? null : linkInput({ ...unshaped, reduction: "ring" }, context);
  if (measured === undefined || ring === null || isMissing(ring)) return undefined;
  const own = ownLinks(
    unshaped,
    collectives.map((collective) => collective.op).filter((op) => op !== "all_reduce"),
    context,
  );
  const linkOf = (op: CollectiveOp): LinkCoefficients => own.get(op) ?? ring;
  const communication = predictLayoutStep({
    computeSeconds: 0,
    collectives,
    linkOf,
    overlapShare: 0,
    ...(pipeline === undefined ? {} : { pipeline }),
  }).communicationSeconds;
  const seconds = computeOfStep(measured.entry.stepSeconds.mean, communication, overlapShare);
  if (!(seconds > 0)) return undefined;
  return {
    seconds,
    source:
      `its compute on ${run.nodes * (run.processesPerNode ?? 1)} workers: ${measured.source}, less its collectives there (${(communication * 1e3).toFixed(1)} ms on the unshaped probe's α and β` +
      `${overlapShare > 0 ? `, φ ${boundedShare(overlapShare).toFixed(2)} of them hidden` : ""})`,
  };
}

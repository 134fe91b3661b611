/**
 * A published case predicted and scored: ringlab's memory model asked the case's question (its model, layout, batch,
 * precision, checkpointing and framework), each published figure beside the prediction and the error; its throughput
 * figures asked of the GPU-cluster predictor (src/cluster/case-throughput.ts), each with its no-overlap / full-overlap
 * band. Pure but for resolving the case's cluster (a catalogue name, or a cluster file beside the case).
 */
import { LANGUAGE_SHAPE, type TransformerShape } from "../config/registry.ts";
import { compositionMemory, type Composition } from "../layouts/composition.ts";
import { rankMemory, type RankMemory } from "../workload/memory.ts";
import { modelStateBytes, STATE_RECIPES, stateProblem, type StateQuestion } from "../workload/model-states.ts";
import type { CaseFile, PublishedFigureName } from "./case.ts";
import { figureValue } from "./case.ts";
import { CUDA_RESERVED } from "./memory.ts";
import { predictCaseThroughput, THROUGHPUT_FIGURES, type ThroughputFigure } from "../cluster/case-throughput.ts";

const GIB = 2 ** 30;

export interface ScoredFigure {
  readonly figure: PublishedFigureName;
  readonly published: number;
  readonly predicted: number | null;
  /** predicted / published - 1, or null without a prediction. */
  readonly error: number | null;
  readonly note?: string;
  /** Why there is no prediction. */
  readonly why?: string;
  /** A throughput figure's value at the no-overlap and full-overlap steps: the band a published figure should be in. */
  readonly band?: { readonly low: number; readonly high: number };
}

export interface CaseScore {
  readonly source: string;
  readonly framework: CaseFile["framework"];
  /** The largest rank's bytes by term (model states, activations, ...), where the memory model answered. */
  readonly terms: Readonly<Record<string, number>> | null;
  /** What the memory model could not answer, or null. */
  readonly problem: string | null;
  readonly figures: readonly ScoredFigure[];
  /** What the throughput figures rest on (the compute figure's basis and source), or why there are none. */
  readonly throughput: { readonly basis: string; readonly source: string } | { readonly problem: string };
}

const SIXTEEN_BIT = new Set(["bf16", "fp16", "amp"]);

/** The shape the case names or writes out, at its sequence; undefined for model states alone and image models. */
export function caseShape(file: CaseFile): TransformerShape | undefined {
  if (typeof file.model !== "string" && "parameters" in file.model) return undefined;
  const sequenceLength = file.batch?.sequence ?? 0;
  if (typeof file.model === "string") {
    const registered = (LANGUAGE_SHAPE as Readonly<Record<string, TransformerShape>>)[file.model];
    return registered && { ...registered, sequenceLength: file.batch?.sequence ?? registered.sequenceLength };
  }
  const model = file.model;
  return {
    ...model,
    kvHeads: model.kvHeads ?? model.heads,
    ffnWidth: model.ffnWidth ?? 4 * model.width,
    sequenceLength,
    maxPositions: model.maxPositions ?? sequenceLength,
  };
}

/**
 * Why ringlab's layouts have none like the case's, whose memory the model was checked on (the worker's: ddp, fsdp over
 * tensor groups, tensor, a GPipe or 1F1B pipeline of replicas), or undefined.
 */
function layoutGap(file: CaseFile): string | undefined {
  const { dp, dpSharding, tp, pp, cp, pipelineSchedule } = file.layout;
  if (cp > 1) return "context parallelism (cp) is not in ringlab's memory model yet";
  if (pp > 1) {
    if (dpSharding === "gradients" || dpSharding === "full")
      return "a pipeline over sharded data parallelism is not in ringlab's layouts yet";
    if (tp > 1) return "a pipeline with tensor parallelism is not in ringlab's layouts yet";
    if (pipelineSchedule === "interleaved-1f1b") return "the interleaved 1F1B schedule is not in the memory model yet";
    return undefined;
  }
  const sharded = dpSharding === "gradients" || dpSharding === "full";
  return !sharded && tp > 1 && dp > 1 ? "tensor parallelism with replicas" : undefined;
}

/** The case's layout as degrees that compose (src/layouts/composition.ts); a pipeline's micro-batches one a stage. */
function caseComposition(file: CaseFile): Composition {
  const { dp, dpSharding, tp, pp, cp, pipelineSchedule, microBatches } = file.layout;
  return {
    tp,
    cp,
    pp,
    dp,
    dpSharding,
    schedule: pipelineSchedule ?? "gpipe",
    microBatchSize: file.batch?.micro ?? 1,
    microBatches: pp > 1 ? (microBatches ?? pp) : 1,
  };
}

function workloadKnobs(file: CaseFile): Record<string, unknown> {
  return {
    // tf32 keeps fp32 tensors: the same bytes.
    precision: file.precision === "tf32" ? "fp32" : file.precision,
    optimizer: file.optimizer === "sgd" ? "sgd" : "adamw",
    ...(file.optimizer === "sgd" ? { momentum: 0.9 } : {}),
    activationCheckpointing: file.activationCheckpointing,
  };
}

/** The largest rank's memory for a case with a shape, or why there is none. */
function shapedMemory(file: CaseFile, shape: TransformerShape): RankMemory | string {
  const gap = layoutGap(file);
  if (gap !== undefined) return gap;
  const composition = caseComposition(file);
  const { dims, terms } = compositionMemory(composition);
  const stages = rankMemory(
    {
      model: typeof file.model === "string" ? file.model : "case",
      batchSize: composition.microBatchSize * (composition.microBatches ?? 1),
      knobs: workloadKnobs(file),
      dims,
      recipe: file.framework,
      shape,
    },
    terms,
  );
  return stages.reduce((largest, stage) => (stage.peak > largest.peak ? stage : largest));
}

/** Model states alone ({parameters}): the recipe's terms for Ψ over the model-parallel ranks. */
function statesOnly(file: CaseFile, parameters: number, largestLayer: number): StateQuestion {
  const { dp, dpSharding, tp, pp } = file.layout;
  return {
    parameters: parameters / (tp * pp),
    shards: dpSharding === "none" ? 1 : dp,
    sharding: dpSharding,
    sixteenBit: SIXTEEN_BIT.has(file.precision),
    optimizerNumbers: file.optimizer === "sgd" ? 1 : 2,
    gatheredUnit: largestLayer,
    matrices: 0,
    ddpBuckets: false,
    offload: file.offload,
  };
}

function memoryOf(file: CaseFile): { terms: Record<string, number>; states: number; peak: number | null } | string {
  const shape = caseShape(file);
  if (typeof file.model === "string" && shape === undefined)
    return `${file.model} is an image model: its memory on a GPU is not predicted from a case yet`;
  if (shape === undefined) {
    const model = file.model as { parameters: number; largestLayerParameters?: number };
    const question = statesOnly(file, model.parameters, model.largestLayerParameters ?? 0);
    const problem = stateProblem(file.framework, question);
    if (problem !== undefined) return problem;
    const bytes = STATE_RECIPES[file.framework].bytes(question);
    return { terms: { ...bytes }, states: modelStateBytes(bytes), peak: null };
  }
  const problem = stateProblem(file.framework, statesOnly(file, 1, 0));
  if (problem !== undefined) return problem;
  const rank = shapedMemory(file, shape);
  if (typeof rank === "string") return rank;
  const { stage: _, peak, ...terms } = rank;
  return { terms: { ...terms, peak }, states: modelStateBytes(rank), peak };
}

/** Each published figure beside ringlab's prediction of it; `caseFolder` is where a cluster file it names lies. */
export function scoreCase(file: CaseFile, caseFolder: string): CaseScore {
  const memory = memoryOf(file);
  const throughput = predictCaseThroughput(file, caseFolder);
  const bands: Partial<Record<PublishedFigureName, { predicted: number; low: number; high: number }>> =
    "missing" in throughput ? {} : throughput.figures;
  const answered = typeof memory === "string" ? undefined : memory;
  const predictions: Partial<Record<PublishedFigureName, number | null>> = {
    modelStatesGB: answered === undefined ? null : answered.states / 1e9,
    modelStatesGiB: answered === undefined ? null : answered.states / GIB,
    // What the allocator reserves at the tensors' peak: what torchtitan (max reserved) and nvidia-smi report.
    peakMemoryGiB:
      answered?.peak == null ? null : (CUDA_RESERVED.overheadBytes + CUDA_RESERVED.scale * answered.peak) / GIB,
  };
  const figures = Object.entries(file.published).flatMap(([name, value]): ScoredFigure[] => {
    if (name === "note" || value === undefined || typeof value === "string") return [];
    const figure = name as PublishedFigureName;
    const published = figureValue(value)!;
    const note = typeof value === "object" ? value.note : undefined;
    const band = bands[figure];
    const predicted = band?.predicted ?? predictions[figure] ?? null;
    const why =
      predicted !== null
        ? undefined
        : THROUGHPUT_FIGURES.includes(figure as ThroughputFigure)
          ? "missing" in throughput
            ? throughput.missing
            : "no figure of this kind for the model"
          : typeof memory === "string"
            ? memory
            : "a peak needs the model's shape and batch";
    return [
      {
        figure,
        published,
        predicted,
        error: predicted === null ? null : predicted / published - 1,
        ...(note === undefined ? {} : { note }),
        ...(why === undefined ? {} : { why }),
        ...(band === undefined || predicted === null ? {} : { band: { low: band.low, high: band.high } }),
      },
    ];
  });
  return {
    source: file.source,
    framework: file.framework,
    terms: answered === undefined ? null : answered.terms,
    problem: typeof memory === "string" ? memory : null,
    figures,
    throughput:
      "missing" in throughput
        ? { problem: throughput.missing }
        : { basis: throughput.prediction.computeBasis, source: throughput.prediction.sources.compute },
  };
}

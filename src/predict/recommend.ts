/**
 * `ringlab predict --recommend` (issue #53): for one workload, node count and link, every layout ringlab knows, each
 * with its predicted step and throughput (predict.ts) and its memory per rank and per node (memory.ts), those that
 * fit ranked by throughput, with the inputs' sources. Pure.
 */
import { layoutCandidates as candidatesOf, type LayoutCandidate } from "../layouts/index.ts";
import { isMemoryPrediction, predictMemory, type MemoryConstants, type MemoryPrediction } from "./memory.ts";
import {
  isPrediction,
  predictTraining,
  type PredictionContext,
  type RunPrediction,
  type TrainingQuestion,
} from "./predict.ts";

export type { LayoutCandidate } from "../layouts/index.ts";

/**
 * The layouts of a workload on `workers` workers, each layout's configurations in the registry's order (its unit's
 * candidates: DDP, FSDP's two shardings, tensor parallelism over every worker, a pipeline of one stage per node under
 * both schedules and several micro-batch counts).
 */
export function layoutCandidates(
  model: string,
  batchSize: number,
  knobs: Readonly<Record<string, unknown>>,
  workers: number,
  nodes: number,
): LayoutCandidate[] {
  return candidatesOf({ model, batchSize, knobs, workers, nodes });
}

export interface Recommendation {
  readonly candidate: LayoutCandidate;
  readonly prediction: RunPrediction | { readonly missing: string };
  readonly memory: MemoryPrediction | { readonly problem: string };
  /** Whether its predicted memory is within the limit; null without a limit. */
  readonly fits: boolean | null;
}

export interface RecommendQuestion extends Omit<TrainingQuestion, "runId" | "knobs"> {
  /** The workload's own knobs (optimizer, precision, shape), without the layout's. */
  readonly knobs: Readonly<Record<string, string | number | boolean>>;
  /** What one node may hold (a local node's limit); undefined: no limit to check. */
  readonly memoryPerNodeBytes?: number;
}

/** Every candidate, predicted; those that fit (or all, without a limit) first, fastest first, then the others. */
export function recommend(
  question: RecommendQuestion,
  context: PredictionContext,
  memory: MemoryConstants,
): Recommendation[] {
  const workers = question.nodes * (question.processesPerNode ?? 1);
  const candidates = layoutCandidates(question.model, question.batchSize, question.knobs, workers, question.nodes);
  const rows = candidates.map((candidate) => {
    const knobs = { ...question.knobs, ...candidate.knobs };
    const prediction = predictTraining({ ...question, runId: candidate.name, knobs }, context);
    const memoryPrediction = predictMemory(
      {
        model: question.model,
        batchSize: question.batchSize,
        nodes: question.nodes,
        knobs,
        ...(question.processesPerNode === undefined ? {} : { processesPerNode: question.processesPerNode }),
      },
      memory,
    );
    const fits =
      question.memoryPerNodeBytes === undefined || !isMemoryPrediction(memoryPrediction)
        ? null
        : memoryPrediction.nodeBytes <= question.memoryPerNodeBytes;
    return {
      candidate,
      prediction: isPrediction(prediction) ? prediction : { missing: prediction.missing },
      memory: memoryPrediction,
      fits,
    };
  });
  const throughput = (row: Recommendation) => ("throughput" in row.prediction ? row.prediction.throughput : -1);
  const rank = (row: Recommendation) => (row.fits === false ? 1 : 0);
  return rows.sort((a, b) => rank(a) - rank(b) || throughput(b) - throughput(a));
}

/**
 * `ringlab predict --recommend` (issue #53): for one workload, node count and link, every layout ringlab knows, each
 * with its predicted step and throughput (predict.ts) and its memory per rank and per node (memory.ts), those that
 * fit ranked by throughput, with the inputs' sources. Pure.
 */
import { dimsOf, pipelineProblem } from "../workload/layout.ts";
import { shapeOf } from "../workload/transformer.ts";
import { isMemoryPrediction, predictMemory, type MemoryConstants, type MemoryPrediction } from "./memory.ts";
import {
  isPrediction,
  predictTraining,
  type PredictionContext,
  type RunPrediction,
  type TrainingQuestion,
} from "./predict.ts";

export interface LayoutCandidate {
  /** "ddp", "fsdp full", "pipeline 1f1b, 4 micro-batches", ... */
  readonly name: string;
  /** The knobs that make it, as a campaign's train section would set them. */
  readonly knobs: Readonly<Record<string, string | number>>;
}

/**
 * The layouts of a workload on `workers` workers: DDP, FSDP's two shardings, tensor parallelism over every worker (a
 * language model, heads divisible), and a pipeline of one stage per node under both schedules with every micro-batch
 * count that divides the batch from one per stage up to four per stage (a language model; pipelineProblem says what the
 * worker takes). Counts that only the stage count suggests (2 and 4 on 2 stages) missed the measured winner at batch 6,
 * which was 3 micro-batches (test/bench/README.md, "Layouts on 2 and 3 CPU nodes").
 */
export function layoutCandidates(
  model: string,
  batchSize: number,
  knobs: Readonly<Record<string, unknown>>,
  workers: number,
  nodes: number,
): LayoutCandidate[] {
  const candidates: LayoutCandidate[] = [
    { name: "ddp", knobs: { parallelism: "ddp" } },
    { name: "fsdp full", knobs: { parallelism: "fsdp", fsdpSharding: "full" } },
    { name: "fsdp grad-op", knobs: { parallelism: "fsdp", fsdpSharding: "grad-op" } },
  ];
  const shape = shapeOf(model, knobs);
  if (shape === undefined || workers < 2) return candidates;
  if (shape.heads % workers === 0) candidates.push({ name: "tensor", knobs: { parallelism: "tensor" } });
  const stages = Math.max(nodes, 2);
  for (const microBatches of microBatchCounts(batchSize, stages)) {
    if (!dimsOf({ parallelism: "pipeline" }, workers, nodes).ok) continue;
    for (const schedule of ["gpipe", "1f1b"]) {
      if (
        pipelineProblem({ parallelism: "pipeline", pipelineSchedule: schedule, microBatches }, batchSize, stages) !==
        undefined
      )
        continue;
      candidates.push({
        name: `pipeline ${schedule}, ${microBatches} micro-batches`,
        knobs: { parallelism: "pipeline", pipelineSchedule: schedule, microBatches },
      });
    }
  }
  return candidates;
}

/** Each count that divides the batch, from one micro-batch per stage to four per stage. */
function microBatchCounts(batchSize: number, stages: number): number[] {
  const counts: number[] = [];
  for (let count = stages; count <= Math.min(batchSize, 4 * stages); count++)
    if (batchSize % count === 0) counts.push(count);
  return counts;
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

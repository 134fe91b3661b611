/**
 * What one layout (registry.json's layouts; the worker's --parallelism) is, as the planner, the predictions and the
 * report ask it: one module per layout in this folder, collected in index.ts, as the worker has one module per layout
 * in ringlab_worker/parallel/. A unit holds its degrees' rules, its step's collectives, its memory terms, its step's
 * shape for the step model (results/layout-model.ts), its names, and the configurations `predict --recommend` tries.
 * Each answer is plain data; the arithmetic they feed lives in workload/ (traffic, memory) and results/layout-model.ts.
 */
import type { LayoutStepInput } from "../results/layout-model.ts";
import type { Composition } from "./composition.ts";
import type { MemoryTerms } from "../workload/memory.ts";
import type { Collective, TrafficParts, TrafficQuestion } from "../workload/traffic.ts";
import type { DimsResult, ParallelDims } from "../workload/layout.ts";

/** A run's train knobs, as a campaign or `predict` gives them (unset: the registry's default). */
export type Knobs = Readonly<Record<string, unknown>>;

/** The share of a step's compute tensor parallelism splits, and a pipeline's slowest stage's (workload/transformer). */
export interface ComputeShares {
  readonly split: number;
  readonly slowestStage: number;
}

/** How a layout's step departs from one worker's compute plus its collectives: a tensor split, a pipeline's slots. */
export type StepShape = Pick<LayoutStepInput, "tensor"> & {
  readonly pipeline?: Omit<NonNullable<LayoutStepInput["pipeline"]>, "measuredSeconds">;
};

/** A workload `predict --recommend` lays out every way it can. */
export interface CandidateQuestion {
  readonly model: string;
  readonly batchSize: number;
  /** The workload's own knobs, without the layout's. */
  readonly knobs: Knobs;
  readonly workers: number;
  readonly nodes: number;
}

export interface LayoutCandidate {
  /** "ddp", "fsdp full", "pipeline 1f1b, 4 micro-batches", ...: the unit's label of its knobs. */
  readonly name: string;
  /** The knobs that make it, as a campaign's train section would set them. */
  readonly knobs: Readonly<Record<string, string | number>>;
}

export interface LayoutUnit {
  /**
   * Whether the run's reduction (--reduction, src/reductions/) sums its gradients: its step is then the reductions'
   * model and its overlap share φ the report's; otherwise the layout has collectives of its own, timed by
   * results/layout-model.ts, and its φ is fitted against that model (predict/layout-overlap.ts).
   */
  readonly sumsWithReduction: boolean;
  /** The degrees its knobs ask of `workers` workers on `nodes` nodes, or why not (the worker's dims_of's messages). */
  dims(knobs: Knobs, workers: number, nodes: number): DimsResult;
  /** Why the worker would refuse the run at `batchSize` with these degrees, before it starts; undefined: nothing. */
  problem?(knobs: Knobs, batchSize: number, dims: ParallelDims): string | undefined;
  /** One step's collectives on the busiest rank (the worker's parallel/<name>.py traffic()). */
  traffic(question: TrafficQuestion, parts: TrafficParts): Collective[];
  /** What the layout changes in a rank's memory (workload/memory.ts computes the bytes). */
  memory(knobs: Knobs, dims: ParallelDims): MemoryTerms;
  /**
   * What its knobs make of the composition (composition.ts) beyond the degrees: what the data-parallel ranks shard, a
   * pipeline's schedule and micro-batches, at `batchSize` per replica.
   */
  compose(knobs: Knobs, batchSize: number): LayoutComposition;
  /** Its step's shape for results/layout-model.ts: nothing for a data-parallel step. */
  step(knobs: Knobs, dims: ParallelDims, shares: ComputeShares): StepShape;
  /** "ddp", "fsdp full × tensor 2", "pipeline gpipe, 4 micro-batches": a configuration's layout as its knobs say. */
  label(knobs: Knobs): string;
  /**
   * A step measured on its group (the calibration's split steps): "tensor over 2", "pipeline 1f1b ×6 over 3 stages";
   * `counted`: with what the count counts where the label leaves it out ("tensor over 2 workers").
   */
  splitLabel(knobs: Knobs, tensorDegree: number, nodes: number, counted?: boolean): string;
  /**
   * The configurations of this layout `predict --recommend` tries for a workload: the knobs of each, as a campaign's
   * train section would set them (index.ts names each by its label).
   */
  candidates(question: CandidateQuestion): LayoutCandidate["knobs"][];
}

export type LayoutComposition = Pick<Composition, "dpSharding" | "microBatchSize" | "microBatches" | "schedule">;

/** A tensor-parallel group's step, as ddp, fsdp and tensor name theirs. */
export function tensorSplitLabel(tensorDegree: number, counted = false): string {
  return `tensor over ${tensorDegree}${counted ? " workers" : ""}`;
}

/** Every sample of the batch in flight at once: a layout without a pipeline. */
export function wholeBatch(batchSize: number): number {
  return batchSize;
}

/**
 * The layouts, one unit each (unit.ts says what a unit answers), keyed by registry.json's layouts (parallelism's
 * values): a layout of the registry without its unit here does not compile. A new layout is its registry entry, its
 * module here and its line below, and its module in the worker (docker/worker/ringlab_worker/parallel/). Everything
 * else asks these functions, never a layout's name.
 */
import { LAYOUTS, TRAIN_KNOBS, type Parallelism, shapeOf } from "../config/registry.ts";
import type { MemoryTerms } from "../workload/memory.ts";
import type { Composition } from "./composition.ts";
import { trafficParts, type Collective, type TrafficQuestion } from "../workload/traffic.ts";
import { computeShares } from "../workload/transformer.ts";
import { ddp } from "./ddp.ts";
import { dataParallel, type DimsResult, type ParallelDims } from "../workload/layout.ts";
import { refused } from "./dims.ts";
import { fsdp } from "./fsdp.ts";
import { pipeline } from "./pipeline.ts";
import { tensor } from "./tensor.ts";
import type { CandidateQuestion, Knobs, LayoutCandidate, LayoutUnit, StepShape } from "./unit.ts";

export type { Parallelism } from "../config/registry.ts";
export type { CandidateQuestion, LayoutCandidate, LayoutUnit, StepShape } from "./unit.ts";

const UNITS: Readonly<Record<Parallelism, LayoutUnit>> = { ddp, fsdp, tensor, pipeline };

/**
 * The registry's default layout, DDP: one worker of it computes the whole model's step and holds the whole model, so
 * its single-node runs stand in for every layout's compute and memory where no run of the layout measured them.
 */
export const BASE_LAYOUT = TRAIN_KNOBS.parallelism.default as Parallelism;

export function isLayout(value: unknown): value is Parallelism {
  return (LAYOUTS as readonly unknown[]).includes(value);
}

/** A run's layout as its knobs set it (unset: the registry's default). */
export function layoutName(knobs: Knobs): string {
  return String(knobs["parallelism"] ?? BASE_LAYOUT);
}

/** Whether a run's knobs ask for the base layout (DDP), whose single-node runs stand in for the others'. */
export function isBaseLayout(knobs: Knobs): boolean {
  return layoutName(knobs) === BASE_LAYOUT;
}

function unitOf(knobs: Knobs): LayoutUnit | undefined {
  const name = layoutName(knobs);
  return isLayout(name) ? UNITS[name] : undefined;
}

/**
 * The layout a run's knobs ask for on `workers` workers across `nodes` nodes, or why it cannot be: the worker's
 * dims_of, message for message (test/fixtures/layout-dims.json holds cases both sides run).
 */
export function dimsOf(knobs: Knobs, workers: number, nodes: number): DimsResult {
  return unitOf(knobs)?.dims(knobs, workers, nodes) ?? refused(`unknown parallelism ${layoutName(knobs)}`);
}

/**
 * Why the worker would refuse a run of `batchSize` per replica on these degrees (a pipeline's micro-batches), or
 * undefined: its unit's own checks, message for message, so that plan refuses it before anything starts.
 */
export function layoutProblem(knobs: Knobs, batchSize: number, dims: ParallelDims): string | undefined {
  return unitOf(knobs)?.problem?.(knobs, batchSize, dims);
}

/** The degrees and the worker's checks together: why the run cannot be laid out, or undefined. */
export function runLayoutProblem(knobs: Knobs, workers: number, nodes: number, batchSize: number): string | undefined {
  const layout = dimsOf(knobs, workers, nodes);
  return layout.ok ? layoutProblem(knobs, batchSize, layout.dims) : layout.problem;
}

/** The step's collectives on the busiest rank (a pipeline: a stage between two others, or the only boundary's). */
export function stepTraffic(question: TrafficQuestion): Collective[] {
  return unitOf(question.knobs)?.traffic(question, trafficParts(question)) ?? [];
}

/** What the run's layout changes in a rank's memory (workload/memory.ts). */
export function memoryTermsOf(knobs: Knobs, dims: ParallelDims): MemoryTerms {
  return (unitOf(knobs) ?? UNITS[BASE_LAYOUT]).memory(knobs, dims);
}

/** A layout's step for results/layout-model.ts: its tensor split and its pipeline's slots, where it has them. */
export function stepShapeOf(model: string, knobs: Knobs, dims: ParallelDims): StepShape {
  const shape = shapeOf(model, knobs);
  const shares = shape === undefined ? { split: 0, slowestStage: 1 } : computeShares(shape, dims.pp);
  return unitOf(knobs)?.step(knobs, dims, shares) ?? {};
}

/**
 * A campaign run's layout as a composition of degrees (composition.ts): its unit's degrees on `workers` workers across
 * `nodes` nodes, what its data-parallel ranks shard, its pipeline's schedule and micro-batches at `batchSize` per
 * replica; or why its degrees cannot be.
 */
export function compositionOf(
  knobs: Knobs,
  workers: number,
  nodes: number,
  batchSize: number,
): Composition | { readonly problem: string } {
  const layout = dimsOf(knobs, workers, nodes);
  if (!layout.ok) return { problem: layout.problem };
  const { dims } = layout;
  return {
    tp: dims.tp,
    cp: 1,
    pp: dims.pp,
    dp: dataParallel(dims),
    dpShard: dims.dpShard,
    ...unitOf(knobs)!.compose(knobs, batchSize),
    // A campaign that names a tensor degree (or parallelism tensor) asks for it wherever its workers are: on the local
    // testbed, one worker a node, always across nodes.
    allowCrossNodeTensor: dims.tp > 1,
  };
}

/** Whether the run's reduction sums its gradients (DDP), or the layout's own collectives do (unit.ts). */
export function sumsWithReduction(knobs: Knobs): boolean {
  return unitOf(knobs)?.sumsWithReduction ?? false;
}

/**
 * "ddp", "fsdp full", "fsdp grad-op × tensor 2", "tensor", "pipeline gpipe, 4 micro-batches": a configuration's layout
 * as its knobs say.
 */
export function layoutLabel(knobs: Knobs): string {
  return unitOf(knobs)?.label(knobs) ?? layoutName(knobs);
}

/** "tensor over 2", "pipeline 1f1b ×6 over 3 stages": a step measured on a layout's group (unit.ts splitLabel). */
export function splitLabel(knobs: Knobs, tensorDegree: number, nodes: number, counted = false): string {
  return (unitOf(knobs) ?? UNITS[BASE_LAYOUT]).splitLabel(knobs, tensorDegree, nodes, counted);
}

/** Every layout's configurations of a workload, in the registry's order, each named by its label. */
export function layoutCandidates(question: CandidateQuestion): LayoutCandidate[] {
  return LAYOUTS.flatMap((name) =>
    UNITS[name].candidates(question).map((knobs) => ({ name: UNITS[name].label(knobs), knobs })),
  );
}

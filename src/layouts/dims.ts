/**
 * How a run's workers divide among pipeline stages (pp), data-parallel replicas (dpReplicate) and shards (dpShard),
 * and tensor-parallel groups (tp): the worker's docker/worker/ringlab_worker/parallel/dims.py, whose degrees multiply
 * to the world size. Each layout unit (./index.ts) says which degrees its knobs ask for; these are the pieces they
 * share. Pure.
 */

export interface ParallelDims {
  readonly pp: number;
  readonly dpReplicate: number;
  readonly dpShard: number;
  readonly tp: number;
}

export type DimsResult =
  | { readonly ok: true; readonly dims: ParallelDims }
  | { readonly ok: false; readonly problem: string };

/** The degrees given, every other one 1. */
export function dimsWith(partial: Partial<ParallelDims>): DimsResult {
  return { ok: true, dims: { pp: 1, dpReplicate: 1, dpShard: 1, tp: 1, ...partial } };
}

export function refused(problem: string): DimsResult {
  return { ok: false, problem };
}

/**
 * A degree a knob sets (`value`, or `fallback` unset), or why it cannot be: it must divide the run's workers (the
 * worker's _degree, message for message).
 */
export function degreeOf(knob: string, value: number | undefined, fallback: number, workers: number): number | string {
  const chosen = value ?? fallback;
  return chosen < 1 || workers % chosen !== 0
    ? `${knob} ${chosen} does not divide the run's ${workers} workers`
    : chosen;
}

/** Replicas of the model that see different batches: global batch = this × batchSize. */
export function dataParallel(layout: ParallelDims): number {
  return layout.dpReplicate * layout.dpShard;
}

/** The blocks a pipeline stage holds: as even as they divide, earlier stages taking one more (the worker's split). */
export function stageBlocks(layers: number, stages: number, stage: number): number {
  return Math.floor(layers / stages) + (stage < layers % stages ? 1 : 0);
}

/** A knob's number as a run sets it; undefined where it is unset or not a number. */
export function numberKnob(knobs: Readonly<Record<string, unknown>>, name: string): number | undefined {
  const value = knobs[name];
  return typeof value === "number" ? value : undefined;
}

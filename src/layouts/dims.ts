/**
 * What the layout units share in saying which degrees (workload/layout.ts ParallelDims) a run's knobs ask for: the
 * worker's docker/worker/ringlab_worker/parallel/dims.py, message for message. Pure.
 */
import type { DimsResult, ParallelDims } from "../workload/layout.ts";

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

/** A knob's number as a run sets it; undefined where it is unset or not a number. */
export function numberKnob(knobs: Readonly<Record<string, unknown>>, name: string): number | undefined {
  const value = knobs[name];
  return typeof value === "number" ? value : undefined;
}

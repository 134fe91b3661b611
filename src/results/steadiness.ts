/**
 * Whether a training run measured one speed. A run's throughput is the mean over its timed steps; when something
 * slows the machine for part of a run (another process, a slower host: these VMs report no steal time), the mean
 * mixes two speeds and the run is neither the fast nor the slow one. Such a run shows as a shift of its step times:
 * the median step of one third of the run apart from another third's by more than UNSTEADY_SHIFT.
 *
 * On the local testbed at the 10 ms CPU period, 102 of 106 runs (seed and predict campaigns, 2026-11-26) kept their
 * thirds' medians within 10 % of each other; the other 4 had a first third 25-43 % slower than the rest, two of them a
 * predict campaign's efficiency miss and its slow baseline repeat (test/bench/README.md, "Unsteady runs"). Pure.
 */
import { STRATEGIES } from "../config/registry.ts";
import { meanWithInterval } from "./statistics.ts";
import type { RunRecord } from "./record.ts";

/** Thirds whose median steps differ by more than this share of the faster one's: the run measured two speeds. */
export const UNSTEADY_SHIFT = 0.2;
/** Fewer timed steps than this give thirds of one or two steps each: no median to judge by. */
export const STEADINESS_MIN_STEPS = 9;

/** What the check needs of a run record. */
export type StepsOfRecord = Pick<RunRecord, "status" | "result"> & {
  readonly params: Pick<RunRecord["params"], "knobs">;
};

export interface Unsteadiness {
  /** Timed steps the run recorded. */
  readonly steps: number;
  /** The median step of each third of the run, in order, seconds. */
  readonly thirdMedians: readonly [number, number, number];
  /** Which third was slowest and which fastest (0: first). */
  readonly slowest: 0 | 1 | 2;
  readonly fastest: 0 | 1 | 2;
  /** slowest / fastest − 1. */
  readonly shift: number;
}

/**
 * How an ok throughput run's steps shifted, or undefined when they did not (or the run is not judged). Not judged:
 * strategies whose steps change by design (PowerSGD's and local SGD's warm-up of plain all-reduce, the asynchronous
 * server), time-to-train runs (epochs: evaluation, checkpoints, restarts), and runs of fewer than 9 timed steps.
 */
export function unsteadiness(record: StepsOfRecord): Unsteadiness | undefined {
  const steps = judgedSteps(record);
  if (steps === undefined) return undefined;
  const thirdMedians = medianOfThirds(steps);
  const slowest = indexOf(thirdMedians, Math.max(...thirdMedians));
  const fastest = indexOf(thirdMedians, Math.min(...thirdMedians));
  const shift = thirdMedians[slowest] / thirdMedians[fastest] - 1;
  return shift > UNSTEADY_SHIFT ? { steps: steps.length, thirdMedians, slowest, fastest, shift } : undefined;
}

/**
 * Whether unsteadiness judges this run at all (see there): an ok throughput run of enough steps, no strategy, no
 * epochs.
 */
export function judged(record: StepsOfRecord): boolean {
  return judgedSteps(record) !== undefined;
}

function judgedSteps(record: StepsOfRecord): readonly number[] | undefined {
  const steps = record.result?.job === "train" ? record.result.metrics.stepSeconds : undefined;
  const reduction = record.params.knobs["reduction"];
  if (record.status !== "ok" || steps === undefined || steps.length < STEADINESS_MIN_STEPS) return undefined;
  if (record.params.knobs["epochs"] !== undefined || STRATEGIES.some((strategy) => strategy === reduction))
    return undefined;
  return steps;
}

/** The median of each third of the steps, in order (a third's bounds rounded: 20 steps give 7, 6 and 7). */
export function medianOfThirds(steps: readonly number[]): readonly [number, number, number] {
  const third = (index: number) =>
    meanWithInterval(steps.slice(Math.round((index * steps.length) / 3), Math.round(((index + 1) * steps.length) / 3)))
      .median;
  return [third(0), third(1), third(2)];
}

/**
 * Why an ok run's measurement is in doubt, as the report's flags name it: the machine was busy (local testbed), or the
 * run changed speed.
 */
export type Disturbance = "machine busy" | "unsteady run";

export function disturbance(record: StepsOfRecord & Pick<RunRecord, "hostLoad">): Disturbance | undefined {
  if (record.status !== "ok") return undefined;
  if (record.hostLoad?.busy === true) return "machine busy";
  return unsteadiness(record) === undefined ? undefined : "unsteady run";
}

/** "the first third's median step took 0.502 s, the last third's 0.380 s (20 timed steps)": the shift in words. */
export function describeUnsteadiness(shift: Unsteadiness): string {
  const seconds = (index: 0 | 1 | 2) => `${shift.thirdMedians[index].toFixed(3)} s`;
  return (
    `the ${THIRDS[shift.slowest]} third's median step took ${seconds(shift.slowest)}, the ${THIRDS[shift.fastest]} third's ${seconds(shift.fastest)} ` +
    `(${shift.steps} timed steps)`
  );
}

const THIRDS = ["first", "middle", "last"] as const;

function indexOf(values: readonly [number, number, number], value: number): 0 | 1 | 2 {
  return values.indexOf(value) as 0 | 1 | 2;
}

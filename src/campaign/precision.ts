/**
 * Repeats until precise (the campaign's repeatUntil): before a conditional round starts, the runs of that round whose
 * configuration is already known precisely enough are dropped. Pure: the plan's runs and the measurements so far in,
 * the runs still needed out.
 */
import { meanWithInterval } from "../results/statistics.ts";
import { latestAttempts, type RunRecord } from "../results/record.ts";
import type { PlannedRun, RepeatUntil } from "./plan.ts";
import { throughputOf } from "../results/worker-result.ts";

/**
 * A configuration's throughput over its repeats so far (images per second, every ok repeat's mean), from the records
 * that measured what the plan runs now: the same fingerprint (a record of other settings is not one of its repeats).
 * The caller leaves out records made under another CPU quota, as the campaign does.
 */
export function throughputsByConfiguration(
  runs: readonly PlannedRun[],
  records: readonly RunRecord[],
): Map<string, number[]> {
  const planned = new Map(runs.map((run) => [run.id, run]));
  const values = new Map<string, number[]>();
  for (const { record } of latestAttempts(records)) {
    const run = planned.get(record.runId);
    if (
      run === undefined ||
      record.fingerprint !== run.fingerprint ||
      record.status !== "ok" ||
      record.result?.job !== "train"
    )
      continue;
    values.set(run.configuration, [
      ...(values.get(run.configuration) ?? []),
      throughputOf(record.result.metrics).total.mean,
    ]);
  }
  return values;
}

/**
 * Whether the 95 % interval (Student's t) of the values is within ±halfWidth of their mean; never with fewer than 2.
 */
export function isPrecise(values: readonly number[], halfWidth: number): boolean {
  if (values.length < 2) return false;
  const { mean, halfWidth95 } = meanWithInterval(values);
  return mean > 0 && halfWidth95 <= halfWidth * mean;
}

/** Model, batch size and knobs: what a single-node baseline shares with the points it normalizes. */
function trainingConfigKey(run: PlannedRun): string {
  return JSON.stringify([run.model, run.batchSize, run.knobs]);
}

/**
 * The runs of one conditional round that still take place: every training point whose interval is still too wide,
 * and the single-node baseline of a training configuration when it is too wide itself or a point it normalizes still
 * runs (the baseline is measured at least as often as its points). Conditional rounds hold no probes (plan.ts).
 */
export function runsStillNeeded(
  round: readonly PlannedRun[],
  measured: ReadonlyMap<string, readonly number[]>,
  target: RepeatUntil,
): PlannedRun[] {
  const imprecise = (run: PlannedRun) => !isPrecise(measured.get(run.configuration) ?? [], target.halfWidth);
  const trains = round.filter((run) => run.job === "train");
  const pointsRunning = new Set(trains.filter((run) => run.nodes > 1 && imprecise(run)).map(trainingConfigKey));
  return trains.filter((run) =>
    run.nodes > 1 ? imprecise(run) : imprecise(run) || pointsRunning.has(trainingConfigKey(run)),
  );
}

/**
 * The runs still to do, less the conditional rounds that can be decided already: those at the head of the list, before
 * any run that could still add a measurement, whose configurations are all precise enough. A campaign run again after
 * it finished then has nothing left, and brings no testbed up for it.
 */
export function withoutRoundsNotNeeded(
  todo: readonly PlannedRun[],
  measured: ReadonlyMap<string, readonly number[]>,
  target: RepeatUntil,
): PlannedRun[] {
  let rest = [...todo];
  while (rest.length > 0 && rest[0]!.conditional) {
    const head = rest[0]!;
    const end = rest.findIndex((run) => !run.conditional || run.round !== head.round);
    const round = end === -1 ? rest : rest.slice(0, end);
    if (runsStillNeeded(round, measured, target).length > 0) break;
    rest = rest.slice(round.length);
  }
  return rest;
}

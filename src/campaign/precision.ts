/**
 * Repeats until precise (the campaign's repeatUntil): before a conditional round starts, the runs of that round whose
 * configuration is already known precisely enough are dropped. Pure: the plan's runs and the measurements so far in,
 * the runs still needed out.
 */
import { meanWithInterval } from "../results/cost-model.ts";
import { latestAttempts, type RunRecord } from "../results/record.ts";
import type { PlannedRun, RepeatUntil } from "./plan.ts";

/** A configuration's throughput over its repeats so far (images per second, every ok repeat's mean). */
export function throughputsByConfiguration(runs: readonly PlannedRun[], records: readonly RunRecord[]): Map<string, number[]> {
  const configurationOf = new Map(runs.map((run) => [run.id, run.configuration]));
  const values = new Map<string, number[]>();
  for (const { record } of latestAttempts(records)) {
    const configuration = configurationOf.get(record.runId);
    if (configuration === undefined || record.status !== "ok" || record.result?.job !== "train") continue;
    values.set(configuration, [...(values.get(configuration) ?? []), record.result.metrics.imagesPerSecondTotal.mean]);
  }
  return values;
}

/** Whether the 95 % interval (Student's t) of the values is within ±halfWidth of their mean; never with fewer than 2. */
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
export function runsStillNeeded(round: readonly PlannedRun[], measured: ReadonlyMap<string, readonly number[]>, target: RepeatUntil): PlannedRun[] {
  const imprecise = (run: PlannedRun) => !isPrecise(measured.get(run.configuration) ?? [], target.halfWidth);
  const trains = round.filter((run) => run.job === "train");
  const pointsRunning = new Set(trains.filter((run) => run.nodes > 1 && imprecise(run)).map(trainingConfigKey));
  return trains.filter((run) => (run.nodes > 1 ? imprecise(run) : imprecise(run) || pointsRunning.has(trainingConfigKey(run))));
}

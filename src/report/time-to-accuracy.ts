/**
 * Time to accuracy per strategy (issue #37): a strategy that sends fewer bytes also learns differently, so its
 * step time alone proves nothing. Where real-data runs differ only in how the gradients were summed (ring, fp16,
 * PowerSGD, local SGD, the parameter servers), this puts each strategy's throughput, steps, epochs and time to the
 * target accuracy and its held-out accuracy side by side, and says in one sentence which reached the target
 * first and by how much. Pure.
 */
import { REDUCTIONS } from "../config/registry.ts";
import { groupBy, type RealDataRun } from "../analysis/data.ts";
import { percent } from "./text.ts";

export interface StrategyOutcome {
  readonly strategy: string;
  readonly repeats: number;
  /** Repeats that reached the target accuracy. */
  readonly reached: number;
  /** Means over the repeats; the ones "to target" over the repeats that reached it (null: none did). */
  readonly throughput: number;
  readonly stepsToTarget: number | null;
  readonly epochsToTarget: number | null;
  readonly timeToTargetSeconds: number | null;
  /** The last epoch's held-out accuracy, mean over repeats. */
  readonly finalAccuracy: number | null;
  /** The best epoch's of any repeat. */
  readonly bestAccuracy: number | null;
  /** The largest replica divergence at the end of any repeat (null: not recorded). */
  readonly replicaDivergence: number | null;
  /**
   * Local SGD: the largest drift of a replica from the average at any averaging of any repeat (null: none recorded).
   */
  readonly averagingDrift: number | null;
  /** The asynchronous server's updates: mean staleness over the repeats, and the largest of any (null: synchronous). */
  readonly staleness: { readonly mean: number; readonly max: number } | null;
}

export interface StrategyRace {
  /** "small · batch 32 · 3 nodes × 1 · 300mbit" */
  readonly context: string;
  readonly linkGbps: number | null;
  readonly targetAccuracy: number | null;
  /** In the registry's order of reductions: ring first. */
  readonly outcomes: readonly StrategyOutcome[];
}

/** Real-data runs that differ only in their strategy (and repeat), grouped: every group with two strategies or more. */
export function strategyRaces(runs: readonly RealDataRun[]): StrategyRace[] {
  return [...groupBy(runs, (run) => run.comparedWith).values()]
    .filter((group) => new Set(group.map((run) => run.strategy)).size > 1)
    .map((group) => {
      const byStrategy = groupBy(group, (run) => run.strategy);
      const order = (repeats: readonly RealDataRun[]) => REDUCTIONS.indexOf(repeats[0]!.reduction);
      return {
        context: group[0]!.context,
        linkGbps: group[0]!.linkGbps,
        targetAccuracy: group[0]!.targetAccuracy,
        outcomes: [...byStrategy.values()]
          .sort((a, b) => order(a) - order(b) || a[0]!.strategy.localeCompare(b[0]!.strategy))
          .map(outcome),
      };
    })
    .sort((a, b) => (a.linkGbps ?? Infinity) - (b.linkGbps ?? Infinity) || a.context.localeCompare(b.context));
}

function outcome(repeats: readonly RealDataRun[]): StrategyOutcome {
  const reached = repeats.filter((run) => run.reachedTargetAtEpoch !== null);
  const known = (values: readonly (number | null)[]) => values.filter((value): value is number => value !== null);
  return {
    strategy: repeats[0]!.strategy,
    repeats: repeats.length,
    reached: reached.length,
    throughput: mean(repeats.map((run) => run.throughput))!,
    stepsToTarget: mean(known(reached.map((run) => run.stepsToTarget))),
    epochsToTarget: mean(known(reached.map((run) => run.reachedTargetAtEpoch))),
    timeToTargetSeconds: mean(known(reached.map((run) => run.timeToTrainSeconds))),
    finalAccuracy: mean(known(repeats.map((run) => run.heldOutAccuracy))),
    bestAccuracy: maximum(known(repeats.map((run) => run.bestAccuracy))),
    replicaDivergence: maximum(known(repeats.map((run) => run.replicaDivergence))),
    averagingDrift: maximum(known(repeats.map((run) => run.averagingDrift))),
    staleness: stalenessOf(repeats),
  };
}

function stalenessOf(repeats: readonly RealDataRun[]): StrategyOutcome["staleness"] {
  const measured = repeats.flatMap((run) => (run.staleness === null ? [] : [run.staleness]));
  return measured.length === 0
    ? null
    : { mean: mean(measured.map((s) => s.mean))!, max: maximum(measured.map((s) => s.max))! };
}

/**
 * One sentence: which strategy reached the target first (in every repeat) and by how much against ring (or, when
 * ring is the first or did not reach it, against the next); which reached it only sometimes or never, with their
 * best accuracy. Without a target: the highest final accuracy.
 */
export function raceVerdict(race: StrategyRace): string {
  const where = race.context;
  if (race.targetAccuracy === null) {
    const best = race.outcomes
      .filter((o) => o.finalAccuracy !== null)
      .sort((a, b) => b.finalAccuracy! - a.finalAccuracy!)[0];
    return best === undefined
      ? `${where}: no held-out accuracy recorded.`
      : `${where}: no target accuracy set (train.targetAccuracy); ${best.strategy} ended with the highest held-out accuracy, ${percent(best.finalAccuracy!)}.`;
  }
  const target = percent(race.targetAccuracy);
  const always = race.outcomes
    .filter((o) => o.reached === o.repeats && o.timeToTargetSeconds !== null)
    .sort((a, b) => a.timeToTargetSeconds! - b.timeToTargetSeconds!);
  const missed = race.outcomes
    .filter((o) => o.reached < o.repeats)
    .map((o) =>
      o.reached === 0
        ? `${o.strategy} never reached it (best ${o.bestAccuracy === null ? "not recorded" : percent(o.bestAccuracy)})`
        : `${o.strategy} reached it in ${o.reached} of ${o.repeats} repeats only (best ${percent(o.bestAccuracy!)})`,
    );
  const tail = missed.length === 0 ? "." : `; ${missed.join("; ")}.`;
  const [first] = always;
  if (first === undefined) return `${where}: no strategy reached ${target} in every repeat${tail}`;
  const ring = always.find((o) => o.strategy === "ring");
  const against = ring !== undefined && ring !== first ? ring : always[1];
  const lead =
    against === undefined
      ? "the only one to reach it in every repeat"
      : `${(against.timeToTargetSeconds! / first.timeToTargetSeconds!).toFixed(2)}× sooner than ${against.strategy} (${seconds(against.timeToTargetSeconds!)})`;
  return `${where}: ${first.strategy} reached ${target} first, in ${seconds(first.timeToTargetSeconds!)} (${epochs(first.epochsToTarget!)}), ${lead}${tail}`;
}

function seconds(value: number): string {
  return `${value.toFixed(1)} s`;
}

function epochs(value: number): string {
  const text = Number.isInteger(value) ? String(value) : value.toFixed(1);
  return `${text} epoch${value === 1 ? "" : "s"}`;
}

function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((total, value) => total + value, 0) / values.length;
}

function maximum(values: readonly number[]): number | null {
  return values.length === 0 ? null : Math.max(...values);
}

/**
 * Numbers a reviewer would not accept without a second look, found in the report's data and the run records.
 * Impossible: a scaling efficiency above 100% or a probe's bus bandwidth above the shaped link, each by more than
 * its noise. Suspicious: a repeat far from the other repeats, an interval too wide to say much, a faster link
 * measuring slower than a slower one, a run on a machine busy with other work, a run whose steps changed speed while
 * it ran. Every flag names the runs it
 * concerns and says why in one sentence with the figures. Pure.
 */
import { headlineValue } from "../results/derived.ts";
import { latestAttempts, type RunRecord } from "../results/record.ts";
import { quantile } from "../results/statistics.ts";
import { describeUnsteadiness, UNSTEADY_SHIFT, unsteadiness } from "../results/steadiness.ts";
import { formatBytes } from "../util/format.ts";
import {
  errorHalfWidth,
  IN_ONE_NODE,
  probeLinkLabel,
  type BandwidthSeries,
  type Interval,
  type ReportData,
  type ScalingPoint,
  type TrainingConfig,
} from "../analysis/data.ts";
import { percent } from "./text.ts";
import { rateUnit } from "../results/worker-result.ts";

export const FLAG_KINDS = [
  "efficiency-above-ideal",
  "probe-above-link",
  "outlier-repeat",
  "wide-interval",
  "faster-link-slower",
  "machine-busy",
  "unsteady-run",
] as const;
export type FlagKind = (typeof FLAG_KINDS)[number];

export interface Flag {
  readonly kind: FlagKind;
  /** What it concerns, as the report's tables name it: "resnet50 · batch 64 · 10gbit · 4 nodes". */
  readonly subject: string;
  /** The runs behind it: a point's repeats, one repeat, or the repeats of both points of a pair. */
  readonly runIds: readonly string[];
  /** One sentence: the figures and the rule they broke. */
  readonly reason: string;
}

/**
 * A probe may read this much above its link before its interval is even considered: TCP framing, rounding of tc's rate.
 */
export const PROBE_LINK_MARGIN = 0.02;
/** Tukey's far-out fence: this many interquartile ranges beyond the quartiles. */
export const OUTLIER_FENCE_IQRS = 3;
/** With fewer repeats, the other repeats' quartiles are too few numbers to judge one by: no outlier is judged. */
export const OUTLIER_MIN_REPEATS = 4;
/** An interval of the mean wider (in full) than this share of the mean says little about the mean. */
export const WIDE_INTERVAL_SHARE = 0.2;
/** Without a noise estimate on one side, a faster link must lose more than this share to be flagged. */
export const FASTER_LINK_DROP = 0.1;

const KIND_NAMES: Readonly<Record<FlagKind, { readonly one: string; readonly many: string }>> = {
  "efficiency-above-ideal": { one: "efficiency above ideal", many: "efficiencies above ideal" },
  "probe-above-link": { one: "probe above link", many: "probes above link" },
  "outlier-repeat": { one: "outlier repeat", many: "outlier repeats" },
  "wide-interval": { one: "wide interval", many: "wide intervals" },
  "faster-link-slower": { one: "faster link slower", many: "faster links slower" },
  "machine-busy": { one: "machine busy", many: "machine busy" },
  "unsteady-run": { one: "unsteady run", many: "unsteady runs" },
};

/**
 * The kinds that concern one run's measurement, not a configuration's or a pair's: what a table of single runs marks.
 */
export const RUN_FLAG_KINDS: readonly FlagKind[] = ["outlier-repeat", "machine-busy", "unsteady-run"];

export function runFlags(flags: readonly Flag[]): Flag[] {
  return flags.filter((flag) => RUN_FLAG_KINDS.includes(flag.kind));
}

/** "efficiency above ideal": the kind as the report and the closing lines say it. */
export function flagKindName(kind: FlagKind): string {
  return KIND_NAMES[kind].one;
}

/** "1 efficiency above ideal, 2 wide intervals": the flags counted by kind, in FLAG_KINDS' order. */
export function flagTally(flags: readonly Pick<Flag, "kind">[]): string {
  return FLAG_KINDS.flatMap((kind) => {
    const count = flags.filter((flag) => flag.kind === kind).length;
    return count === 0 ? [] : [`${count} ${count === 1 ? KIND_NAMES[kind].one : KIND_NAMES[kind].many}`];
  }).join(", ");
}

/** The kinds of the flags that concern any of these runs, in FLAG_KINDS' order: what a table row marks. */
export function flagKindsOf(flags: readonly Flag[], runIds: readonly string[]): FlagKind[] {
  const concerned = flags.filter((flag) => flag.runIds.some((id) => runIds.includes(id)));
  return FLAG_KINDS.filter((kind) => concerned.some((flag) => flag.kind === kind));
}

/** Every flag, by kind in FLAG_KINDS' order, then in the report's order of configurations. */
export function reportFlags(data: Pick<ReportData, "training" | "probes">, records: readonly RunRecord[]): Flag[] {
  const latest = latestAttempts(records).map(({ record }) => record);
  const sets = repeatSets(data);
  return [
    ...efficiencyAboveIdeal(data.training),
    ...probeAboveLink(data),
    ...outlierRepeats(sets, new Map(latest.map((record) => [record.runId, record]))),
    ...wideIntervals(sets),
    ...fasterLinkSlower(data.training),
    ...machineBusy(latest, sets),
    ...unsteadyRuns(latest, sets),
  ];
}

/** Repeats the report shows as one number: a training point, a baseline, or a probe series. */
interface RepeatSet {
  readonly subject: string;
  readonly runIds: readonly string[];
  /** img/s, tok/s, or Gbit/s (a probe's bus bandwidth). */
  readonly unit: string;
  /** The throughput over the repeats; absent for a probe, whose rows each have their own. */
  readonly throughput?: Interval;
}

function repeatSets(data: Pick<ReportData, "training" | "probes">): RepeatSet[] {
  return [
    ...data.training.flatMap((config) => [
      ...(config.baseline === null
        ? []
        : [
            {
              subject: baselineSubject(config),
              runIds: config.baseline.runIds,
              unit: rateUnit(config.unit),
              throughput: config.baseline.throughput,
            },
          ]),
      ...config.series.flatMap((series) =>
        series.points.map((point) => ({
          subject: pointSubject(config, series, point),
          runIds: point.runIds,
          unit: rateUnit(config.unit),
          throughput: point.throughput,
        })),
      ),
    ]),
    ...data.probes.map((probe) => ({
      subject: `all-reduce probe · ${probeLinkLabel(probe)} · ${probe.nodes} nodes`,
      runIds: probe.runIds,
      unit: "Gbit/s" as const,
    })),
  ];
}

export function pointSubject(config: TrainingConfig, series: BandwidthSeries, point: ScalingPoint): string {
  return `${config.label} · ${series.bandwidth} · ${point.nodes} nodes`;
}

function baselineSubject(config: TrainingConfig): string {
  return `${config.label} · 1 node (baseline)`;
}

/**
 * Efficiency = throughput / (workers / baseline workers × baseline throughput); the scale factor is exact, so by
 * the delta method its relative 95% half-width is the point's and the baseline's combined in quadrature. Each
 * side's ± is errorHalfWidth's: Student's t over repeats, or one run's spread over iterations.
 */
function efficiencyAboveIdeal(training: readonly TrainingConfig[]): Flag[] {
  return training.flatMap((config) =>
    config.series.flatMap((series) =>
      series.points.flatMap((point) => {
        const baseline = config.baseline;
        const efficiency = point.scalingEfficiency;
        if (baseline === null || efficiency === null) return [];
        const relativeHalfWidth = Math.hypot(
          errorHalfWidth(point.throughput) / point.throughput.mean,
          errorHalfWidth(baseline.throughput) / baseline.throughput.mean,
        );
        const halfWidth = efficiency * relativeHalfWidth;
        if (efficiency - 1 <= halfWidth) return [];
        return [
          {
            kind: "efficiency-above-ideal" as const,
            subject: pointSubject(config, series, point),
            runIds: point.runIds,
            reason:
              `scaling efficiency ${percent(efficiency)} ± ${(100 * halfWidth).toFixed(1)} points is above 100% by more than its 95% interval ` +
              `(delta method: the point's ${measurementText(point.throughput, rateUnit(config.unit))} and the baseline's ${measurementText(baseline.throughput, rateUnit(config.unit))}, ` +
              "relative half-widths combined in quadrature); more than ideal scaling usually means the baseline ran slow.",
          },
        ];
      }),
    ),
  );
}

/**
 * Per probe series, its message sizes whose bus bandwidth exceeds link × 1.02 + their 95% half-width; the worst named.
 */
function probeAboveLink(data: Pick<ReportData, "probes">): Flag[] {
  return data.probes.flatMap((probe) => {
    const linkGbps = probe.linkGbps;
    if (linkGbps === null) return [];
    const limitOf = (interval: Interval) => linkGbps * (1 + PROBE_LINK_MARGIN) + interval.halfWidth95;
    const above = probe.rows.filter((row) => row.busBandwidthGbps.mean > limitOf(row.busBandwidthGbps));
    if (above.length === 0) return [];
    const worst = above.reduce((a, b) =>
      b.busBandwidthGbps.mean - limitOf(b.busBandwidthGbps) > a.busBandwidthGbps.mean - limitOf(a.busBandwidthGbps)
        ? b
        : a,
    );
    const busbw = worst.busBandwidthGbps;
    const noise =
      busbw.n > 1
        ? `± ${gbps(busbw.halfWidth95)}, Student's t over ${busbw.n} repeats`
        : "one repeat, no interval: the margin alone";
    return [
      {
        kind: "probe-above-link" as const,
        subject: `all-reduce probe · ${probeLinkLabel(probe)} · ${probe.nodes} nodes`,
        runIds: probe.runIds,
        reason:
          `bus bandwidth ${gbps(busbw.mean)} Gbit/s at ${formatBytes(worst.sizeBytes)} (${noise}) is above the ${gbps(linkGbps)} Gbit/s link ` +
          `by more than its 95% interval plus ${Math.round(PROBE_LINK_MARGIN * 100)}% (limit ${gbps(limitOf(busbw))} Gbit/s)` +
          `${above.length > 1 ? `, as at ${above.length - 1} more of its ${probe.rows.length} message sizes` : ""}: the shaping did not hold, or the probe's times are wrong.`,
      },
    ];
  });
}

/**
 * Tukey's far-out fence, each repeat against the others: outside [Q1 − 3·IQR, Q3 + 3·IQR] of the other repeats'
 * quartiles (linear interpolation between order statistics, numpy's default). Needs OUTLIER_MIN_REPEATS repeats,
 * so at least three others; fewer are not judged.
 */
function outlierRepeats(sets: readonly RepeatSet[], records: ReadonlyMap<string, RunRecord>): Flag[] {
  return sets.flatMap((set) => {
    const measured = set.runIds.flatMap((runId) => {
      const record = records.get(runId);
      const value = record === undefined ? undefined : headlineValue(record);
      return value === undefined ? [] : [{ runId, value }];
    });
    if (measured.length < OUTLIER_MIN_REPEATS) return [];
    return measured.flatMap(({ runId, value }) => {
      const others = measured
        .filter((other) => other.runId !== runId)
        .map((other) => other.value)
        .sort((a, b) => a - b);
      const lowerQuartile = quantile(others, 0.25);
      const upperQuartile = quantile(others, 0.75);
      const range = upperQuartile - lowerQuartile;
      const low = lowerQuartile - OUTLIER_FENCE_IQRS * range;
      const high = upperQuartile + OUTLIER_FENCE_IQRS * range;
      if (value >= low && value <= high) return [];
      const format = (x: number) => measure(x, set.unit);
      return [
        {
          kind: "outlier-repeat" as const,
          subject: set.subject,
          runIds: [runId],
          reason:
            `repeat ${runId} measured ${format(value)} ${set.unit}, outside the far-out fence ${format(low)} – ${format(high)} of the other ` +
            `${others.length} repeats (quartiles ${format(lowerQuartile)} and ${format(upperQuartile)}, ${OUTLIER_FENCE_IQRS} interquartile ranges beyond them: Tukey).`,
        },
      ];
    });
  });
}

/**
 * Training points and baselines whose 95% interval of the mean (two or more repeats) is wider in full than 20% of the
 * mean.
 */
function wideIntervals(sets: readonly RepeatSet[]): Flag[] {
  return sets.flatMap((set) => {
    const interval = set.throughput;
    if (interval === undefined || interval.n < 2) return [];
    const share = (2 * interval.halfWidth95) / interval.mean;
    if (share <= WIDE_INTERVAL_SHARE) return [];
    return [
      {
        kind: "wide-interval" as const,
        subject: set.subject,
        runIds: set.runIds,
        reason:
          `the 95% interval of the mean, ${measure(interval.mean, set.unit)} ± ${measure(interval.halfWidth95, set.unit)} ${set.unit} over ${interval.n} repeats ` +
          `(Student's t), is ${percent(share)} of the mean wide, more than ${Math.round(WIDE_INTERVAL_SHARE * 100)}%: the mean is not known well enough to compare; more repeats narrow it.`,
      },
    ];
  });
}

/**
 * The same configuration, placement and node count on two links: the faster link (unlimited the fastest) flagged
 * when it gave clearly less throughput, its 95% interval entirely below the slower link's (errorHalfWidth on each
 * side). A side with no noise estimate at all (one run, no spread over iterations) leaves only the drop: more
 * than FASTER_LINK_DROP of the slower link's throughput.
 */
function fasterLinkSlower(training: readonly TrainingConfig[]): Flag[] {
  return training.flatMap((config) => {
    const linked = config.series.filter((series) => series.link !== IN_ONE_NODE);
    return linked.flatMap((slow) =>
      linked.flatMap((fast) => {
        if (fast.processesPerNode !== slow.processesPerNode || rateOf(fast) <= rateOf(slow)) return [];
        return fast.points.flatMap((fastPoint) => {
          const slowPoint = slow.points.find((point) => point.nodes === fastPoint.nodes);
          if (slowPoint === undefined) return [];
          const fastRate = fastPoint.throughput;
          const slowRate = slowPoint.throughput;
          const judgedByIntervals = hasNoiseEstimate(fastRate) && hasNoiseEstimate(slowRate);
          const drop = 1 - fastRate.mean / slowRate.mean;
          const clearlySlower = judgedByIntervals
            ? fastRate.mean + errorHalfWidth(fastRate) < slowRate.mean - errorHalfWidth(slowRate)
            : drop > FASTER_LINK_DROP;
          if (!clearlySlower) return [];
          const why = judgedByIntervals
            ? "and the two 95% intervals do not overlap"
            : `${percent(drop)} fewer, more than ${Math.round(FASTER_LINK_DROP * 100)}% (without a noise estimate on both sides the drop alone decides)`;
          return [
            {
              kind: "faster-link-slower" as const,
              subject: `${config.label} · ${fastPoint.nodes} nodes · ${fast.bandwidth} against ${slow.bandwidth}`,
              runIds: [...fastPoint.runIds, ...slowPoint.runIds],
              reason:
                `at ${fastPoint.nodes} nodes the faster link ${fast.bandwidth} gave ${measurementText(fastRate, rateUnit(config.unit))}, ` +
                `fewer than ${slow.bandwidth}'s ${measurementText(slowRate, rateUnit(config.unit))}, ${why}: ` +
                "a faster link cannot make a step slower; look for a busy machine or a slow run.",
            },
          ];
        });
      }),
    );
  });
}

function rateOf(series: BandwidthSeries): number {
  return series.linkGbps ?? Infinity;
}

function hasNoiseEstimate(interval: Interval): boolean {
  return interval.n > 1 || (interval.iterationSpread95 ?? 0) > 0;
}

/** Runs (latest attempts) whose record says the machine was busy outside the testbed; older records say nothing. */
function machineBusy(latest: readonly RunRecord[], sets: readonly RepeatSet[]): Flag[] {
  return latest.flatMap((record) => {
    const load = record.hostLoad;
    if (load?.busy !== true) return [];
    const pressure =
      load.cpuPressureShare === undefined
        ? ""
        : `; some task waited for a CPU ${percent(load.cpuPressureShare)} of the time`;
    return [
      {
        kind: "machine-busy" as const,
        subject: subjectOf(record.runId, sets),
        runIds: [record.runId],
        reason:
          `run ${record.runId}: ${percent(load.outsideShare)} of the machine's CPU capacity went to work outside the testbed while its benchmark ran, ` +
          `above the ${percent(load.busyThreshold)} that marks the machine busy${pressure}: its numbers may be the machine's, not the testbed's.`,
      },
    ];
  });
}

/** What the report's tables call the repeat set a run belongs to, or the run itself. */
function subjectOf(runId: string, sets: readonly RepeatSet[]): string {
  return sets.find((set) => set.runIds.includes(runId))?.subject ?? `run ${runId}`;
}

/**
 * Runs (latest attempts) whose step times shifted by more than UNSTEADY_SHIFT between thirds of the run
 * (results/steadiness.ts).
 */
function unsteadyRuns(latest: readonly RunRecord[], sets: readonly RepeatSet[]): Flag[] {
  return latest.flatMap((record) => {
    const shift = unsteadiness(record);
    if (shift === undefined) return [];
    return [
      {
        kind: "unsteady-run" as const,
        subject: subjectOf(record.runId, sets),
        runIds: [record.runId],
        reason:
          `run ${record.runId} changed speed while it ran: ${describeUnsteadiness(shift)}, ${percent(shift.shift)} apart, more than ` +
          `${percent(UNSTEADY_SHIFT)}: its throughput mixes two speeds. Something slowed the machine for part of the run, or its warm-up ` +
          "(numWarmupBatches) was too short if every run shows it.",
      },
    ];
  });
}

/**
 * "206.0 img/s (± 14.9, Student's t over 3 repeats)", or one run's spread over iterations, or no noise estimate at all.
 */
function measurementText(interval: Interval, unit: string): string {
  const value = `${measure(interval.mean, unit)} ${unit}`;
  if (interval.n > 1)
    return `${value} (± ${measure(interval.halfWidth95, unit)}, Student's t over ${interval.n} repeats)`;
  const spread = interval.iterationSpread95 ?? 0;
  if (spread > 0) return `${value} (± ${measure(spread, unit)}, one run's spread over iterations)`;
  return `${value} (one run without a spread over iterations: no noise estimate)`;
}

function measure(value: number, unit: string): string {
  return unit === "Gbit/s" ? gbps(value) : value.toFixed(1);
}

/** Four digits: the probe's limit is 2% above the link, so three would print a value and its limit alike. */
function gbps(value: number): string {
  return value.toPrecision(4);
}

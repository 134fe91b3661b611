/**
 * Two campaigns' results side by side (`ringlab compare A B`): configurations matched by job, model, batch
 * size, nodes, link and knobs; for each, both measurements and the ratio B / A with a 95% interval. Pure:
 * records in, plain data out; the page is drawn by compare-render.ts.
 *
 * The interval: the delta method on the log of the ratio. Each side's relative 95% half-width (half-width /
 * mean) is combined in quadrature, h = sqrt((hA/mA)² + (hB/mB)²), and the interval is [R·e^-h, R·e^h]: always
 * positive, symmetric on a log scale. A side's half-width is Student's t over its repeats; a side with one
 * repeat uses the worker's spread over iterations (1.96 × std) instead, which stands in for the noise between
 * repeats; a probe with one repeat has neither. The difference is beyond the noise when the interval excludes 1.
 * A side without any noise estimate (one probe run, or one training run without a spread) is not judged: its
 * noise is unknown, not zero, and an interval from the other side alone could call a difference real that the
 * unknown noise would cover.
 */
import { meanWithInterval } from "../results/statistics.ts";
import { headlineValue } from "../results/derived.ts";
import { latestAttempts, type RunRecord } from "../results/record.ts";
import { throughputOf } from "../results/worker-result.ts";

/** Where a side's ± comes from. */
export type NoiseSource = "repeats" | "iterations" | "none";

export interface SideMeasurement {
  readonly mean: number;
  /** Half-width of the 95% interval; 0 with no noise estimate. */
  readonly halfWidth95: number;
  readonly repeats: number;
  readonly noise: NoiseSource;
}

export interface RatioInterval {
  /** B / A. */
  readonly ratio: number;
  readonly lower: number;
  readonly upper: number;
}

/** What a configuration is, as both campaigns name it. */
export interface ConfigurationKey {
  readonly job: string;
  readonly model?: string;
  readonly batchSize?: number;
  readonly nodes: number;
  /** Worker processes per node (1 in records from before the axis): 2 nodes × 2 is not 2 nodes × 1. */
  readonly processesPerNode: number;
  readonly bandwidth: string | null;
  readonly knobs: Readonly<Record<string, string | number | boolean>>;
}

export interface ComparedConfiguration {
  readonly configuration: ConfigurationKey;
  readonly label: string;
  /** "images/s" for training, "Gbit/s" (peak bus bandwidth) for the probe. */
  readonly unit: string;
  readonly a: SideMeasurement;
  readonly b: SideMeasurement;
  /** Null when a side has no noise estimate (noise "none"): the difference is not judged. */
  readonly ratio: RatioInterval | null;
  /** The interval excludes 1; null when not judged. */
  readonly beyondNoise: boolean | null;
}

export interface OneSidedConfiguration {
  readonly configuration: ConfigurationKey;
  readonly label: string;
  readonly unit: string;
  readonly measurement: SideMeasurement;
}

export interface SideSummary {
  /** The results folder as the user named it. */
  readonly name: string;
  readonly campaigns: readonly string[];
  /** Runs whose latest attempt succeeded, of all runs. */
  readonly okRuns: number;
  readonly runs: number;
  readonly firstStartedAt: string | null;
  readonly lastEndedAt: string | null;
  readonly cpusPerNode: readonly number[];
}

export interface Comparison {
  readonly a: SideSummary;
  readonly b: SideSummary;
  /** Configurations measured on both sides, by label. */
  readonly matched: readonly ComparedConfiguration[];
  readonly onlyInA: readonly OneSidedConfiguration[];
  readonly onlyInB: readonly OneSidedConfiguration[];
}

export function compareResults(
  a: { name: string; records: readonly RunRecord[] },
  b: { name: string; records: readonly RunRecord[] },
): Comparison {
  const measuredA = measuredConfigurations(a.records);
  const measuredB = measuredConfigurations(b.records);
  const matched: ComparedConfiguration[] = [];
  for (const [key, fromA] of measuredA) {
    const fromB = measuredB.get(key);
    if (fromB !== undefined) matched.push(compared(fromA, fromB.measurement));
  }
  return {
    a: sideSummary(a.name, a.records),
    b: sideSummary(b.name, b.records),
    matched: matched.sort(byLabel),
    onlyInA: [...measuredA]
      .filter(([key]) => !measuredB.has(key))
      .map(([, only]) => only)
      .sort(byLabel),
    onlyInB: [...measuredB]
      .filter(([key]) => !measuredA.has(key))
      .map(([, only]) => only)
      .sort(byLabel),
  };
}

/** Job, model, batch, nodes, link: numbers in order (batch 64 before 128, 1gbit before 10gbit). */
function byLabel(x: { label: string }, y: { label: string }): number {
  return x.label.localeCompare(y.label, "en", { numeric: true });
}

/** B / A with the log-scale delta-method interval (see the module comment); null when neither side has noise. */
export function ratioInterval(
  a: Pick<SideMeasurement, "mean" | "halfWidth95">,
  b: Pick<SideMeasurement, "mean" | "halfWidth95">,
): RatioInterval | null {
  if (a.halfWidth95 === 0 && b.halfWidth95 === 0) return null;
  const ratio = b.mean / a.mean;
  const logHalfWidth = Math.hypot(a.halfWidth95 / a.mean, b.halfWidth95 / b.mean);
  return { ratio, lower: ratio * Math.exp(-logHalfWidth), upper: ratio * Math.exp(logHalfWidth) };
}

function compared(fromA: OneSidedConfiguration, b: SideMeasurement): ComparedConfiguration {
  const judged = fromA.measurement.noise !== "none" && b.noise !== "none";
  const ratio = judged ? ratioInterval(fromA.measurement, b) : null;
  return {
    configuration: fromA.configuration,
    label: fromA.label,
    unit: fromA.unit,
    a: fromA.measurement,
    b,
    ratio,
    beyondNoise: ratio === null ? null : ratio.lower > 1 || ratio.upper < 1,
  };
}

/** Every configuration with a successful latest attempt, by key, in the order the records list them. */
function measuredConfigurations(records: readonly RunRecord[]): Map<string, OneSidedConfiguration> {
  const ok = latestAttempts(records)
    .map(({ record }) => record)
    .filter((record) => record.status === "ok" && record.result !== undefined);
  const groups = new Map<string, RunRecord[]>();
  for (const record of ok) {
    const key = JSON.stringify(keyParts(configurationOf(record)));
    groups.set(key, [...(groups.get(key) ?? []), record]);
  }
  return new Map(
    [...groups].map(([key, repeats]) => {
      const configuration = configurationOf(repeats[0]!);
      const train = configuration.job === "train";
      return [
        key,
        {
          configuration,
          label: labelOf(configuration),
          unit: train ? "images/s" : "Gbit/s",
          measurement: measurementOf(repeats),
        },
      ];
    }),
  );
}

function configurationOf(record: RunRecord): ConfigurationKey {
  const { job, model, batchSize, nodes, processesPerNode = 1, bandwidth, knobs } = record.params;
  return {
    job,
    ...(model === undefined ? {} : { model }),
    ...(batchSize === undefined ? {} : { batchSize }),
    nodes,
    processesPerNode,
    bandwidth,
    knobs,
  };
}

function keyParts(configuration: ConfigurationKey): unknown[] {
  const knobs = Object.entries(configuration.knobs).sort(([x], [y]) => x.localeCompare(y));
  return [
    configuration.job,
    configuration.model ?? null,
    configuration.batchSize ?? null,
    configuration.nodes,
    configuration.processesPerNode,
    configuration.bandwidth,
    knobs,
  ];
}

export function labelOf(configuration: ConfigurationKey): string {
  const knobs = Object.entries(configuration.knobs)
    .sort(([x], [y]) => x.localeCompare(y))
    .map(([knob, value]) => `${knob}=${String(value)}`);
  return [
    configuration.job,
    ...(configuration.model === undefined ? [] : [configuration.model]),
    ...(configuration.batchSize === undefined ? [] : [`batch ${configuration.batchSize}`]),
    `${configuration.nodes} node${configuration.nodes === 1 ? "" : "s"}${configuration.processesPerNode === 1 ? "" : ` × ${configuration.processesPerNode}`}`,
    configuration.bandwidth ?? "no link",
    ...knobs,
  ].join(" · ");
}

/** Training: total images/s; probe: peak bus bandwidth. Over repeats with Student's t, else one run's own spread. */
function measurementOf(repeats: readonly RunRecord[]): SideMeasurement {
  const values = repeats.map((record) => {
    const result = record.result!;
    return {
      value: headlineValue(record)!,
      spread: result.job === "train" ? throughputOf(result.metrics).total.ci95 : 0,
    };
  });
  if (values.length > 1) {
    const interval = meanWithInterval(values.map(({ value }) => value));
    return { mean: interval.mean, halfWidth95: interval.halfWidth95, repeats: values.length, noise: "repeats" };
  }
  const only = values[0]!;
  return { mean: only.value, halfWidth95: only.spread, repeats: 1, noise: only.spread > 0 ? "iterations" : "none" };
}

function sideSummary(name: string, records: readonly RunRecord[]): SideSummary {
  const runs = latestAttempts(records);
  const starts = records.map((record) => record.startedAt).sort();
  const ends = records.map((record) => record.endedAt).sort();
  return {
    name,
    campaigns: [...new Set(records.map((record) => record.campaign))],
    okRuns: runs.filter(({ record }) => record.status === "ok").length,
    runs: runs.length,
    firstStartedAt: starts[0] ?? null,
    lastEndedAt: ends[ends.length - 1] ?? null,
    cpusPerNode: [...new Set(records.flatMap((record) => record.params.cpusPerNode ?? []))].sort((x, y) => x - y),
  };
}

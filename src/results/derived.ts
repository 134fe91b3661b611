/**
 * Files derived from the run records, for tools other than ringlab: `runs.jsonl` (one record per line) and
 * `summary.csv` (one row per run, with its configuration's statistics over repeats beside it), both from the
 * latest attempt of every run, rewritten whole after each run.
 */
import { writeFileAtomic } from "../util/fs.ts";
import { meanWithInterval, type MeanWithInterval } from "./statistics.ts";
import type { ResultsPaths } from "./paths.ts";
import { latestAttempts, type LatestAttempt, type RunRecord } from "./record.ts";
import { throughputOf, type TrainResult } from "./worker-result.ts";

/** The largest rank's peak memory as the worker measured it (absent in older records). */
function peakMemoryBytes(metrics: TrainResult["metrics"] | undefined): number | undefined {
  const ranks = metrics?.memory?.perRank;
  return ranks === undefined || ranks.length === 0 ? undefined : Math.max(...ranks.map((rank) => rank.peakBytes));
}

/** Rewrites runs.jsonl and summary.csv from every attempt's record, in plan order (unplanned runs last). */
export function writeDerivedFiles(
  paths: ResultsPaths,
  records: readonly RunRecord[],
  planOrder: readonly string[] = [],
): void {
  const position = new Map(planOrder.map((id, index) => [id, index]));
  const ordered = latestAttempts(records).sort(
    (a, b) => (position.get(a.record.runId) ?? Infinity) - (position.get(b.record.runId) ?? Infinity),
  );
  const lines = ordered.map(({ record }) => `${JSON.stringify(record)}\n`);
  writeFileAtomic(paths.runsJsonl, lines.join(""));
  writeFileAtomic(paths.summaryCsv, summaryCsv(ordered));
}

export const SUMMARY_COLUMNS = [
  "run_id",
  "status",
  "attempts",
  "job",
  "nodes",
  "bandwidth",
  "model",
  "batch_size",
  "repeat",
  "workers",
  // Training throughput in the run's unit (images/s for the CNNs, tokens/s for the language models), its layout, and
  // the peak memory of its largest rank (the worker's measure: resident set on CPUs, the allocator's on GPUs).
  "unit",
  "parallelism",
  "throughput_total",
  "throughput_total_spread95",
  "throughput_per_worker",
  "peak_memory_bytes",
  "peak_busbw_gbps",
  "wall_seconds",
  "benchmark_seconds",
  "error",
  // The run's configuration over its successful repeats (see configurationKey), the same on each of its rows.
  "repeats",
  "throughput_total_mean",
  "throughput_total_median",
  "throughput_total_ci95_low",
  "throughput_total_ci95_high",
  "peak_busbw_gbps_mean",
  "peak_busbw_gbps_median",
  "peak_busbw_gbps_ci95_low",
  "peak_busbw_gbps_ci95_high",
  "cv",
] as const;

/**
 * What makes runs repeats of one another: every parameter but the repeat number, as the report groups them
 * (the CPU quota and the launcher are not part of it there either).
 */
export function configurationKey(record: RunRecord): string {
  const { job, model, batchSize, nodes, processesPerNode, bandwidth, knobs } = record.params;
  const sortedKnobs = Object.entries(knobs).sort(([a], [b]) => a.localeCompare(b));
  return JSON.stringify([job, model ?? null, batchSize ?? null, nodes, processesPerNode ?? 1, bandwidth, sortedKnobs]);
}

/**
 * A successful run's headline number: total throughput for training (images/s or tokens/s), peak bus bandwidth for the
 * probe; undefined otherwise.
 */
export function headlineValue(record: RunRecord): number | undefined {
  if (record.status !== "ok" || record.result === undefined) return undefined;
  return record.result.job === "train"
    ? throughputOf(record.result.metrics).total.mean
    : record.result.metrics.peakBusbwGbps;
}

/** Mean, 95% interval (Student's t), median and CV of every configuration's successful repeats, by configurationKey. */
export function configurationStatistics(runs: readonly LatestAttempt[]): Map<string, MeanWithInterval> {
  const values = new Map<string, number[]>();
  for (const { record } of runs) {
    const value = headlineValue(record);
    if (value === undefined) continue;
    const key = configurationKey(record);
    values.set(key, [...(values.get(key) ?? []), value]);
  }
  return new Map([...values].map(([key, samples]) => [key, meanWithInterval(samples)]));
}

type SummaryCells = Record<(typeof SUMMARY_COLUMNS)[number], string | number | undefined>;

/** One row per run, its latest attempt. */
export function summaryCsv(runs: readonly LatestAttempt[]): string {
  const statistics = configurationStatistics(runs);
  const rows = runs.map(({ record, attempts }) => {
    const result = record.result;
    const train = result?.job === "train" ? result.metrics : undefined;
    const probe = result?.job === "allreduce" ? result.metrics : undefined;
    const throughput = train === undefined ? undefined : throughputOf(train);
    const cells: Partial<SummaryCells> = {
      run_id: record.runId,
      status: record.status,
      attempts,
      job: record.params.job,
      nodes: record.params.nodes,
      bandwidth: record.params.bandwidth ?? "",
      model: record.params.model,
      batch_size: record.params.batchSize,
      repeat: record.params.repeat,
      workers: result?.world.size,
      unit: throughput?.unit,
      parallelism: train === undefined ? undefined : String(record.params.knobs["parallelism"] ?? "ddp"),
      throughput_total: throughput?.total.mean,
      // The worker's `ci95`: 1.96 × std over its iterations, a spread, not a confidence interval.
      throughput_total_spread95: throughput?.total.ci95,
      throughput_per_worker: throughput?.perWorker.mean,
      peak_memory_bytes: peakMemoryBytes(train),
      peak_busbw_gbps: probe?.peakBusbwGbps,
      wall_seconds: record.wallSeconds,
      benchmark_seconds: record.benchmarkSeconds,
      error: record.error,
      ...configurationCells(record.params.job, statistics.get(configurationKey(record))),
    };
    return SUMMARY_COLUMNS.map((column) => csvCell(cells[column])).join(",");
  });
  return [SUMMARY_COLUMNS.join(","), ...rows].join("\n") + "\n";
}

/**
 * The configuration's columns: the statistics go under the job's own measure (images/s for training, bus
 * bandwidth for the probe). One repeat has no interval and no CV: those cells stay empty rather than claim a
 * precision nobody measured; no successful repeat leaves every one empty but `repeats` (0).
 */
function configurationCells(
  job: RunRecord["params"]["job"],
  statistics: MeanWithInterval | undefined,
): Partial<SummaryCells> {
  if (statistics === undefined) return { repeats: 0 };
  const { mean, median, n } = statistics;
  const low = n > 1 ? mean - statistics.halfWidth95 : undefined;
  const high = n > 1 ? mean + statistics.halfWidth95 : undefined;
  const shared = { repeats: n, cv: statistics.coefficientOfVariation ?? undefined };
  return job === "train"
    ? {
        ...shared,
        throughput_total_mean: mean,
        throughput_total_median: median,
        throughput_total_ci95_low: low,
        throughput_total_ci95_high: high,
      }
    : {
        ...shared,
        peak_busbw_gbps_mean: mean,
        peak_busbw_gbps_median: median,
        peak_busbw_gbps_ci95_low: low,
        peak_busbw_gbps_ci95_high: high,
      };
}

/** RFC 4180 quoting; text a spreadsheet would run as a formula gets a leading `'` (OWASP's CSV injection advice). */
export function csvCell(value: string | number | undefined): string {
  if (value === undefined) return "";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toPrecision(6);
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

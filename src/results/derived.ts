/**
 * Files derived from the run records, for tools other than ringlab: `runs.jsonl` (one record per line) and
 * `summary.csv` (one row per run), both from the latest attempt of every run, rewritten whole after each run.
 */
import { writeFileAtomic } from "../util/fs.ts";
import type { ResultsLayout } from "./layout.ts";
import { latestAttempts, type LatestAttempt, type RunRecord } from "./record.ts";

/** Rewrites runs.jsonl and summary.csv from every attempt's record, in plan order (unplanned runs last). */
export function writeDerivedFiles(layout: ResultsLayout, records: readonly RunRecord[], planOrder: readonly string[] = []): void {
  const position = new Map(planOrder.map((id, index) => [id, index]));
  const ordered = latestAttempts(records)
    .sort((a, b) => (position.get(a.record.runId) ?? Infinity) - (position.get(b.record.runId) ?? Infinity));
  const lines = ordered.map(({ record }) => `${JSON.stringify(record)}\n`);
  writeFileAtomic(layout.runsJsonl, lines.join(""));
  writeFileAtomic(layout.summaryCsv, summaryCsv(ordered));
}

export const SUMMARY_COLUMNS = [
  "run_id", "status", "attempts", "job", "nodes", "bandwidth", "model", "batch_size", "repeat", "workers",
  "images_per_second_total", "images_per_second_total_spread95", "images_per_second_per_worker",
  "peak_busbw_gbps", "wall_seconds", "benchmark_seconds", "error",
] as const;

/** One row per run, its latest attempt. */
export function summaryCsv(runs: readonly LatestAttempt[]): string {
  const rows = runs.map(({ record, attempts }) => {
    const result = record.result;
    const train = result?.job === "train" ? result.metrics : undefined;
    const probe = result?.job === "allreduce" ? result.metrics : undefined;
    const cells: Record<(typeof SUMMARY_COLUMNS)[number], string | number | undefined> = {
      run_id: record.runId, status: record.status, attempts, job: record.params.job, nodes: record.params.nodes,
      bandwidth: record.params.bandwidth ?? "", model: record.params.model, batch_size: record.params.batchSize,
      repeat: record.params.repeat, workers: result?.world.size,
      images_per_second_total: train?.imagesPerSecondTotal.mean,
      // The worker's `ci95`: 1.96 × std over its iterations, a spread, not a confidence interval.
      images_per_second_total_spread95: train?.imagesPerSecondTotal.ci95,
      images_per_second_per_worker: train?.imagesPerSecondPerWorker.mean, peak_busbw_gbps: probe?.peakBusbwGbps,
      wall_seconds: record.wallSeconds, benchmark_seconds: record.benchmarkSeconds, error: record.error,
    };
    return SUMMARY_COLUMNS.map((column) => csvCell(cells[column])).join(",");
  });
  return [SUMMARY_COLUMNS.join(","), ...rows].join("\n") + "\n";
}

/** RFC 4180 quoting; text a spreadsheet would run as a formula gets a leading `'` (OWASP's CSV injection advice). */
export function csvCell(value: string | number | undefined): string {
  if (value === undefined) return "";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toPrecision(6);
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

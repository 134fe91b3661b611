/**
 * One record per run, versioned: `results/<campaign>/runs/<run id>.json`, each written atomically (temp file,
 * then rename) and never edited in place; a run done again (failed, or its parameters changed) gets a new file
 * in its place. `runs.jsonl` and `summary.csv` are derived from them after every run.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { UsageError } from "../errors.ts";
import { writeFileAtomic } from "../util/fs.ts";
import type { WorkerResult } from "../results/worker-result.ts";
import type { PlannedRun } from "./plan.ts";

export const RUN_RECORD_SCHEMA = "ringlab.run/v1";
const FIX_RECORD = "move that file out of runs/ (its run will be done again) or use another results directory";

export interface RunRecord {
  readonly schema: typeof RUN_RECORD_SCHEMA;
  readonly campaign: string;
  readonly runId: string;
  /** See PlannedRun.fingerprint: a resumed campaign keeps this record only if the plan still matches it. */
  readonly fingerprint: string;
  readonly params: {
    readonly job: PlannedRun["job"];
    readonly nodes: number;
    /** Link rate ("1gbit"), "unlimited", or null for a single-node run. */
    readonly bandwidth: string | null;
    /** The same in Gbit/s; null for unlimited or single-node. */
    readonly linkGbps: number | null;
    readonly repeat: number;
    readonly model?: string;
    readonly batchSize?: number;
    readonly knobs: PlannedRun["knobs"];
    readonly workerArgs: readonly string[];
  };
  readonly status: "ok" | "failed";
  /** Why it failed; the worker logs are in logsDir. */
  readonly error?: string;
  readonly startedAt: string;
  readonly endedAt: string;
  /** The run's wall time, orchestration included. */
  readonly wallSeconds: number;
  /** Time inside the benchmark job (worker launch to end, from its provenance); absent when it failed. */
  readonly benchmarkSeconds?: number;
  readonly testbed: { readonly name: string; readonly target: "local" | "aws"; readonly instanceType?: string };
  /** Relative to the results directory. */
  readonly logsDir: string;
  /** The worker's result as it wrote it. */
  readonly result?: WorkerResult;
}

export interface ResultsLayout {
  readonly dir: string;
  readonly runsDir: string;
  readonly runsJsonl: string;
  readonly summaryCsv: string;
  readonly campaignCopy: string;
  readonly reportHtml: string;
  readonly reportMarkdown: string;
  logsDirOf(runId: string): string;
}

export function resultsLayout(dir: string): ResultsLayout {
  return {
    dir,
    runsDir: join(dir, "runs"),
    runsJsonl: join(dir, "runs.jsonl"),
    summaryCsv: join(dir, "summary.csv"),
    campaignCopy: join(dir, "campaign.yaml"),
    reportHtml: join(dir, "report.html"),
    reportMarkdown: join(dir, "report.md"),
    logsDirOf: (runId) => join(dir, "logs", runId),
  };
}

export function writeRecord(layout: ResultsLayout, record: RunRecord): void {
  writeFileAtomic(join(layout.runsDir, `${record.runId}.json`), `${JSON.stringify(record, null, 2)}\n`);
}

/** Every record in the results directory, in file-name order. Unreadable files are named, not skipped. */
export function readRecords(layout: ResultsLayout): RunRecord[] {
  if (!existsSync(layout.runsDir)) return [];
  return readdirSync(layout.runsDir).filter((f) => f.endsWith(".json") && !f.startsWith(".")).sort().map((file) => {
    const path = join(layout.runsDir, file);
    let record: RunRecord;
    try {
      record = JSON.parse(readFileSync(path, "utf8")) as RunRecord;
    } catch (error) {
      throw new UsageError(`unreadable run record ${path}: ${(error as Error).message}`, { hint: FIX_RECORD });
    }
    if (record.schema !== RUN_RECORD_SCHEMA) {
      throw new UsageError(`${path}: schema ${String(record.schema)}, expected ${RUN_RECORD_SCHEMA}`, { hint: FIX_RECORD });
    }
    return record;
  });
}

/** Rewrites runs.jsonl and summary.csv from the records, in plan order (unplanned ones last). */
export function writeDerivedFiles(layout: ResultsLayout, records: readonly RunRecord[], planOrder: readonly string[] = []): void {
  mkdirSync(layout.dir, { recursive: true });
  const position = new Map(planOrder.map((id, index) => [id, index]));
  const ordered = [...records].sort((a, b) => (position.get(a.runId) ?? Infinity) - (position.get(b.runId) ?? Infinity));
  writeFileAtomic(layout.runsJsonl, ordered.map((record) => JSON.stringify(record)).join("\n") + (ordered.length > 0 ? "\n" : ""));
  writeFileAtomic(layout.summaryCsv, summaryCsv(ordered));
}

export const SUMMARY_COLUMNS = [
  "run_id", "status", "job", "nodes", "bandwidth", "model", "batch_size", "repeat", "workers",
  "images_per_second_total", "images_per_second_total_ci95", "images_per_second_per_worker",
  "peak_busbw_gbps", "wall_seconds", "benchmark_seconds", "error",
] as const;

export function summaryCsv(records: readonly RunRecord[]): string {
  const rows = records.map((record) => {
    const result = record.result;
    const train = result?.job === "train" ? result.metrics : undefined;
    const probe = result?.job === "allreduce" ? result.metrics : undefined;
    const cells: Record<(typeof SUMMARY_COLUMNS)[number], string | number | undefined> = {
      run_id: record.runId, status: record.status, job: record.params.job, nodes: record.params.nodes,
      bandwidth: record.params.bandwidth ?? "", model: record.params.model, batch_size: record.params.batchSize,
      repeat: record.params.repeat, workers: result?.world.size,
      images_per_second_total: train?.imagesPerSecondTotal.mean, images_per_second_total_ci95: train?.imagesPerSecondTotal.ci95,
      images_per_second_per_worker: train?.imagesPerSecondPerWorker.mean, peak_busbw_gbps: probe?.peakBusbwGbps,
      wall_seconds: record.wallSeconds, benchmark_seconds: record.benchmarkSeconds, error: record.error,
    };
    return SUMMARY_COLUMNS.map((column) => csvCell(cells[column])).join(",");
  });
  return [SUMMARY_COLUMNS.join(","), ...rows].join("\n") + "\n";
}

function csvCell(value: string | number | undefined): string {
  if (value === undefined) return "";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toPrecision(6);
  return /[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

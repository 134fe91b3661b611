/**
 * Where everything of a campaign's results lives, under `results/<campaign>/`:
 *
 *   campaign.yaml                      the campaign file as run
 *   runs/<run id>.attempt-<k>.json     one record per attempt of a run (ringlab.run/v1), never rewritten;
 *                                      `runs/<run id>.json`, the name before attempts were kept, is attempt 1
 *   logs/<run id>/attempt-<k>/         that attempt's worker-<rank>.log and result.json
 *   runs.jsonl, summary.csv            derived from the latest attempt of every run
 *   predictions.json                   what the calibration predicted for every training run, before the first
 *   ranking.json                       predict --recommend's order of the layouts at each slot, saved with it
 *   report.html, report.md             the report
 *
 * Pure: paths only.
 */
import { join } from "node:path";

export interface ResultsPaths {
  readonly dir: string;
  readonly runsDir: string;
  readonly runsJsonl: string;
  readonly summaryCsv: string;
  readonly campaignCopy: string;
  /** ringlab.predictions/v1 (results/predictions.ts), when the campaign had a calibration. */
  readonly predictions: string;
  /** ringlab.ranking/v1 (predict/ranking.ts), with predictions.json where the campaign compares layouts. */
  readonly ranking: string;
  readonly reportHtml: string;
  readonly reportMarkdown: string;
  recordFileOf(runId: string, attempt: number): string;
  logsDirOf(runId: string, attempt: number): string;
}

export function resultsPaths(dir: string): ResultsPaths {
  return {
    dir,
    runsDir: join(dir, "runs"),
    runsJsonl: join(dir, "runs.jsonl"),
    summaryCsv: join(dir, "summary.csv"),
    campaignCopy: join(dir, "campaign.yaml"),
    predictions: join(dir, "predictions.json"),
    ranking: join(dir, "ranking.json"),
    reportHtml: join(dir, "report.html"),
    reportMarkdown: join(dir, "report.md"),
    recordFileOf: (runId, attempt) => join(dir, "runs", recordFileName(runId, attempt)),
    logsDirOf: (runId, attempt) => join(dir, "logs", runId, `attempt-${attempt}`),
  };
}

export function recordFileName(runId: string, attempt: number): string {
  return `${runId}.attempt-${attempt}.json`;
}

/** The run and attempt a file in runs/ holds, from its name; undefined for anything that is not a record. */
export function parseRecordFileName(name: string): { runId: string; attempt: number } | undefined {
  if (name.startsWith(".") || !name.endsWith(".json")) return undefined;
  const match = /^(.+)\.attempt-([1-9]\d*)\.json$/.exec(name);
  if (match !== null) return { runId: match[1]!, attempt: Number(match[2]) };
  return { runId: name.slice(0, -".json".length), attempt: 1 };
}

/**
 * Writes report.html and report.md into a results directory from run records the caller holds: the campaign
 * passes the records it has in memory, `ringlab report` the ones it read through the results store. The only
 * part of the report that touches the file system.
 */
import { existsSync, readFileSync } from "node:fs";
import { UsageError } from "../util/errors.ts";
import { parsePredictions } from "../results/predictions.ts";
import { resultsPaths } from "../results/paths.ts";
import type { RunRecord } from "../results/record.ts";
import { writeFileAtomic } from "../util/fs.ts";
import { reportData, reportMeta } from "../analysis/data.ts";
import { reportFlags } from "./suspect-figures.ts";
import { scorePredictions, type PredictionScore } from "./predictions.ts";
import { renderHtml, renderMarkdown } from "./render.ts";

export interface WriteReportOptions {
  /** Why record files were left out when reading (the store's warnings); the report lists them. @default none */
  readonly leftOut?: readonly string[];
  /** The report's "generated" time. @default now */
  readonly generatedAt?: Date;
}

/** Writes both files from every attempt's record and returns their paths. */
export async function writeReport(
  resultsDir: string,
  records: readonly RunRecord[],
  options: WriteReportOptions = {},
): Promise<{ html: string; markdown: string }> {
  const paths = resultsPaths(resultsDir);
  if (records.length === 0) {
    throw new UsageError(`no run records in ${paths.runsDir}: nothing to report for results directory ${resultsDir}`, {
      hint: "pass the results directory of a campaign that has run (results/<campaign>), or run the campaign first",
    });
  }
  const data = reportData(records);
  const flags = reportFlags(data, records);
  const meta = reportMeta(records, options.generatedAt ?? new Date(), options.leftOut ?? []);
  // Vega is loaded only when a report is drawn: it is most of a CLI start's import time otherwise.
  const { renderCharts } = await import("./charts.ts");
  const svgs = await renderCharts(data);
  const predictions = predictionsOf(paths.predictions, data, records);
  writeFileAtomic(paths.reportHtml, renderHtml(data, svgs, meta, flags, predictions));
  writeFileAtomic(paths.reportMarkdown, renderMarkdown(data, meta, flags, predictions));
  return { html: paths.reportHtml, markdown: paths.reportMarkdown };
}

/**
 * The saved predictions scored, when the campaign made some; a file that cannot be read is said in the report's place.
 */
function predictionsOf(
  file: string,
  data: ReturnType<typeof reportData>,
  records: readonly RunRecord[],
): PredictionScore | undefined {
  if (!existsSync(file)) return undefined;
  let parsed: ReturnType<typeof parsePredictions>;
  try {
    parsed = parsePredictions(JSON.parse(readFileSync(file, "utf8")));
  } catch (error) {
    parsed = { problem: (error as Error).message };
  }
  if ("problem" in parsed) {
    return {
      calibration: `(${file} could not be read: ${parsed.problem})`,
      madeAt: new Date(0).toISOString(),
      unit: "images",
      scored: [],
      notMeasured: 0,
      missing: [],
      sources: [],
    };
  }
  return scorePredictions(parsed.file, data, records);
}

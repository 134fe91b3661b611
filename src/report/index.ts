/**
 * `ringlab report <results dir>`: read the run records, compute the report data, draw the charts, and write
 * report.html and report.md beside the records. The only part of the report that touches the file system.
 */
import { readRecords, resultsLayout } from "../campaign/records.ts";
import { UsageError } from "../errors.ts";
import { writeFileAtomic } from "../util/fs.ts";
import { renderCharts } from "./charts.ts";
import { reportData, reportMeta } from "./data.ts";
import { renderHtml, renderMarkdown } from "./render.ts";

/** Writes both files and returns their paths. */
export async function writeReport(resultsDir: string): Promise<{ html: string; markdown: string }> {
  const layout = resultsLayout(resultsDir);
  const records = readRecords(layout);
  if (records.length === 0) {
    throw new UsageError(`no run records in ${layout.runsDir}: nothing to report for results directory ${resultsDir}`, {
      hint: "pass the results directory of a campaign that has run (results/<campaign>), or run the campaign first",
    });
  }
  const data = reportData(records);
  const meta = reportMeta(records, new Date());
  const svgs = await renderCharts(data);
  writeFileAtomic(layout.reportHtml, renderHtml(data, svgs, meta));
  writeFileAtomic(layout.reportMarkdown, renderMarkdown(data, meta));
  return { html: layout.reportHtml, markdown: layout.reportMarkdown };
}

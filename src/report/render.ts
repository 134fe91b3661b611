/**
 * The report as one self-contained HTML page (inline SVG and CSS, no scripts, nothing fetched) and a short
 * markdown summary. Pure: strings in, strings out. Every number is shown next to what it is compared with.
 */
import type { ChartSvgs } from "./charts.ts";
import type { BandwidthSeries, FailedRun, Interval, ProbeSeries, ReportData, ReportMeta, ScalingPoint, TrainingConfig } from "./data.ts";
import { formatBytes } from "../util/format.ts";

const NOT_AVAILABLE = "n/a";
const PLUS_MINUS_NOTE = "± is the 95% confidence interval of the mean over repeats; a single repeat shows its spread over iterations (1.96 × std) instead.";

export function renderHtml(data: ReportData, svgs: ChartSvgs, meta: ReportMeta): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ringlab report: ${escapeHtml(meta.campaign)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>Campaign ${escapeHtml(meta.campaign)}</h1>
<p>Testbed ${escapeHtml(meta.testbed)} · runs from ${escapeHtml(meta.firstStartedAt ?? NOT_AVAILABLE)} to ${escapeHtml(meta.lastEndedAt ?? NOT_AVAILABLE)} · report generated ${escapeHtml(meta.generatedAt)}</p>
${meta.sharedMachine ? `<p class="note">${escapeHtml(SHARED_MACHINE_NOTE)}</p>` : ""}
${leftOutNote(meta.leftOut)}
<p class="counts">${escapeHtml(runCountsText(data))}</p>
</header>
${trainingSection(data, svgs)}
${probeSection(data, svgs)}
${failuresSection(data.failures)}
${HOW_TO_READ}
</body>
</html>
`;
}

export function renderMarkdown(data: ReportData, meta: ReportMeta): string {
  const lines = [
    `# ringlab report: ${markdownText(meta.campaign)}`,
    "",
    `Testbed ${markdownText(meta.testbed)}; runs from ${markdownText(meta.firstStartedAt ?? NOT_AVAILABLE)} to ${markdownText(meta.lastEndedAt ?? NOT_AVAILABLE)}. ${runCountsText(data)}. Charts and every number: report.html.`,
    ...(meta.sharedMachine ? ["", `> ${SHARED_MACHINE_NOTE}`] : []),
    ...markdownLeftOut(meta.leftOut),
    ...markdownTraining(data.training),
    ...markdownProbes(data.probes),
    ...markdownFailures(data.failures),
  ];
  return `${lines.join("\n")}\n`;
}

function markdownTraining(training: readonly TrainingConfig[]): string[] {
  if (training.length === 0) return [];
  const lines = ["", "## Training at the largest node count", "",
    "| Configuration | Link | Nodes | Throughput (img/s) | Ideal (img/s) | Scaling efficiency | Ceiling, no overlap – perfect overlap |",
    "|---|---|---:|---:|---:|---:|---:|"];
  for (const config of training) {
    const label = markdownText(config.label);
    for (const series of config.series) {
      const point = series.points[series.points.length - 1];
      if (point === undefined) continue;
      lines.push(`| ${label} | ${markdownText(series.bandwidth)} | ${point.nodes} | ${interval(point.imagesPerSecond, 1)} | ${optional(point.idealImagesPerSecond, (v) => v.toFixed(1))} | ${optional(point.scalingEfficiency, percent)} | ${ceilingText(point)} |`);
    }
    if (config.series.length === 0 && config.baseline !== null) {
      lines.push(`| ${label} | (one node only) | 1 | ${interval(config.baseline.imagesPerSecond, 1)} | ${NOT_AVAILABLE} | ${NOT_AVAILABLE} | ${NOT_AVAILABLE} |`);
    }
  }
  lines.push("", PLUS_MINUS_NOTE);
  const withoutBaseline = training.filter((config) => config.baseline === null);
  if (withoutBaseline.length > 0) {
    lines.push("", `No single-node run, so no efficiency for: ${withoutBaseline.map((config) => markdownText(config.label)).join("; ")}.`);
  }
  return lines;
}

function markdownProbes(probes: readonly ProbeSeries[]): string[] {
  if (probes.length === 0) return [];
  const lines = ["", "## All-reduce probe", "", "| Link | Nodes | Largest message | Bus bandwidth (Gbit/s) | Share of the link |", "|---|---:|---:|---:|---:|"];
  for (const probe of probes) {
    const largest = probe.rows[probe.rows.length - 1];
    lines.push(`| ${markdownText(probe.bandwidth)} | ${probe.nodes} | ${largest === undefined ? NOT_AVAILABLE : formatBytes(largest.sizeBytes)} | ${largest === undefined ? NOT_AVAILABLE : interval(largest.busBandwidthGbps, 3)} | ${optional(probe.largestSizeLinkFraction, percent)} |`);
  }
  return lines;
}

function markdownFailures(failures: readonly FailedRun[]): string[] {
  const lines = ["", "## Failed runs", ""];
  if (failures.length === 0) lines.push("None.");
  for (const failure of failures) {
    lines.push(`- ${markdownText(failure.runId)} (${attemptsText(failure.attempts)}): ${markdownText(oneLine(failure.error))} (logs: ${markdownText(failure.logsDir)})`);
  }
  return lines;
}

function markdownLeftOut(leftOut: readonly string[]): string[] {
  if (leftOut.length === 0) return [];
  return ["", `> ${leftOut.length} record file(s) could not be read and are left out of this report:`, ...leftOut.map((why) => `> - ${markdownText(oneLine(why))}`)];
}

function runCountsText(data: ReportData): string {
  const { total, ok, failed, doneAgain } = data.runCounts;
  return `${total} runs: ${ok} ok, ${failed} failed${doneAgain > 0 ? `; ${doneAgain} took more than one attempt` : ""}`;
}

function attemptsText(attempts: number): string {
  return attempts === 1 ? "1 attempt" : `${attempts} attempts`;
}

function trainingSection(data: ReportData, svgs: ChartSvgs): string {
  if (data.training.length === 0) return `<section id="training"><h2>Training</h2><p>No successful training run.</p></section>`;
  return `<section id="training">
<h2>Training throughput and scaling efficiency</h2>
${figure(svgs.throughput, "Training throughput against node count")}
${figure(svgs.efficiency, "Scaling efficiency against node count")}
${data.training.map(trainingTable).join("\n")}
</section>`;
}

const TRAINING_COLUMNS = [
  "Link", "Nodes", "Workers", "Repeats", "Throughput (img/s, ± 95% CI)", "Ideal (img/s)", "Scaling efficiency",
  "t<sub>c</sub> compute/step (s)", "t<sub>ar</sub> lower bound (s)", "Ceiling, no overlap", "Ceiling, perfect overlap",
  "Throughput ceiling (img/s, no overlap – perfect overlap)",
];

function trainingTable(config: TrainingConfig): string {
  const rows: string[][] = [];
  if (config.baseline === null) {
    rows.push(["none", "1", "", "", `<em>no single-node run: no ideal, no efficiency</em>`, ...Array<string>(7).fill(NOT_AVAILABLE)]);
  } else {
    const { imagesPerSecond, imagesPerSecondPerWorker, workers } = config.baseline;
    // The baseline is the ideal by definition; nothing crosses the network, so the cost model has nothing to bound.
    rows.push(["none (baseline)", "1", String(workers), String(imagesPerSecond.n), interval(imagesPerSecond, 1), imagesPerSecond.mean.toFixed(1), percent(1),
      seconds(config.batchSize / imagesPerSecondPerWorker), "0", percent(1), percent(1), imagesPerSecond.mean.toFixed(1)]);
  }
  for (const series of config.series) rows.push(...series.points.map((point) => trainingRow(series, point)));
  return `<h3>${escapeHtml(config.label)}</h3>\n${table(TRAINING_COLUMNS, rows)}`;
}

function trainingRow(series: BandwidthSeries, point: ScalingPoint): string[] {
  const throughputCeiling = point.throughputCeiling === null ? NOT_AVAILABLE
    : `${point.throughputCeiling.noOverlap.toFixed(1)} – ${point.throughputCeiling.perfectOverlap.toFixed(1)}`;
  return [
    escapeHtml(series.bandwidth), String(point.nodes), String(point.workers), String(point.imagesPerSecond.n),
    interval(point.imagesPerSecond, 1), optional(point.idealImagesPerSecond, (v) => v.toFixed(1)), optional(point.scalingEfficiency, percent),
    optional(point.computeSecondsPerStep, seconds), optional(point.allReduceLowerBoundSeconds, seconds),
    optional(point.efficiencyCeiling?.noOverlap ?? null, percent), optional(point.efficiencyCeiling?.perfectOverlap ?? null, percent),
    throughputCeiling,
  ];
}

function probeSection(data: ReportData, svgs: ChartSvgs): string {
  if (data.probes.length === 0) return `<section id="probe"><h2>All-reduce probe</h2><p>No successful all-reduce probe.</p></section>`;
  return `<section id="probe">
<h2>All-reduce probe</h2>
${figure(svgs.busBandwidth, "All-reduce bus bandwidth against message size")}
${data.probes.map(probeTable).join("\n")}
</section>`;
}

function probeTable(probe: ProbeSeries): string {
  const link = probe.linkGbps === null ? "unlimited link" : `link ${gbps(probe.linkGbps)} Gbit/s`;
  const share = probe.largestSizeLinkFraction === null ? "" : `; bus bandwidth at the largest size is ${percent(probe.largestSizeLinkFraction)} of the link`;
  const rows = probe.rows.map((row) => [
    formatBytes(row.sizeBytes), interval(row.busBandwidthGbps, 3), gbps(row.algorithmBandwidthGbps), seconds(row.timeSeconds), String(row.wrong),
  ]);
  return `<h3>${escapeHtml(probe.bandwidth)}, ${probe.nodes} nodes (${probe.workers} ranks, ${probe.runIds.length} repeats)</h3>
<p>${escapeHtml(link)}${share}.</p>
${table(["Message size", "Bus bandwidth (Gbit/s, ± 95% CI)", "Algorithm bandwidth (Gbit/s)", "Time (s)", "Wrong"], rows)}`;
}

function failuresSection(failures: readonly FailedRun[]): string {
  if (failures.length === 0) return `<section id="failures"><h2>Failed runs</h2><p>None.</p></section>`;
  const rows = failures.map((failure) => [
    `<code>${escapeHtml(failure.runId)}</code>`, attemptsText(failure.attempts), `<pre>${escapeHtml(failure.error)}</pre>`,
    `<code>${escapeHtml(failure.logsDir)}</code>`,
  ]);
  const columns = ["Run", "Attempts", "Error (latest attempt)", "Logs of the latest attempt (in the results directory)"];
  return `<section id="failures"><h2>Failed runs (${failures.length})</h2>\n${table(columns, rows)}</section>`;
}

function leftOutNote(leftOut: readonly string[]): string {
  if (leftOut.length === 0) return "";
  const items = leftOut.map((why) => `<li>${escapeHtml(why)}</li>`).join("");
  return `<div class="note"><p>${leftOut.length} record file(s) could not be read and are left out of this report:</p><ul>${items}</ul></div>`;
}

const HOW_TO_READ = `<section id="how-to-read">
<h2>How to read this</h2>
<ul>
<li><b>Ideal</b> is n × the single-node throughput; <b>scaling efficiency</b> = throughput / ideal. Single-node runs use no link and are the first point of every link's line.</li>
<li><b>t<sub>c</sub></b>, the compute time of one step, is batch size / single-node throughput per worker.</li>
<li><b>t<sub>ar</sub></b> is the ring all-reduce lower bound for the gradients (S bytes, halved with fp16 all-reduce) over N ranks on links of B bytes/s: t<sub>ar</sub> ≥ 2(N-1)/N · S/B (Patarasuk &amp; Yuan 2009). An unlimited link gives no bound (n/a).</li>
<li>The <b>efficiency ceiling</b> is t<sub>c</sub> / (t<sub>c</sub> + t<sub>ar</sub>) when communication and compute take turns (no overlap) and min(1, t<sub>c</sub> / t<sub>ar</sub>) when the all-reduce hides behind compute (perfect overlap). A measurement above the no-overlap ceiling shows overlap at work; one below it points at more than bandwidth (latency, a slow collective, stragglers).</li>
<li>The probe reports nccl-tests' bandwidths: algbw = S / t and <b>busbw = algbw · 2(N-1)/N</b>, which is comparable with the link rate whatever N is. TCP over MTU 1500 carries about 94–96% of the line rate.</li>
<li>± is the half-width of the 95% confidence interval of the mean over repeats (Student's t). One repeat has no such interval: "(± x over iterations)" is that run's spread instead, 1.96 × the standard deviation of its per-iteration throughput, which says how steady the run was, not how precisely the mean is known. Chart error bars show the same.</li>
</ul>
</section>`;

/** Said wherever local-testbed results are shown, so nobody reads them as hardware scaling. */
export const SHARED_MACHINE_NOTE = "The local testbed's nodes are containers sharing one machine's CPU cores: compute does not grow with " +
  "the node count there, so its scaling efficiencies show the method, not what separate machines would reach. " +
  "The link rates, the all-reduce costs and the probe are real.";

const STYLE = `
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 80rem; padding: 0 1rem; color: #222; }
.note { border-left: 4px solid #d98c00; background: #fff6e5; padding: 0.5rem 0.8rem; }
header p { margin: 0.2rem 0; color: #444; }
.counts { font-weight: 600; }
figure { margin: 1rem 0; overflow-x: auto; }
figure svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: right; vertical-align: top; }
th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
pre { margin: 0; white-space: pre-wrap; text-align: left; max-width: 50rem; }
`;

function figure(svg: string | undefined, caption: string): string {
  return svg === undefined ? "" : `<figure>${svg}<figcaption>${escapeHtml(caption)}</figcaption></figure>`;
}

/** Cells are HTML already: callers escape text that came from records. */
function table(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  const head = `<tr>${columns.map((column) => `<th>${column}</th>`).join("")}</tr>`;
  return `<table>\n<thead>${head}</thead>\n<tbody>\n${rows.map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join("")}</tr>`).join("\n")}\n</tbody>\n</table>`;
}

function ceilingText(point: ScalingPoint): string {
  return point.efficiencyCeiling === null ? NOT_AVAILABLE : `${percent(point.efficiencyCeiling.noOverlap)} – ${percent(point.efficiencyCeiling.perfectOverlap)}`;
}

/** Over repeats: the confidence interval; one repeat: its spread over iterations, labelled as such. */
function interval(value: Interval, digits: number): string {
  const mean = value.mean.toFixed(digits);
  if (value.n > 1) return `${mean} ± ${value.halfWidth95.toFixed(digits)}`;
  // One sample without a spread of its own: "± 0" would claim a precision nobody measured.
  const spread = value.iterationSpread95 ?? 0;
  return spread === 0 ? mean : `${mean} (± ${spread.toFixed(digits)} over iterations)`;
}

function optional(value: number | null, format: (value: number) => string): string {
  return value === null ? NOT_AVAILABLE : format(value);
}

function percent(fraction: number): string {
  return `${(fraction * 100).toFixed(1)}%`;
}

function seconds(value: number): string {
  return value.toPrecision(3);
}

function gbps(value: number): string {
  return value.toPrecision(3);
}


function oneLine(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/**
 * Text from records (ids, model names, errors) as markdown that shows it literally: no raw HTML passes, and
 * nothing breaks a table row or starts emphasis, a code span or a link.
 */
export function markdownText(text: string): string {
  return escapeHtml(text).replace(/[\\`*_[\]|]/g, (c) => `\\${c}`);
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

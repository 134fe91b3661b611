/**
 * The report as one self-contained HTML page (inline SVG and CSS, no scripts, nothing fetched) and a short
 * markdown summary. Pure: strings in, strings out. Every number is shown next to what it is compared with.
 */
import type { ChartSvgs } from "./charts.ts";
import {
  probeLinkLabel,
  type BandwidthSeries,
  type FailedRun,
  type Interval,
  type ProbeSeries,
  type RealDataRun,
  type ReportData,
  type ReportMeta,
  type ScalingPoint,
  type TrainingConfig,
} from "../analysis/data.ts";
import { formatBytes } from "../util/format.ts";
import { comparisons, ratios, verdict } from "./comparisons.ts";
import { answerSentences } from "./answer.ts";
import { layoutComparisons, layoutVerdict, peakPrediction, type LayoutEntry } from "./layouts.ts";
import {
  FASTER_LINK_DROP,
  flagKindName,
  flagKindsOf,
  flagTally,
  OUTLIER_FENCE_IQRS,
  OUTLIER_MIN_REPEATS,
  PROBE_LINK_MARGIN,
  runFlags,
  WIDE_INTERVAL_SHARE,
  type Flag,
} from "./suspect-figures.ts";
import { escapeHtml, htmlTable, markdownText, PAGE_STYLE, percent, readableSpan, readableTime } from "./text.ts";
import { libraryComparisons } from "./libraries.ts";
import { raceVerdict, strategyRaces, type StrategyOutcome, type StrategyRace } from "./time-to-accuracy.ts";
import {
  claimCaveat,
  flaggedMisses,
  machineCaveat,
  predictedBefore,
  predictionsTitle,
  scoreSummary,
  seenSummary,
  type PredictionScore,
  type ScoredPrediction,
} from "./predictions.ts";
import { STEADINESS_MIN_STEPS, UNSTEADY_SHIFT } from "../results/steadiness.ts";
import { rateUnit } from "../results/worker-result.ts";

export { markdownText };

const NOT_AVAILABLE = "n/a";
const PLUS_MINUS_NOTE =
  "± is the 95% confidence interval of the mean (95 % interval: Student's t over repeats); a single repeat shows its spread over iterations (1.96 × std) instead. " +
  "n: repeats (with the campaign's repeatUntil, whether the 95% interval came within its target); CV: coefficient of variation, sample standard deviation / mean (n/a for one repeat); ⚑: a flag (see Flags).";
/** What the CPU check column is and why nothing acts on it, said once for both pages after the column's name. */
const CPU_CHECK_RULE =
  "is every rank's speed at fixed fp32 matrix products for 0.6 s just before the job (per second of CPU time on CPU " +
  "nodes, of wall time on GPUs), the mean over the ranks and the runs (n/a without one), and ringlab neither flags nor corrects on it, because in " +
  "two seed campaigns a run's CPU check did not track its throughput (correlation −0.02 and 0.18); what stands against drift is the order " +
  "of the runs (every round has the baseline and every point once).";

/** `flags`: reportFlags(data, records), listed in their own section and marked beside the points they concern. */
export function renderHtml(
  data: ReportData,
  svgs: ChartSvgs,
  meta: ReportMeta,
  flags: readonly Flag[],
  predictions?: PredictionScore,
): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ringlab report: ${escapeHtml(meta.campaign)}</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<header>
<h1>Campaign ${escapeHtml(meta.campaign)}</h1>
<p>Testbed ${escapeHtml(meta.testbed)} · ${escapeHtml(quotaText(meta))}</p>
<p>Runs ${escapeHtml(runSpanText(meta))} · report generated ${escapeHtml(readableTime(meta.generatedAt))}</p>
${meta.sharedMachine ? `<p class="note">${escapeHtml(SHARED_MACHINE_NOTE)}</p>` : ""}
${leftOutNote(meta.leftOut)}
<p class="counts">${escapeHtml(runCountsText(data, flags))}</p>
</header>
<section id="answer"><p><strong>In short.</strong> ${escapeHtml(answerSentences(data, flags).join(" "))}</p></section>
${flagsSection(flags)}
${trainingSection(data, svgs, flags)}
${realDataSection(data.realData)}
${timeToAccuracySection(data.realData)}
${comparisonsSection(data)}
${layoutsSection(data, predictions)}
${probeSection(data, svgs, flags)}
${modelSection(data, svgs)}
${predictions === undefined ? "" : predictionsSection(predictions, flags)}
${failuresSection(data.failures)}
${HOW_TO_READ}
</body>
</html>
`;
}

export function renderMarkdown(
  data: ReportData,
  meta: ReportMeta,
  flags: readonly Flag[],
  predictions?: PredictionScore,
): string {
  const lines = [
    `# ringlab report: ${markdownText(meta.campaign)}`,
    "",
    `Testbed ${markdownText(meta.testbed)}; ${markdownText(quotaText(meta))}; runs ${markdownText(runSpanText(meta))}. ${runCountsText(data, flags)}. Charts and every number: report.html.`,
    ...(meta.sharedMachine ? ["", `> ${SHARED_MACHINE_NOTE}`] : []),
    ...markdownLeftOut(meta.leftOut),
    "",
    `**In short.** ${markdownText(answerSentences(data, flags).join(" "))}`,
    ...markdownFlags(flags),
    ...markdownTraining(data.training, flags),
    ...markdownRealData(data.realData),
    ...markdownTimeToAccuracy(data.realData),
    ...markdownComparisons(data),
    ...markdownLayouts(data, predictions),
    ...markdownProbes(data.probes),
    ...markdownModel(data),
    ...(predictions === undefined ? [] : markdownPredictions(predictions, flags)),
    ...markdownFailures(data.failures),
  ];
  return `${lines.join("\n")}\n`;
}

function markdownTraining(training: readonly TrainingConfig[], flags: readonly Flag[]): string[] {
  if (training.length === 0) return [];
  const lines = [
    "",
    "## Training at the largest node count",
    "",
    "| Configuration | Link | Nodes | Throughput (per s, mean ± 95%) | n | Median (per s) | CV | Ideal (per s) | Scaling efficiency | CPU check (GFLOP/s) | Ceiling, no overlap – perfect overlap |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const config of training) {
    const label = `${markdownText(config.label)} (${rateUnit(config.unit)})`;
    if (config.baseline !== null) {
      const throughput = config.baseline.throughput;
      const link = config.series.length === 0 ? "(one node only)" : "none (baseline)";
      lines.push(
        `| ${label} | ${link} | 1 | ${variabilityCells(throughput, 1).join(" | ")} | ${throughput.mean.toFixed(1)} | ${percent(1)}${flagMark(flags, config.baseline.runIds)} | ${cpuCheckText(config.baseline.cpuCheckGflops)} | ${NOT_AVAILABLE} |`,
      );
    }
    for (const series of config.series) {
      const point = series.points[series.points.length - 1];
      if (point === undefined) continue;
      lines.push(
        `| ${label} | ${markdownText(series.bandwidth)} | ${point.nodes} | ${variabilityCells(point.throughput, 1).join(" | ")} | ${optional(point.idealThroughput, (v) => v.toFixed(1))} | ${optional(point.scalingEfficiency, percent)}${flagMark(flags, point.runIds)} | ${cpuCheckText(point.cpuCheckGflops)} | ${ceilingText(point)} |`,
      );
    }
  }
  lines.push("", PLUS_MINUS_NOTE, "", `CPU check (GFLOP/s) ${CPU_CHECK_RULE}`);
  const withoutBaseline = training.filter((config) => config.baseline === null);
  if (withoutBaseline.length > 0) {
    lines.push(
      "",
      `No single-node run, so no efficiency for: ${withoutBaseline.map((config) => markdownText(config.label)).join("; ")}.`,
    );
  }
  return lines;
}

/**
 * " ⚑ wide interval, machine busy" after a cell whose runs are flagged; nothing otherwise. Plain text, safe in both
 * pages.
 */
function flagMark(flags: readonly Flag[], runIds: readonly string[]): string {
  const kinds = flagKindsOf(flags, runIds);
  return kinds.length === 0 ? "" : ` ⚑ ${kinds.map(flagKindName).join(", ")}`;
}

/** The same in HTML, coloured as a flag and on its own line, so the efficiency column stays narrow. */
function htmlFlagMark(flags: readonly Flag[], runIds: readonly string[]): string {
  const mark = flagMark(flags, runIds);
  return mark === "" ? "" : `<br><span class="flag">${escapeHtml(mark.trim())}</span>`;
}

function markdownFlags(flags: readonly Flag[]): string[] {
  const lines = ["", "## Flags", ""];
  if (flags.length === 0)
    return [
      ...lines,
      'None: no value is above what is possible or beyond the limits in report.html\'s "How to read this".',
    ];
  return [
    ...lines,
    ...flags.map(
      (flag) => `- ⚑ ${flagKindName(flag.kind)}: ${markdownText(flag.subject)}: ${markdownText(flag.reason)}`,
    ),
  ];
}

function flagsSection(flags: readonly Flag[]): string {
  if (flags.length === 0)
    return `<section id="flags"><h2>Flags</h2><p>None: no value is above what is possible or beyond the limits in "How to read this".</p></section>`;
  const items = flags.map(
    (flag) =>
      `<li><span class="flag">⚑ ${escapeHtml(flagKindName(flag.kind))}</span> · <b>${escapeHtml(flag.subject)}</b>: ${escapeHtml(flag.reason)}` +
      `<br><span class="runs">runs: ${flag.runIds.map((id) => `<code>${escapeHtml(id)}</code>`).join(", ")}</span></li>`,
  );
  return `<section id="flags">
<h2>Flags (${flags.length}: ${escapeHtml(flagTally(flags))})</h2>
<p>Values that are impossible beyond their noise, or suspicious: each is marked ⚑ beside its point in the tables below. The rules are under "How to read this".</p>
<ul class="flags">
${items.join("\n")}
</ul>
</section>`;
}

function markdownProbes(probes: readonly ProbeSeries[]): string[] {
  if (probes.length === 0) return [];
  const lines = [
    "",
    "## All-reduce probe",
    "",
    "| Link | Nodes | Largest message | Bus bandwidth (Gbit/s) | Share of the link |",
    "|---|---:|---:|---:|---:|",
  ];
  for (const probe of probes) {
    const largest = probe.rows[probe.rows.length - 1];
    lines.push(
      `| ${markdownText(probeLinkLabel(probe))} | ${probe.nodes} | ${largest === undefined ? NOT_AVAILABLE : formatBytes(largest.sizeBytes)} | ${largest === undefined ? NOT_AVAILABLE : interval(largest.busBandwidthGbps, 3)} | ${optional(probe.largestSizeLinkFraction, percent)} |`,
    );
  }
  return [...lines, ...libraryComparisons(probes).flatMap((sentence) => ["", markdownText(sentence)])];
}

function markdownModel(data: ReportData): string[] {
  const rows = data.training.flatMap((config) =>
    config.series.flatMap((series) =>
      series.points.flatMap((point) =>
        point.prediction === null || point.scalingEfficiency === null
          ? []
          : [`| ${predictionRow(config, series, point, markdownText).join(" | ")} |`],
      ),
    ),
  );
  if (rows.length === 0) return [];
  return [
    "",
    "## Measured against the model fitted from the probe",
    "",
    "| Configuration | Link | Nodes | Buckets | Σ t_ar fitted (s) | Measured efficiency | Predicted, no overlap (error) | Predicted, full overlap (error) |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
    ...rows,
  ];
}

function markdownFailures(failures: readonly FailedRun[]): string[] {
  const lines = ["", "## Failed runs", ""];
  if (failures.length === 0) lines.push("None.");
  for (const failure of failures) {
    lines.push(
      `- ${markdownText(failure.runId)} (${attemptsText(failure.attempts)}): ${markdownText(oneLine(failure.error))} (logs: ${markdownText(failure.logsDir)})`,
    );
  }
  return lines;
}

function markdownLeftOut(leftOut: readonly string[]): string[] {
  if (leftOut.length === 0) return [];
  return [
    "",
    `> ${leftOut.length} record file(s) could not be read and are left out of this report:`,
    ...leftOut.map((why) => `> - ${markdownText(oneLine(why))}`),
  ];
}

function runSpanText(meta: ReportMeta): string {
  return meta.firstStartedAt === null || meta.lastEndedAt === null
    ? NOT_AVAILABLE
    : readableSpan(meta.firstStartedAt, meta.lastEndedAt);
}

/** The CPU quota every node's worker ran under (local testbed), in the header next to the testbed. */
function quotaText(meta: ReportMeta): string {
  if (meta.cpusPerNode.length === 0) return "no CPU quota per node";
  const quotas = meta.cpusPerNode.map((cores) => `${cores}`).join(", ");
  if (meta.severalProcessesPerNode) {
    return `every worker process limited to ${quotas} CPU cores (a node running P processes: P × that)${meta.cpusPerNode.length === 1 ? "" : "; runs differ: compare within one quota"}`;
  }
  return meta.cpusPerNode.length === 1
    ? `every node's worker limited to ${quotas} CPU cores`
    : `workers limited to ${quotas} CPU cores per node (runs differ: compare within one quota)`;
}

function runCountsText(data: ReportData, flags: readonly Flag[]): string {
  const { total, ok, failed, doneAgain } = data.runCounts;
  const flagged = flags.length === 0 ? "" : `; ${flags.length} flagged (see Flags)`;
  return `${total} runs: ${ok} ok, ${failed} failed${doneAgain > 0 ? `; ${doneAgain} took more than one attempt` : ""}${flagged}`;
}

function attemptsText(attempts: number): string {
  return attempts === 1 ? "1 attempt" : `${attempts} attempts`;
}

function trainingSection(data: ReportData, svgs: ChartSvgs, flags: readonly Flag[]): string {
  if (data.training.length === 0) {
    const why = data.realData.some((run) => run.nodesAtEnd < run.nodesAtStart)
      ? "No training run to draw a scaling curve from: a run that lost a node ran at two node counts (see Real data and time to train)."
      : "No successful training run.";
    return `<section id="training"><h2>Training</h2><p>${why}</p></section>`;
  }
  return `<section id="training">
<h2>Training throughput and scaling efficiency</h2>
${figure(svgs.throughput, CAPTIONS.throughput)}
${figure(svgs.efficiency, CAPTIONS.efficiency)}
${data.training.map((config) => trainingTable(config, flags)).join("\n")}
</section>`;
}

/** The training table's columns, throughput in the configuration's unit (img/s, tok/s). */
function trainingColumns(unit: string): string[] {
  return [
    "Link",
    "Nodes",
    "Workers",
    `Throughput (${unit}, mean ± 95% CI)`,
    "n",
    `Median (${unit})`,
    "CV",
    `Ideal (${unit})`,
    "Scaling efficiency",
    "CPU check (GFLOP/s)",
    "t<sub>c</sub> compute/step (s)",
    "t<sub>ar</sub> lower bound (s)",
    "Ceiling, no overlap",
    "Ceiling, perfect overlap",
    `Throughput ceiling (${unit}, no overlap – perfect overlap)`,
    "Peak memory per rank (GiB)",
  ];
}

function trainingTable(config: TrainingConfig, flags: readonly Flag[]): string {
  const rows: string[][] = [];
  if (config.baseline === null) {
    rows.push([
      "none",
      "1",
      "",
      `<em>no single-node run: no ideal, no efficiency</em>`,
      "",
      "",
      "",
      ...Array<string>(9).fill(NOT_AVAILABLE),
    ]);
  } else {
    const { throughput, workers, runIds } = config.baseline;
    // The baseline is the ideal by definition; nothing crosses the network, so the cost model has nothing to bound.
    rows.push([
      "none (baseline)",
      "1",
      String(workers),
      ...variabilityCells(throughput, 1),
      throughput.mean.toFixed(1),
      `${percent(1)}${htmlFlagMark(flags, runIds)}`,
      cpuCheckText(config.baseline.cpuCheckGflops),
      seconds(config.baseline.computeSecondsPerStep),
      "0",
      percent(1),
      percent(1),
      throughput.mean.toFixed(1),
      memoryText(config.baseline.peakMemoryBytes),
    ]);
  }
  for (const series of config.series) rows.push(...series.points.map((point) => trainingRow(series, point, flags)));
  return `<h3>${escapeHtml(config.label)}</h3>\n${table(trainingColumns(rateUnit(config.unit)), rows)}`;
}

function trainingRow(series: BandwidthSeries, point: ScalingPoint, flags: readonly Flag[]): string[] {
  const throughputCeiling =
    point.throughputCeiling === null
      ? NOT_AVAILABLE
      : `${point.throughputCeiling.noOverlap.toFixed(1)} – ${point.throughputCeiling.perfectOverlap.toFixed(1)}`;
  return [
    escapeHtml(series.bandwidth),
    String(point.nodes),
    String(point.workers),
    ...variabilityCells(point.throughput, 1),
    optional(point.idealThroughput, (v) => v.toFixed(1)),
    `${optional(point.scalingEfficiency, percent)}${htmlFlagMark(flags, point.runIds)}`,
    cpuCheckText(point.cpuCheckGflops),
    optional(point.computeSecondsPerStep, seconds),
    optional(point.allReduceLowerBoundSeconds, seconds),
    optional(point.efficiencyCeiling?.noOverlap ?? null, percent),
    optional(point.efficiencyCeiling?.perfectOverlap ?? null, percent),
    throughputCeiling,
    memoryText(point.peakMemoryBytes),
  ];
}

/** A peak memory over its repeats, in GiB; not available in records older than the measure. */
function memoryText(peak: Interval | null): string {
  return peak === null ? NOT_AVAILABLE : (peak.mean / 2 ** 30).toFixed(2);
}

/**
 * The mean over the runs: three significant digits, whole GFLOP/s from 100 on (a GPU's tens of thousands, no exponent).
 */
function cpuCheckText(cpuCheck: Interval | null): string {
  return cpuCheck === null
    ? NOT_AVAILABLE
    : cpuCheck.mean >= 100
      ? cpuCheck.mean.toFixed(0)
      : cpuCheck.mean.toPrecision(3);
}

const COMPARISON_TITLES = { reduction: "Reductions", placement: "Placements" } as const;

/** Ring against parameter servers, and one node's processes against several nodes': measured beside the model. */
function comparisonsSection(data: ReportData): string {
  const found = comparisons(data.training);
  if (found.length === 0) return "";
  const blocks = found.map((comparison) => {
    const shares = ratios(comparison);
    const rows = comparison.entries.map((e, i) => [
      escapeHtml(e.name),
      interval(e.throughput, 1),
      seconds(e.stepSeconds),
      optional(e.predictedStepSeconds, seconds),
      escapeHtml(e.predictedFrom ?? NOT_AVAILABLE),
      shares[i]!.measured.toFixed(2),
      optional(shares[i]!.predicted, (v) => v.toFixed(2)),
    ]);
    return `<h3>${COMPARISON_TITLES[comparison.kind]}: ${escapeHtml(comparison.context)}</h3>
${table(["", `Throughput (${escapeHtml(comparison.unit)})`, "Step (s)", "Predicted step (s)", "Predicted from", `Step ÷ ${escapeHtml(comparison.entries[0]!.name)}`, "Predicted ratio"], rows)}
<p>${escapeHtml(verdict(comparison))}</p>`;
  });
  return `<section id="comparisons">
<h2>Comparisons</h2>
<p>Runs that differ in one thing only: how the gradients are summed, or how the same number of workers is placed on nodes. A step is every worker's batch; the predicted step is the single-node compute time plus the communication the probe's fitted model gives for that placement and reduction (the lower bound where no probe ran), one after the other.</p>
${blocks.join("\n")}
</section>`;
}

/**
 * The same workload laid out differently, at every link and node count where more than one layout ran. A column no
 * entry of a table has a figure for (scaling efficiency without single-node runs, the probe's prediction without a
 * probe, the saved one without predictions.json) is left out of that table.
 */
function layoutsSection(data: ReportData, predictions?: PredictionScore): string {
  const found = layoutComparisons(data.training, predictions);
  if (found.length === 0) return "";
  const blocks = found.map((comparison) => {
    const peak = peakPrediction(comparison);
    const columns: { readonly header: string; readonly cell: (entry: LayoutEntry) => string | null }[] = [
      { header: "Layout", cell: (entry) => escapeHtml(entry.layout) },
      { header: `Throughput (${escapeHtml(comparison.unit)})`, cell: (entry) => interval(entry.throughput, 1) },
      {
        header: "Scaling efficiency",
        cell: (entry) => (entry.scalingEfficiency === null ? null : percent(entry.scalingEfficiency)),
      },
      {
        header: `Predicted from the probe (${escapeHtml(comparison.unit)}, no overlap – perfect overlap)`,
        cell: (entry) =>
          entry.predicted === null
            ? null
            : `${entry.predicted.noOverlap.toFixed(1)} – ${entry.predicted.perfectOverlap.toFixed(1)}`,
      },
      {
        header: `Predicted before the run (${escapeHtml(comparison.unit)})`,
        cell: (entry) => (entry.predictedBefore === null ? null : entry.predictedBefore.throughput.toFixed(1)),
      },
      {
        header: "Peak memory per rank (GiB)",
        cell: (entry) => (entry.peakMemoryBytes === null ? null : (entry.peakMemoryBytes.mean / 2 ** 30).toFixed(2)),
      },
      {
        header: `Predicted peak (GiB, ${peak.source})`,
        cell: (entry) => {
          const bytes = peak.of(entry);
          return bytes === null ? null : (bytes / 2 ** 30).toFixed(2);
        },
      },
    ];
    // Layout and throughput always have one, so every table keeps them.
    const shown = columns.filter((column) => comparison.entries.some((entry) => column.cell(entry) !== null));
    const rows = comparison.entries.map((entry) => shown.map((column) => column.cell(entry) ?? NOT_AVAILABLE));
    return `<h3>${escapeHtml(comparison.context)}</h3>
${table(
  shown.map((column) => column.header),
  rows,
)}
<p>${escapeHtml(layoutVerdict(comparison))}</p>`;
  });
  return `<section id="layouts">
<h2>Layouts</h2>
<p>One workload on the same link and nodes, laid out differently: every worker a full replica (ddp), its state sharded (fsdp), each block's matrices split (tensor), its blocks cut into stages (pipeline). Fastest first; where the fastest's 95 % interval over repeats overlaps the next's, the runs do not tell the two apart. Every layout here ran, so each fitted its nodes' memory. "Predicted from the probe" is the layout's compute and collectives on the campaign's own probed link; "predicted before the run" is the prediction the campaign saved from its calibration (predictions.json).</p>
${blocks.join("\n")}
</section>`;
}

function markdownLayouts(data: ReportData, predictions?: PredictionScore): string[] {
  const found = layoutComparisons(data.training, predictions);
  if (found.length === 0) return [];
  return ["", "## Layouts", "", ...found.map((comparison) => `- ${markdownText(layoutVerdict(comparison))}`)];
}

function markdownComparisons(data: ReportData): string[] {
  const found = comparisons(data.training);
  if (found.length === 0) return [];
  return [
    "",
    "## Comparisons",
    "",
    ...found.map(
      (comparison) =>
        `- ${COMPARISON_TITLES[comparison.kind]}, ${markdownText(comparison.context)}: ${markdownText(verdict(comparison))}`,
    ),
  ];
}

function probeSection(data: ReportData, svgs: ChartSvgs, flags: readonly Flag[]): string {
  if (data.probes.length === 0)
    return `<section id="probe"><h2>All-reduce probe</h2><p>No successful all-reduce probe.</p></section>`;
  return `<section id="probe">
<h2>All-reduce probe</h2>
${figure(svgs.busBandwidth, CAPTIONS.busBandwidth)}
${data.probes.map((probe) => probeTable(probe, flags)).join("\n")}
</section>`;
}

function probeTable(probe: ProbeSeries, flags: readonly Flag[]): string {
  const link = probe.linkGbps === null ? "unlimited link" : `link ${gbps(probe.linkGbps)} Gbit/s`;
  const share =
    probe.largestSizeLinkFraction === null
      ? ""
      : `; bus bandwidth at the largest size is ${percent(probe.largestSizeLinkFraction)} of the link`;
  const reference =
    probe.referenceGbps === null
      ? ""
      : `; iperf3's one TCP stream on it just before: ${interval(probe.referenceGbps, 3)} Gbit/s`;
  const rows = probe.rows.map((row) => [
    formatBytes(row.sizeBytes),
    interval(row.busBandwidthGbps, 3),
    gbps(row.algorithmBandwidthGbps),
    seconds(row.timeSeconds),
    String(row.wrong),
  ]);
  const mark = flagMark(flags, probe.runIds);
  return `<h3>${escapeHtml(probeLinkLabel(probe))}, ${probe.nodes} nodes (${probe.workers} ranks, ${probe.runIds.length} ${probe.runIds.length === 1 ? "repeat" : "repeats"})${mark === "" ? "" : ` <span class="flag">${escapeHtml(mark.trim())}</span>`}</h3>
<p>${escapeHtml(link)}${share}${escapeHtml(reference)}.</p>
${table(["Message size", "Bus bandwidth (Gbit/s, ± 95% CI)", "Algorithm bandwidth (Gbit/s)", "Time (s)", "Wrong"], rows)}`;
}

/** The α-β fit of every probe, then every training point measured against what the fit predicts. */
function modelSection(data: ReportData, svgs: ChartSvgs): string {
  const fitted = data.probes.filter((probe) => probe.fit !== null);
  if (fitted.length === 0) return "";
  const fitRows = fitted.map((probe) => [
    escapeHtml(probeLinkLabel(probe)),
    String(probe.nodes),
    microseconds(probe.fit!.alphaSeconds),
    gbps(probe.fit!.effectiveGbps),
    probe.linkGbps === null ? NOT_AVAILABLE : percent(probe.fit!.effectiveGbps / probe.linkGbps),
    probe.fit!.rSquared.toFixed(4),
    String(probe.fit!.samples),
  ]);
  const predictionRows = data.training.flatMap((config) =>
    config.series.flatMap((series) =>
      series.points.flatMap((point) =>
        point.prediction === null || point.scalingEfficiency === null ? [] : [predictionRow(config, series, point)],
      ),
    ),
  );
  return `<section id="model">
<h2>Communication model fitted from the probe</h2>
<p>Least squares of t(S) = 2(N-1)·α + 2(N-1)/N · S·β over the probe's message sizes, per link and node count. The prediction of a training step uses the single-node compute time t<sub>c</sub>, the gradient bytes and DDP's buckets (bucketCapMb, default 25 MiB), each bucket paying its own 2(N-1)·α: t<sub>c</sub> + Σ t<sub>ar</sub> without overlap, max(t<sub>c</sub>, Σ t<sub>ar</sub>) with full overlap. Error: measured minus predicted scaling efficiency, in points.</p>
${table(["Link", "Nodes", "α per ring step (µs)", "Effective rate 8/β (Gbit/s)", "Share of the link", "R²", "Sizes"], fitRows)}
${libraryComparisons(data.probes)
  .map((sentence) => `<p>${escapeHtml(sentence)}</p>`)
  .join("\n")}
${figure(svgs.model, CAPTIONS.model)}
${
  predictionRows.length === 0
    ? "<p>No training point has a probe at its link and node count, so none is predicted.</p>"
    : table(
        [
          "Configuration",
          "Link",
          "Nodes",
          "Buckets",
          "Σ t<sub>ar</sub> fitted (s)",
          "Measured efficiency",
          "Predicted, no overlap (error)",
          "Predicted, full overlap (error)",
        ],
        predictionRows,
      )
}
</section>`;
}

/** `escapeText` makes record text safe for the page it goes into (HTML or markdown). */
function predictionRow(
  config: TrainingConfig,
  series: BandwidthSeries,
  point: ScalingPoint,
  escapeText = escapeHtml,
): string[] {
  const prediction = point.prediction!;
  return [
    escapeText(config.label),
    escapeText(series.bandwidth),
    String(point.nodes),
    String(prediction.buckets),
    seconds(prediction.allReduceSeconds),
    percent(point.scalingEfficiency!),
    `${percent(prediction.efficiency.noOverlap)} (${signedPoints(prediction.errorPoints.noOverlap)})`,
    `${percent(prediction.efficiency.perfectOverlap)} (${signedPoints(prediction.errorPoints.perfectOverlap)})`,
  ];
}

function signedPoints(points: number): string {
  return `${points >= 0 ? "+" : "−"}${Math.abs(points).toFixed(1)} pt`;
}

function microseconds(value: number): string {
  return (value * 1e6).toPrecision(3);
}

const REAL_DATA_COLUMNS = [
  "Run",
  "Configuration",
  "img/s (all workers)",
  "Synthetic data (img/s, ratio)",
  "Waiting for data",
  "Time to train",
  "Epochs",
  "Held-out accuracy",
  "Restarts",
  "Steps redone",
  "Lost to restarts",
];

function realDataCells(run: RealDataRun): string[] {
  const target =
    run.targetAccuracy === null
      ? ""
      : run.reachedTargetAtEpoch === null
        ? ` (target ${percent(run.targetAccuracy)} not reached)`
        : ` (target ${percent(run.targetAccuracy)} reached)`;
  return [
    run.runId,
    run.label,
    run.throughput.toFixed(1),
    run.syntheticThroughput === null
      ? "n/a"
      : `${run.syntheticThroughput.toFixed(1)} (${(run.throughput / run.syntheticThroughput).toFixed(2)}x)`,
    run.dataWaitFraction === null ? "n/a" : percent(run.dataWaitFraction),
    run.timeToTrainSeconds === null ? "n/a" : `${run.timeToTrainSeconds.toFixed(1)} s`,
    run.epochs === null ? "n/a" : String(run.epochs),
    run.heldOutAccuracy === null ? "n/a" : `${percent(run.heldOutAccuracy)}${target}`,
    run.nodesAtEnd < run.nodesAtStart
      ? `${run.restarts} (lost ${run.nodesAtStart - run.nodesAtEnd} of ${run.nodesAtStart} nodes, went on with ${run.nodesAtEnd})`
      : String(run.restarts),
    String(run.stepsRedone),
    `${run.secondsLost.toFixed(1)} s`,
  ];
}

const REAL_DATA_NOTE =
  "Time to train is wall time from the first step to the end of the epoch that reached the target (or the last epoch), restarts included, as MLPerf counts it; held-out accuracy is the last epoch's, on the dataset's val/ split. Waiting for data is the share of step time spent getting the batch from the DataLoader. Synthetic data: the same configuration's runs on synthetic tensors (data as a matrix axis), and real over synthetic. A run that lost a node (failNode) and went on without it (minNodes) says so under Restarts; its img/s is at the nodes it ended with.";

function realDataSection(runs: readonly RealDataRun[]): string {
  if (runs.length === 0) return "";
  const rows = runs.map((run) =>
    realDataCells(run).map((cell, i) => (i === 0 ? `<code>${escapeHtml(cell)}</code>` : escapeHtml(cell))),
  );
  return `<section id="real-data">
<h2>Real data and time to train</h2>
<p>${escapeHtml(REAL_DATA_NOTE)}</p>
${table(REAL_DATA_COLUMNS, rows)}</section>`;
}

function markdownRealData(runs: readonly RealDataRun[]): string[] {
  if (runs.length === 0) return [];
  return [
    "",
    "## Real data and time to train",
    "",
    REAL_DATA_NOTE,
    "",
    `| ${REAL_DATA_COLUMNS.join(" | ")} |`,
    `|${REAL_DATA_COLUMNS.map(() => "---").join("|")}|`,
    ...runs.map((run) => `| ${realDataCells(run).map(markdownText).join(" | ")} |`),
  ];
}

const RACE_COLUMNS = [
  "Strategy",
  "Repeats",
  "img/s (all workers)",
  "Reached target",
  "Steps to target",
  "Epochs to target",
  "Time to target",
  "Final held-out accuracy",
  "Best held-out accuracy",
  "Replicas apart at the end (largest at an averaging)",
  "Update staleness (mean / max)",
];

const RACE_NOTE =
  "Real-data runs that differ only in how the gradients were summed. A strategy that sends fewer bytes steps faster but may need more steps: time to target (wall time from the first step to the end of the epoch that reached it, as in the table above) is what counts. Means over the repeats; steps, epochs and time to target over the repeats that reached it. Replicas apart: the largest difference of a parameter from rank 0's after the last step (0 when every step was synchronous; local SGD's replicas drift between averagings, and each rank's replica scores its own share of the held-out images), and in brackets, for local SGD, the largest difference of a parameter from the average at any averaging: how far the replicas had drifted in one period. Update staleness: the asynchronous parameter server's updates, counted in server updates between the parameters a gradient was computed on and the ones it was applied to.";

function raceCells(o: StrategyOutcome): string[] {
  const to = (value: number | null, format: (value: number) => string) =>
    value === null ? "not reached" : format(value);
  return [
    o.strategy,
    String(o.repeats),
    o.throughput.toFixed(1),
    `${o.reached} of ${o.repeats}`,
    to(o.stepsToTarget, (v) => v.toFixed(0)),
    to(o.epochsToTarget, (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1))),
    to(o.timeToTargetSeconds, (v) => `${v.toFixed(1)} s`),
    o.finalAccuracy === null ? NOT_AVAILABLE : percent(o.finalAccuracy),
    o.bestAccuracy === null ? NOT_AVAILABLE : percent(o.bestAccuracy),
    `${o.replicaDivergence === null ? NOT_AVAILABLE : tiny(o.replicaDivergence)}${o.averagingDrift === null ? "" : ` (${tiny(o.averagingDrift)})`}`,
    o.staleness === null ? NOT_AVAILABLE : `${o.staleness.mean.toFixed(2)} / ${o.staleness.max}`,
  ];
}

/** A parameter difference: "0", or "9.2e-3". */
function tiny(value: number): string {
  return value === 0 ? "0" : value.toExponential(1);
}

function raceTitle(race: StrategyRace): string {
  return race.targetAccuracy === null ? race.context : `${race.context} · target ${percent(race.targetAccuracy)}`;
}

/** Each strategy's time to the target accuracy beside the others', per link rate and placement (issue #37). */
function timeToAccuracySection(runs: readonly RealDataRun[]): string {
  const races = strategyRaces(runs);
  if (races.length === 0) return "";
  const blocks = races.map(
    (race) => `<h3>${escapeHtml(raceTitle(race))}</h3>
${table(
  RACE_COLUMNS,
  race.outcomes.map((o) => raceCells(o).map(escapeHtml)),
)}
<p>${escapeHtml(raceVerdict(race))}</p>`,
  );
  return `<section id="time-to-accuracy">
<h2>Strategies: time to accuracy</h2>
<p>${escapeHtml(RACE_NOTE)}</p>
${blocks.join("\n")}
</section>`;
}

function markdownTimeToAccuracy(runs: readonly RealDataRun[]): string[] {
  const races = strategyRaces(runs);
  if (races.length === 0) return [];
  return [
    "",
    "## Strategies: time to accuracy",
    "",
    RACE_NOTE,
    ...races.flatMap((race) => [
      "",
      `### ${markdownText(raceTitle(race))}`,
      "",
      `| ${RACE_COLUMNS.join(" | ")} |`,
      `|${RACE_COLUMNS.map(() => "---").join("|")}|`,
      ...race.outcomes.map((o) => `| ${raceCells(o).map(markdownText).join(" | ")} |`),
      "",
      markdownText(raceVerdict(race)),
    ]),
  ];
}

function failuresSection(failures: readonly FailedRun[]): string {
  if (failures.length === 0) return `<section id="failures"><h2>Failed runs</h2><p>None.</p></section>`;
  const rows = failures.map((failure) => [
    `<code>${escapeHtml(failure.runId)}</code>`,
    attemptsText(failure.attempts),
    `<pre>${escapeHtml(failure.error)}</pre>`,
    `<code>${escapeHtml(failure.logsDir)}</code>`,
  ]);
  const columns = [
    "Run",
    "Attempts",
    "Error (latest attempt)",
    "Logs of the latest attempt (in the results directory)",
  ];
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
<li><b>Ideal</b> is n × the single-node throughput (with several processes per node: every worker process × the single-node throughput per worker); <b>scaling efficiency</b> = throughput / ideal. Single-node runs use no link and are the first point of every link's line.</li>
<li><b>CPU check (GFLOP/s)</b> ${escapeHtml(CPU_CHECK_RULE)}</li>
<li><b>t<sub>c</sub></b>, the compute time of one step, is batch size / single-node throughput per worker.</li>
<li><b>t<sub>ar</sub></b> is the ring all-reduce lower bound for the gradients (S bytes, halved with fp16 all-reduce) over N ranks on links of B bytes/s: t<sub>ar</sub> ≥ 2(N-1)/N · S/B (Patarasuk &amp; Yuan 2009); with P processes on each of N nodes, a ring of W = N·P ranks gives 2(W-1)/W · S/B. A sharded parameter server's links carry 2(N-1)/N · P · S, t<sub>ar</sub> ≥ 2(N-1)/N · P · S/B (as the ring when P = 1). A central parameter server's link carries the other nodes' (N-1)·P gradients back; ringlab shapes each node's egress only, so the gradients going in are bounded by the senders' links and t<sub>ar</sub> ≥ N·P · S/B (2(N-1)·P · S/B on a full-duplex link of B each way). Processes of one node exchange inside it, at no cost here. An unlimited link gives no bound (n/a).</li>
<li>The <b>efficiency ceiling</b> is t<sub>c</sub> / (t<sub>c</sub> + t<sub>ar</sub>) when communication and compute take turns (no overlap) and min(1, t<sub>c</sub> / t<sub>ar</sub>) when the all-reduce hides behind compute (perfect overlap). A measurement above the no-overlap ceiling shows overlap at work; one below it points at more than bandwidth (latency, a slow collective, stragglers).</li>
<li>The probe reports nccl-tests' bandwidths: algbw = S / t and <b>busbw = algbw · 2(N-1)/N</b>, which is comparable with the link rate whatever N is. TCP over MTU 1500 carries about 94–96% of the line rate.</li>
<li>± is the half-width of the 95% confidence interval of the mean over repeats (95 % interval: Student's t over repeats). One repeat has no such interval: "(± x over iterations)" is that run's spread instead, 1.96 × the standard deviation of its per-iteration throughput, which says how steady the run was, not how precisely the mean is known. Chart error bars show the same.</li>
<li><b>n</b> is the repeats behind a number, the <b>median</b> their middle value (one slow repeat moves the mean, not the median), and <b>CV</b> the coefficient of variation, the repeats' sample standard deviation / their mean (n/a for one repeat).</li>
<li><b>Flags</b> (⚑) mark values to check before trusting them. <i>Efficiency above ideal</i>: above 100% by more than its 95% interval, which the delta method gives from the point's ± and the baseline's (their relative half-widths in quadrature). <i>Probe above link</i>: bus bandwidth above the link rate by more than its 95% interval plus ${Math.round(PROBE_LINK_MARGIN * 100)}%. <i>Outlier repeat</i>: a repeat more than ${OUTLIER_FENCE_IQRS} interquartile ranges outside the quartiles of the other repeats (Tukey's far-out fence), judged from ${OUTLIER_MIN_REPEATS} repeats on; fewer are not judged. <i>Wide interval</i>: a 95% interval wider in full than ${Math.round(WIDE_INTERVAL_SHARE * 100)}% of the mean. <i>Faster link slower</i>: the same point on a faster link (unlimited the fastest) clearly slower, the two intervals apart, or by more than ${Math.round(FASTER_LINK_DROP * 100)}% where one side has no noise estimate. <i>Machine busy</i>: the run's record says other work took more of the machine than its threshold while it ran (local testbed). <i>Unsteady run</i>: the median step of one third of the run's timed steps more than ${Math.round(UNSTEADY_SHIFT * 100)}% from another third's, so its throughput mixes two speeds; judged from ${STEADINESS_MIN_STEPS} steps on, not for PowerSGD, local SGD, the asynchronous server or time-to-train runs, whose steps change by design.</li>
</ul>
</section>`;

/** Said wherever local-testbed results are shown, so nobody reads them as hardware scaling. */
export const SHARED_MACHINE_NOTE =
  "The local testbed's nodes are containers sharing one machine's CPU cores: compute does not grow with " +
  "the node count there, so its scaling efficiencies show the method, not what separate machines would reach. " +
  "The link rates, the all-reduce costs and the probe are real.";

/** Each chart's one caption, above it: what it shows, then how to read its marks. */
const CAPTIONS = {
  throughput: {
    title: "Training throughput against node count",
    detail: "Mean ± 95% CI over repeats (one repeat: its spread over iterations); dashed: ideal, n × one node.",
  },
  efficiency: {
    title: "Scaling efficiency against node count",
    detail:
      "Throughput / (n × one node); dashed: the best the lower bound of the run's reduction (ring all-reduce unless the campaign chose another) allows without overlap.",
  },
  busBandwidth: {
    title: "All-reduce bus bandwidth against message size",
    detail:
      "busbw = algbw · 2(N-1)/N, mean ± 95% CI over repeats (a bar cut at the top reaches beyond the chart); dashed grey: link rates; a dashed colour line, where the probe also summed through Open MPI, is Open MPI's.",
  },
  model: {
    title: "Fitted model against measurement",
    detail:
      "Each training point's measured scaling efficiency (across) against what the probe's α-β fit predicts (up): " +
      "circle without overlap, triangle with full overlap. Points on the diagonal are predicted exactly; the measurement should lie between its two marks.",
  },
} as const;

function figure(svg: string | undefined, caption: { readonly title: string; readonly detail: string }): string {
  if (svg === undefined) return "";
  return `<figure><figcaption><b>${escapeHtml(caption.title)}.</b> ${escapeHtml(caption.detail)}</figcaption>${svg}</figure>`;
}

/** Wide tables scroll inside the column instead of pushing the page wider than the charts. */
function table(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  return `<div class="scroll">${htmlTable(columns, rows)}</div>`;
}

function ceilingText(point: ScalingPoint): string {
  return point.efficiencyCeiling === null
    ? NOT_AVAILABLE
    : `${percent(point.efficiencyCeiling.noOverlap)} – ${percent(point.efficiencyCeiling.perfectOverlap)}`;
}

/**
 * The throughput, its repeats, median and coefficient of variation: the cells every training table puts side by side.
 */
function variabilityCells(value: Interval, digits: number): string[] {
  return [
    interval(value, digits),
    repeatsText(value),
    value.median.toFixed(digits),
    optional(value.coefficientOfVariation, percent),
  ];
}

/** "3", or with the campaign's repeatUntil "3 (±10%: reached)" / "4 (±10%: not reached)". */
function repeatsText(value: Interval): string {
  const target = value.precisionTarget;
  return target === undefined
    ? String(value.n)
    : `${value.n} (±${percent(target.halfWidth)}: ${target.reached ? "reached" : "not reached"})`;
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
 * Says "before the first run" only where the predictions were (predictedBefore): nothing measured first, and
 * out-of-sample.
 */
function predictionsIntro(score: PredictionScore): string {
  return (
    `${predictedBefore(score) ? "Made before the first run, with" : "Made with"} ringlab plan's model ` +
    "(t_c, then the step's communication: DDP's all-reduce in its buckets, or a layout's own collectives, FSDP's gathers and reduce-scatters, tensor " +
    "parallelism's all-reduces, a pipeline's sends and its bubble; less the share φ of it that the calibration's own shaped runs hid behind backward, or none where no " +
    "run measured it; the interval from t_c's and φ's), from the sources listed below it: earlier campaigns' measurements, published figures, the " +
    "instance catalogue, each derived or assumed input said so. Every measurement of a run is shown: one done again (its first disturbed) beside the first."
  );
}

/**
 * One row per scored attempt; the flags that concern that run alone (RUN_FLAG_KINDS: an outlier repeat, a busy machine,
 * an unsteady run) marked after its name on its latest attempt, of which the flags speak, and an earlier attempt's own
 * disturbance on that attempt. A configuration's flags (a wide interval) are the tables' above, not a run's.
 */
function predictionRows(
  score: PredictionScore,
  flags: readonly Flag[],
  escapeText = (text: string) => text,
  mark = flagMark,
): string[][] {
  const signed = (value: number, digits: number) => `${value >= 0 ? "+" : "−"}${Math.abs(value).toFixed(digits)}`;
  const memory = hasMemory(score);
  const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(2);
  return score.scored.map((row) => [
    `${escapeText(row.label)}${mark(row.latest ? runFlags(flags) : disturbanceFlags(row), [row.runId])}`,
    row.predictedThroughput.toFixed(1),
    row.measuredThroughput.toFixed(1),
    `${signed(row.throughputError * 100, 1)}%`,
    `${percent(row.predictedEfficiency.value)} (${percent(row.predictedEfficiency.low)} – ${percent(row.predictedEfficiency.high)})`,
    optional(row.measuredEfficiency, percent),
    row.errorPoints === null ? NOT_AVAILABLE : `${signed(row.errorPoints, 1)} pt`,
    ...(memory
      ? [
          optional(row.predictedMemoryBytes, gib),
          optional(row.measuredMemoryBytes, gib),
          row.memoryError === null ? NOT_AVAILABLE : `${signed(row.memoryError * 100, 1)}%`,
        ]
      : []),
  ]);
}

/**
 * Whether the predictions saved the memory model's peak (files before 2026-11-28 did not): then the table shows it
 * beside the measured.
 */
function hasMemory(score: PredictionScore): boolean {
  return score.scored.some((row) => row.predictedMemoryBytes !== null);
}

/** An earlier attempt's disturbance as the flag it would have been. */
function disturbanceFlags(row: ScoredPrediction): Flag[] {
  if (row.disturbance === null) return [];
  return [
    {
      kind: row.disturbance === "machine busy" ? "machine-busy" : "unsteady-run",
      subject: row.label,
      runIds: [row.runId],
      reason: row.disturbance,
    },
  ];
}

/** The table's columns: throughput in the predictions' unit, and the peak memory per rank where they saved it. */
function predictionColumns(score: PredictionScore): string[] {
  const unit = rateUnit(score.unit);
  return [
    "Run",
    `Predicted (${unit})`,
    `Measured (${unit})`,
    "Error",
    "Predicted efficiency (95%)",
    "Measured efficiency",
    "Error (points)",
    ...(hasMemory(score) ? ["Peak per rank, predicted (GiB)", "Measured (GiB)", "Error"] : []),
  ];
}

function predictionNotes(score: PredictionScore, flags: readonly Flag[]): string[] {
  const flagged = flaggedMisses(score, new Set(runFlags(flags).flatMap((flag) => flag.runIds)));
  const caveat = claimCaveat(score);
  const machine = machineCaveat(score);
  const again = new Set(score.scored.filter((row) => !row.counted).map((row) => row.runId)).size;
  return [
    ...(caveat === undefined ? [] : [caveat]),
    ...(machine === undefined ? [] : [machine]),
    `${scoreSummary(score)}${flagged === undefined ? "" : `; ${flagged}`}. Predicted from ${score.calibration}, ${readableTime(score.madeAt)}.`,
    seenSummary(score) === undefined
      ? "Which of these runs' configurations the calibration had measured is not recorded (a predictions.json of an older ringlab): the score may include runs it measured."
      : `${seenSummary(score)}.`,
    ...(again === 0
      ? []
      : [
          `${again} run${again === 1 ? " was" : "s were"} measured again (the rows marked run again): the summary counts each run's first measurement, the later ones are shown beside it.`,
        ]),
    ...score.sources.map((source) => `Source: ${source}`),
    ...(score.notMeasured === 0
      ? []
      : [
          `${score.notMeasured} predicted run${score.notMeasured === 1 ? " has" : "s have"} no successful measurement (rounds that repeatUntil did not need, or runs that failed).`,
        ]),
    ...score.missing.map((entry) => `${entry.runId}: not predicted: ${entry.missing}`),
  ];
}

function markdownPredictions(score: PredictionScore, flags: readonly Flag[]): string[] {
  return [
    "",
    `## ${predictionsTitle(score)}`,
    "",
    predictionsIntro(score),
    "",
    `| ${predictionColumns(score).join(" | ")} |`,
    `|---|${predictionColumns(score)
      .slice(1)
      .map(() => "---:")
      .join("|")}|`,
    ...predictionRows(score, flags).map((cells) => `| ${cells.map(markdownText).join(" | ")} |`),
    ...predictionNotes(score, flags).flatMap((note) => ["", markdownText(note)]),
  ];
}

function predictionsSection(score: PredictionScore, flags: readonly Flag[]): string {
  return `<section id="predictions">
<h2>${escapeHtml(predictionsTitle(score))}</h2>
<p>${escapeHtml(predictionsIntro(score))}</p>
${table(predictionColumns(score), predictionRows(score, flags, escapeHtml, htmlFlagMark))}
${predictionNotes(score, flags)
  .map((note) => `<p>${escapeHtml(note)}</p>`)
  .join("\n")}
</section>`;
}

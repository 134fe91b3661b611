/**
 * The report's charts: vega-lite specs built from ReportData (pure), rendered headless to SVG strings by vega.
 * SVG needs no canvas, so the report renders anywhere Node runs.
 */
import { parse, View } from "vega";
import { compile, type TopLevelSpec } from "vega-lite";
import {
  errorHalfWidth,
  probeLinkLabel,
  type BandwidthSeries,
  type ReportData,
  type TrainingConfig,
} from "../analysis/data.ts";
import { libraryName } from "./libraries.ts";
import { CONTENT_WIDTH_PX } from "./text.ts";

/** SVG markup of each chart; absent when the campaign has nothing to draw in it. */
export interface ChartSvgs {
  readonly throughput?: string;
  readonly efficiency?: string;
  readonly busBandwidth?: string;
  readonly model?: string;
}

export const IDEAL_SERIES = "Ideal";
const CEILING_KIND = "ceiling, no overlap (cost model)";
const MEASURED_KIND = "measured";
const PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2", "#72b7b2", "#eeca3b", "#9d755d", "#ff9da6"];
const IDEAL_COLOR = "#555555";
const SOLID = [1, 0];
const DASHED = [6, 4];
/**
 * Charts are drawn at the page's content width (text.ts), so the page shows them at 1:1. Titles and captions
 * are the page's (one figcaption per chart), not the chart's. Two facet panels side by side, each with its
 * y axis (~70 px) and the spacing between them, fill the width; legends go on top so they take no width.
 */
const PANEL_HEIGHT = 220;
const SINGLE_PANEL_WIDTH = CONTENT_WIDTH_PX - 100;
const PANEL_WIDTH = Math.floor((CONTENT_WIDTH_PX - 2 * 70 - 40) / 2);
/**
 * What a half-width panel's title line holds at the header's 13 px, as vega measures it when it lays the chart out
 * here (no canvas in Node: 0.8 em a character, wider than a browser draws it); a longer line widens the panel.
 */
const TITLE_LINE_CHARS = Math.floor(PANEL_WIDTH / (0.8 * 13));
const SINGLE = { width: CONTENT_WIDTH_PX, height: 320, autosize: { type: "fit", contains: "padding" } } as const;
const CONFIG = {
  font: "sans-serif",
  axis: { labelFontSize: 12, titleFontSize: 13 },
  // A panel title's lines (wrapTitle), each a line of the header.
  header: { labelFontSize: 13, labelLimit: 0, labelExpr: "split(datum.label, '\\n')" },
  // Lines, not dots, in legends: the dash is what tells the ideal and the ceiling from a measurement.
  legend: {
    orient: "top" as const,
    direction: "horizontal" as const,
    symbolType: "stroke",
    symbolStrokeWidth: 2,
    symbolSize: 400,
    labelLimit: 0,
    labelFontSize: 12,
    titleFontSize: 12,
  },
};

const nodesAxis = {
  field: "nodes",
  type: "quantitative",
  title: "Nodes",
  scale: { zero: false, nice: false },
  axis: { tickMinStep: 1, format: "d" },
} as const;

export async function renderCharts(data: ReportData): Promise<ChartSvgs> {
  const specs = {
    throughput: throughputChartSpec(data),
    efficiency: efficiencyChartSpec(data),
    busBandwidth: busBandwidthChartSpec(data),
    model: modelChartSpec(data),
  };
  const svgs: Record<string, string> = {};
  for (const [name, spec] of Object.entries(specs)) {
    if (spec !== null) svgs[name] = await renderSvg(spec);
  }
  return svgs;
}

/**
 * Vega's SVG for one vega-lite spec. Clip and gradient ids come from a process-wide counter, so inlined charts never
 * clash.
 */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new View(parse(compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Throughput against node count, one panel per configuration, one line per link plus the dashed ideal. */
export function throughputChartSpec(data: ReportData): TopLevelSpec | null {
  const rows = data.training.flatMap((config) => [
    ...nodeScaledSeries(config).flatMap((series) =>
      withBaseline(config, series).map((point) => ({
        panel: panelTitle(config),
        series: series.bandwidth,
        nodes: point.nodes,
        throughput: point.mean,
        lower: Math.max(0, point.mean - point.plusMinus),
        upper: point.mean + point.plusMinus,
      })),
    ),
    ...idealRows(config),
  ]);
  if (rows.length === 0) return null;
  const domain = [...bandwidthsOf(data), IDEAL_SERIES];
  const seriesScale = { domain, range: [...colors(domain.length - 1), IDEAL_COLOR] };
  const dashScale = { domain, range: [...domain.slice(1).map(() => SOLID), DASHED] };
  // Images/s for the CNNs, tokens/s for the language models; a campaign of both says so in each panel's title.
  const units = [...new Set(data.training.map((config) => config.unit))];
  const yTitle = units.length === 1 ? `Throughput (${units[0]}/s)` : "Throughput (per second: the panel's unit)";
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    data: { values: rows },
    facet: { field: "panel", type: "nominal", title: null },
    columns: 2,
    resolve: { scale: { y: "independent" } },
    spec: {
      ...panelSize(panelCount(rows)),
      layer: [
        {
          mark: { type: "line", point: true },
          encoding: {
            x: nodesAxis,
            y: { field: "throughput", type: "quantitative", title: yTitle },
            color: { field: "series", type: "nominal", title: "Link", scale: seriesScale },
            strokeDash: { field: "series", type: "nominal", title: "Link", scale: dashScale },
          },
        },
        {
          transform: [{ filter: `datum.series !== '${IDEAL_SERIES}'` }],
          mark: { type: "errorbar", ticks: true },
          encoding: {
            x: nodesAxis,
            y: { field: "lower", type: "quantitative", title: yTitle },
            y2: { field: "upper" },
            color: { field: "series", type: "nominal", title: "Link", scale: seriesScale },
          },
        },
      ],
    },
    config: CONFIG,
  };
}

/** Scaling efficiency against node count per configuration and link, with the cost model's no-overlap ceiling. */
export function efficiencyChartSpec(data: ReportData): TopLevelSpec | null {
  const rows = data.training
    .filter((config) => config.baseline !== null)
    .flatMap((config) =>
      nodeScaledSeries(config).flatMap((series) => {
        const start = { panel: wrapTitle(config.label), bandwidth: series.bandwidth, nodes: 1, efficiency: 1 };
        const measured = series.points.flatMap((point) =>
          point.scalingEfficiency === null
            ? []
            : [
                {
                  panel: wrapTitle(config.label),
                  bandwidth: series.bandwidth,
                  nodes: point.nodes,
                  efficiency: point.scalingEfficiency,
                },
              ],
        );
        const ceiling = series.points.flatMap((point) =>
          point.efficiencyCeiling === null
            ? []
            : [
                {
                  panel: wrapTitle(config.label),
                  bandwidth: series.bandwidth,
                  nodes: point.nodes,
                  efficiency: point.efficiencyCeiling.noOverlap,
                },
              ],
        );
        return [
          ...[start, ...measured].map((row) => ({ ...row, kind: MEASURED_KIND })),
          ...(ceiling.length === 0 ? [] : [start, ...ceiling].map((row) => ({ ...row, kind: CEILING_KIND }))),
        ];
      }),
    );
  if (rows.length === 0) return null;
  const bandwidths = bandwidthsOf(data);
  const y = {
    field: "efficiency",
    type: "quantitative",
    title: "Scaling efficiency",
    axis: { format: "%" },
    scale: { domainMin: 0 },
  } as const;
  const color = {
    field: "bandwidth",
    type: "nominal",
    title: "Link",
    scale: { domain: bandwidths, range: colors(bandwidths.length) },
  } as const;
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    data: { values: rows },
    facet: { field: "panel", type: "nominal", title: null },
    columns: 2,
    spec: {
      ...panelSize(panelCount(rows)),
      layer: [
        { mark: { type: "rule", color: "#bbbbbb" }, encoding: { y: { datum: 1 } } },
        {
          mark: "line",
          encoding: {
            x: nodesAxis,
            y,
            color,
            strokeDash: {
              field: "kind",
              type: "nominal",
              title: "Line",
              scale: { domain: [MEASURED_KIND, CEILING_KIND], range: [SOLID, DASHED] },
            },
          },
        },
        { mark: { type: "point", filled: true }, encoding: { x: nodesAxis, y, color } },
      ],
    },
    config: CONFIG,
  };
}

/** Room above the highest mean or link rate on the bus bandwidth chart. */
export const BUS_BANDWIDTH_HEADROOM = 1.15;

/**
 * All-reduce bus bandwidth against message size, one line per link × node count (colour) and library (a dashed line
 * for Open MPI, where the probe summed through both), a rule at each link rate.
 */
export function busBandwidthChartSpec(data: ReportData): TopLevelSpec | null {
  const rows = data.probes.flatMap((probe) =>
    probe.rows.map((row) => ({
      series: `${probeLinkLabel({ bandwidth: probe.bandwidth, reduction: probe.reduction, processesPerNode: probe.processesPerNode, collective: probe.collective })} · ${probe.nodes} nodes`,
      library: libraryName(probe),
      sizeBytes: row.sizeBytes,
      busbw: row.busBandwidthGbps.mean,
      lower: Math.max(0, row.busBandwidthGbps.mean - row.busBandwidthGbps.halfWidth95),
      upper: row.busBandwidthGbps.mean + row.busBandwidthGbps.halfWidth95,
    })),
  );
  if (rows.length === 0) return null;
  const links = [
    ...new Map(
      data.probes.flatMap((probe) =>
        probe.linkGbps === null
          ? []
          : [[probe.bandwidth, { linkGbps: probe.linkGbps, label: `${probe.bandwidth} link` }] as const],
      ),
    ).values(),
  ];
  const sizes = [...new Set(rows.map((row) => row.sizeBytes))].sort((a, b) => a - b);
  const x = {
    field: "sizeBytes",
    type: "quantitative",
    title: "Message size (bytes, log2)",
    scale: { type: "log", base: 2 },
    axis: { values: sizes, labelExpr: BYTES_LABEL, labelOverlap: true },
  } as const;
  // The axis fits the means and the link rates, not the error bars: with two repeats (Student's t of 12.7) a bar can
  // reach ten times the rate and squash every line to the bottom. A bar cut at the top reaches beyond it.
  const yMax =
    BUS_BANDWIDTH_HEADROOM * Math.max(...rows.map((row) => row.busbw), ...links.map((link) => link.linkGbps));
  const y = {
    field: "busbw",
    type: "quantitative" as const,
    title: "Bus bandwidth (Gbit/s)",
    scale: { domain: [0, yMax] },
  };
  const series = [...new Set(rows.map((row) => row.series))];
  // In rows of four: one row of six or more link × node series runs off the page's width.
  const color = {
    field: "series",
    type: "nominal",
    title: "Link · nodes",
    scale: { domain: series, range: colors(series.length) },
    legend: { columns: 4 },
  } as const;
  // torch.distributed solid, Open MPI dashed, whichever came first.
  const libraries = [...new Set(rows.map((row) => row.library))].sort(
    (a, b) => Number(a === "Open MPI") - Number(b === "Open MPI"),
  );
  const dash =
    libraries.length < 2
      ? {}
      : ({
          strokeDash: {
            field: "library",
            type: "nominal",
            title: "Library",
            scale: {
              domain: libraries,
              range: [
                [1, 0],
                [6, 3],
              ],
            },
            legend: {
              orient: "bottom",
              symbolType: "stroke",
              symbolSize: 400,
              encode: { symbols: { update: { stroke: { value: "#333333" } } } },
            },
          },
        } as const);
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    ...SINGLE,
    layer: [
      { data: { values: rows }, mark: { type: "line", point: true }, encoding: { x, y, color, ...dash } },
      {
        data: { values: rows },
        mark: { type: "errorbar", ticks: true, clip: true },
        encoding: { x, y: { ...y, field: "lower" }, y2: { field: "upper" }, color },
      },
      ...(links.length === 0
        ? []
        : ([
            {
              data: { values: links },
              mark: { type: "rule", strokeDash: DASHED, color: "#888888" },
              encoding: { y: { field: "linkGbps", type: "quantitative" } },
            },
            {
              data: { values: links },
              mark: { type: "text", align: "left", dx: 4, dy: -7, color: "#555555" },
              encoding: { y: { field: "linkGbps", type: "quantitative" }, x: { value: 0 }, text: { field: "label" } },
            },
          ] as const)),
    ],
    config: CONFIG,
  };
}

const NO_OVERLAP = "predicted, no overlap";
const FULL_OVERLAP = "predicted, full overlap";

/**
 * Predicted against measured scaling efficiency: per training point a circle (no overlap) and a triangle (full
 * overlap) joined by a rule, coloured by link, and the diagonal where prediction equals measurement.
 */
export function modelChartSpec(data: ReportData): TopLevelSpec | null {
  const pairs = data.training.flatMap((config) =>
    config.series.flatMap((series) =>
      series.points.flatMap((point) =>
        point.prediction === null || point.scalingEfficiency === null
          ? []
          : [
              {
                point: `${config.label} · ${series.bandwidth} · ${point.nodes} nodes`,
                bandwidth: series.bandwidth,
                measured: point.scalingEfficiency,
                noOverlap: point.prediction.efficiency.noOverlap,
                fullOverlap: point.prediction.efficiency.perfectOverlap,
              },
            ],
      ),
    ),
  );
  if (pairs.length === 0) return null;
  const marks = pairs.flatMap((pair) => [
    { ...pair, bound: NO_OVERLAP, predicted: pair.noOverlap },
    { ...pair, bound: FULL_OVERLAP, predicted: pair.fullOverlap },
  ]);
  const bandwidths = [...new Set(pairs.map((pair) => pair.bandwidth))];
  const domainMax = Math.max(1, ...marks.map((mark) => Math.max(mark.measured, mark.predicted)));
  const scale = { domain: [0, domainMax], nice: false };
  const axis = { format: "%", tickCount: 10 };
  const x = { field: "measured", type: "quantitative", title: "Measured scaling efficiency", axis, scale } as const;
  const color = {
    field: "bandwidth",
    type: "nominal",
    title: "Link",
    scale: { domain: bandwidths, range: colors(bandwidths.length) },
  } as const;
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    ...SINGLE,
    height: 360,
    layer: [
      {
        data: { values: [{ from: 0, to: domainMax }] },
        mark: { type: "rule", strokeDash: DASHED, color: "#999999" },
        encoding: {
          x: { field: "from", type: "quantitative", scale },
          y: { field: "from", type: "quantitative", scale },
          x2: { field: "to" },
          y2: { field: "to" },
        },
      },
      {
        data: { values: pairs },
        mark: { type: "rule", strokeWidth: 2, opacity: 0.5 },
        encoding: { x, y: { field: "noOverlap", type: "quantitative", scale }, y2: { field: "fullOverlap" }, color },
      },
      {
        data: { values: marks },
        mark: { type: "point", filled: true, size: 90, opacity: 0.9 },
        encoding: {
          x,
          y: { field: "predicted", type: "quantitative", title: "Predicted scaling efficiency", axis, scale },
          color,
          shape: {
            field: "bound",
            type: "nominal",
            title: "Prediction",
            scale: { domain: [NO_OVERLAP, FULL_OVERLAP], range: ["circle", "triangle-up"] },
          },
          tooltip: [{ field: "point" }, { field: "bound" }],
        },
      },
    ],
    config: CONFIG,
  };
}

function panelCount(rows: readonly { panel: string }[]): number {
  return new Set(rows.map((row) => row.panel)).size;
}

/** Two panels a row at half the width each; a chart with one panel gets the whole width. */
function panelSize(panels: number): { width: number; height: number } {
  return { width: panels === 1 ? SINGLE_PANEL_WIDTH : PANEL_WIDTH, height: PANEL_HEIGHT };
}

const BYTES_LABEL =
  "datum.value >= 1073741824 ? format(datum.value / 1073741824, '~r') + ' GiB'" +
  " : datum.value >= 1048576 ? format(datum.value / 1048576, '~r') + ' MiB'" +
  " : datum.value >= 1024 ? format(datum.value / 1024, '~r') + ' KiB' : datum.value + ' B'";

/** Without a single-node run there is no ideal line; the panel says why rather than leave the reader guessing. */
function panelTitle(config: TrainingConfig): string {
  // A language model's panel says its unit: a campaign may put it beside image models.
  const label = config.unit === "tokens" ? `${config.label} · tokens/s` : config.label;
  return wrapTitle(config.baseline === null ? `${label} (no 1-node run: no ideal)` : label);
}

/**
 * A panel's title in lines of at most TITLE_LINE_CHARS, broken between its " · " parts (CONFIG.header splits them
 * again). On one line a layout's title (model, batch, four layout knobs, unit: over 100 characters) widened every
 * panel past half the page, and the browser shrank the whole chart to a third of its size to fit.
 */
function wrapTitle(title: string): string {
  const lines: string[] = [];
  for (const part of title.split(" · ")) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 3 + part.length <= TITLE_LINE_CHARS)
      lines[lines.length - 1] = `${last} · ${part}`;
    else lines.push(part);
  }
  return lines.join("\n");
}

/**
 * The series drawn against node count: those with the baseline's processes per node, so that n nodes are n times
 * the baseline's workers and the ideal line holds. Other placements are compared in the report's Comparisons.
 */
function nodeScaledSeries(config: TrainingConfig): readonly BandwidthSeries[] {
  const perNode = config.baseline?.workers ?? 1;
  return config.series.filter((series) => series.processesPerNode === perNode);
}

/** A configuration's line for one link: its single-node baseline (when measured), then the multi-node points. */
function withBaseline(
  config: TrainingConfig,
  series: BandwidthSeries,
): { nodes: number; mean: number; plusMinus: number }[] {
  const points = series.points.map((point) => ({
    nodes: point.nodes,
    mean: point.throughput.mean,
    plusMinus: errorHalfWidth(point.throughput),
  }));
  const baseline = config.baseline?.throughput;
  return baseline === undefined
    ? points
    : [{ nodes: 1, mean: baseline.mean, plusMinus: errorHalfWidth(baseline) }, ...points];
}

function idealRows(config: TrainingConfig) {
  if (config.baseline === null) return [];
  const nodeCounts = [
    ...new Set([1, ...nodeScaledSeries(config).flatMap((series) => series.points.map((point) => point.nodes))]),
  ].sort((a, b) => a - b);
  const single = config.baseline.throughput.mean;
  return nodeCounts.map((nodes) => ({
    panel: panelTitle(config),
    series: IDEAL_SERIES,
    nodes,
    throughput: nodes * single,
    lower: null,
    upper: null,
  }));
}

/** Every link of the training runs, slowest first, so colours match between the throughput and efficiency charts. */
function bandwidthsOf(data: ReportData): string[] {
  const series = data.training.flatMap(nodeScaledSeries);
  const sorted = [...series].sort((a, b) => (a.linkGbps ?? Infinity) - (b.linkGbps ?? Infinity));
  return [...new Set(sorted.map((s) => s.bandwidth))];
}

function colors(count: number): string[] {
  return Array.from({ length: count }, (_, i) => PALETTE[i % PALETTE.length]!);
}

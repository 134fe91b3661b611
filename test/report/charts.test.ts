import { beforeAll, describe, expect, it, vi } from "vitest";
import type { TopLevelSpec } from "vega-lite";
import {
  BUS_BANDWIDTH_HEADROOM,
  busBandwidthChartSpec,
  efficiencyChartSpec,
  renderCharts,
  throughputChartSpec,
  type ChartSvgs,
} from "../../src/report/charts.ts";
import { reportData } from "../../src/analysis/data.ts";
import { CONTENT_WIDTH_PX } from "../../src/report/text.ts";
import { recordsOf } from "../bench/records.ts";
import { probeRecord, scalingCampaign } from "./fixtures/records.ts";

type Row = Record<string, unknown>;

function rowsOf(spec: TopLevelSpec | null): Row[] {
  if (spec === null) throw new Error("expected a chart");
  return (spec as { data: { values: Row[] } }).data.values;
}

/** Text drawn in an SVG: titles, axis labels, legend entries; a text of several lines, each line. */
function textsOf(svg: string | undefined): string[] {
  if (svg === undefined) throw new Error("expected an SVG");
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>|<tspan[^>]*>([^<]*)<\/tspan>/g)].map(
    (match) => (match[1] ?? match[2])!,
  );
}

describe("chart specs", () => {
  const data = reportData(scalingCampaign());

  it("throughput: the ideal line is n × the single-node mean, and only where a baseline exists", () => {
    const ideal = rowsOf(throughputChartSpec(data)).filter((row) => row.series === "Ideal");
    expect(ideal.map((row) => [row.panel, row.nodes, row.throughput])).toEqual([
      ["resnet50 · batch 64", 1, 105],
      ["resnet50 · batch 64", 2, 210],
      ["resnet50 · batch 64", 4, 420],
    ]);
  });

  it("throughput: every link's line starts at the single-node baseline, with its interval as error bar", () => {
    const oneGbit = rowsOf(throughputChartSpec(data)).filter(
      (row) => row.series === "1gbit" && row.panel === "resnet50 · batch 64",
    );
    expect(oneGbit.map((row) => [row.nodes, row.throughput])).toEqual([
      [1, 105],
      [2, 155],
      [4, 200],
    ]);
    expect(oneGbit[2]).toMatchObject({ lower: 192, upper: 208 });
    // An interval wider than the mean is cut at zero rather than drawn below the axis.
    expect(oneGbit[0]!.lower).toBe(Math.max(0, 105 - 12.706 * 5));
  });

  it("efficiency: draws the cost model's no-overlap ceiling next to each measured line", () => {
    const rows = rowsOf(efficiencyChartSpec(data));
    const ceiling = rows.filter((row) => row.bandwidth === "1gbit" && String(row.kind).startsWith("ceiling"));
    const computeSeconds = 64 / 105;
    expect(ceiling.map((row) => row.nodes)).toEqual([1, 2, 4]);
    expect(ceiling[1]!.efficiency).toBeCloseTo(computeSeconds / (computeSeconds + 0.8), 12);
    expect(ceiling[2]!.efficiency).toBeCloseTo(computeSeconds / (computeSeconds + 1.2), 12);
    // No single-node run, no efficiency: resnet152 gets no panel rather than an invented one.
    expect(rows.some((row) => String(row.panel).startsWith("resnet152"))).toBe(false);
  });

  it("bus bandwidth: the axis fits the means and the link rates, and an error bar beyond it is cut, not stretching it", () => {
    const probes = [
      probeRecord({
        nodes: 2,
        bandwidth: "1gbit",
        repeat: 1,
        busbw: [
          [1048576, 0.9],
          [4194304, 0.95],
        ],
      }),
      probeRecord({
        nodes: 2,
        bandwidth: "1gbit",
        repeat: 2,
        busbw: [
          [1048576, 0.1],
          [4194304, 0.94],
        ],
      }),
    ];
    const spec = busBandwidthChartSpec(reportData(probes)) as unknown as {
      layer: { mark: { type: string; clip?: boolean }; encoding: { y: { scale: { domain: number[] } } } }[];
    };
    const [line, bars] = spec.layer;
    // Two repeats 0.9 and 0.1 apart: the bar reaches 0.5 + 12.706 × 0.4 / √2 · √2 = 5.6 Gbit/s; the axis stops at 1.15
    // × 1 Gbit/s.
    expect(line!.encoding.y.scale.domain).toEqual([0, BUS_BANDWIDTH_HEADROOM * 1]);
    expect(bars!.mark).toMatchObject({ type: "errorbar", clip: true });
  });

  it("bus bandwidth: one colour per link and node count, a dashed line for Open MPI where both libraries summed it", () => {
    type Layer = { data: { values: Row[] }; encoding: { strokeDash?: { field: string; scale: { domain: string[] } } } };
    const gloo = probeRecord({
      nodes: 2,
      bandwidth: "1gbit",
      busbw: [
        [1048576, 0.9],
        [4194304, 0.95],
      ],
    });
    const both = busBandwidthChartSpec(
      reportData([
        gloo,
        probeRecord({
          nodes: 2,
          bandwidth: "1gbit",
          library: "mpi",
          busbw: [
            [1048576, 0.3],
            [4194304, 0.28],
          ],
        }),
      ]),
    ) as unknown as { layer: Layer[] };
    expect(new Set(both.layer[0]!.data.values.map((row) => row["series"]))).toEqual(new Set(["1gbit · 2 nodes"]));
    expect(both.layer[0]!.encoding.strokeDash).toMatchObject({
      field: "library",
      scale: { domain: ["torch.distributed (gloo)", "Open MPI"] },
    });
    const alone = busBandwidthChartSpec(reportData([gloo])) as unknown as { layer: Layer[] };
    expect(alone.layer[0]!.encoding.strokeDash).toBeUndefined();
  });

  it("has nothing to draw without successful runs", async () => {
    const empty = reportData([]);
    expect(throughputChartSpec(empty)).toBeNull();
    expect(busBandwidthChartSpec(empty)).toBeNull();
    expect(await renderCharts(empty)).toEqual({});
  });
});

describe("rendered SVG", () => {
  let svgs: ChartSvgs;
  let warnings: unknown[][];

  beforeAll(async () => {
    const warn = vi.spyOn(console, "warn");
    svgs = await renderCharts(reportData(scalingCampaign()));
    warnings = [...warn.mock.calls];
    warn.mockRestore();
  });

  it("renders all four charts without vega-lite warnings, at the page's content width", () => {
    expect(Object.keys(svgs).sort()).toEqual(["busBandwidth", "efficiency", "model", "throughput"]);
    for (const svg of Object.values(svgs)) {
      const width = Number(/^<svg [^>]*width="([\d.]+)"/.exec(svg)![1]);
      expect(width).toBeGreaterThan(CONTENT_WIDTH_PX - 60);
      expect(width).toBeLessThanOrEqual(CONTENT_WIDTH_PX);
    }
    for (const svg of Object.values(svgs)) expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(warnings).toEqual([]);
  });

  it("keeps a campaign of seven layouts at the content width, each panel's long title in lines", async () => {
    // The layouts campaign's titles run to over 100 characters ("gpt-mini · batch 6 · microBatches=3 · ..."); on one
    // line they widened each panel and the page drew the chart at a third of its size.
    const layouts = await renderCharts(reportData(recordsOf("test/bench/data/layouts-2-3/attempts.jsonl")));
    // No single-node run, so no efficiency chart: the throughput chart is the one with a panel per layout.
    expect(Object.keys(layouts)).toEqual(["throughput"]);
    expect(Number(/^<svg [^>]*width="([\d.]+)"/.exec(layouts.throughput!)![1])).toBeLessThanOrEqual(CONTENT_WIDTH_PX);
    expect(textsOf(layouts.throughput)).toEqual(
      expect.arrayContaining([
        "gpt-mini · batch 6 · microBatches=3",
        "parallelism=pipeline · pipelineSchedule=1f1b",
        "tokens/s (no 1-node run: no ideal)",
      ]),
    );
  });

  it("throughput: titled axes with units, a panel per configuration and a legend with every link and Ideal", () => {
    const texts = textsOf(svgs.throughput);
    expect(texts).toEqual(
      expect.arrayContaining([
        "Nodes",
        "Throughput (images/s)",
        "resnet50 · batch 64",
        "resnet152",
        "batch 32 (no 1-node run: no ideal)",
        "Link",
        "1gbit",
        "10gbit",
        "Ideal",
      ]),
    );
  });

  it("efficiency: percent axis and a legend telling measurement from ceiling", () => {
    const texts = textsOf(svgs.efficiency);
    expect(texts).toEqual(
      expect.arrayContaining([
        "Scaling efficiency",
        "100%",
        "measured",
        "ceiling, no overlap (cost model)",
        "1gbit",
        "10gbit",
      ]),
    );
  });

  it("carries no title of its own: the page's caption is the only one", () => {
    for (const svg of Object.values(svgs)) expect(textsOf(svg)).not.toContain("Training throughput against node count");
  });

  it("model: measured against predicted efficiency, a mark per overlap bound, coloured by link", () => {
    expect(textsOf(svgs.model)).toEqual(
      expect.arrayContaining([
        "Measured scaling efficiency",
        "Predicted scaling efficiency",
        "predicted, no overlap",
        "predicted, full overlap",
        "1gbit",
      ]),
    );
  });

  it("bus bandwidth: log2 message sizes in bytes, Gbit/s, one line per link × nodes and the link rate marked", () => {
    const texts = textsOf(svgs.busBandwidth);
    expect(texts).toEqual(
      expect.arrayContaining([
        "Message size (bytes, log2)",
        "Bus bandwidth (Gbit/s)",
        "4 KiB",
        "64 MiB",
        "1gbit · 2 nodes",
        "1gbit link",
      ]),
    );
  });
});

/**
 * The report's Layouts section (src/report/layouts.ts): one language-model workload laid out three ways at one link and
 * node count, read from records: throughput in tokens, peak memory, the fastest named with its margin over the next.
 */
import { describe, expect, it } from "vitest";
import { layoutComparisons, layoutVerdict } from "../../src/report/layouts.ts";
import { renderCharts } from "../../src/report/charts.ts";
import { reportData, reportMeta } from "../../src/analysis/data.ts";
import { renderHtml } from "../../src/report/render.ts";
import type { RunRecord } from "../../src/results/record.ts";
import { trainRecord } from "./fixtures/records.ts";

const MIB = 2 ** 20;

/** A gpt-nano run in tokens/s, laid out by `knobs`, its largest rank `peak` MiB over its baseline. */
function languageRun(
  nodes: number,
  tokensPerSecond: number,
  knobs: Record<string, string | number>,
  peak: number,
  repeat = 1,
): RunRecord {
  const record = trainRecord({
    model: "gpt-nano",
    batchSize: 4,
    nodes,
    repeat,
    throughput: tokensPerSecond,
    knobs: { optimizer: "adamw", ...knobs },
  });
  const result = record.result!;
  if (result.job !== "train") throw new Error("a training record");
  const { imagesPerSecondTotal: total, imagesPerSecondPerWorker: perWorker, ...metrics } = result.metrics;
  return {
    ...record,
    result: {
      ...result,
      knobs: { ...result.knobs, sequenceLength: 128 },
      metrics: {
        ...metrics,
        unit: "tokens",
        tokensPerSecondTotal: total!,
        tokensPerSecondPerWorker: perWorker!,
        memory: {
          method: "resident-set",
          peakSince: "model",
          perRank: Array.from({ length: nodes }, () => ({ peakBytes: (200 + peak) * MIB, baselineBytes: 200 * MIB })),
        },
      },
    },
  } as RunRecord;
}

const records = [
  languageRun(1, 1000, { parallelism: "ddp" }, 300),
  languageRun(3, 2400, { parallelism: "ddp" }, 300),
  languageRun(1, 990, { parallelism: "fsdp", fsdpSharding: "full" }, 280),
  languageRun(3, 2000, { parallelism: "fsdp", fsdpSharding: "full" }, 120),
  languageRun(1, 950, { parallelism: "pipeline", microBatches: 4 }, 290),
  languageRun(3, 1500, { parallelism: "pipeline", microBatches: 4 }, 150),
];

describe("the report's layouts", () => {
  const data = reportData(records);

  it("counts a language model's throughput in tokens, with its layout and peak memory", () => {
    const fsdp = data.training.find((config) => config.layout === "fsdp full")!;
    expect(fsdp.unit).toBe("tokens");
    expect(fsdp.series[0]!.points[0]!.peakMemoryBytes!.mean).toBe(120 * MIB);
    expect(data.training.map((config) => config.layout).sort()).toEqual([
      "ddp",
      "fsdp full",
      "pipeline gpipe, 4 micro-batches",
    ]);
  });

  it("puts the layouts of one workload, link and node count side by side, fastest first, and says by how much it won", () => {
    const [comparison, ...rest] = layoutComparisons(data.training);
    expect(rest).toEqual([]);
    expect(comparison!.entries.map((entry) => entry.layout)).toEqual([
      "ddp",
      "fsdp full",
      "pipeline gpipe, 4 micro-batches",
    ]);
    expect(layoutVerdict(comparison!)).toBe(
      "gpt-nano · batch 4 · optimizer=adamw · 1gbit · 3 nodes: ddp was fastest (2400.0 tok/s), 20 % more than fsdp full " +
        "(2000.0 tok/s); the model has no prediction for every layout here. Peak memory per rank: ddp 0.29 (predicted 0.10), fsdp full 0.12 (predicted 0.14), " +
        "pipeline gpipe, 4 micro-batches 0.15 (predicted 0.09) GiB.",
    );
    // The memory model's figure with ringlab's assumed CPU constants (94 MiB over the baseline, then 1.04 × the model's
    // bytes; FSDP across workers 140 MiB), as plan gives it: gpt-nano's state is small, so the overheads dominate,
    // FSDP's the larger; the pipeline's stage holds less than a replica.
    const [ddp, fsdp, pipeline] = comparison!.entries.map((entry) => entry.predictedMemoryBytes!);
    expect(fsdp).toBeGreaterThan(ddp!);
    expect(ddp).toBeGreaterThan(pipeline!);
  });

  it("draws the section in the HTML report and its charts in the configuration's unit", async () => {
    const svgs = await renderCharts(data);
    const html = renderHtml(data, svgs, reportMeta(records, new Date("2026-11-27T12:00:00Z")), []);
    expect(html).toContain("<h2>Layouts</h2>");
    expect(html).toContain("Throughput (tok/s)");
    expect(svgs.throughput).toContain("Throughput (tokens/s)");
  });

  it("says by how much the fastest layout won, and where their 95 % intervals over repeats overlap that the runs do not tell the two apart", () => {
    const repeated = (fsdp: readonly number[]) =>
      layoutComparisons(
        reportData(
          [2400, 2300, 2500].flatMap((tokens, index) => [
            languageRun(3, tokens, { parallelism: "ddp" }, 300, index + 1),
            languageRun(3, fsdp[index]!, { parallelism: "fsdp", fsdpSharding: "full" }, 120, index + 1),
          ]),
        ).training,
      )[0]!;
    // ddp 2400 ± 248 against fsdp 2350 ± 248 (Student's t, 2 degrees of freedom): one interval holds the other's mean.
    expect(layoutVerdict(repeated([2350, 2250, 2450]))).toMatch(
      /: ddp was fastest \(2400\.0 tok\/s\), 2 % more than fsdp full \(2350\.0 tok\/s\), but their 95 % intervals over 3 repeats overlap: the runs do not tell them apart;/,
    );
    // Under half a percent: one decimal, not "0 %".
    expect(layoutVerdict(repeated([2390, 2290, 2490]))).toMatch(
      /, 0\.4 % more than fsdp full \(2390\.0 tok\/s\), but their/,
    );
    // fsdp 2000 ± 25: apart.
    expect(layoutVerdict(repeated([2000, 1990, 2010]))).toMatch(
      /: ddp was fastest \(2400\.0 tok\/s\), 20 % more than fsdp full \(2000\.0 tok\/s\); the model/,
    );
  });

  it("leaves out of a table the columns no layout has a figure for: without single-node runs, a probe or saved predictions, the measured and the assumed peak", async () => {
    const multiNode = records.filter((record) => record.params.nodes === 3);
    const html = renderHtml(
      reportData(multiNode),
      await renderCharts(reportData(multiNode)),
      reportMeta(multiNode, new Date("2026-11-27T12:00:00Z")),
      [],
    );
    const section = html.slice(
      html.indexOf('<section id="layouts">'),
      html.indexOf("</section>", html.indexOf('<section id="layouts">')),
    );
    const headers = [...section.matchAll(/<th[^>]*>([^<]*)<\/th>/g)].map((match) => match[1]);
    expect(headers).toEqual([
      "Layout",
      "Throughput (tok/s)",
      "Peak memory per rank (GiB)",
      "Predicted peak (GiB, assumed constants)",
    ]);
    expect(section).not.toContain("n/a");
  });
});

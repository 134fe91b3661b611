/**
 * A language model sharded on CPU nodes (test/bench/README.md, "Sharded on CPU nodes"): campaigns/local-sharded.yaml
 * run on 2026-11-28, 00:42-01:11 UTC (before the worker image preloaded tcmalloc: glibc's malloc), its records in
 * test/bench/data/sharded/. Every figure the README quotes of it is recomputed here.
 *
 *   npx ringlab campaign campaigns/local-sharded.yaml --results <folder>
 */
import { describe, expect, it } from "vitest";
import { reportData, type ScalingPoint, type TrainingConfig } from "../../src/analysis/data.ts";
import type { RunRecord } from "../../src/results/record.ts";
import { recordsOf } from "./records.ts";

const records: RunRecord[] = recordsOf("test/bench/data/sharded/runs.jsonl");
const data = reportData(records);
const GIB = 2 ** 30;

function point(layout: string, bandwidth: string): { config: TrainingConfig; point: ScalingPoint } {
  const config = data.training.find((candidate) => candidate.layout === layout)!;
  return {
    config,
    point: config.series
      .find((series) => series.link === bandwidth)!
      .points.find((candidate) => candidate.nodes === 3)!,
  };
}
const round1 = (value: number) => Math.round(10 * value) / 10;

describe("a language model sharded on 3 CPU nodes (test/bench/README.md)", () => {
  it("ran 36 runs, all ok, under glibc's malloc", () => {
    expect(records).toHaveLength(36);
    expect(records.every((record) => record.status === "ok")).toBe(true);
    expect(new Set(records.map((record) => record.result?.provenance.allocator ?? "glibc"))).toEqual(
      new Set(["glibc"]),
    );
  });

  it("scaled ddp best, then fsdp grad-op, then fsdp full, on both links", () => {
    const efficiency = (layout: string, bandwidth: string) =>
      round1(100 * point(layout, bandwidth).point.scalingEfficiency!);
    expect(
      ["ddp", "fsdp grad-op", "fsdp full"].map((layout) => [
        efficiency(layout, "300mbit"),
        efficiency(layout, "1gbit"),
      ]),
    ).toEqual([
      [43.5, 75.5],
      [36.2, 66.6],
      [26.8, 53.1],
    ]);
  });

  it("matched the model fitted from the campaign's own probes (each layout's collectives on their own fits) within 6 points, no overlap", () => {
    const errors = ["ddp", "fsdp grad-op", "fsdp full"].flatMap((layout) =>
      ["300mbit", "1gbit"].map((bandwidth) => round1(point(layout, bandwidth).point.prediction!.errorPoints.noOverlap)),
    );
    expect(errors).toEqual([2.8, 5.9, 1.5, 5.6, -0.3, 0.9]);
  });

  it("timed Gloo's reduce-scatter at under half the link, where its all-gather and all-reduce reach 83-95 %", () => {
    const share = (bandwidth: string, collective: string) =>
      Math.round(
        100 *
          data.probes.find((probe) => probe.bandwidth === bandwidth && probe.collective === collective)!
            .largestSizeLinkFraction!,
      );
    expect(
      ["all-reduce", "all-gather", "reduce-scatter"].map((collective) => [
        share("300mbit", collective),
        share("1gbit", collective),
      ]),
    ).toEqual([
      [95, 94],
      [94, 83],
      [46, 41],
    ]);
  });

  it("measured an FSDP rank's peak above a DDP replica's (glibc), against the memory model's less", () => {
    const peak = (layout: string) => Number((point(layout, "1gbit").point.peakMemoryBytes!.mean / GIB).toFixed(2));
    expect([peak("ddp"), peak("fsdp grad-op"), peak("fsdp full")]).toEqual([0.41, 0.54, 0.59]);
  });
});

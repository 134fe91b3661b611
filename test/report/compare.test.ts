import { describe, expect, it } from "vitest";
import { compareResults, ratioInterval } from "../../src/report/compare.ts";
import { renderComparisonHtml, renderComparisonMarkdown } from "../../src/report/compare-render.ts";
import { failedTrainRecord, probeRecord, scalingCampaign, trainRecord } from "./fixtures/records.ts";

/**
 * B against the fixture campaign A: the single-node baseline faster but within the repeats' noise, the 10gbit
 * 2-node point clearly faster, the 1gbit 4-node point (one repeat each) a little slower, the probe at one repeat,
 * resnet152 not run, and a batch-128 configuration A never ran.
 */
function afterCampaign() {
  return [
    trainRecord({ nodes: 1, repeat: 1, imagesPerSecond: 150, ci95: 3 }),
    trainRecord({ nodes: 1, repeat: 2, imagesPerSecond: 160, ci95: 3 }),
    trainRecord({ nodes: 2, bandwidth: "10gbit", repeat: 1, imagesPerSecond: 300 }),
    trainRecord({ nodes: 2, bandwidth: "10gbit", repeat: 2, imagesPerSecond: 306 }),
    trainRecord({ nodes: 2, bandwidth: "10gbit", repeat: 3, imagesPerSecond: 312 }),
    trainRecord({ nodes: 4, bandwidth: "1gbit", repeat: 1, imagesPerSecond: 190, ci95: 8 }),
    failedTrainRecord({ nodes: 4, bandwidth: "10gbit", error: "rendezvous timed out" }),
    probeRecord({ nodes: 2, bandwidth: "1gbit", busbw: [[4096, 0.25], [67_108_864, 0.93]] }),
    trainRecord({ batchSize: 128, nodes: 1, imagesPerSecond: 90 }),
  ];
}

const comparison = compareResults({ name: "before", records: scalingCampaign() }, { name: "after", records: afterCampaign() });
const row = (label: string) => {
  const found = comparison.matched.find((matched) => matched.label === label);
  if (found === undefined) throw new Error(`no matched configuration ${label}: ${comparison.matched.map((m) => m.label).join("; ")}`);
  return found;
};

describe("ratioInterval", () => {
  it("combines both sides' relative half-widths on the log scale (the delta method)", () => {
    // h = sqrt(0.1² + 0.1²); the interval is 1.2 · e^∓h.
    const interval = ratioInterval({ mean: 100, halfWidth95: 10 }, { mean: 120, halfWidth95: 12 })!;
    expect(interval.ratio).toBeCloseTo(1.2, 12);
    expect(interval.lower).toBeCloseTo(1.0417481345, 9);
    expect(interval.upper).toBeCloseTo(1.3822918922, 9);
  });

  it("draws no interval when neither side has a noise estimate", () => {
    expect(ratioInterval({ mean: 1, halfWidth95: 0 }, { mean: 2, halfWidth95: 0 })).toBeNull();
  });
});

describe("compareResults", () => {
  it("matches configurations by job, model, batch, nodes and link, and lists the rest by side", () => {
    expect(comparison.matched.map((matched) => matched.label)).toEqual([
      "allreduce · 2 nodes · 1gbit",
      "train · resnet50 · batch 64 · 1 node · no link",
      "train · resnet50 · batch 64 · 2 nodes · 10gbit",
      "train · resnet50 · batch 64 · 4 nodes · 1gbit",
    ]);
    // 10gbit at 4 nodes failed in B: only in A, like the 1gbit 2-node point and resnet152 that B never ran.
    expect(comparison.onlyInA.map((only) => only.label)).toEqual([
      "train · resnet50 · batch 64 · 2 nodes · 1gbit",
      "train · resnet50 · batch 64 · 4 nodes · 10gbit",
      "train · resnet152 · batch 32 · 2 nodes · 1gbit",
    ]);
    expect(comparison.onlyInB.map((only) => only.label)).toEqual(["train · resnet50 · batch 128 · 1 node · no link"]);
  });

  it("tells knobs apart: the same run with another bucket size is another configuration", () => {
    const withKnob = compareResults(
      { name: "a", records: [trainRecord({ nodes: 1, imagesPerSecond: 100, knobs: { bucketCapMb: 25 } })] },
      { name: "b", records: [trainRecord({ nodes: 1, imagesPerSecond: 100, knobs: { bucketCapMb: 50 } })] },
    );
    expect(withKnob.matched).toEqual([]);
    expect(withKnob.onlyInA[0]!.label).toBe("train · resnet50 · batch 64 · 1 node · no link · bucketCapMb=25");
  });

  it("flags a difference beyond the noise of the repeats, and not one within it", () => {
    // A: mean(200, 206, 212) = 206 ± 4.303·√(36/3); B: 306 ± the same.
    const faster = row("train · resnet50 · batch 64 · 2 nodes · 10gbit");
    expect(faster.a).toMatchObject({ mean: 206, repeats: 3, noise: "repeats" });
    expect(faster.a.halfWidth95).toBeCloseTo(4.303 * Math.sqrt(12), 9);
    expect(faster.ratio!.ratio).toBeCloseTo(306 / 206, 12);
    expect(faster.beyondNoise).toBe(true);
    // Two repeats give Student's t = 12.706: 105 ± 63.5 against 155 ± 63.5 is no evidence of a change.
    const baseline = row("train · resnet50 · batch 64 · 1 node · no link");
    expect(baseline.ratio!.lower).toBeLessThan(1);
    expect(baseline.beyondNoise).toBe(false);
  });

  it("uses a single repeat's spread over iterations, and counts a probe with one repeat as exact", () => {
    const single = row("train · resnet50 · batch 64 · 4 nodes · 1gbit");
    expect(single.a).toEqual({ mean: 200, halfWidth95: 8, repeats: 1, noise: "iterations" });
    expect(single.ratio!.upper).toBeCloseTo(0.95 * Math.exp(Math.hypot(8 / 200, 8 / 190)), 12);
    expect(single.beyondNoise).toBe(false);
    const probe = row("allreduce · 2 nodes · 1gbit");
    expect(probe.unit).toBe("Gbit/s");
    expect(probe.b).toEqual({ mean: 0.93, halfWidth95: 0, repeats: 1, noise: "none" });
    expect(probe.a.noise).toBe("repeats");
  });

  it("summarises each side: campaign, runs and time span", () => {
    expect(comparison.a).toMatchObject({ name: "before", campaigns: ["scaling-test"], okRuns: 13, runs: 14, cpusPerNode: [] });
    expect(comparison.b).toMatchObject({ name: "after", okRuns: 8, runs: 9 });
  });
});

describe("the comparison page", () => {
  const html = renderComparisonHtml(comparison, new Date("2026-11-23T09:15:00Z"));

  it("shows both sides, the ratio with its interval and a flag where the difference is beyond the noise", () => {
    expect(html).toContain("<h1>after against before</h1>");
    expect(html).toContain("Page generated 23 Nov 2026, 09:15 UTC");
    expect(html).toContain("4 configurations on both sides, 1 of them differ beyond the noise; 3 only in A, 1 only in B.");
    const faster = html.split("\n").find((line) => line.includes("<td>train · resnet50 · batch 64 · 2 nodes · 10gbit</td>"))!;
    expect(faster).toContain("<td>206.0 ± 14.9 (3 repeats)</td><td>306.0 ± 14.9 (3 repeats)</td><td>1.485 [");
    expect(faster).toContain(`<span class="flag">beyond noise: B higher by 48.5%</span>`);
    expect(html).toContain("<td>200.0 ± 8.0¹ (1 repeat)</td>");
    expect(html).toContain("<h2>Only in B (after)</h2>");
    expect(html).not.toMatch(/<script|<link|<img|\ssrc=|href="http/i);
  });

  it("escapes text from records and writes a markdown twin", () => {
    const hostile = compareResults(
      { name: "<a>", records: [trainRecord({ model: "<b>|x", nodes: 1, imagesPerSecond: 1 })] },
      { name: "b", records: [trainRecord({ model: "<b>|x", nodes: 1, imagesPerSecond: 1 })] },
    );
    expect(renderComparisonHtml(hostile, new Date())).not.toContain("<b>|x");
    const markdown = renderComparisonMarkdown(hostile);
    expect(markdown).toContain("train · &lt;b&gt;\\|x · batch 64");
    expect(markdown).toContain("| no noise estimate |");
  });
});

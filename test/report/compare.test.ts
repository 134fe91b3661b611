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
    trainRecord({ nodes: 1, repeat: 1, throughput: 150, ci95: 3 }),
    trainRecord({ nodes: 1, repeat: 2, throughput: 160, ci95: 3 }),
    trainRecord({ nodes: 2, bandwidth: "10gbit", repeat: 1, throughput: 300 }),
    trainRecord({ nodes: 2, bandwidth: "10gbit", repeat: 2, throughput: 306 }),
    trainRecord({ nodes: 2, bandwidth: "10gbit", repeat: 3, throughput: 312 }),
    trainRecord({ nodes: 4, bandwidth: "1gbit", repeat: 1, throughput: 190, ci95: 8 }),
    failedTrainRecord({ nodes: 4, bandwidth: "10gbit", error: "rendezvous timed out" }),
    probeRecord({
      nodes: 2,
      bandwidth: "1gbit",
      busbw: [
        [4096, 0.25],
        [67_108_864, 0.93],
      ],
    }),
    trainRecord({ batchSize: 128, nodes: 1, throughput: 90 }),
  ];
}

const comparison = compareResults(
  { name: "before", records: scalingCampaign() },
  { name: "after", records: afterCampaign() },
);
const row = (label: string) => {
  const found = comparison.matched.find((matched) => matched.label === label);
  if (found === undefined)
    throw new Error(`no matched configuration ${label}: ${comparison.matched.map((m) => m.label).join("; ")}`);
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
      { name: "a", records: [trainRecord({ nodes: 1, throughput: 100, knobs: { bucketCapMb: 25 } })] },
      { name: "b", records: [trainRecord({ nodes: 1, throughput: 100, knobs: { bucketCapMb: 50 } })] },
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

  it("uses a single repeat's spread over iterations, and does not judge a probe with one repeat", () => {
    const single = row("train · resnet50 · batch 64 · 4 nodes · 1gbit");
    expect(single.a).toEqual({ mean: 200, halfWidth95: 8, repeats: 1, noise: "iterations" });
    expect(single.ratio!.upper).toBeCloseTo(0.95 * Math.exp(Math.hypot(8 / 200, 8 / 190)), 12);
    expect(single.beyondNoise).toBe(false);
    const probe = row("allreduce · 2 nodes · 1gbit");
    expect(probe.unit).toBe("Gbit/s");
    expect(probe.b).toEqual({ mean: 0.93, halfWidth95: 0, repeats: 1, noise: "none" });
    expect(probe.a.noise).toBe("repeats");
    expect(probe.ratio).toBeNull();
    expect(probe.beyondNoise).toBeNull();
  });

  it("tells placements apart: 2 nodes × 2 processes is not a repeat of 2 nodes × 1", () => {
    const placements = compareResults(
      {
        name: "a",
        records: [
          trainRecord({ nodes: 2, throughput: 100, ci95: 2 }),
          trainRecord({ nodes: 2, processesPerNode: 2, throughput: 180, ci95: 2 }),
        ],
      },
      { name: "b", records: [trainRecord({ nodes: 2, throughput: 101, ci95: 2 })] },
    );
    expect(placements.matched.map((m) => [m.label, m.a.mean])).toEqual([
      ["train · resnet50 · batch 64 · 2 nodes · 1gbit", 100],
    ]);
    expect(placements.onlyInA.map((only) => only.label)).toEqual(["train · resnet50 · batch 64 · 2 nodes × 2 · 1gbit"]);
  });

  it("summarises each side: campaign, runs and time span", () => {
    expect(comparison.a).toMatchObject({
      name: "before",
      campaigns: ["scaling-test"],
      okRuns: 13,
      runs: 14,
      cpusPerNode: [],
    });
    expect(comparison.b).toMatchObject({ name: "after", okRuns: 8, runs: 9 });
  });
});

/** Two campaigns of one configuration each, A's measurements against B's. */
function compareOne(a: ReturnType<typeof trainRecord>[], b: ReturnType<typeof trainRecord>[]) {
  const [matched] = compareResults({ name: "a", records: a }, { name: "b", records: b }).matched;
  if (matched === undefined) throw new Error("the two campaigns share no configuration");
  return matched;
}

describe("compare never flags a difference inside the combined noise", () => {
  it("repeats on both sides: B 6% faster, but the ratio's interval includes 1", () => {
    // A: mean(100, 104, 108) = 104 ± 4.303·4/√3 = 104 ± 9.94; B: 110 ± 9.94. h = √((9.94/104)² + (9.94/110)²) = 0.1315.
    const row = compareOne(
      [100, 104, 108].map((throughput, i) => trainRecord({ nodes: 2, repeat: i + 1, throughput })),
      [106, 110, 114].map((throughput, i) => trainRecord({ nodes: 2, repeat: i + 1, throughput })),
    );
    expect(row.ratio!.ratio).toBeCloseTo(110 / 104, 12);
    expect(row.ratio!.lower).toBeCloseTo(
      (110 / 104) * Math.exp(-Math.hypot((4.303 * 4) / Math.sqrt(3) / 104, (4.303 * 4) / Math.sqrt(3) / 110)),
      9,
    );
    expect(row.ratio!.lower).toBeLessThan(1);
    expect(row.beyondNoise).toBe(false);
  });

  it("one repeat a side: each run's spread over iterations stands in, and 6% inside it is not flagged while 8% beyond it is", () => {
    // h = √((5/100)² + (5/106)²) = 0.0687 > ln 1.06 = 0.0583; with 108: ln 1.08 = 0.0770 > √((5/100)² + (5/108)²) =
    // 0.0681.
    const inside = compareOne(
      [trainRecord({ nodes: 2, throughput: 100, ci95: 5 })],
      [trainRecord({ nodes: 2, throughput: 106, ci95: 5 })],
    );
    expect([inside.a.noise, inside.b.noise]).toEqual(["iterations", "iterations"]);
    expect(inside.ratio!.lower).toBeLessThan(1);
    expect(inside.beyondNoise).toBe(false);
    const beyond = compareOne(
      [trainRecord({ nodes: 2, throughput: 100, ci95: 5 })],
      [trainRecord({ nodes: 2, throughput: 108, ci95: 5 })],
    );
    expect(beyond.ratio!.lower).toBeGreaterThan(1);
    expect(beyond.beyondNoise).toBe(true);
  });

  it("a probe run once, without a spread, is not judged against tight repeats, however far apart: its noise is unknown", () => {
    // A's two repeats agree to 0.1%, so A's interval alone (± 0.7%) would call B's 5.5% a real difference.
    const tight = [0.9, 0.901].map((busbw, i) =>
      probeRecord({ nodes: 2, bandwidth: "1gbit", repeat: i + 1, busbw: [[67_108_864, busbw]] }),
    );
    const once = [probeRecord({ nodes: 2, bandwidth: "1gbit", busbw: [[67_108_864, 0.95]] })];
    const result = compareResults({ name: "a", records: tight }, { name: "b", records: once });
    const [probe] = result.matched;
    expect(probe!.a.noise).toBe("repeats");
    expect(probe!.b.noise).toBe("none");
    expect(probe!.ratio).toBeNull();
    expect(probe!.beyondNoise).toBeNull();
    const markdown = renderComparisonMarkdown(result);
    expect(markdown).toContain(
      "| 1.055 (no interval) | not judged: no noise estimate on B (one run without a spread) |",
    );
    expect(markdown).not.toContain("beyond noise:");
    expect(renderComparisonHtml(result, new Date())).toContain(
      "1 configurations on both sides, 0 of them differ beyond the noise, 1 not judged (no noise estimate);",
    );
  });
});

describe("the comparison page", () => {
  const html = renderComparisonHtml(comparison, new Date("2026-11-23T09:15:00Z"));

  it("shows both sides, the ratio with its interval and a flag where the difference is beyond the noise", () => {
    expect(html).toContain("<h1>after against before</h1>");
    expect(html).toContain("Page generated 23 Nov 2026, 09:15 UTC");
    expect(html).toContain(
      "4 configurations on both sides, 1 of them differ beyond the noise, 1 not judged (no noise estimate); 3 only in A, 1 only in B.",
    );
    const faster = html
      .split("\n")
      .find((line) => line.includes("<td>train · resnet50 · batch 64 · 2 nodes · 10gbit</td>"))!;
    expect(faster).toContain("<td>206.0 ± 14.9 (3 repeats)</td><td>306.0 ± 14.9 (3 repeats)</td><td>1.485 [");
    expect(faster).toContain(`<span class="flag">beyond noise: B higher by 48.5%</span>`);
    expect(html).toContain("<td>200.0 ± 8.0¹ (1 repeat)</td>");
    expect(html).toContain("<h2>Only in B (after)</h2>");
    expect(html).not.toMatch(/<script|<link|<img|\ssrc=|href="http/i);
  });

  it("escapes text from records and writes a markdown twin", () => {
    const hostile = compareResults(
      { name: "<a>", records: [trainRecord({ model: "<b>|x", nodes: 1, throughput: 1 })] },
      { name: "b", records: [trainRecord({ model: "<b>|x", nodes: 1, throughput: 1 })] },
    );
    expect(renderComparisonHtml(hostile, new Date())).not.toContain("<b>|x");
    const markdown = renderComparisonMarkdown(hostile);
    expect(markdown).toContain("train · &lt;b&gt;\\|x · batch 64");
    expect(markdown).toContain("| not judged: no noise estimate on A and B (one run without a spread) |");
  });
});

import { describe, expect, it } from "vitest";
import { comparisons, ratios, verdict } from "../../src/report/comparisons.ts";
import { reportData } from "../../src/analysis/data.ts";
import { trainRecord } from "./fixtures/records.ts";

// resnet50, batch 64, 1e8 gradient bytes; one node 100 img/s, so t_c = 0.64 s; at 1 Gbit/s S/B = 0.8 s.
const T_C = 0.64;

describe("placements: the same workers on fewer or more nodes", () => {
  const data = reportData([
    trainRecord({ nodes: 1, processesPerNode: 1, throughput: 100 }),
    trainRecord({ nodes: 1, processesPerNode: 4, throughput: 380 }),
    trainRecord({ nodes: 2, processesPerNode: 2, bandwidth: "1gbit", throughput: 300 }),
    trainRecord({ nodes: 4, processesPerNode: 1, bandwidth: "1gbit", throughput: 250 }),
  ]);
  const [placement] = comparisons(data.training);

  it("groups them by total workers at each link, the most nodes first; one node's processes join every link", () => {
    expect(comparisons(data.training)).toHaveLength(1);
    expect(placement!.kind).toBe("placement");
    expect(placement!.context).toBe("resnet50 · batch 64 · 1gbit · 4 workers");
    expect(placement!.entries.map((e) => e.name)).toEqual(["4 nodes × 1", "2 nodes × 2", "1 node × 4"]);
  });

  it("measures a step as every worker's batch and predicts compute plus what crosses the links", () => {
    expect(placement!.entries.map((e) => e.stepSeconds)).toEqual(
      [256 / 250, 256 / 300, 256 / 380].map((v) => expect.closeTo(v, 12)),
    );
    // Ring of 4 ranks: 2·3/4 · 0.8 s = 1.2 s for 4 × 1 and 2 × 2; nothing for one node.
    expect(placement!.entries.map((e) => e.predictedStepSeconds)).toEqual(
      [T_C + 1.2, T_C + 1.2, T_C].map((v) => expect.closeTo(v, 12)),
    );
    expect(placement!.entries.map((e) => e.predictedFrom)).toEqual(["lower bound", "lower bound", "lower bound"]);
    expect(ratios(placement!).map((r) => r.predicted)).toEqual(
      [1, 1, T_C / (T_C + 1.2)].map((v) => expect.closeTo(v, 12)),
    );
  });

  it("says in one sentence which was fastest, what the model predicted and whether the ratios agree", () => {
    expect(verdict(placement!)).toBe(
      "1 node × 4 was fastest (380.0 img/s); the model predicted 1 node × 4 fastest too. " +
        "Step time against 4 nodes × 1: 2 nodes × 2 0.83 measured, 1.00 predicted; 1 node × 4 0.66 measured, 0.35 predicted, " +
        "not as the model predicted (within 15%: no, largest difference 89%).",
    );
  });

  it("leaves other placements out of the charts' node-count series, which hold the baseline's placement", () => {
    const [config] = data.training;
    expect(config!.baseline!.workers).toBe(1);
    expect(config!.series.map((s) => [s.bandwidth, s.processesPerNode])).toEqual([
      ["1gbit", 1],
      ["1gbit · 2 per node", 2],
      ["in one node · 4 per node", 4],
    ]);
    // Ideal: workers × the baseline's per-worker throughput.
    expect(config!.series[1]!.points[0]!.idealThroughput).toBe(400);
    expect(config!.series[1]!.points[0]!.scalingEfficiency).toBeCloseTo(0.75, 12);
  });
});

describe("reductions: the same placement, gradients summed another way", () => {
  const data = reportData(
    ["ring", "parameter-server"].flatMap((reduction) => [
      trainRecord({ nodes: 1, throughput: 100, knobs: { reduction } }),
      trainRecord({ nodes: 4, bandwidth: "1gbit", throughput: reduction === "ring" ? 300 : 150, knobs: { reduction } }),
    ]),
  );
  const [comparison] = comparisons(data.training);

  it("pairs the points across configurations that differ in the reduction alone, ring first", () => {
    expect(comparisons(data.training)).toHaveLength(1);
    expect(comparison!.kind).toBe("reduction");
    expect(comparison!.context).toBe("resnet50 · batch 64 · 1gbit · 4 nodes × 1");
    expect(comparison!.entries.map((e) => e.name)).toEqual(["ring", "parameter-server"]);
  });

  it("predicts the server from its own bound and agrees within 15% here", () => {
    // Server, egress-shaped: 4 · 0.8 s; ring 1.2 s. Measured ratio 2.0, predicted (0.64 + 3.2) / (0.64 + 1.2) = 2.087.
    expect(ratios(comparison!)[1]!.measured).toBeCloseTo(2, 12);
    expect(ratios(comparison!)[1]!.predicted).toBeCloseTo((T_C + 3.2) / (T_C + 1.2), 12);
    expect(verdict(comparison!)).toBe(
      "ring was fastest (300.0 img/s); the model predicted ring fastest too. " +
        "Step time against ring: parameter-server 2.00 measured, 2.09 predicted, as the model predicted (within 15%: yes, largest difference 4%).",
    );
  });

  it("finds nothing to compare in a campaign of one reduction and one placement", () => {
    expect(
      comparisons(
        reportData([trainRecord({ nodes: 1, throughput: 100 }), trainRecord({ nodes: 2, throughput: 150 })]).training,
      ),
    ).toEqual([]);
  });
});

/** The prediction made before the run, scored against the measurement in the report. */
import { describe, expect, it } from "vitest";
import { reportData, reportMeta } from "../../src/report/data.ts";
import type { Flag } from "../../src/report/flags.ts";
import { flaggedMisses, scorePredictions, scoreSummary } from "../../src/report/predictions.ts";
import { renderHtml, renderMarkdown } from "../../src/report/render.ts";
import { PREDICTIONS_SCHEMA, parsePredictions, type PredictionsFile } from "../../src/results/predictions.ts";
import { scalingCampaign } from "./fixtures/records.ts";

const records = scalingCampaign();
const data = reportData(records);
const prediction = (runId: string, imagesPerSecond: number, efficiency: number) => ({
  runId, stepSeconds: 1, imagesPerSecond, scalingEfficiency: { value: efficiency, low: efficiency - 0.01, high: efficiency + 0.01 },
  fullOverlapEfficiency: 1, sources: { compute: "measured in results/a on 2026-11-25", link: "measured in results/a on 2026-11-25 (2-node probe)" },
});
const file: PredictionsFile = {
  schema: PREDICTIONS_SCHEMA, calibration: "/state/calibration.json", madeAt: "2026-11-25T14:00:00.000Z",
  predictions: [
    // Baseline 105 img/s per worker: 2 nodes at 1gbit measured 150 → 71.4 %; predicted 75 %.
    prediction("train-resnet50-b64-n2-1gbit-r1", 160, 0.75),
    // 4 nodes at 1gbit measured 200 → 47.6 %; predicted 60 %.
    prediction("train-resnet50-b64-n4-1gbit-r1", 250, 0.6),
    prediction("train-resnet50-b64-n1-r1", 105, 1),
    // Failed (its latest attempt): not measured.
    prediction("train-resnet50-b64-n4-10gbit-r3", 400, 0.95),
  ],
  missing: [{ runId: "train-resnet152-b32-n2-1gbit-r1", missing: "no measured compute for resnet152 at batch 32 (fp32): ..." }],
};

describe("the prediction made before the run, scored", () => {
  const score = scorePredictions(file, data, records);

  it("puts every predicted run's measured throughput and efficiency beside the prediction, with the errors", () => {
    const [two, four, one] = score.scored;
    expect(two).toMatchObject({ label: "resnet50 · batch 64 · 1gbit · 2 nodes · repeat 1", nodes: 2, predictedImagesPerSecond: 160, measuredImagesPerSecond: 150 });
    expect(two!.throughputError).toBeCloseTo(150 / 160 - 1, 12);
    expect(two!.measuredEfficiency).toBeCloseTo(150 / (2 * 105), 12);
    expect(two!.errorPoints).toBeCloseTo((150 / 210 - 0.75) * 100, 9);
    expect(four!.errorPoints).toBeCloseTo((200 / 420 - 0.6) * 100, 9);
    expect(one!.label).toBe("resnet50 · batch 64 · 1 node · repeat 1");
    expect(score.notMeasured).toBe(1);
  });

  it("sums it up: multi-node runs within 5 points, runs within 10 % of the predicted throughput", () => {
    // 2 nodes: −3.6 points, 6.3 % slow; 4 nodes: −12.4 points, 20 % slow; 1 node: 100 against 105, 4.8 % slow.
    expect(scoreSummary(score)).toBe("1 of 2 multi-node runs within 5 points of the predicted scaling efficiency (mean |error| 8.0 points), " +
      "2 of 3 runs within 10 % of the predicted throughput");
  });

  it("scores the mean of a configuration's repeats too, where a configuration has repeats: the model predicts the expected run", () => {
    const row = (configuration: string, repeat: number, errorPoints: number) => ({
      runId: `${configuration}-r${repeat}`, label: `${configuration} · repeat ${repeat}`, configuration, nodes: 2, predictedImagesPerSecond: 100,
      measuredImagesPerSecond: 100, throughputError: 0, predictedEfficiency: { value: 0.6, low: 0.55, high: 0.65 }, measuredEfficiency: 0.6 + errorPoints / 100, errorPoints,
    });
    // 1gbit: +8, −4, +1 points (one run within 5 of 3; their mean +1.7); 600mbit: −7 (its mean −7).
    const repeats = { ...score, scored: [row("1gbit", 1, 8), row("1gbit", 2, -4), row("1gbit", 3, 1), row("600mbit", 1, -7)] };
    expect(scoreSummary(repeats)).toBe("2 of 4 multi-node runs within 5 points of the predicted scaling efficiency (mean |error| 5.0 points), " +
      "the mean of each configuration's repeats within 5 points for 1 of 2 configurations, 4 of 4 runs within 10 % of the predicted throughput");
  });

  it("is a section of both pages, with what could not be predicted and why", () => {
    const meta = reportMeta(records, new Date("2026-11-25T15:00:00Z"));
    const markdown = renderMarkdown(data, meta, [], score);
    expect(markdown).toContain("## Predicted before the run");
    expect(markdown).toContain("| resnet50 · batch 64 · 1gbit · 2 nodes · repeat 1 | 160.0 | 150.0 | −6.3% | 75.0% (74.0% – 76.0%) | 71.4% | −3.6 pt |");
    expect(markdown).toContain("train-resnet152-b32-n2-1gbit-r1: not predicted: no measured compute for resnet152");
    expect(markdown).toContain("\n1 predicted run has no successful measurement (");
    // Each input's source once, below the table, a paragraph each.
    expect(markdown).toContain("\n\nSource: measured in results/a on 2026-11-25\n\nSource: measured in results/a on 2026-11-25 (2-node probe)\n\n");
    expect(renderHtml(data, {}, meta, [], score)).toContain('<section id="predictions">');
    // Without predictions.json, no section.
    expect(renderMarkdown(data, meta, [])).not.toContain("Predicted before the run");
  });

  it("marks a flagged run in the table and says which misses a flag questions, in both pages", () => {
    const meta = reportMeta(records, new Date("2026-11-25T15:00:00Z"));
    const unsteady: Flag = { kind: "unsteady-run", subject: "resnet50 · batch 64 · 1gbit · 4 nodes", runIds: ["train-resnet50-b64-n4-1gbit-r1"], reason: "changed speed" };
    const markdown = renderMarkdown(data, meta, [unsteady], score);
    expect(markdown).toContain("| resnet50 · batch 64 · 1gbit · 4 nodes · repeat 1 ⚑ unsteady run | 250.0 |");
    expect(markdown).toContain("2 of 3 runs within 10 % of the predicted throughput; the one multi-node run outside 5 points is flagged (see Flags): " +
      "the measurement, not only the model, may be off there.");
    expect(renderHtml(data, {}, meta, [unsteady], score)).toContain('<td>resnet50 · batch 64 · 1gbit · 4 nodes · repeat 1<br><span class="flag">⚑ unsteady run</span></td>');
    // A configuration's flag (a wide interval over its repeats) is not a flag of the run: neither marked nor counted.
    const wide: Flag = { kind: "wide-interval", subject: "resnet50 · batch 64 · 1gbit · 4 nodes", runIds: ["train-resnet50-b64-n4-1gbit-r1"], reason: "wide" };
    expect(renderMarkdown(data, meta, [wide], score)).toContain("| resnet50 · batch 64 · 1gbit · 4 nodes · repeat 1 | 250.0 |");
    expect(renderMarkdown(data, meta, [wide], score)).not.toContain("is flagged (see Flags)");
    // A flag on a run within 5 points says nothing of the misses.
    expect(flaggedMisses(score, new Set(["train-resnet50-b64-n2-1gbit-r1"]))).toBeUndefined();
    expect(renderMarkdown(data, meta, [], score)).not.toContain("is flagged (see Flags)");
  });

  it("reads only a predictions file of its version", () => {
    expect(parsePredictions(JSON.parse(JSON.stringify(file)))).toEqual({ file });
    expect(parsePredictions({ ...file, schema: "ringlab.predictions/v0" })).toMatchObject({ problem: expect.stringMatching(/^not a ringlab.predictions\/v1 file at schema/) });
  });
});

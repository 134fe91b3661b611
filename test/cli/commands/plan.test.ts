/** `ringlab plan`'s prediction table (src/cli/commands/plan.ts formatPredictions): the rate in the runs' own unit. */
import { describe, expect, it } from "vitest";
import { formatPredictions } from "../../../src/cli/commands/plan.ts";
import type { RunPrediction } from "../../../src/predict/predict.ts";

const prediction = (runId: string, unit: "images" | "tokens", throughput: number): RunPrediction => ({
  runId,
  computeSeconds: 1,
  allReduceSeconds: 0.5,
  stepSeconds: 1.5,
  throughput,
  unit,
  overlapShare: 0,
  scalingEfficiency: { value: 0.67, low: 0.6, high: 0.7 },
  noOverlapEfficiency: 0.67,
  fullOverlapEfficiency: 1,
  sources: {
    compute: "measured in results/a on 2026-11-28",
    link: "measured in results/b on 2026-11-28",
    overlap: "assumed: none",
  },
});

describe("plan's predictions", () => {
  it("head the rate with the runs' unit: tok/s for a language model (it said img/s for every model)", () => {
    const text = formatPredictions([prediction("train-gpt-mini-b4-n3-1gbit-r1", "tokens", 294.1)], "calibration.json");
    expect(text.split("\n")[1]).toMatch(/^run +predicted tok\/s +efficiency/);
    expect(formatPredictions([prediction("train-tiny-b8-n2-1gbit-r1", "images", 120)], "c").split("\n")[1]).toMatch(
      /^run +predicted img\/s /,
    );
  });

  it("say the unit on every row where a campaign predicts both kinds", () => {
    const lines = formatPredictions(
      [prediction("train-gpt-mini-r1", "tokens", 294.1), prediction("train-tiny-r1", "images", 120)],
      "c",
    ).split("\n");
    expect(lines[1]).toMatch(/^run +predicted rate /);
    expect(lines[2]).toMatch(/^train-gpt-mini-r1 +294\.1 tok\/s /);
    expect(lines[3]).toMatch(/^train-tiny-r1 +120\.0 img\/s /);
  });
});

/**
 * The figures test/bench/README.md gives for the language models on one H200 ("Language models on one GPU"),
 * recomputed from what is committed in test/bench/gpu/nvidia-h200/: the predictions made before the runs
 * (transformer-predictions.json) and the worker's records of the runs (transformer-records/), and the memory model
 * today, which must still make the same predictions (a change to it shows here, with the figures it moves).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ASSUMED_MEMORY, isMemoryPrediction, predictMemory } from "../../src/predict/memory.ts";

const FOLDER = "test/bench/gpu/nvidia-h200";
const GIB = 2 ** 30;
interface PredictedRun { name: string; model: string; batchSize: number; knobs: Record<string, unknown>; predictedPeakBytes: number }
const predictions = JSON.parse(readFileSync(join(FOLDER, "transformer-predictions.json"), "utf8")) as { madeAt: string; runs: PredictedRun[]; largestFit: { layers: number; predictedToFail: number } };
const results = JSON.parse(readFileSync(join(FOLDER, "transformer-results.json"), "utf8")) as { runs: { name: string; status: string }[] };
const records = new Map(readdirSync(join(FOLDER, "transformer-records")).map((file) =>
  [file.replace(/\.json$/, ""), JSON.parse(readFileSync(join(FOLDER, "transformer-records", file), "utf8"))]));

/** A run's peak allocated memory over its baseline, from its record. */
function measured(name: string): number {
  const rank = records.get(name).metrics.memory.perRank[0];
  return rank.peakBytes - rank.baselineBytes;
}
const ok = predictions.runs.filter((run) => results.runs.find((result) => result.name === run.name)?.status === "ok");
const error = (run: PredictedRun) => run.predictedPeakBytes / measured(run.name) - 1;

describe("the language models on one H200 (test/bench/README.md)", () => {
  it("predicted every run before it ran", () => {
    for (const run of ok) expect(Date.parse(records.get(run.name).provenance.startedAt)).toBeGreaterThan(Date.parse(predictions.madeAt));
  });

  it("still predicts what it predicted then", () => {
    for (const run of predictions.runs) {
      const prediction = predictMemory({ model: run.model, batchSize: run.batchSize, nodes: 1, knobs: run.knobs }, ASSUMED_MEMORY.cuda);
      expect(isMemoryPrediction(prediction) && prediction.rankBytes, run.name).toBeCloseTo(run.predictedPeakBytes, -3);
    }
  });

  it("put the peak of 15 of the 16 runs that trained within 10 %, the worst gpt2-medium at sequence 512, 10.5 % under", () => {
    expect(ok).toHaveLength(16);
    expect(ok.filter((run) => Math.abs(error(run)) <= 0.1)).toHaveLength(15);
    const worst = ok.reduce((a, b) => (Math.abs(error(a)) > Math.abs(error(b)) ? a : b));
    expect([worst.name, (100 * error(worst)).toFixed(1)]).toEqual(["gpt2-medium-bf16-b8-seq512", "-10.5"]);
  });

  it("found the largest model that fits at batch 1 where the model said: 223 layers trained at 133.7 GiB, 237 ran out of memory", () => {
    expect(predictions.largestFit).toMatchObject({ layers: 223, predictedToFail: 237 });
    expect((measured("gpt2-xl-layers223-bf16-b1") / GIB).toFixed(1)).toBe("133.7");
    expect(results.runs.find((run) => run.name === "gpt2-xl-layers237-bf16-b1")?.status).toBe("oom");
  });
});

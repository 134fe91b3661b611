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
import { largestFit } from "./gpu-transformer-fit.ts";

const FOLDER = "test/bench/gpu/nvidia-h200";
const GIB = 2 ** 30;
interface PredictedRun {
  name: string;
  model: string;
  batchSize: number;
  knobs: Record<string, unknown>;
  predictedPeakBytes: number;
}
const predictions = JSON.parse(readFileSync(join(FOLDER, "transformer-predictions.json"), "utf8")) as {
  madeAt: string;
  cardBytes: number;
  runs: PredictedRun[];
  largestFit: { layers: number; predictedToFail: number };
};
const results = JSON.parse(readFileSync(join(FOLDER, "transformer-results.json"), "utf8")) as {
  runs: { name: string; status: string }[];
};
const records = new Map(
  readdirSync(join(FOLDER, "transformer-records")).map((file) => [
    file.replace(/\.json$/, ""),
    JSON.parse(readFileSync(join(FOLDER, "transformer-records", file), "utf8")),
  ]),
);

/** A run's peak allocated memory over its baseline, from its record. */
function measured(name: string): number {
  const rank = records.get(name).metrics.memory.perRank[0];
  return rank.peakBytes - rank.baselineBytes;
}
const ok = predictions.runs.filter((run) => results.runs.find((result) => result.name === run.name)?.status === "ok");
const error = (run: PredictedRun) => run.predictedPeakBytes / measured(run.name) - 1;

describe("the language models on one H200 (test/bench/README.md)", () => {
  it("predicted every run before it ran", () => {
    for (const run of ok)
      expect(Date.parse(records.get(run.name).provenance.startedAt)).toBeGreaterThan(Date.parse(predictions.madeAt));
  });

  // Issue #68 replaced the census of activations by Korthikanti et al.'s terms (src/workload/activations.ts), which
  // come within 0.31 % of it here (a block's input not recomputed under checkpointing: the -ac runs move most).
  it("still predicts what it predicted then, within 0.31 %", () => {
    for (const run of predictions.runs) {
      const prediction = predictMemory(
        { model: run.model, batchSize: run.batchSize, nodes: 1, knobs: run.knobs },
        ASSUMED_MEMORY.cuda,
      );
      const now = isMemoryPrediction(prediction) ? prediction.rankBytes : Number.NaN;
      expect(Math.abs(now / run.predictedPeakBytes - 1), run.name).toBeLessThan(0.0031);
    }
  });

  it("put the peak of 15 of the 16 runs that trained within 10 %, the worst gpt2-medium at sequence 512, 10.5 % under", () => {
    expect(ok).toHaveLength(16);
    expect(ok.filter((run) => Math.abs(error(run)) <= 0.1)).toHaveLength(15);
    const worst = ok.reduce((a, b) => (Math.abs(error(a)) > Math.abs(error(b)) ? a : b));
    expect([worst.name, (100 * error(worst)).toFixed(1)]).toEqual(["gpt2-medium-bf16-b8-seq512", "-10.5"]);
    const others = ok.filter((run) => run !== worst).map(error);
    expect([Math.min(...others), Math.max(...others)].map((value) => (100 * value).toFixed(1))).toEqual([
      "-7.3",
      "9.7",
    ]);
    expect(others.filter((value) => Math.abs(value) <= 0.011)).toHaveLength(7);
  });

  it("found the largest model that fits at batch 1 where the model said: 223 layers trained at 133.7 GiB, 237 ran out of memory", () => {
    // Recomputed by today's memory model from the card's size, not read from the file that saved it: since issue #68's
    // term-by-term activations (0.31 % smaller here) it puts the first layer count past the card at 238, one later
    // than the 237 it said before the run (saved below), which ran out of memory.
    expect(largestFit(predictions.cardBytes)).toEqual({ layers: 223, past: 238 });
    expect(predictions.largestFit).toMatchObject({ layers: 223, predictedToFail: 237 });
    expect((measured("gpt2-xl-layers223-bf16-b1") / GIB).toFixed(1)).toBe("133.7");
    expect(results.runs.find((run) => run.name === "gpt2-xl-layers237-bf16-b1")?.status).toBe("oom");
  });
});

describe("tokens per second on one H200 (test/bench/README.md)", () => {
  const mfu = (name: string) => {
    const result = (results as unknown as { runs: { name: string; mfu?: number }[] }).runs.find(
      (run) => run.name === name,
    )!;
    const record = records.get(name);
    const peak = record.knobs.precision === "bf16" ? 989e12 : 67e12;
    const recomputed = (6 * record.metrics.parameterCount * record.metrics.tokensPerSecondTotal.mean) / peak;
    expect(result.mfu).toBeCloseTo(recomputed, 9);
    return recomputed;
  };

  it("reached 55.6-70.7 % of the fp32 peak and 4.7-26.5 % of the bf16 one", () => {
    const fp32 = ok.filter((run) => run.knobs.precision === "fp32").map((run) => mfu(run.name));
    const bf16 = ok.filter((run) => run.knobs.precision === "bf16").map((run) => mfu(run.name));
    expect([Math.min(...fp32), Math.max(...fp32)].map((v) => (100 * v).toFixed(1))).toEqual(["55.6", "70.7"]);
    expect([Math.min(...bf16), Math.max(...bf16)].map((v) => (100 * v).toFixed(1))).toEqual(["4.7", "26.5"]);
    expect([mfu("gpt2-large-bf16-b4"), mfu("gpt2-large-bf16-b16-ac")].map((v) => (100 * v).toFixed(1))).toEqual([
      "11.7",
      "26.5",
    ]);
  });

  it("measured 36 bytes a parameter in the first run's large models, the replica-divergence check's copies", () => {
    const first = JSON.parse(readFileSync(join(FOLDER, "transformer-results-first-run.json"), "utf8")) as {
      runs: { name: string; status: string; peakAllocatedBytes?: number }[];
    };
    const parameters = (name: string) => records.get(name).metrics.parameterCount;
    for (const name of [
      "gpt2-large-fp32-b4",
      "gpt2-large-bf16-b4",
      "gpt2-xl-fp32-b4",
      "gpt2-xl-bf16-b4",
      "gpt2-xl-bf16-b8-ac",
    ]) {
      const run = first.runs.find((entry) => entry.name === name)!;
      expect(run.peakAllocatedBytes! / parameters(name), name).toBeCloseTo(36, 0);
    }
    expect(first.runs.find((run) => run.name === "gpt2-xl-layers223-bf16-b1")!.status).toBe("oom");
  });
});

/**
 * `ringlab predict --recommend` (src/predict/recommend.ts): every layout of a workload, predicted from a calibration
 * whose only compute is the workload's DDP step on one worker (the others derived from it, and said so), those that fit
 * first and fastest first.
 */
import { describe, expect, it } from "vitest";
import type { Calibration, ComputeEntry, LinkEntry } from "../../src/predict/calibration.ts";
import { ASSUMED_MEMORY, isMemoryPrediction } from "../../src/predict/memory.ts";
import { layoutCandidates, recommend } from "../../src/predict/recommend.ts";
import { computeWorkload } from "../../src/workload/transformer.ts";

const source = { kind: "measured", resultsDir: "results/cal", date: "2026-11-27" } as const;
const knobs = { optimizer: "adamw", precision: "fp32", sequenceLength: 64, layers: 4, width: 512, heads: 8 } as const;
const compute: ComputeEntry = {
  model: "gpt-mini",
  batchSize: 4,
  precision: "fp32",
  workload: computeWorkload("gpt-mini", { ...knobs, parallelism: "ddp" })!,
  device: "cpu",
  deviceModel: "a CPU",
  cpusPerNode: 0.5,
  computeSeconds: { mean: 1.3, halfWidth95: 0.05, repeats: 3 },
  gradientBytes: 52e6,
  source,
};
const link: LinkEntry = {
  bandwidth: "1gbit",
  nodes: 3,
  processesPerNode: 1,
  reduction: "ring",
  cpusPerNode: 0.5,
  alphaSeconds: 2e-4,
  betaSecondsPerByte: 8.4e-9,
  rSquared: 0.999,
  source,
};
const calibration: Calibration = {
  schema: "ringlab.calibration/v3",
  compute: [compute],
  splitSteps: [],
  links: [link],
  overlap: [],
  memory: [],
};
const question = { model: "gpt-mini", batchSize: 4, nodes: 3, bandwidth: "1gbit", knobs };

describe("recommending a layout", () => {
  it("offers DDP, FSDP's two shardings, tensor parallelism where the heads divide, and pipelines of one stage per node", () => {
    expect(layoutCandidates("gpt-mini", 12, knobs, 3, 3).map((candidate) => candidate.name)).toEqual([
      "ddp",
      "fsdp full",
      "fsdp grad-op",
      "pipeline gpipe, 3 micro-batches",
      "pipeline 1f1b, 3 micro-batches",
      "pipeline gpipe, 4 micro-batches",
      "pipeline 1f1b, 4 micro-batches",
      "pipeline gpipe, 6 micro-batches",
      "pipeline 1f1b, 6 micro-batches",
      "pipeline gpipe, 12 micro-batches",
      "pipeline 1f1b, 12 micro-batches",
    ]);
    expect(layoutCandidates("gpt-mini", 4, knobs, 2, 2).map((candidate) => candidate.name)).toContain("tensor");
    // Every count that divides the batch, one to four a stage: batch 6 on 2 stages is 2, 3 and 6 (3 won at 300 Mbit/s),
    // not 2 and 4.
    expect(
      layoutCandidates("gpt-mini", 6, knobs, 2, 2)
        .filter((candidate) => candidate.knobs["parallelism"] === "pipeline")
        .map((candidate) => candidate.knobs["microBatches"]),
    ).toEqual([2, 2, 3, 3, 6, 6]);
    expect(layoutCandidates("small", 32, {}, 3, 3).map((candidate) => candidate.name)).toEqual([
      "ddp",
      "fsdp full",
      "fsdp grad-op",
    ]);
  });

  it("predicts each from the one DDP step it has, saying where it derived the compute", () => {
    const rows = recommend(question, { calibration, cpusPerNode: 0.5 }, ASSUMED_MEMORY.cpu);
    const fsdp = rows.find((row) => row.candidate.name === "fsdp full")!;
    expect("throughput" in fsdp.prediction && fsdp.prediction.sources.compute).toMatch(
      /^derived: fsdp from the same workload's ddp compute on one worker/,
    );
    const ddp = rows.find((row) => row.candidate.name === "ddp")!;
    expect("throughput" in ddp.prediction && ddp.prediction.sources.compute).toMatch(/^measured in results\/cal/);
    // FSDP full sends 1.5x DDP's bytes: on the same link it cannot be faster.
    if (!("throughput" in fsdp.prediction) || !("throughput" in ddp.prediction)) throw new Error("both predicted");
    expect(fsdp.prediction.throughput).toBeLessThan(ddp.prediction.throughput);
  });

  it("puts the layouts that fit the node first, fastest first, and those that do not after them", () => {
    const unlimited = recommend(question, { calibration, cpusPerNode: 0.5 }, ASSUMED_MEMORY.cpu);
    const ddp = unlimited.find((row) => row.candidate.name === "ddp")!.memory;
    const sharded = unlimited.find((row) => row.candidate.name === "fsdp full")!.memory;
    if (!isMemoryPrediction(ddp) || !isMemoryPrediction(sharded)) throw new Error("memory predicted");
    const rows = recommend(
      { ...question, memoryPerNodeBytes: (ddp.nodeBytes + sharded.nodeBytes) / 2 },
      { calibration, cpusPerNode: 0.5 },
      ASSUMED_MEMORY.cpu,
    );
    const fitting = rows.filter((row) => row.fits === true);
    expect(rows.slice(0, fitting.length)).toEqual(fitting);
    expect(rows.find((row) => row.candidate.name === "ddp")!.fits).toBe(false);
    const rates = fitting.map((row) => ("throughput" in row.prediction ? row.prediction.throughput : 0));
    expect(rates).toEqual([...rates].sort((a, b) => b - a));
  });
});

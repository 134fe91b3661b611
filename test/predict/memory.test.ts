/**
 * Memory before the run (src/predict/memory.ts): the calibration's fit of measured over the model's bytes, from the
 * records of single-node runs, and what a rank and a node are predicted to hold.
 */
import { describe, expect, it } from "vitest";
import {
  affineFit,
  ASSUMED_MEMORY,
  constantsOf,
  isMemoryPrediction,
  memoryEntriesFromRecords,
  memoryPoints,
  predictMemory,
} from "../../src/predict/memory.ts";
import type { RunRecord } from "../../src/results/record.ts";
import { trainRecord } from "../report/fixtures/records.ts";

const MIB = 2 ** 20;

/**
 * A single-node gpt-nano run whose rank measured `overBaseline` bytes over a 225 MiB baseline, its launcher 250 MiB.
 */
function nanoRecord(batchSize: number, overBaseline: number, runId = `nano-b${batchSize}`): RunRecord {
  const record = trainRecord({ model: "gpt-nano", batchSize, nodes: 1, throughput: 1000 });
  const result = record.result!;
  if (result.job !== "train") throw new Error("a training record");
  return {
    ...record,
    runId,
    params: { ...record.params, cpusPerNode: 0.5 },
    result: {
      ...result,
      knobs: { model: "gpt-nano", batchSize, sequenceLength: 128, optimizer: "adamw" },
      metrics: {
        ...result.metrics,
        memory: {
          method: "resident-set",
          peakSince: "model",
          perRank: [{ peakBytes: 225 * MIB + overBaseline, baselineBytes: 225 * MIB, launcherPeakBytes: 250 * MIB }],
        },
      },
    },
  } as RunRecord;
}

describe("the memory model's fit and prediction", () => {
  it("fits the line through the points, or the mean offset when every point has the same x", () => {
    expect(affineFit([1, 2, 3], [12, 14, 16])).toEqual({ overhead: 10, scale: 2 });
    expect(affineFit([5, 5], [9, 11])).toEqual({ overhead: 5, scale: 1 });
  });

  it("puts each rank's measured peak over its baseline beside the model's bytes", () => {
    const [point] = memoryPoints(nanoRecord(4, 150 * MIB));
    const model = predictMemory(
      { model: "gpt-nano", batchSize: 4, nodes: 1, knobs: { optimizer: "adamw" } },
      { ...ASSUMED_MEMORY.cuda },
    );
    expect(point).toEqual({
      runId: "nano-b4",
      analyticBytes: isMemoryPrediction(model) ? model.rankBytes : NaN,
      measuredBytes: 150 * MIB,
    });
  });

  it("calibrates the overhead and scale from single-node runs, with their baseline and launcher, and predicts per node from them", () => {
    const small = memoryPoints(nanoRecord(4, 0))[0]!.analyticBytes;
    const large = memoryPoints(nanoRecord(16, 0))[0]!.analyticBytes;
    // Measured = 100 MiB + 1.2 × the model's bytes, exactly.
    const records = [nanoRecord(4, 100 * MIB + 1.2 * small), nanoRecord(16, 100 * MIB + 1.2 * large)];
    const [entry] = memoryEntriesFromRecords(records, (runIds) => ({
      kind: "measured",
      resultsDir: "results/x",
      date: "2026-11-27",
      runIds: [...runIds],
    }));
    expect(entry).toMatchObject({
      device: "cpu",
      cpusPerNode: 0.5,
      runs: 2,
      baselineBytes: 225 * MIB,
      launcherBytes: 250 * MIB,
    });
    expect(entry!.overheadBytes / MIB).toBeCloseTo(100, 6);
    expect(entry!.scale).toBeCloseTo(1.2, 9);
    expect(entry!.worstError).toBeLessThan(1e-9);
    const prediction = predictMemory(
      { model: "gpt-nano", batchSize: 16, nodes: 1, processesPerNode: 2, knobs: { optimizer: "adamw" } },
      constantsOf([entry!])!,
    );
    if (!isMemoryPrediction(prediction)) throw new Error(prediction.problem);
    expect(prediction.rankBytes).toBeCloseTo(100 * MIB + 1.2 * large, 0);
    // One node: its launcher, and each of its two processes' baseline and peak.
    expect(prediction.nodeBytes).toBeCloseTo(250 * MIB + 2 * (225 * MIB + prediction.rankBytes), 0);
    expect(prediction.source).toContain("2 single-node runs in results/x");
  });

  it("leaves DDP's multi-node runs out of the fit, and says why a layout cannot be predicted", () => {
    const multi = { ...nanoRecord(4, MIB), params: { ...nanoRecord(4, MIB).params, nodes: 2 } } as RunRecord;
    expect(memoryEntriesFromRecords([multi], () => ({ kind: "derived", how: "-" }))).toEqual([]);
    expect(
      predictMemory(
        { model: "gpt-nano", batchSize: 4, nodes: 3, knobs: { parallelism: "pipeline", pipelineStages: 2 } },
        ASSUMED_MEMORY.cpu,
      ),
    ).toEqual({ problem: "pipelineStages 2 does not divide the run's 3 workers" });
  });

  it("fits a sharded layout apart, from its runs across workers, and predicts that layout's multi-worker runs with it", () => {
    // FSDP full on 2 ranks of one node, each 300 MiB over its baseline: its entry, and DDP's from the single worker.
    const fsdpRecord = (() => {
      const base = nanoRecord(4, 300 * MIB, "nano-fsdp");
      const result = base.result!;
      if (result.job !== "train") throw new Error("a training record");
      const rank = result.metrics.memory!.perRank[0]!;
      return {
        ...base,
        result: {
          ...result,
          knobs: { ...result.knobs, parallelism: "fsdp", fsdpSharding: "full" },
          world: { ...result.world, size: 2, procsPerNode: 2 },
          metrics: { ...result.metrics, memory: { ...result.metrics.memory!, perRank: [rank, rank] } },
        },
      } as RunRecord;
    })();
    const source = (runIds: readonly string[]) => ({
      kind: "measured" as const,
      resultsDir: "results/x",
      date: "2026-11-28",
      runIds: [...runIds],
    });
    const entries = memoryEntriesFromRecords([nanoRecord(4, 100 * MIB), fsdpRecord], source);
    expect(entries.map((entry) => [entry.parallelism ?? "ddp", entry.runs])).toEqual([
      ["ddp", 1],
      ["fsdp", 1],
    ]);
    const constants = constantsOf(entries)!;
    const sharded = {
      model: "gpt-nano",
      batchSize: 4,
      nodes: 1,
      processesPerNode: 2,
      knobs: { optimizer: "adamw", parallelism: "fsdp", fsdpSharding: "full" },
    };
    const fsdp = predictMemory(sharded, constants);
    const ddp = predictMemory({ ...sharded, knobs: { optimizer: "adamw" } }, constants);
    const alone = predictMemory({ ...sharded, processesPerNode: 1 }, constants);
    if (!isMemoryPrediction(fsdp) || !isMemoryPrediction(ddp) || !isMemoryPrediction(alone))
      throw new Error("predicted");
    expect(fsdp.rankBytes / MIB).toBeCloseTo(300, 6);
    expect(fsdp.source).toContain("1 fsdp runs in results/x");
    expect(ddp.rankBytes / MIB).toBeCloseTo(100, 6);
    // One worker shards nothing: DDP's constants.
    expect(alone.source).toContain("single-node runs");
    // Without DDP's entry there is no calibrated machine to predict: the caller keeps the assumption.
    expect(constantsOf(entries.filter((entry) => entry.parallelism !== undefined))).toBeUndefined();
  });
});

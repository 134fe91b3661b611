/** What the benchmark tests read from test/bench/data/: a campaign's runs.jsonl, one checked record a line. */
import { readFileSync } from "node:fs";
import { expect } from "vitest";
import type { MemoryEntry } from "../../src/predict/memory.ts";
import { parseCalibration, type Calibration, type Source } from "../../src/predict/calibration.ts";
import { planCampaign, runsToPredict } from "../../src/campaign/plan.ts";
import type { CampaignFile } from "../../src/config/schema.ts";
import { calibrationInputs } from "../../src/predict/calibration.ts";
import {
  configurationSeen,
  parsePredictions,
  PREDICTIONS_SCHEMA,
  type ConfigurationSeen,
  type PredictionsFile,
} from "../../src/results/predictions.ts";
import { latestAttempts, parseRunRecord, type RunRecord } from "../../src/results/record.ts";

/** Every record of a JSONL file, each through the record schema (a file that does not parse fails the test file). */
export function recordsOf(file: string): RunRecord[] {
  return readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const parsed = parseRunRecord(JSON.parse(line));
      if ("problem" in parsed) throw new Error(`${file}: ${parsed.problem}`);
      return parsed.record;
    });
}

/** Every number to 12 significant digits: the same sums added in another order compare equal. */
export function rounded(value: unknown): unknown {
  if (typeof value === "number") return Number(value.toPrecision(12));
  if (Array.isArray(value)) return value.map(rounded);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, rounded(field)]));
  return value;
}

/**
 * What a calibration written before 2026-11-29 has in common with one ringlab writes today from the same records: then
 * compute entries kept no CPU check, and a pipeline had no split step (its measured unshaped multi-node step), so its φ
 * was fitted against the model's bubble instead. Both sides of a comparison leave those out. Issue #68 derived the
 * memory model's activations term by term (within 0.31 % of the census they replaced): a memory entry's fit, made on
 * them, is left out too, and compared by expectMemoryFitsClose.
 */
export function comparableWithBefore(calibration: Calibration): Calibration {
  const bare = withoutMemoryFits(withoutConfigurationKeys(calibration));
  return {
    ...bare,
    compute: bare.compute.map(({ cpuCheckGflops: _, ...entry }) => entry),
    splitSteps: bare.splitSteps.filter((entry) => entry.workload["parallelism"] !== "pipeline"),
    overlap: bare.overlap.filter((entry) => entry.parallelism !== "pipeline"),
  };
}

/**
 * A calibration as ringlab wrote it before 2026-12-06: its sources without the runs' configuration keys (which today's
 * calibrate adds; the bench tests recompute what was seen from them).
 */
export function withoutConfigurationKeys(calibration: Calibration): Calibration {
  const bare = <E extends { readonly source: Source }>(entry: E): E => {
    if (entry.source.kind !== "measured") return entry;
    const { configurations: _, ...source } = entry.source;
    return { ...entry, source };
  };
  return {
    ...calibration,
    compute: calibration.compute.map(bare),
    splitSteps: calibration.splitSteps.map(bare),
    links: calibration.links.map(bare),
    overlap: calibration.overlap.map(bare),
    memory: calibration.memory.map(bare),
  };
}

/** A calibration less its memory entries' fits (overhead, scale, worst error): expectMemoryFitsClose compares those. */
export function withoutMemoryFits(calibration: Calibration): Calibration {
  return {
    ...calibration,
    memory: calibration.memory.map(
      ({ overheadBytes: _, scale: __, worstError: ___, ...entry }) => entry as MemoryEntry,
    ),
  };
}

/** Each memory entry's fit recomputed today as the committed one: its overhead within 2 MiB, its scale within 0.01. */
export function expectMemoryFitsClose(again: Calibration, committed: Calibration): void {
  expect(again.memory).toHaveLength(committed.memory.length);
  committed.memory.forEach((entry, index) => {
    const today = again.memory[index]!;
    const name = `${entry.parallelism ?? "ddp"} at ${entry.cpusPerNode} cores`;
    expect(Math.abs(today.overheadBytes - entry.overheadBytes), name).toBeLessThan(2 * 2 ** 20);
    expect(Math.abs(today.scale - entry.scale), name).toBeLessThan(0.01);
  });
}

/** Each run's latest attempt, as a results folder's runs.jsonl holds them. */
export function latestOf(attempts: readonly RunRecord[]): RunRecord[] {
  return latestAttempts(attempts).map((latest) => latest.record);
}

/** A committed calibration and the predictions a campaign saved from it, each through its schema. */
export function committedPredictions(
  calibrationFile: string,
  predictionsFile: string,
): { calibration: Calibration; predictions: PredictionsFile } {
  const committed = parseCalibration(JSON.parse(readFileSync(calibrationFile, "utf8")));
  const saved = parsePredictions(JSON.parse(readFileSync(predictionsFile, "utf8")));
  if ("problem" in committed || "problem" in saved) throw new Error("the committed files parse");
  if (saved.file.schema !== PREDICTIONS_SCHEMA) throw new Error("a v2 predictions file");
  return { calibration: committed.calibration, predictions: saved.file };
}

/**
 * What the calibration had measured of each predicted run's configuration (src/results/predictions.ts
 * configurationSeen), recomputed: the committed predictions.json files predate it and decided "out of sample" by
 * fingerprint, which also changes with the iteration counts. `calibration`: recomputed from the calibration campaigns'
 * committed records by today's code, whose sources carry the runs' configuration keys.
 */
export function seenOf(
  campaign: CampaignFile,
  calibration: Calibration,
  predictions: Pick<PredictionsFile, "predictions">,
  cpusPerNode = 0.5,
): Map<string, ConfigurationSeen> {
  const predicted = new Set(predictions.predictions.map((prediction) => prediction.runId));
  const inputs = calibrationInputs(calibration);
  return new Map(
    runsToPredict(planCampaign(campaign, "campaign"), cpusPerNode)
      .filter((run) => predicted.has(run.id))
      .map((run) => [run.id, configurationSeen(run, inputs)] as const),
  );
}

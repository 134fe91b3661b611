/**
 * What a calibration says of where each entry came from (its folder, runs and their fingerprints), and the inputs
 * predictions.json records of it, with a content hash that does not depend on the order of the keys.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { configurationKey } from "../../src/results/configuration.ts";
import {
  calibrationFromRecords,
  calibrationInputs,
  canonicalJson,
  parseCalibration,
  type Calibration,
} from "../../src/predict/calibration.ts";
import { predictTraining } from "../../src/predict/predict.ts";
import type { RunRecord } from "../../src/results/record.ts";
import { scalingCampaign } from "../report/fixtures/records.ts";

/** The fixture's records, each with a fingerprint of its own (as the planner gives every configuration its own). */
const records = scalingCampaign().map((record) => ({
  ...record,
  fingerprint: `fp-${record.runId.replace(/-r\d+$/, "")}`,
}));
const calibration = calibrationFromRecords(records, "results/earlier", () => {}, "/work/results/earlier");

describe("a calibration's sources", () => {
  it("name the folder's absolute path and the runs each entry came from, with their fingerprints", () => {
    expect(calibration.compute[0]!.source).toEqual({
      kind: "measured",
      resultsDir: "results/earlier",
      date: "2025-05-01",
      folder: "/work/results/earlier",
      runIds: ["train-resnet50-b64-n1-r1", "train-resnet50-b64-n1-r2"],
      fingerprints: ["fp-train-resnet50-b64-n1"],
      // Both repeats measure one configuration: one key (results/configuration.ts configurationKey).
      configurations: [configurationKey(records[0]!.params)],
    });
    expect(calibration.links[0]!.source).toMatchObject({
      runIds: ["allreduce-n2-1gbit-r1", "allreduce-n2-1gbit-r2"],
      fingerprints: ["fp-allreduce-n2-1gbit"],
    });
    const overlap = calibration.overlap.find((entry) => entry.nodes === 2)!;
    expect(overlap.source).toMatchObject({
      runIds: ["train-resnet50-b64-n2-1gbit-r1", "train-resnet50-b64-n2-1gbit-r2"],
      fingerprints: ["fp-train-resnet50-b64-n2-1gbit"],
    });
  });

  it("are read back, and so is a calibration made before ringlab recorded them", () => {
    expect(parseCalibration(JSON.parse(JSON.stringify(calibration)))).toEqual({ calibration });
    const older = calibrationFromRecords(records, "results/earlier");
    const bare = {
      ...older,
      compute: older.compute.map((entry) => ({
        ...entry,
        source: { kind: "measured", resultsDir: "results/earlier", date: "2025-05-01" },
      })),
    };
    expect(parseCalibration(JSON.parse(JSON.stringify(bare)))).toMatchObject({
      calibration: { compute: [{ source: { resultsDir: "results/earlier" } }] },
    });
  });
});

describe("a compute entry's CPU check", () => {
  it("is the mean of its baseline runs' own (the worker's timed matrix products before each run), and each prediction from it carries it", () => {
    const withChecks = records.map((record) =>
      record.result === undefined || !record.runId.startsWith("train-resnet50-b64-n1-")
        ? record
        : ({
            ...record,
            result: {
              ...record.result,
              cpuCheck: { seconds: 0.6, computeGflops: record.runId.endsWith("-r1") ? [60] : [62] },
            },
          } as RunRecord),
    );
    const checked = calibrationFromRecords(withChecks, "results/earlier");
    expect(checked.compute.map((entry) => [entry.model, entry.cpuCheckGflops])).toEqual([["resnet50", 61]]);
    const question = { runId: "r", model: "resnet50", batchSize: 64, nodes: 2, bandwidth: "1gbit", knobs: {} };
    expect(predictTraining(question, { calibration: checked })).toMatchObject({ cpuCheckGflops: 61 });
    // At another batch size, from the nearest batch's compute: the same check.
    expect(predictTraining({ ...question, batchSize: 32 }, { calibration: checked })).toMatchObject({
      cpuCheckGflops: 61,
    });
    // Records without the check (before the worker timed one): no entry's, no prediction's.
    expect(predictTraining(question, { calibration })).not.toHaveProperty("cpuCheckGflops");
    expect(parseCalibration(JSON.parse(JSON.stringify(checked)))).toEqual({ calibration: checked });
  });
});

describe("the inputs predictions.json records of a calibration", () => {
  const inputs = calibrationInputs(calibration);

  it("are every entry, saying what it is, where it was measured, from which runs, and a hash of its content", () => {
    expect(inputs.map((input) => input.entry)).toEqual([
      "compute resnet50 batch 64 fp32 on test CPU",
      "link 1gbit, 2 nodes × 1, ring",
      ...calibration.overlap.map((entry) => `overlap ${entry.nodes} nodes × 1, ring`),
    ]);
    expect(inputs[0]).toEqual({
      kind: "compute",
      entry: "compute resnet50 batch 64 fp32 on test CPU",
      source: "measured in results/earlier on 2025-05-01",
      resultsDir: "results/earlier",
      folder: "/work/results/earlier",
      runIds: ["train-resnet50-b64-n1-r1", "train-resnet50-b64-n1-r2"],
      fingerprints: ["fp-train-resnet50-b64-n1"],
      configurations: [configurationKey(records[0]!.params)],
      sha256: createHash("sha256").update(canonicalJson(calibration.compute[0])).digest("hex"),
    });
  });

  it("hash the same entry the same whatever the order of its keys, and a changed number differently", () => {
    const reversed = (value: object): object =>
      Object.fromEntries(
        Object.entries(value)
          .reverse()
          .map(([key, field]) => [
            key,
            field !== null && typeof field === "object" && !Array.isArray(field) ? reversed(field) : field,
          ]),
      );
    const shuffled = { ...calibration, compute: calibration.compute.map((entry) => reversed(entry)) } as Calibration;
    expect(JSON.stringify(shuffled.compute[0])).not.toBe(JSON.stringify(calibration.compute[0]));
    expect(calibrationInputs(shuffled)[0]!.sha256).toBe(inputs[0]!.sha256);
    const slower = {
      ...calibration,
      compute: [
        { ...calibration.compute[0]!, computeSeconds: { ...calibration.compute[0]!.computeSeconds, mean: 0.7 } },
      ],
    };
    expect(calibrationInputs(slower)[0]!.sha256).not.toBe(inputs[0]!.sha256);
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: null }] })).toBe('{"a":[{"c":null,"d":2}],"b":1}');
  });

  it("say so where the calibration did not record its runs or its folder", () => {
    const bare = {
      ...calibration,
      compute: calibration.compute.map((entry) => ({
        ...entry,
        source: { kind: "measured" as const, resultsDir: "results/earlier", date: "2025-05-01" },
      })),
    };
    expect(calibrationInputs(bare)[0]).toMatchObject({
      resultsDir: "results/earlier",
      folder: null,
      runIds: null,
      fingerprints: null,
    });
  });
});

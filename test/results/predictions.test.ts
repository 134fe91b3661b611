/**
 * Whether a campaign may save predictions "before the run", and whether they are in-sample
 * (src/results/predictions.ts).
 */
import { describe, expect, it } from "vitest";
import {
  decidePredictions,
  parsePredictions,
  PREDICTIONS_SCHEMA,
  PREDICTIONS_SCHEMA_V1,
  type CalibrationInput,
  type PredictionsFile,
  type PredictionsQuestion,
} from "../../src/results/predictions.ts";

const RESULTS = "/work/results/local-predict";
const planned = [
  { id: "allreduce-n2-1gbit-r1", fingerprint: "aaaa000000000001" },
  { id: "train-small-b32-n1-r1", fingerprint: "aaaa000000000002" },
  { id: "train-small-b32-n2-1gbit-r1", fingerprint: "aaaa000000000003" },
];
const input = (fields: Partial<CalibrationInput> = {}): CalibrationInput => ({
  entry: "compute small batch 64 fp32 on test CPU at 0.5 cores",
  source: "measured in results/local-seed on 2026-11-25",
  resultsDir: "results/local-seed",
  folder: "/work/results/local-seed",
  runIds: ["train-small-b64-n1-r1"],
  fingerprints: ["bbbb000000000001"],
  sha256: "0".repeat(64),
  ...fields,
});
const question = (fields: Partial<PredictionsQuestion> = {}): PredictionsQuestion => ({
  planned,
  recorded: [],
  resultsFolder: RESULTS,
  calibrationInputs: [input()],
  ...fields,
});

describe("deciding whether a campaign saves its predictions", () => {
  it("saves them as out-of-sample when nothing of the campaign ran and the calibration holds none of its runs", () => {
    expect(decidePredictions(question())).toEqual({ save: true, sample: { kind: "out-of-sample" } });
    // Published figures and the catalogue alone (AWS without a calibration) hold no run of anybody's.
    expect(decidePredictions(question({ calibrationInputs: [] }))).toEqual({
      save: true,
      sample: { kind: "out-of-sample" },
    });
  });

  it("saves none once a run of the campaign has a measurement in the results folder, naming the runs done", () => {
    const recorded = [
      { runId: "train-small-b32-n2-1gbit-r1", status: "ok" },
      { runId: "train-small-b32-n2-1gbit-r1", status: "ok" },
      { runId: "allreduce-n2-1gbit-r1", status: "ok" },
    ];
    expect(decidePredictions(question({ recorded }))).toEqual({
      save: false,
      runsDone: ["allreduce-n2-1gbit-r1", "train-small-b32-n2-1gbit-r1"],
    });
    // Even when the calibration came from that very folder: the refusal comes first.
    expect(decidePredictions(question({ recorded, calibrationInputs: [input({ folder: RESULTS })] }))).toMatchObject({
      save: false,
    });
  });

  it("counts as done only a measurement: a failed or skipped run, or a record of a run the campaign no longer plans, is not", () => {
    const recorded = [
      { runId: "train-small-b32-n1-r1", status: "failed" },
      { runId: "train-small-b32-n2-1gbit-r1", status: "skipped" },
      { runId: "train-old-r1", status: "ok" },
    ];
    expect(decidePredictions(question({ recorded }))).toEqual({ save: true, sample: { kind: "out-of-sample" } });
  });

  it("says in-sample, and why, where an input of the calibration was measured in the campaign's own results folder", () => {
    const decision = decidePredictions(
      question({
        calibrationInputs: [
          input(),
          input({ entry: "link 1gbit, 2 nodes × 1, ring at 0.5 cores", folder: RESULTS, fingerprints: [] }),
        ],
      }),
    );
    expect(decision).toEqual({
      save: true,
      sample: {
        kind: "in-sample",
        reasons: [
          `1 of its 2 inputs came from this campaign's results folder ${RESULTS} (link 1gbit, 2 nodes × 1, ring at 0.5 cores)`,
        ],
      },
    });
  });

  it("says in-sample where the calibration measured a run of the same fingerprint as one of the campaign's, in whatever folder", () => {
    const decision = decidePredictions(
      question({ calibrationInputs: [input({ fingerprints: ["bbbb000000000001", "aaaa000000000002"] })] }),
    );
    expect(decision).toEqual({
      save: true,
      sample: {
        kind: "in-sample",
        reasons: [
          "it measured the configuration of 1 of this campaign's 3 runs (same fingerprint: train-small-b32-n1-r1)",
        ],
      },
    });
  });

  it("compares only folders for a calibration made before ringlab recorded its runs", () => {
    const old = input({ runIds: null, fingerprints: null });
    expect(decidePredictions(question({ calibrationInputs: [old] }))).toEqual({
      save: true,
      sample: { kind: "out-of-sample" },
    });
    expect(decidePredictions(question({ calibrationInputs: [{ ...old, folder: RESULTS }] }))).toMatchObject({
      save: true,
      sample: { kind: "in-sample" },
    });
  });
});

describe("predictions.json", () => {
  const file: PredictionsFile = {
    schema: PREDICTIONS_SCHEMA,
    calibration: "/state/calibration.json",
    madeAt: "2026-11-25T14:00:00.000Z",
    runsDoneBefore: [],
    calibrationInputs: [input({ sha256: "ab".repeat(32) })],
    sample: { kind: "in-sample", reasons: ["it measured the configuration of 1 of this campaign's 3 runs"] },
    predictions: [],
    missing: [],
  };

  it("reads back what the campaign writes, and a v1 file as one (which records neither runs done nor the calibration's inputs)", () => {
    expect(parsePredictions(JSON.parse(JSON.stringify(file)))).toEqual({ file });
    const v1 = {
      schema: PREDICTIONS_SCHEMA_V1,
      calibration: "/state/calibration.json",
      madeAt: "2026-11-25T14:00:00.000Z",
      predictions: [],
      missing: [],
    };
    expect(parsePredictions(v1)).toEqual({ file: v1 });
  });

  it("is not read without what makes its claim checkable, nor in another version", () => {
    const { sample: _sample, ...withoutSample } = file;
    expect(parsePredictions(withoutSample)).toMatchObject({
      problem: expect.stringMatching(/^not a ringlab.predictions\/v2 file at sample/),
    });
    expect(parsePredictions({ ...file, sample: { kind: "in-sample", reasons: [] } })).toMatchObject({
      problem: expect.stringMatching(/at sample.reasons/),
    });
    expect(
      parsePredictions({ ...file, calibrationInputs: [{ ...file.calibrationInputs[0], sha256: "x" }] }),
    ).toMatchObject({ problem: expect.stringMatching(/at calibrationInputs.0.sha256/) });
    expect(parsePredictions({ ...file, schema: "ringlab.predictions/v0" })).toMatchObject({
      problem: expect.stringMatching(/^not a ringlab.predictions\/v2 file at schema/),
    });
  });
});

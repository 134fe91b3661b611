/**
 * Whether a campaign may save predictions "before the run", and whether they are in-sample
 * (src/results/predictions.ts).
 */
import { describe, expect, it } from "vitest";
import {
  configurationSeen,
  countSeen,
  decidePredictions,
  parsePredictions,
  PREDICTIONS_SCHEMA,
  PREDICTIONS_SCHEMA_V1,
  type CalibrationInput,
  type PredictionsFile,
  type PredictionsQuestion,
  seenSentence,
} from "../../src/results/predictions.ts";

const RESULTS = "/work/results/local-predict";
const planned = [
  { id: "allreduce-n2-1gbit-r1", fingerprint: "aaaa000000000001", configuration: "cccc000000000001" },
  { id: "train-small-b32-n1-r1", fingerprint: "aaaa000000000002", configuration: "cccc000000000002" },
  { id: "train-small-b32-n2-1gbit-r1", fingerprint: "aaaa000000000003", configuration: "cccc000000000003" },
];
const unseen = { kind: "unseen", measuredIn: [], replayed: false };
/** Every planned run unseen. */
const noneSeen = new Map(planned.map((run) => [run.id, unseen]));
const input = (fields: Partial<CalibrationInput> = {}): CalibrationInput => ({
  entry: "compute small batch 64 fp32 on test CPU at 0.5 cores",
  source: "measured in results/local-seed on 2026-11-25",
  resultsDir: "results/local-seed",
  folder: "/work/results/local-seed",
  runIds: ["train-small-b64-n1-r1"],
  fingerprints: ["bbbb000000000001"],
  configurations: ["dddd000000000001"],
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
    expect(decidePredictions(question())).toEqual({ save: true, sample: { kind: "out-of-sample" }, seen: noneSeen });
    // Published figures and the catalogue alone (AWS without a calibration) hold no run of anybody's.
    expect(decidePredictions(question({ calibrationInputs: [] }))).toEqual({
      save: true,
      sample: { kind: "out-of-sample" },
      seen: noneSeen,
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
    expect(decidePredictions(question({ recorded }))).toMatchObject({ save: true, sample: { kind: "out-of-sample" } });
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
    expect(decision).toMatchObject({
      save: true,
      sample: {
        kind: "in-sample",
        reasons: [
          `1 of its 2 inputs came from this campaign's results folder ${RESULTS} (link 1gbit, 2 nodes × 1, ring at 0.5 cores)`,
        ],
      },
    });
  });

  it("says which runs' configurations the calibration measured, and whether their step replays the measurement", () => {
    const decision = decidePredictions(
      question({
        calibrationInputs: [
          input({ kind: "compute", configurations: ["dddd000000000001", "cccc000000000002"] }),
          input({ kind: "memory", entry: "memory on test CPU at 0.5 cores", configurations: ["cccc000000000003"] }),
        ],
      }),
    );
    if (!decision.save) throw new Error("not saved");
    // Seen, not in-sample: the rest of the campaign's predictions still test the model.
    expect(decision.sample).toEqual({ kind: "out-of-sample" });
    expect(Object.fromEntries(decision.seen)).toEqual({
      "allreduce-n2-1gbit-r1": unseen,
      "train-small-b32-n1-r1": {
        kind: "seen",
        measuredIn: ["compute small batch 64 fp32 on test CPU at 0.5 cores"],
        replayed: true,
      },
      // Only the memory model's fit had its runs: its step is out of sample, its memory is not.
      "train-small-b32-n2-1gbit-r1": {
        kind: "partly",
        measuredIn: ["memory on test CPU at 0.5 cores"],
        replayed: false,
      },
    });
    const overlap = input({ entry: "overlap 2 nodes × 1, ring at 0.5 cores", configurations: ["cccc000000000003"] });
    expect(configurationSeen(planned[2]!, [overlap])).toEqual({
      kind: "seen",
      measuredIn: ["overlap 2 nodes × 1, ring at 0.5 cores"],
      replayed: false,
    });
    expect(seenSentence(countSeen([...decision.seen.values()]))).toBe(
      "the calibration has seen 1 of these 3 training runs' configurations, 1 partly (1 of them replayed: the prediction " +
        "is the calibration's own measurement of it); 1 unseen, the ones whose score tests the model",
    );
  });

  it("matches by fingerprint where the calibration predates configuration keys, and by nothing where it predates runs", () => {
    const byFingerprint = input({ configurations: null, fingerprints: ["aaaa000000000002"] });
    expect(configurationSeen(planned[1]!, [byFingerprint])).toMatchObject({ kind: "seen", replayed: true });
    // A key of its own decides where it has one, whatever the fingerprints say.
    expect(configurationSeen(planned[1]!, [{ ...byFingerprint, configurations: [] }])).toEqual(unseen);
    expect(configurationSeen(planned[1]!, [input({ runIds: null, fingerprints: null, configurations: null })])).toEqual(
      unseen,
    );
  });

  it("compares only folders for a calibration made before ringlab recorded its runs", () => {
    const old = input({ runIds: null, fingerprints: null, configurations: null });
    expect(decidePredictions(question({ calibrationInputs: [old] }))).toEqual({
      save: true,
      sample: { kind: "out-of-sample" },
      seen: noneSeen,
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

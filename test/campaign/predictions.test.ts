/**
 * What a campaign saves as predictions.json, and when it saves none (src/campaign/execute.ts predictionsToSave):
 * predictions "before the run" only while nothing of the campaign has been measured.
 */
import { describe, expect, it } from "vitest";
import { predictionsToSave, type PredictionsToSave } from "../../src/campaign/execute.ts";
import { planCampaign } from "../../src/campaign/plan.ts";
import { parseCampaign } from "../../src/config/load.ts";
import {
  calibrationFromRecords,
  calibrationInputs,
  CALIBRATION_SCHEMA,
  type Calibration,
  type Source,
} from "../../src/predict/calibration.ts";
import type { RunRecord } from "../../src/results/record.ts";
import { probeRecord, trainRecord } from "../report/fixtures/records.ts";
import { ASSUMED_MEMORY, isMemoryPrediction, predictMemory } from "../../src/predict/memory.ts";
import { parsePredictions, PREDICTIONS_SCHEMA } from "../../src/results/predictions.ts";

const RESULTS = "/work/results/predict";
const CAMPAIGN_FILE = "/work/predict.yaml";
const plan = planCampaign(
  parseCampaign(
    `testbed: {target: local, name: t, nodes: 3}
campaign:
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit}
`,
    "predict.yaml",
  ),
  "predict",
);

/** A calibration measured in `folder` from runs of these fingerprints. */
function calibrationFrom(folder: string, fingerprints: readonly string[]): Calibration {
  const source: Source = {
    kind: "measured",
    resultsDir: "results/seed",
    date: "2026-11-25",
    folder,
    runIds: ["train-tiny-b8-n1-r1", "allreduce-n2-1gbit-r1"],
    fingerprints,
  };
  return {
    schema: CALIBRATION_SCHEMA,
    compute: [
      {
        model: "tiny",
        batchSize: 8,
        precision: "fp32",
        device: "cpu",
        deviceModel: "test CPU",
        cpusPerNode: 0.5,
        computeSeconds: { mean: 0.1, halfWidth95: 0.01, repeats: 3 },
        gradientBytes: 1e6,
        source,
      },
    ],
    splitSteps: [],
    links: [
      {
        bandwidth: "1gbit",
        nodes: 2,
        processesPerNode: 1,
        reduction: "ring",
        cpusPerNode: 0.5,
        alphaSeconds: 0.001,
        betaSecondsPerByte: 8e-9,
        rSquared: 0.99,
        source,
      },
    ],
    overlap: [],
    memory: [],
  };
}

function question(calibration: Calibration, fields: Partial<PredictionsToSave> = {}): PredictionsToSave {
  return {
    plan,
    campaignFile: CAMPAIGN_FILE,
    recorded: [],
    resultsDir: RESULTS,
    context: { calibration, cpusPerNode: 0.5 },
    from: "/state/calibration.json",
    calibrationInputs: calibrationInputs(calibration),
    madeAt: "2026-11-27T09:00:00.000Z",
    ...fields,
  };
}

const seed = calibrationFrom("/work/results/seed", ["1111111111111111", "2222222222222222"]);

describe("the predictions a campaign saves", () => {
  it("are made before any run, say when, that no run was done, every calibration input with its runs and hash, and out-of-sample", () => {
    const saved = predictionsToSave(question(seed));
    expect(saved).toMatchObject({
      said:
        "predicted 2 training runs from /state/calibration.json before they ran; the calibration has seen 0 of these 2 training runs' " +
        "configurations, 0 partly; 2 unseen, the ones whose score tests the model",
    });
    if (!("file" in saved)) throw new Error("not saved");
    expect(saved.file).toMatchObject({
      schema: PREDICTIONS_SCHEMA,
      calibration: "/state/calibration.json",
      madeAt: "2026-11-27T09:00:00.000Z",
      runsDoneBefore: [],
      sample: { kind: "out-of-sample" },
    });
    expect(saved.file.calibrationInputs).toEqual(calibrationInputs(seed));
    expect(saved.file.calibrationInputs.map((input) => [input.entry, input.folder, input.runIds])).toEqual([
      [
        "compute tiny batch 8 fp32 on test CPU at 0.5 cores",
        "/work/results/seed",
        ["train-tiny-b8-n1-r1", "allreduce-n2-1gbit-r1"],
      ],
      [
        "link 1gbit, 2 nodes × 1, ring at 0.5 cores",
        "/work/results/seed",
        ["train-tiny-b8-n1-r1", "allreduce-n2-1gbit-r1"],
      ],
    ]);
    expect(saved.file.predictions.map((prediction) => prediction.runId)).toEqual([
      "train-tiny-b8-n1-r1",
      "train-tiny-b8-n2-1gbit-r1",
    ]);
    // What the report reads back.
    expect(parsePredictions(JSON.parse(JSON.stringify(saved.file)))).toEqual({ file: saved.file });
  });

  it("hold each run's peak memory as the memory model put it before the run, where the campaign's constants are given", () => {
    const saved = predictionsToSave(question(seed, { memory: ASSUMED_MEMORY.cpu }));
    if (!("file" in saved)) throw new Error("not saved");
    const twoNodes = predictMemory(
      { model: "tiny", batchSize: 8, nodes: 2, knobs: plan.runs.find((run) => run.nodes === 2)!.knobs },
      ASSUMED_MEMORY.cpu,
    );
    if (!isMemoryPrediction(twoNodes)) throw new Error(twoNodes.problem);
    expect(saved.file.predictions[1]!.memory).toEqual({
      rankBytes: twoNodes.rankBytes,
      nodeBytes: twoNodes.nodeBytes,
      source: ASSUMED_MEMORY.cpu.source,
    });
    expect(saved.file.predictions.every((prediction) => prediction.memory!.rankBytes > 0)).toBe(true);
    expect(parsePredictions(JSON.parse(JSON.stringify(saved.file)))).toEqual({ file: saved.file });
    // Without constants (a caller that has none) no memory is claimed.
    const without = predictionsToSave(question(seed));
    expect("file" in without && without.file.predictions.map((prediction) => prediction.memory)).toEqual([
      undefined,
      undefined,
    ]);
  });

  it("keep a run's memory peak where its step cannot be predicted: a peak needs the memory model, not a probe of the link", () => {
    const noLink = { ...seed, links: [] };
    const saved = predictionsToSave(question(noLink, { memory: ASSUMED_MEMORY.cpu }));
    if (!("file" in saved)) throw new Error("not saved");
    // The single-node run needs no link; the 2-node run's step does, and its peak is kept beside what it lacked.
    expect(saved.file.predictions.map((prediction) => prediction.runId)).toEqual(["train-tiny-b8-n1-r1"]);
    const twoNodes = predictMemory(
      { model: "tiny", batchSize: 8, nodes: 2, knobs: plan.runs.find((run) => run.nodes === 2)!.knobs },
      ASSUMED_MEMORY.cpu,
    );
    if (!isMemoryPrediction(twoNodes)) throw new Error(twoNodes.problem);
    expect(saved.file.missing).toEqual([
      {
        runId: "train-tiny-b8-n2-1gbit-r1",
        missing: expect.stringContaining("no probe of the link 1gbit"),
        memory: { rankBytes: twoNodes.rankBytes, nodeBytes: twoNodes.nodeBytes, source: ASSUMED_MEMORY.cpu.source },
      },
    ]);
    expect(saved.said).toContain("the memory peaks of 1 of them saved all the same (a peak needs no link probe)");
    // With no step predicted, no count of what the calibration saw of none.
    const none = predictionsToSave(question({ ...noLink, compute: [] }, { memory: ASSUMED_MEMORY.cpu }));
    expect("said" in none && none.said).toMatch(
      /^predicted 0 training runs from \/state\/calibration.json before they ran; 2 could not be/,
    );
    expect(parsePredictions(JSON.parse(JSON.stringify(saved.file)))).toEqual({ file: saved.file });
  });

  it("are not saved once the campaign's runs are done, saying so and which command shows them without running", () => {
    const recorded = plan.runs.map((run) => ({ runId: run.id, status: "ok" }));
    // The e2e case: calibrated from the campaign's own folder, run again with nothing left to run.
    expect(predictionsToSave(question(calibrationFrom(RESULTS, []), { recorded }))).toEqual({
      refused:
        `predictions not saved: 3 of the campaign's 3 runs are done already in ${RESULTS}, so predictions made now would not come before them; ` +
        `\`ringlab plan ${CAMPAIGN_FILE} --calibration /state/calibration.json\` prints them without running anything, and a campaign into a new results ` +
        "folder (--results) saves them before its first run",
    });
    // One run done is enough; without a calibration (AWS: published figures) plan needs none either.
    const refused = predictionsToSave(question(seed, { recorded: recorded.slice(1, 2), from: undefined }));
    expect(refused).toMatchObject({
      refused: expect.stringMatching(
        /^predictions not saved: 1 of the campaign's 3 runs are done already .*; `ringlab plan \/work\/predict\.yaml` prints them/,
      ),
    });
  });

  it("are saved as in-sample, never said to be before the run, where the calibration came from the campaign's own folder", () => {
    const fromHere = predictionsToSave(question(calibrationFrom(RESULTS, [])));
    expect(fromHere).toMatchObject({
      file: {
        sample: {
          kind: "in-sample",
          reasons: [
            `2 of its 2 inputs came from this campaign's results folder ${RESULTS} (compute tiny batch 8 fp32 on test CPU at 0.5 cores; link 1gbit, 2 nodes × 1, ring at 0.5 cores)`,
          ],
        },
      },
    });
    expect("said" in fromHere && fromHere.said).toMatch(
      /^predicted 2 training runs from \/state\/calibration\.json, in-sample: .*; the report scores them as in-sample, no test of the model$/,
    );
    expect("said" in fromHere && fromHere.said).not.toMatch(/before/);
  });

  it("say which runs' configurations a calibration made before configuration keys measured, by their fingerprints", () => {
    const sameRuns = predictionsToSave(question(calibrationFrom("/work/results/seed", [plan.runs[1]!.fingerprint])));
    if (!("file" in sameRuns)) throw new Error(sameRuns.refused);
    expect(sameRuns.file.sample).toEqual({ kind: "out-of-sample" });
    expect(sameRuns.file.predictions.map((prediction) => [prediction.runId, prediction.seen?.kind])).toEqual([
      ["train-tiny-b8-n1-r1", "seen"],
      ["train-tiny-b8-n2-1gbit-r1", "unseen"],
    ]);
    expect(sameRuns.said).toMatch(/the calibration has seen 1 of these 2 training runs' configurations, 0 partly/);
  });

  it("count a configuration the calibration timed for fewer iterations as seen: its fingerprint differs, what it measures does not", () => {
    const file = (numIters: number) =>
      parseCampaign(
        `testbed: {target: local, name: t, nodes: 2, cpusPerNode: 0.5}
campaign:
  matrix: {nodes: [1, 2], model: resnet50, batchSize: 64, bandwidth: [1gbit, 3gbit]}
  train: {numIters: ${numIters}}
`,
        "campaign.yaml",
      );
    const calibrating = planCampaign(file(4), "baselines");
    const campaign = planCampaign(file(5), "layouts");
    const fingerprints = new Set(calibrating.runs.map((run) => run.fingerprint));
    const training = campaign.runs.filter((run) => run.job === "train");
    expect(training.filter((run) => fingerprints.has(run.fingerprint))).toEqual([]);
    // The calibration campaign's records (its 3gbit training run left out), each with its planned run's parameters.
    const measured: RunRecord[] = [
      trainRecord({ nodes: 1, throughput: 100 }),
      trainRecord({ nodes: 2, bandwidth: "1gbit", throughput: 150 }),
      probeRecord({
        nodes: 2,
        bandwidth: "1gbit",
        busbw: [
          [4096, 0.2],
          [67_108_864, 0.9],
        ],
      }),
      probeRecord({
        nodes: 2,
        bandwidth: "3gbit",
        busbw: [
          [4096, 0.5],
          [67_108_864, 2.7],
        ],
      }),
    ].map((record) => {
      const run = calibrating.runs.find((planned) => planned.id === record.runId)!;
      return {
        ...record,
        fingerprint: run.fingerprint,
        params: { ...record.params, knobs: run.knobs, workerArgs: run.workerArgs, cpusPerNode: 0.5, cpuPeriodMs: 10 },
      };
    });
    const calibration = calibrationFromRecords(measured, "results/baselines", () => {}, "/work/results/baselines");
    const saved = predictionsToSave({
      ...question(calibration),
      plan: campaign,
      context: { calibration, cpusPerNode: 0.5 },
    });
    if (!("file" in saved)) throw new Error(saved.refused);
    expect(saved.file.missing).toEqual([]);
    expect(saved.file.sample).toEqual({ kind: "out-of-sample" });
    expect(saved.file.predictions.map((prediction) => [prediction.runId, prediction.seen])).toEqual([
      [
        "train-resnet50-b64-n1-r1",
        { kind: "seen", measuredIn: ["compute resnet50 batch 64 fp32 on test CPU at 0.5 cores"], replayed: true },
      ],
      [
        "train-resnet50-b64-n2-1gbit-r1",
        { kind: "seen", measuredIn: ["overlap 2 nodes × 1, ring at 0.5 cores"], replayed: false },
      ],
      ["train-resnet50-b64-n1-r2", expect.objectContaining({ kind: "seen", replayed: true })],
      // Its link rate the calibration never ran: unseen, though its compute, link and φ are the calibration's.
      ["train-resnet50-b64-n2-3gbit-r1", { kind: "unseen", measuredIn: [], replayed: false }],
    ]);
    expect(saved.said).toMatch(
      /before they ran; the calibration has seen 3 of these 4 training runs' configurations, 0 partly \(2 of them replayed: .*\); 1 unseen/,
    );
  });
});

/**
 * Predictions checked 23 minutes after the calibration's last run (issue #35; issue #50, point 2; called "a second
 * day" until issue #66: the next calendar day in UTC, not a day later; a check called a second day needs 12 hours
 * between the two, SECOND_DAY_HOURS), from what is committed in
 * test/bench/data/predictions-day2/: the seed campaign run on 2026-11-27 and its calibration, and the predict campaign
 * run on 2026-11-28 from that calibration, with the predictions it saved before its first run. Every figure
 * test/bench/README.md quotes of it is recomputed here.
 *
 *   npx ringlab campaign campaigns/local-seed.yaml --results <seed>                      # 2026-11-27, 22:38-23:39 UTC
 *   npx ringlab calibrate <seed> --out <calibration>
 * npx ringlab campaign campaigns/local-predict.yaml --calibration <calibration> --results <predict> # 2026-11-28, 00:00
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { planCampaign } from "../../src/campaign/plan.ts";
import { predictionsToSave } from "../../src/campaign/execute.ts";
import { parseCampaign } from "../../src/config/load.ts";
import { calibrationFromRecords, parseCalibration } from "../../src/predict/calibration.ts";
import { predictionContextFor } from "../../src/predict/inputs.ts";
import { reportData } from "../../src/analysis/data.ts";
import { scorePredictions, scoreSummary } from "../../src/report/predictions.ts";
import { countSeen, parsePredictions } from "../../src/results/predictions.ts";
import type { RunRecord } from "../../src/results/record.ts";
import { recordsOf, rounded, comparableWithBefore, expectMemoryFitsClose, seenOf } from "./records.ts";

const FOLDER = "test/bench/data/predictions-day2";
const seed = recordsOf(`${FOLDER}/seed-runs.jsonl`);
const predicted = recordsOf(`${FOLDER}/predict-runs.jsonl`);
const committed = parseCalibration(JSON.parse(readFileSync(`${FOLDER}/seed-calibration.json`, "utf8")));
const saved = parsePredictions(JSON.parse(readFileSync(`${FOLDER}/predictions.json`, "utf8")));

/** The least time between the calibration's last run and the predictions for a check to be called a second day. */
const SECOND_DAY_HOURS = 12;
const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
const cpuCheck = (records: readonly RunRecord[]) =>
  mean(records.flatMap((record) => record.result?.cpuCheck?.computeGflops ?? []));

describe("predictions checked 23 minutes after the calibration's last run, on the same machine (test/bench/README.md)", () => {
  if ("problem" in committed || "problem" in saved) throw new Error("the committed files parse");
  const calibration = committed.calibration;
  const predictions = saved.file;

  it("calibrated from the seed campaign's records alone, as committed", () => {
    const again = calibrationFromRecords(
      seed,
      "/root/evidence/seed-2026-11-27",
      () => {},
      "/root/evidence/seed-2026-11-27",
    );
    // The same numbers, summed in another order (calibrate reads the records one file each): equal to 12 digits.
    expect(rounded(comparableWithBefore(again))).toEqual(rounded(comparableWithBefore(calibration)));
    expectMemoryFitsClose(again, calibration);
  });

  it("was predicted 23 minutes after the calibration's last run (not a second day), on a machine whose CPU check read 3 % lower, before any run, every run unseen", () => {
    const lastCalibrationRun = Math.max(...seed.map((record) => Date.parse(record.endedAt)));
    const minutes = (Date.parse(predictions.madeAt) - lastCalibrationRun) / 60_000;
    expect(Math.round(minutes)).toBe(23);
    expect(minutes / 60).toBeLessThan(SECOND_DAY_HOURS);
    // The machine as the records show it: the worker's CPU check before every run, 59.2 and 57.4 GFLOP/s.
    expect([cpuCheck(seed), cpuCheck(predicted)].map((gflops) => gflops.toFixed(1))).toEqual(["59.2", "57.4"]);
    // By configuration, recomputed from the seed's records: none of the predict campaign's runs.
    const campaign = parseCampaign(
      readFileSync(`${FOLDER}/predict-campaign.yaml`, "utf8"),
      "predict-campaign.yaml",
      undefined,
      { checkFolders: false },
    );
    const again = calibrationFromRecords(seed, "/root/evidence/seed-2026-11-27");
    expect(countSeen([...seenOf(campaign, again, predictions).values()])).toEqual({
      unseen: predictions.predictions.length,
      partly: 0,
      seen: 0,
      replayed: 0,
    });
    const measured = [...calibration.compute, ...calibration.links, ...calibration.overlap].map((entry) =>
      entry.source.kind === "measured" ? entry.source.date : "",
    );
    expect(new Set(measured)).toEqual(new Set(["2026-11-27"]));
    expect(predictions.madeAt.slice(0, 10)).toBe("2026-11-28");
    expect(
      "schema" in predictions && predictions.schema === "ringlab.predictions/v2" && predictions.runsDoneBefore,
    ).toEqual([]);
    expect("sample" in predictions && predictions.sample).toEqual({ kind: "out-of-sample" });
    for (const record of predicted)
      expect(Date.parse(record.startedAt)).toBeGreaterThan(Date.parse(predictions.madeAt));
  });

  it("put 11 of 11 multi-node runs within 5 points of the predicted scaling efficiency, mean |error| 2.7 points", () => {
    const score = scorePredictions(predictions, reportData(predicted), predicted);
    expect(scoreSummary(score)).toMatch(
      /^11 of 11 multi-node runs within 5 points of the predicted scaling efficiency \(mean \|error\| 2\.7 points\), the mean of each configuration's repeats within 5 points for 4 of 4 configurations, 11 of 18 runs within 10 % of the predicted throughput$/,
    );
  });

  it("after the fact, with the compute as a straight line between the seed's batches, would have put 16 of 18 runs within 10 % of the throughput (11 of 18 as predicted) and the efficiencies within 0.9 points on average", () => {
    // Not a test of the model (the derivation changed after these runs were seen): what the change does on them.
    // Batch 24's compute from batch 32's per sample predicted 176.7 img/s for the baseline, measured 137-165.
    const campaign = parseCampaign(
      readFileSync(`${FOLDER}/predict-campaign.yaml`, "utf8"),
      "predict-campaign.yaml",
      undefined,
      { checkFolders: false },
    );
    const plan = planCampaign(campaign, "predict");
    const context = predictionContextFor(campaign, 0.5, calibration)!;
    const again = predictionsToSave({
      plan,
      campaignFile: "predict-campaign.yaml",
      recorded: [],
      resultsDir: "/nowhere",
      context,
      from: "seed-calibration.json",
      calibrationInputs: [],
      madeAt: predictions.madeAt,
    });
    if ("refused" in again) throw new Error(again.refused);
    const baseline = again.file.predictions.find((prediction) => prediction.runId === "train-small-b24-n1-r1")!;
    expect(baseline.throughput).toBeCloseTo(159.2, 1);
    expect(baseline.sources.compute).toMatch(/^derived: a straight line through batch 16's and 32's compute/);
    const score = scorePredictions(again.file, reportData(predicted), predicted);
    expect(scoreSummary(score)).toMatch(
      /^11 of 11 multi-node runs within 5 points of the predicted scaling efficiency \(mean \|error\| 0\.9 points\), .*, 16 of 18 runs within 10 % of the predicted throughput$/,
    );
  });
});

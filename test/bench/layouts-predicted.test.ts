/**
 * Every layout of the language model on 2 CPU nodes at 300 Mbit/s, 1 Gbit/s and unshaped, predicted before the run
 * from other campaigns' calibration (test/bench/README.md, "Layouts, predicted before the run"): test/bench/
 * layouts-predicted.yaml run on 2026-11-28 with the calibration of test/bench/data/sharded-predicted/ (one worker's
 * ddp and fsdp steps, probes of 3 nodes). Records and predictions in test/bench/data/layouts-predicted/; every figure
 * the README quotes of them is recomputed here.
 *
 *   npx ringlab campaign test/bench/layouts-predicted.yaml --calibration <sharded calibration> --results <folder>
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseCampaign } from "../../src/config/load.ts";
import { calibrationFromRecords, mergeCalibrations } from "../../src/predict/calibration.ts";
import { isPrediction, predictTraining } from "../../src/predict/predict.ts";
import { predictionContextFor } from "../../src/predict/inputs.ts";
import { memoryConstantsFor } from "../../src/campaign/fits.ts";
import { recommend } from "../../src/predict/recommend.ts";
import { reportData } from "../../src/analysis/data.ts";
import { layoutComparisons } from "../../src/report/layouts.ts";
import { scorePredictions } from "../../src/report/predictions.ts";
import { attemptOf } from "../../src/results/record.ts";
import { countSeen } from "../../src/results/predictions.ts";
import { committedPredictions, latestOf, recordsOf, seenOf } from "./records.ts";

const FOLDER = "test/bench/data/layouts-predicted";
const attempts = recordsOf(`${FOLDER}/attempts.jsonl`);
const latest = latestOf(attempts);
const { calibration, predictions } = committedPredictions(
  "test/bench/data/sharded-predicted/calibration.json",
  `${FOLDER}/predictions.json`,
);
const campaign = parseCampaign(readFileSync(`${FOLDER}/campaign.yaml`, "utf8"), "campaign.yaml", undefined, {
  checkFolders: false,
});
const data = reportData(latest);
const counted = scorePredictions(predictions, data, attempts).scored.filter((row) => row.counted);
const round1 = (value: number) => Math.round(10 * value) / 10;
/** measured step / predicted step − 1, in %. */
const stepError = (row: (typeof counted)[number]) =>
  round1(100 * (row.predictedThroughput / row.measuredThroughput - 1));
const LINKS = ["300mbit", "1gbit", "unlimited"] as const;
const SPLIT_ERRORS = [-12.4, 3.2];
/** Each layout's tok/s at a link, fastest first. */
function measured(link: string): [string, number][] {
  const comparison = layoutComparisons(data.training).find((candidate) =>
    candidate.context.includes(` · ${link} · 2 nodes`),
  )!;
  return comparison.entries.map((entry) => [entry.layout, round1(entry.throughput.mean)]);
}

describe("every layout on 2 CPU nodes, predicted before the run from other campaigns (test/bench/README.md)", () => {
  it("ran 21 runs, all ok, and saved its predictions before the first, every run's configuration unseen", () => {
    expect(latest).toHaveLength(21);
    expect(latest.every((record) => record.status === "ok")).toBe(true);
    expect(predictions.sample).toEqual({ kind: "out-of-sample" });
    // By configuration, recomputed from the records of the calibration's campaigns (the sharded campaign's two).
    const inputs = "test/bench/data/sharded-predicted";
    const again = mergeCalibrations([
      calibrationFromRecords(recordsOf(`${inputs}/baselines-attempts.jsonl`), "/root/evidence/s52/baselines"),
      calibrationFromRecords(recordsOf(`${inputs}/links-attempts.jsonl`), "/root/evidence/s52/links"),
    ]);
    expect(countSeen([...seenOf(campaign, again, predictions).values()])).toEqual({
      unseen: 21,
      partly: 0,
      seen: 0,
      replayed: 0,
    });
    for (const record of attempts) expect(Date.parse(record.startedAt)).toBeGreaterThan(Date.parse(predictions.madeAt));
    // 08:29-08:45 UTC; 3 runs measured again (the machine busy, or a run unsteady).
    const times = attempts.flatMap((record) => [Date.parse(record.startedAt), Date.parse(record.endedAt)]);
    expect([Math.min(...times), Math.max(...times)].map((time) => new Date(time).toISOString().slice(11, 16))).toEqual([
      "08:29",
      "08:45",
    ]);
    expect(attempts.filter((record) => attemptOf(record) > 1)).toHaveLength(3);
  });

  it("put 8 of 14 shaped-link runs' steps within 15 % of the prediction; the misses are tensor, 4 micro-batches and one ddp run", () => {
    const shaped = counted.filter((row) => !row.runId.includes("-unlimited-"));
    expect(shaped).toHaveLength(14);
    expect(shaped.filter((row) => Math.abs(stepError(row)) <= 15)).toHaveLength(8);
    expect(
      shaped
        .filter((row) => Math.abs(stepError(row)) > 15)
        .map((row) => [row.runId.replace("train-gpt-mini-b4-n2-", "").replace("parallelism-", ""), stepError(row)]),
    ).toEqual([
      ["300mbit-pipeline-microbatches-2-pipelineschedule-gpipe-r1", -19.3],
      ["300mbit-pipeline-microbatches-4-pipelineschedule-gpipe-r1", 27.1],
      ["1gbit-ddp-r1", -15.7],
      ["1gbit-tensor-r1", 39.1],
      ["1gbit-pipeline-microbatches-4-pipelineschedule-gpipe-r1", 20.7],
      ["1gbit-pipeline-microbatches-4-pipelineschedule-1f1b-r1", 19.5],
    ]);
    // Tensor took 37-39 % longer than predicted on 1 Gbit/s and unshaped alike: not the link
    // (test/bench/layouts.test.ts: 0.72x, not 0.51x).
    expect(counted.filter((row) => row.runId.includes("-tensor-")).map(stepError)).toEqual([12.8, 39.1, 37.4]);
  });

  it("put every run's peak memory per rank within 10 % of the prediction saved before it (−6.0 % to +7.9 %)", () => {
    expect(counted).toHaveLength(21);
    expect(
      [Math.min(...counted.map((row) => row.memoryError!)), Math.max(...counted.map((row) => row.memoryError!))].map(
        (error) => round1(100 * error),
      ),
    ).toEqual([-6.0, 7.9]);
  });

  it("measured a pipeline of 2 micro-batches faster than one of 4 in 5 of 6 link and schedule pairs, where the model's bubble puts 4 ahead by 19-20 %", () => {
    const rate = (link: string, schedule: string, micro: number) =>
      measured(link).find(([layout]) => layout === `pipeline ${schedule}, ${micro} micro-batches`)![1];
    const pairs = LINKS.flatMap((link) =>
      ["gpipe", "1f1b"].map((schedule) => rate(link, schedule, 2) > rate(link, schedule, 4)),
    );
    expect(pairs).toEqual([true, false, true, true, true, true]);
    const predicted = (link: string, micro: number) =>
      predictions.predictions.find(
        (prediction) =>
          prediction.runId ===
          `train-gpt-mini-b4-n2-${link}-parallelism-pipeline-microbatches-${micro}-pipelineschedule-gpipe-r1`,
      )!.throughput;
    expect(LINKS.map((link) => Math.round(100 * (predicted(link, 4) / predicted(link, 2) - 1)))).toEqual([20, 19, 19]);
  });

  it("with the unshaped tensor run's step as the split compute (its collectives there taken out), put both shaped tensor runs within 15 %: a check after the run, since that run is this campaign's, not a prediction before it", () => {
    const splitSteps = calibrationFromRecords(latest, FOLDER).splitSteps.filter(
      (entry) => entry.workload["parallelism"] === "tensor",
    );
    expect(
      splitSteps.map((entry) => [
        entry.nodes,
        entry.tensorDegree,
        entry.source.kind === "measured" && entry.source.runIds,
      ]),
    ).toEqual([[2, 2, ["train-gpt-mini-b4-n2-unlimited-parallelism-tensor-r1"]]]);
    const context = predictionContextFor(campaign, 0.5, { ...calibration, splitSteps })!;
    const errors = counted
      .filter((row) => row.runId.includes("-tensor-") && !row.runId.includes("-unlimited-"))
      .map((row) => {
        const { params } = latest.find((record) => record.runId === row.runId)!;
        const prediction = predictTraining(
          {
            runId: row.runId,
            model: params.model!,
            batchSize: params.batchSize!,
            nodes: params.nodes,
            bandwidth: params.bandwidth,
            knobs: params.knobs,
          },
          context,
        );
        if (!isPrediction(prediction)) throw new Error(prediction.missing);
        expect(prediction.sources.compute).toMatch(
          /its compute on 2 workers: the step of tensor over 2 workers measured over an unshaped link, .* less its collectives there/,
        );
        return round1(100 * (prediction.throughput / row.measuredThroughput - 1));
      });
    // Before: 12.8 % (300 Mbit/s) and 39.1 % (1 Gbit/s) with the model's 1/tp share of the split compute.
    expect(errors).toEqual(SPLIT_ERRORS);
  });

  it("measured the fastest layout per link: a 2-micro-batch GPipe at 300 Mbit/s, ddp at 1 Gbit/s and unshaped; predict --recommend ranked it first unshaped only (recommend's order as today's code recomputes it from the committed calibration: the campaign saved none before its first run)", () => {
    expect(LINKS.map((link) => measured(link)[0])).toEqual([
      ["pipeline gpipe, 2 micro-batches", 339.6],
      ["ddp", 379.8],
      ["ddp", 424.3],
    ]);
    const context = predictionContextFor(campaign, 0.5, calibration)!;
    const knobs = { optimizer: "adamw", layers: 4, width: 512, heads: 8, sequenceLength: 64, precision: "fp32" };
    const first = (link: string) =>
      recommend(
        { model: "gpt-mini", batchSize: 4, nodes: 2, processesPerNode: 1, bandwidth: link, knobs },
        context,
        memoryConstantsFor(campaign, 0.5, calibration),
      )[0]!.candidate.name;
    expect(LINKS.map(first)).toEqual(["pipeline gpipe, 4 micro-batches", "tensor", "ddp"]);
  });
});

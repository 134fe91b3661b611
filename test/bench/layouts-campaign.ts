/**
 * A layouts campaign's committed folder (test/bench/data/layouts-*): its records, the calibration and predictions it
 * was run with, the report's scores of them, and the helpers its tests quote figures with.
 */
import { readFileSync } from "node:fs";
import { memoryConstantsFor } from "../../src/campaign/fits.ts";
import type { CampaignFile } from "../../src/config/schema.ts";
import { parseCampaign } from "../../src/config/load.ts";
import type { Calibration } from "../../src/predict/calibration.ts";
import { predictionContextFor } from "../../src/predict/inputs.ts";
import { calibrationOfCampaigns } from "../../src/predict/layout-overlap.ts";
import { recommend } from "../../src/predict/recommend.ts";
import type { ConfigurationSeen } from "../../src/results/predictions.ts";
import type { RunRecord } from "../../src/results/record.ts";
import { reportData } from "../../src/analysis/data.ts";
import { layoutComparisons } from "../../src/report/layouts.ts";
import { scorePredictions } from "../../src/report/predictions.ts";
import { committedPredictions, latestOf, recordsOf } from "./records.ts";

/**
 * Where the calibration campaigns wrote their results on the machine that ran them: as `calibrate` was given them, and
 * whole.
 */
export const RAN_IN = { baselines: "results/local-layouts-baselines", links: "results/local-layouts-links" };
export const whole = (folder: string) => `/work/main/${folder}`;
export const LINKS = ["300mbit", "1gbit", "unlimited"] as const;
export const NODES = [2, 3] as const;
export const round1 = (value: number) => Math.round(10 * value) / 10;
export const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
/** "n2-300mbit-pipeline ×3 1f1b": a run id without what every run of the campaign shares. */
export const short = (runId: string) =>
  runId
    .replace("train-gpt-mini-b6-", "")
    .replace("parallelism-", "")
    .replace("-microbatches-", " ×")
    .replace("-pipelineschedule-", " ")
    .replace(/-r1$/, "");

/**
 * The calibration `ringlab calibrate` makes of the two calibration campaigns' records, their folders named as it was
 * given them.
 */
export function calibrationFrom(baselines: readonly RunRecord[], links: readonly RunRecord[]): Calibration {
  return calibrationOfCampaigns([
    { records: baselines, resultsDir: RAN_IN.baselines, folder: whole(RAN_IN.baselines) },
    { records: links, resultsDir: RAN_IN.links, folder: whole(RAN_IN.links) },
  ]);
}

/** `predict --recommend`'s layouts for the campaigns' gpt-mini at batch 6, best first, on `nodes` nodes at `link`. */
export function recommendedBy(
  campaign: CampaignFile,
  calibration: Calibration,
): (nodes: number, link: string) => string[] {
  const context = predictionContextFor(campaign, 0.5, calibration)!;
  const knobs = { optimizer: "adamw", layers: 6, width: 384, heads: 12, sequenceLength: 64, precision: "fp32" };
  return (nodes, link) =>
    recommend(
      { model: "gpt-mini", batchSize: 6, nodes, processesPerNode: 1, bandwidth: link, knobs },
      context,
      memoryConstantsFor(campaign, 0.5, calibration),
    ).map((entry) => entry.candidate.name);
}

/** `inputs`: the folder with the calibration campaigns' records, where a second campaign shares another's. */
export function layoutsCampaign(folder: string, inputs = folder) {
  const baselines = recordsOf(`${inputs}/baselines-attempts.jsonl`);
  const links = recordsOf(`${inputs}/links-attempts.jsonl`);
  const attempts = recordsOf(`${folder}/attempts.jsonl`);
  const latest = latestOf(attempts);
  const { calibration, predictions } = committedPredictions(`${folder}/calibration.json`, `${folder}/predictions.json`);
  const campaign = parseCampaign(readFileSync(`${folder}/campaign.yaml`, "utf8"), "campaign.yaml", undefined, {
    checkFolders: false,
  });
  const data = reportData(latest);
  const score = scorePredictions(predictions, data, attempts);
  const counted = score.scored.filter((row) => row.counted);
  return {
    baselines,
    links,
    attempts,
    latest,
    calibration,
    predictions,
    campaign,
    data,
    score,
    counted,
    /**
     * measured step / predicted step − 1, in %: a step trains the same tokens, so predicted / measured throughput − 1.
     */
    stepError: (row: (typeof counted)[number]) => round1(100 * (row.predictedThroughput / row.measuredThroughput - 1)),
    /** The layouts at one link and node count, fastest first, as the report's Layouts section has them. */
    comparisonAt: (link: string, nodes: number) =>
      layoutComparisons(data.training).find((candidate) => candidate.context.endsWith(` · ${link} · ${nodes} nodes`))!,
  };
}

/**
 * [runs, within 15 %, lowest, highest, mean |error|] of the shaped-link runs whose configuration the calibration had
 * not measured (records.ts seenOf): the headline a campaign's score rests on.
 */
export function unseenShapedSteps(
  rows: readonly { readonly runId: string }[],
  seen: ReadonlyMap<string, ConfigurationSeen>,
  stepError: (row: never) => number,
): number[] {
  const unseen = rows.filter((row) => !row.runId.includes("-unlimited-") && seen.get(row.runId)?.kind === "unseen");
  const errors = unseen.map((row) => stepError(row as never));
  return [
    unseen.length,
    errors.filter((error) => Math.abs(error) <= 15).length,
    Math.min(...errors),
    Math.max(...errors),
    round1(mean(errors.map(Math.abs))),
  ];
}

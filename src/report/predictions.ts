/**
 * The prediction made before the run, scored (issue #35): for every training run that `ringlab plan`'s model
 * predicted (predictions.json, saved by the campaign before its first run), the measured throughput and scaling
 * efficiency beside the predicted ones. Pure.
 */
import type { PredictionsFile } from "../results/predictions.ts";
import { latestAttempts, type RunRecord } from "../results/record.ts";
import { groupBy, type ReportData } from "./data.ts";
import { throughputOf } from "../results/worker-result.ts";

export interface ScoredPrediction {
  readonly runId: string;
  /** "small · batch 32 · 1gbit · 3 nodes · repeat 2", as the report's tables name points, and which repeat. */
  readonly label: string;
  /** The label without the repeat: the runs of one configuration share it. */
  readonly configuration: string;
  readonly nodes: number;
  readonly predictedImagesPerSecond: number;
  readonly measuredImagesPerSecond: number;
  /** measured / predicted − 1. */
  readonly throughputError: number;
  readonly predictedEfficiency: { readonly value: number; readonly low: number; readonly high: number };
  /** The run's throughput against its workers × the baseline's per-worker mean; null without a baseline. */
  readonly measuredEfficiency: number | null;
  /** Measured − predicted, in percentage points; null without a baseline. */
  readonly errorPoints: number | null;
}

export interface PredictionScore {
  readonly calibration: string;
  readonly madeAt: string;
  readonly scored: readonly ScoredPrediction[];
  /** Predicted runs without an ok record yet. */
  readonly notMeasured: number;
  readonly missing: PredictionsFile["missing"];
  /** Every input's source once ("measured in ...", "published: ...", "assumed: ..."), in the order first used. */
  readonly sources: readonly string[];
}

/** Scores the predictions against the latest ok attempt of every predicted run. */
export function scorePredictions(file: PredictionsFile, data: ReportData, records: readonly RunRecord[]): PredictionScore {
  const latest = new Map(latestAttempts(records).map(({ record }) => [record.runId, record]));
  const scored: ScoredPrediction[] = [];
  let notMeasured = 0;
  for (const prediction of file.predictions) {
    const record = latest.get(prediction.runId);
    if (record?.status !== "ok" || record.result?.job !== "train") {
      notMeasured++;
      continue;
    }
    const measured = throughputOf(record.result.metrics).total.mean;
    const place = placeOf(data, prediction.runId);
    const measuredEfficiency = place === undefined || place.perWorker === null ? null : measured / (place.workers * place.perWorker);
    const configuration = place?.label ?? prediction.runId;
    scored.push({
      runId: prediction.runId, label: place === undefined ? configuration : `${configuration} · repeat ${record.params.repeat}`, configuration, nodes: record.params.nodes,
      predictedImagesPerSecond: prediction.imagesPerSecond, measuredImagesPerSecond: measured,
      throughputError: measured / prediction.imagesPerSecond - 1,
      predictedEfficiency: prediction.scalingEfficiency, measuredEfficiency,
      errorPoints: measuredEfficiency === null ? null : (measuredEfficiency - prediction.scalingEfficiency.value) * 100,
    });
  }
  const sources = [...new Set(file.predictions.flatMap((prediction) => [prediction.sources.compute, prediction.sources.link, prediction.sources.overlap ?? "no link (one node)"]))]
    .filter((source) => source !== "no link (one node)");
  return { calibration: file.calibration, madeAt: file.madeAt, scored, notMeasured, missing: file.missing, sources };
}

/** Where the run sits in the report: its label, workers and the baseline's throughput per worker. */
function placeOf(data: ReportData, runId: string): { label: string; workers: number; perWorker: number | null } | undefined {
  for (const config of data.training) {
    const perWorker = config.baseline === null ? null : config.baseline.imagesPerSecond.mean / config.baseline.workers;
    if (config.baseline?.runIds.includes(runId)) return { label: `${config.label} · 1 node`, workers: config.baseline.workers, perWorker };
    for (const series of config.series) {
      const point = series.points.find((candidate) => candidate.runIds.includes(runId));
      if (point !== undefined) return { label: `${config.label} · ${series.bandwidth} · ${point.nodes} nodes`, workers: point.workers, perWorker };
    }
  }
  return undefined;
}

/**
 * "6 of 8 multi-node runs within 5 points of the predicted scaling efficiency (mean |error| 3.1 points), the mean of
 * each configuration's repeats within 5 points for 3 of 3 configurations, 7 of 10 runs within 10 % of the predicted
 * throughput". The model predicts a configuration's expected efficiency; a single run adds its own noise (on the
 * local testbed repeats of one configuration spread up to 11.5 points, test/bench/README.md), which the means
 * of the repeats average out. The configurations' part appears only where some configuration has repeats.
 */
export function scoreSummary(score: PredictionScore): string {
  const withEfficiency = score.scored.filter((row) => row.errorPoints !== null && row.nodes > 1);
  const within5 = withEfficiency.filter((row) => Math.abs(row.errorPoints!) <= 5).length;
  const within10 = score.scored.filter((row) => Math.abs(row.throughputError) <= 0.1).length;
  const meanAbs = withEfficiency.length === 0 ? null : mean(withEfficiency.map((row) => Math.abs(row.errorPoints!)));
  const configurations = [...groupBy(withEfficiency, (row) => row.configuration).values()];
  const means = configurations.some((rows) => rows.length > 1)
    ? `, the mean of each configuration's repeats within 5 points for ${configurations.filter((rows) => Math.abs(mean(rows.map((row) => row.errorPoints!))) <= 5).length} of ${configurations.length} configurations`
    : "";
  return `${within5} of ${withEfficiency.length} multi-node runs within 5 points of the predicted scaling efficiency` +
    `${meanAbs === null ? "" : ` (mean |error| ${meanAbs.toFixed(1)} points)`}${means}, ${within10} of ${score.scored.length} runs within 10 % of the predicted throughput`;
}

/**
 * "1 of the 2 multi-node runs outside 5 points is flagged (see Flags): ...", or undefined when no such run is flagged:
 * a miss whose measurement a flag of that run questions (an outlier repeat, a busy machine, an unsteady run: the caller
 * passes those runs) is not the model's error alone.
 */
export function flaggedMisses(score: PredictionScore, flaggedRunIds: ReadonlySet<string>): string | undefined {
  const misses = score.scored.filter((row) => row.errorPoints !== null && row.nodes > 1 && Math.abs(row.errorPoints) > 5);
  const flagged = misses.filter((row) => flaggedRunIds.has(row.runId)).length;
  if (flagged === 0) return undefined;
  const which = misses.length === 1 ? "the one multi-node run outside 5 points is" : `${flagged} of the ${misses.length} multi-node runs outside 5 points ${flagged === 1 ? "is" : "are"}`;
  return `${which} flagged (see Flags): the measurement, not only the model, may be off there`;
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

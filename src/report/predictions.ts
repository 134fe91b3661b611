/**
 * The predictions saved with a campaign, scored (issue #35): for every training run that `ringlab plan`'s model
 * predicted (predictions.json), the measured throughput and scaling efficiency beside the predicted ones, for every
 * attempt of the run: a run done again (its first measurement disturbed) is shown beside its first measurement, and
 * the score counts the first. Whether they were made before the runs, and from a calibration that holds none of
 * them, is said (predictionClaim): only then are they "predicted before the run". Pure.
 */
import {
  PREDICTIONS_SCHEMA,
  type AnyPredictionsFile,
  type ConfigurationSeen,
  type PredictionSample,
} from "../results/predictions.ts";
import { attemptOf, type RunRecord } from "../results/record.ts";
import { disturbance, type Disturbance } from "../results/steadiness.ts";
import { groupBy, largestRankPeak, runCpuCheckGflops, type ReportData } from "../analysis/data.ts";
import { throughputOf } from "../results/worker-result.ts";

export interface ScoredPrediction {
  readonly runId: string;
  /**
   * "small · batch 32 · 1gbit · 3 nodes · repeat 2", as the report's tables name points, and which repeat; where the
   * run was measured more than once (or first measured by a later attempt), also which attempt.
   */
  readonly label: string;
  /** The label without the repeat: the runs of one configuration share it. */
  readonly configuration: string;
  readonly nodes: number;
  /** The attempt (src/results/store.ts) this row measured. */
  readonly attempt: number;
  /** The run's first measurement, which the summary counts; false for an attempt done again after it. */
  readonly counted: boolean;
  /** The run's latest attempt: the one the report's flags (src/report/suspect-figures.ts) speak of. */
  readonly latest: boolean;
  /** Why this attempt's own measurement is in doubt (the machine busy, steps that changed speed); null if not. */
  readonly disturbance: Disturbance | null;
  readonly predictedThroughput: number;
  readonly measuredThroughput: number;
  /** measured / predicted − 1. */
  readonly throughputError: number;
  readonly predictedEfficiency: { readonly value: number; readonly low: number; readonly high: number };
  /** The run's throughput against its workers × the baseline's per-worker mean; null without a baseline. */
  readonly measuredEfficiency: number | null;
  /** Measured − predicted, in percentage points; null without a baseline. */
  readonly errorPoints: number | null;
  /**
   * The largest rank's peak memory over its baseline as predicted before the run (predictions.json), and as measured;
   * null where either is absent.
   */
  readonly predictedMemoryBytes: number | null;
  readonly measuredMemoryBytes: number | null;
  /** measured / predicted − 1; null where either is absent. */
  readonly memoryError: number | null;
  /**
   * The run's own CPU check (the worker's timed matrix products just before it) over the calibration runs' that
   * measured its compute, − 1; null where either has none (files and records before ringlab kept them).
   */
  readonly cpuCheckShift: number | null;
  /** Whether the calibration had measured the run's configuration; null where the file does not say (before v2's). */
  readonly seen: ConfigurationSeen | null;
}

/**
 * What the predictions can claim: whether any run they predict was measured first, and whether the calibration held
 * runs of this campaign.
 */
export interface PredictionClaim {
  /**
   * Predicted runs measured before the predictions were made: as the file says, or an ok attempt that started earlier.
   */
  readonly measuredBefore: readonly string[];
  /** "unknown" for a v1 file, which did not record the calibration's inputs. */
  readonly sample: PredictionSample | { readonly kind: "unknown" };
}

export interface PredictionScore {
  readonly calibration: string;
  readonly madeAt: string;
  /** What the throughputs count (the predictions' own unit; images in files before language models). */
  readonly unit: "images" | "tokens";
  /** Absent where predictions.json could not be read: nothing is claimed then. */
  readonly claim?: PredictionClaim;
  /** One row per ok attempt of a predicted run, a run's attempts together and in order. */
  readonly scored: readonly ScoredPrediction[];
  /** Predicted runs without an ok record yet. */
  readonly notMeasured: number;
  readonly missing: AnyPredictionsFile["missing"];
  /** Every input's source once ("measured in ...", "published: ...", "assumed: ..."), in the order first used. */
  readonly sources: readonly string[];
}

/**
 * Scores the predictions against every ok attempt of every predicted run (`records`: every attempt's record). `seen`:
 * what the calibration had measured of each run, where the file does not say it (a test recomputes it for a file made
 * before ringlab recorded it).
 */
export function scorePredictions(
  file: AnyPredictionsFile,
  data: ReportData,
  records: readonly RunRecord[],
  seen?: ReadonlyMap<string, ConfigurationSeen>,
): PredictionScore {
  const attemptsOf = groupBy(
    [...records].sort((a, b) => attemptOf(a) - attemptOf(b)),
    (record) => record.runId,
  );
  const scored: ScoredPrediction[] = [];
  let notMeasured = 0;
  for (const prediction of file.predictions) {
    const every = attemptsOf.get(prediction.runId) ?? [];
    const measured = every.flatMap((record) =>
      record.status === "ok" && record.result?.job === "train" ? [{ record, metrics: record.result.metrics }] : [],
    );
    if (measured.length === 0) {
      notMeasured++;
      continue;
    }
    const latest = Math.max(...every.map(attemptOf));
    const place = placeOf(data, prediction.runId);
    const configuration = place?.label ?? prediction.runId;
    measured.forEach(({ record, metrics }, index) => {
      const throughput = throughputOf(metrics).total.mean;
      const measuredEfficiency =
        place === undefined || place.perWorker === null ? null : throughput / (place.workers * place.perWorker);
      const attempt = attemptOf(record);
      const named = place === undefined ? configuration : `${configuration} · repeat ${record.params.repeat}`;
      const which =
        measured.length === 1 && attempt === 1 ? "" : ` · attempt ${attempt}${index === 0 ? "" : " (run again)"}`;
      scored.push({
        runId: prediction.runId,
        label: `${named}${which}`,
        configuration,
        nodes: record.params.nodes,
        attempt,
        counted: index === 0,
        latest: attempt === latest,
        disturbance: disturbance(record) ?? null,
        predictedThroughput: prediction.throughput,
        measuredThroughput: throughput,
        throughputError: throughput / prediction.throughput - 1,
        predictedEfficiency: prediction.scalingEfficiency,
        measuredEfficiency,
        errorPoints:
          measuredEfficiency === null ? null : (measuredEfficiency - prediction.scalingEfficiency.value) * 100,
        ...memoryScore(prediction.memory?.rankBytes ?? null, metrics.memory?.perRank ?? []),
        cpuCheckShift: cpuCheckShift(prediction.cpuCheckGflops, record),
        seen: prediction.seen ?? seen?.get(prediction.runId) ?? null,
      });
    });
  }
  const sources = [
    ...new Set(
      file.predictions.flatMap((prediction) => [
        prediction.sources.compute,
        prediction.sources.link,
        prediction.sources.overlap ?? "no link (one node)",
      ]),
    ),
  ].filter((source) => source !== "no link (one node)");
  return {
    calibration: file.calibration,
    madeAt: file.madeAt,
    unit: file.predictions[0]?.unit ?? "images",
    claim: predictionClaim(file, records),
    scored,
    notMeasured,
    missing: file.missing,
    sources,
  };
}

function cpuCheckShift(calibrated: number | undefined, record: RunRecord): number | null {
  const own = runCpuCheckGflops(record);
  return calibrated === undefined || own === undefined ? null : own / calibrated - 1;
}

/**
 * How far a run's CPU check may read from the calibration's before the report says the run was on another machine:
 * on one otherwise idle machine it moved up to 8 % between batches of runs (test/bench/README.md, the layouts campaign
 * of 2026-11-28), and a machine of a newer CPU generation read 1.75 times as much (2026-11-29).
 */
export const MACHINE_SHIFT = 0.15;

/**
 * "4 of 51 runs' CPU check read 12 % to 81 % faster than the calibration runs' ...", or undefined where none is off by
 * more than MACHINE_SHIFT: a prediction carries the calibration machine's compute, so a run on a faster or slower
 * machine misses by about that much, whatever the model of its communication.
 */
export function machineCaveat(score: PredictionScore): string | undefined {
  const counted = score.scored.filter((row) => row.counted && row.cpuCheckShift !== null);
  const off = counted.filter((row) => Math.abs(row.cpuCheckShift!) > MACHINE_SHIFT);
  if (off.length === 0) return undefined;
  const shifts = off.map((row) => row.cpuCheckShift!);
  const [low, high] = [Math.min(...shifts), Math.max(...shifts)];
  const size = (shift: number) => Math.round(Math.abs(shift) * 100);
  const span = (a: number, b: number) => (size(a) === size(b) ? `${size(a)} %` : `${size(a)} % to ${size(b)} %`);
  const direction =
    low > 0
      ? `${span(low, high)} faster than`
      : high < 0
        ? `${span(high, low)} slower than`
        : `from ${size(low)} % slower to ${size(high)} % faster than`;
  const one = off.length === 1;
  return (
    `${off.length} of ${counted.length} runs' CPU check (the worker's timed matrix products before each run) read ${direction} the calibration ` +
    `runs' that measured ${one ? "its" : "their"} compute: ${one ? "it" : "they"} ran on another machine, or a differently loaded one, than the one calibrated, and ` +
    `${one ? "its prediction carries" : "their predictions carry"} that difference. Calibrate from a campaign run on this machine to predict it.`
  );
}

/** The largest rank's measured peak over its baseline against the saved prediction of it. */
function memoryScore(
  predicted: number | null,
  ranks: readonly { readonly peakBytes: number; readonly baselineBytes: number }[],
): Pick<ScoredPrediction, "predictedMemoryBytes" | "measuredMemoryBytes" | "memoryError"> {
  const measured = largestRankPeak(ranks);
  return {
    predictedMemoryBytes: predicted,
    measuredMemoryBytes: measured,
    memoryError: predicted === null || measured === null ? null : measured / predicted - 1,
  };
}

/**
 * What the file can claim, checked against the records too: a predicted run with an ok attempt that started before the
 * predictions were made was measured first, whatever the file says (a v1 file says nothing of it).
 */
export function predictionClaim(file: AnyPredictionsFile, records: readonly RunRecord[]): PredictionClaim {
  const predicted = new Set(file.predictions.map((prediction) => prediction.runId));
  const madeAt = Date.parse(file.madeAt);
  const startedEarlier = records
    .filter(
      (record) => predicted.has(record.runId) && record.status === "ok" && !(Date.parse(record.startedAt) > madeAt),
    )
    .map((record) => record.runId);
  const saidDone = file.schema === PREDICTIONS_SCHEMA ? file.runsDoneBefore : [];
  return {
    measuredBefore: [...new Set([...saidDone, ...startedEarlier])].sort(),
    sample: file.schema === PREDICTIONS_SCHEMA ? file.sample : { kind: "unknown" },
  };
}

/**
 * Whether the score may be called predicted before the run: nothing measured first, from a calibration that holds none
 * of the campaign's runs.
 */
export function predictedBefore(score: PredictionScore): boolean {
  return (
    score.claim !== undefined && score.claim.measuredBefore.length === 0 && score.claim.sample.kind === "out-of-sample"
  );
}

/** The report section's title: "Predicted before the run" only where predictedBefore holds. */
export function predictionsTitle(score: PredictionScore): string {
  const claim = score.claim;
  if (claim === undefined) return "Predictions";
  if (claim.sample.kind === "in-sample") return "Predictions, in-sample";
  if (claim.measuredBefore.length > 0) return "Predictions made after runs were measured";
  return claim.sample.kind === "unknown" ? "Predictions, calibration not recorded" : "Predicted before the run";
}

/** What the predictions are, where they are not predicted before the run; undefined where they are. */
export function claimCaveat(score: PredictionScore): string | undefined {
  const claim = score.claim;
  if (claim === undefined || predictedBefore(score)) return undefined;
  const parts: string[] = [];
  if (claim.sample.kind === "in-sample") {
    parts.push(
      `In-sample: the calibration holds runs of this campaign (${claim.sample.reasons.join("; ")}), so the errors say how well the model fits ` +
        "its own measurements, not how well it predicts.",
    );
  }
  if (claim.measuredBefore.length > 0) {
    const count = claim.measuredBefore.length;
    parts.push(
      `Made after ${count} of the predicted runs ${count === 1 ? "was" : "were"} measured (${claim.measuredBefore.join(", ")}): no prediction of ${count === 1 ? "it" : "them"}.`,
    );
  }
  if (claim.sample.kind === "unknown") {
    parts.push(
      "This predictions.json (ringlab.predictions/v1) does not record which runs its calibration came from: it may hold runs of this campaign (in-sample).",
    );
  }
  return parts.join(" ");
}

/** Where the run sits in the report: its label, workers and the baseline's throughput per worker. */
function placeOf(
  data: ReportData,
  runId: string,
): { label: string; workers: number; perWorker: number | null } | undefined {
  for (const config of data.training) {
    const perWorker = config.baseline === null ? null : config.baseline.throughput.mean / config.baseline.workers;
    if (config.baseline?.runIds.includes(runId))
      return { label: `${config.label} · 1 node`, workers: config.baseline.workers, perWorker };
    for (const series of config.series) {
      const point = series.points.find((candidate) => candidate.runIds.includes(runId));
      if (point !== undefined)
        return {
          label: `${config.label} · ${series.bandwidth} · ${point.nodes} nodes`,
          workers: point.workers,
          perWorker,
        };
    }
  }
  return undefined;
}

/**
 * "6 of 8 multi-node runs within 5 points of the predicted scaling efficiency (mean |error| 3.1 points), the mean of
 * each configuration's repeats within 5 points for 3 of 3 configurations, 7 of 10 runs within 10 % of the predicted
 * throughput". The model predicts a configuration's expected efficiency; a single run adds its own noise (on the
 * local testbed repeats of one configuration spread up to 11.5 points, test/bench/README.md), which the means
 * of the repeats average out. The configurations' part appears only where some configuration has repeats, the
 * efficiency's only where some run has one (a campaign without single-node runs measures none).
 */
export function scoreSummary(score: PredictionScore): string {
  const counted = score.scored.filter((row) => row.counted);
  const withEfficiency = counted.filter((row) => row.errorPoints !== null && row.nodes > 1);
  const within5 = withEfficiency.filter((row) => Math.abs(row.errorPoints!) <= 5).length;
  const within10 = counted.filter((row) => Math.abs(row.throughputError) <= 0.1).length;
  const meanAbs = withEfficiency.length === 0 ? null : mean(withEfficiency.map((row) => Math.abs(row.errorPoints!)));
  const configurations = [...groupBy(withEfficiency, (row) => row.configuration).values()];
  const means = configurations.some((rows) => rows.length > 1)
    ? `, the mean of each configuration's repeats within 5 points for ${configurations.filter((rows) => Math.abs(mean(rows.map((row) => row.errorPoints!))) <= 5).length} of ${configurations.length} configurations`
    : "";
  const label =
    score.claim?.sample.kind === "in-sample"
      ? "In-sample, no test of the model: "
      : score.claim !== undefined && score.claim.measuredBefore.length > 0
        ? "Made after runs were measured: "
        : "";
  const withMemory = counted.filter((row) => row.memoryError !== null);
  const memory =
    withMemory.length === 0
      ? ""
      : `, ${withMemory.filter((row) => Math.abs(row.memoryError!) <= 0.1).length} of ${withMemory.length} runs' peak memory per rank within 10 % of the predicted`;
  // Without a single-node baseline in the campaign no run has a measured efficiency: nothing to say of it.
  const efficiency =
    withEfficiency.length === 0
      ? ""
      : `${within5} of ${withEfficiency.length} multi-node runs within 5 points of the predicted scaling efficiency` +
        `${meanAbs === null ? "" : ` (mean |error| ${meanAbs.toFixed(1)} points)`}${means}, `;
  return `${label}${efficiency}${within10} of ${counted.length} runs within 10 % of the predicted throughput${memory}`;
}

/**
 * "The calibration had measured the configuration of 90 of the 153 runs (39 of them replayed ...), 6 partly (...); 57
 * unseen, the test of the model: 56 of 57 steps within 15 % of the predicted (−9.1 % to +8.3 %, mean |error| 3.0 %)":
 * the score of the runs whose configuration no calibration run had, apart from those whose step or overlap share it
 * measured (src/results/predictions.ts ConfigurationSeen). Undefined where no row says (files before ringlab recorded
 * it); the counts are each run's first measurement, as the summary's.
 */
export function seenSummary(score: PredictionScore): string | undefined {
  const counted = score.scored.filter((row) => row.counted);
  if (counted.length === 0 || counted.some((row) => row.seen === null)) return undefined;
  const of = (kind: ConfigurationSeen["kind"]) => counted.filter((row) => row.seen!.kind === kind);
  const [seen, partly, unseen] = [of("seen"), of("partly"), of("unseen")];
  const replayed = seen.filter((row) => row.seen!.replayed).length;
  const stepErrors = unseen.map((row) => 100 * (row.predictedThroughput / row.measuredThroughput - 1));
  const signed = (value: number) => `${value >= 0 ? "+" : "−"}${Math.abs(value).toFixed(1)} %`;
  const score15 =
    unseen.length === 0
      ? "none to test the model on"
      : `the test of the model: ${stepErrors.filter((error) => Math.abs(error) <= 15).length} of ${unseen.length} steps within 15 % of the predicted ` +
        `(${signed(Math.min(...stepErrors))} to ${signed(Math.max(...stepErrors))}, mean |error| ${mean(stepErrors.map(Math.abs)).toFixed(1)} %)`;
  return (
    `The calibration had measured the configuration of ${seen.length} of these ${counted.length} runs` +
    (replayed === 0
      ? ""
      : ` (${replayed} of them replayed: their prediction is its measurement of the same configuration)`) +
    `, ${partly.length} partly (only the memory model's fit had their runs); ${unseen.length} unseen, ${score15}`
  );
}

/**
 * "1 of the 2 multi-node runs outside 5 points is flagged (see Flags): ...", or undefined when no such run is flagged:
 * a miss whose measurement a flag of that run questions (an outlier repeat, a busy machine, an unsteady run: the caller
 * passes those runs, whose flags speak of their latest attempt; an earlier attempt's own disturbance counts as its
 * flag) is not the model's error alone. The misses are those the summary counts: each run's first measurement.
 */
export function flaggedMisses(score: PredictionScore, flaggedRunIds: ReadonlySet<string>): string | undefined {
  const misses = score.scored.filter(
    (row) => row.counted && row.errorPoints !== null && row.nodes > 1 && Math.abs(row.errorPoints) > 5,
  );
  const flagged = misses.filter((row) => (row.latest ? flaggedRunIds.has(row.runId) : row.disturbance !== null)).length;
  if (flagged === 0) return undefined;
  const which =
    misses.length === 1
      ? "the one multi-node run outside 5 points is"
      : `${flagged} of the ${misses.length} multi-node runs outside 5 points ${flagged === 1 ? "is" : "are"}`;
  return `${which} flagged (see Flags): the measurement, not only the model, may be off there`;
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/**
 * `predictions.json` in a results folder (`ringlab.predictions/v2`): what `ringlab plan`'s model predicted for every
 * training run, saved by the campaign before its first run, so that the report can score the prediction against
 * the measurement. Written once: a resumed campaign keeps the predictions made before anything ran. The file says
 * what makes its claim checkable: when it was made, which runs were done by then (none: the campaign does not save
 * predictions once a run is done, see decidePredictions), and every calibration input's folder, runs and content
 * hash, with whether the calibration came from this campaign's own folder (in-sample), and for each prediction whether
 * the calibration had measured its configuration (`seen`: unseen, partly seen, seen). v1 files, which said none of
 * it, are read as such; v2 files before `seen` decided in-sample by fingerprint alone. Pure.
 */
import { z } from "zod";

export const PREDICTIONS_SCHEMA = "ringlab.predictions/v2";
/** Written before ringlab recorded what the predictions had seen: read, never written. */
export const PREDICTIONS_SCHEMA_V1 = "ringlab.predictions/v1";

const predictionSchema = z
  .looseObject({
    runId: z.string(),
    stepSeconds: z.number(),
    /** Over every worker, in `unit` (files before language models: `imagesPerSecond`, images). */
    throughput: z.number().optional(),
    imagesPerSecond: z.number().optional(),
    unit: z.enum(["images", "tokens"]).optional(),
    scalingEfficiency: z.looseObject({ value: z.number(), low: z.number(), high: z.number() }),
    overlapShare: z.number().optional(),
    noOverlapEfficiency: z.number().optional(),
    fullOverlapEfficiency: z.number(),
    sources: z.looseObject({ compute: z.string(), link: z.string(), overlap: z.string().optional() }),
    memory: z.looseObject({ rankBytes: z.number(), nodeBytes: z.number(), source: z.string() }).optional(),
    cpuCheckGflops: z.number().optional(),
    seen: z
      .looseObject({
        kind: z.enum(["unseen", "partly", "seen"]),
        measuredIn: z.array(z.string()),
        replayed: z.boolean(),
      })
      .optional(),
  })
  .refine((prediction) => prediction.throughput !== undefined || prediction.imagesPerSecond !== undefined, {
    error: "a prediction holds its throughput",
  })
  .transform(({ imagesPerSecond, throughput, unit, ...rest }) => ({
    ...rest,
    throughput: (throughput ?? imagesPerSecond)!,
    unit: unit ?? ("images" as const),
  }));

/** The kinds of a calibration's entries (src/predict/calibration.ts). */
export const CALIBRATION_INPUT_KINDS = ["compute", "split-step", "link", "overlap", "memory"] as const;

const v1Fields = {
  /** The calibration the predictions came from (a file or a results folder). */
  calibration: z.string(),
  madeAt: z.string(),
  predictions: z.array(predictionSchema),
  /**
   * Runs the calibration could not predict, and what it lacked; a run's memory peak where the memory model could
   * predict it all the same (a peak needs no probe of the link).
   */
  missing: z.array(
    z.looseObject({
      runId: z.string(),
      missing: z.string(),
      memory: z.looseObject({ rankBytes: z.number(), nodeBytes: z.number(), source: z.string() }).optional(),
    }),
  ),
};

const calibrationInputSchema = z.looseObject({
  kind: z.enum(CALIBRATION_INPUT_KINDS).optional(),
  entry: z.string(),
  source: z.string(),
  resultsDir: z.string().nullable(),
  folder: z.string().nullable(),
  runIds: z.array(z.string()).nullable(),
  fingerprints: z.array(z.string()).nullable(),
  configurations: z.array(z.string()).nullable().optional(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

const predictionsFileSchema = z.looseObject({
  schema: z.literal(PREDICTIONS_SCHEMA),
  ...v1Fields,
  runsDoneBefore: z.array(z.string()),
  calibrationInputs: z.array(calibrationInputSchema),
  sample: z.discriminatedUnion("kind", [
    z.looseObject({ kind: z.literal("out-of-sample") }),
    z.looseObject({ kind: z.literal("in-sample"), reasons: z.array(z.string()).min(1) }),
  ]),
});

const v1FileSchema = z.looseObject({ schema: z.literal(PREDICTIONS_SCHEMA_V1), ...v1Fields });

export interface SavedPrediction {
  readonly runId: string;
  readonly stepSeconds: number;
  /** Over every worker, in `unit`. */
  readonly throughput: number;
  readonly unit: "images" | "tokens";
  /**
   * With the calibration's overlap share φ (none in files written before ringlab fitted it), with its 95 % interval.
   */
  readonly scalingEfficiency: { readonly value: number; readonly low: number; readonly high: number };
  /** Absent in files written before ringlab fitted the overlap, whose prediction was the no-overlap one. */
  readonly overlapShare?: number;
  readonly noOverlapEfficiency?: number;
  readonly fullOverlapEfficiency: number;
  readonly sources: { readonly compute: string; readonly link: string; readonly overlap?: string };
  /**
   * The memory model's peak before the run (predict/memory.ts): the largest rank's over its baseline, and one node's
   * (launcher and processes); absent in files written before ringlab saved it (the report recomputed it).
   */
  readonly memory?: { readonly rankBytes: number; readonly nodeBytes: number; readonly source: string };
  /**
   * The CPU check of the calibration runs that measured its compute (predict.ts RunPrediction); absent in files before
   * ringlab saved it.
   */
  readonly cpuCheckGflops?: number;
  /** Whether the calibration had measured this run's configuration (decidePredictions); absent in files before. */
  readonly seen?: ConfigurationSeen;
}

/**
 * Whether a calibration had measured a predicted run's configuration (./configuration.ts configurationKey), and where:
 * - seen: an input the predicted step rests on was measured on it (a single-node run's compute, an unshaped split step,
 *   an overlap share fitted on its runs); replayed where that input is its own step (the compute or split step): the
 *   prediction gives back the calibration's measurement of the same configuration;
 * - partly: only an input beside the step was (the memory model's fit): the step is out of sample, its memory is not;
 * - unseen: no calibration run had its configuration.
 */
export interface ConfigurationSeen {
  readonly kind: "unseen" | "partly" | "seen";
  /** The calibration entries whose runs had its configuration (CalibrationInput.entry). */
  readonly measuredIn: readonly string[];
  readonly replayed: boolean;
}

/**
 * One entry of the calibration the predictions came from: where it was measured, from which runs, and its content's
 * hash.
 */
export interface CalibrationInput {
  /** Which part of the calibration it is; absent in files before ringlab recorded it (read from `entry`'s words). */
  readonly kind?: (typeof CALIBRATION_INPUT_KINDS)[number];
  /** "compute tiny batch 8 fp32 at 0.5 cores", "link 1gbit, 2 nodes × 1, ring", "overlap 2 nodes × 1, ring". */
  readonly entry: string;
  /** "measured in results/local-seed on 2026-11-25". */
  readonly source: string;
  /** The results folder as the calibration names it; null for an input no folder measured. */
  readonly resultsDir: string | null;
  /** Its absolute path, which a campaign compares with its own results folder. */
  readonly folder: string | null;
  /** The runs it was made from; null in calibrations made before ringlab recorded them. */
  readonly runIds: readonly string[] | null;
  /** Those runs' fingerprints (campaign/plan.ts: what a run measures, whatever its name); null as runIds. */
  readonly fingerprints: readonly string[] | null;
  /**
   * Those runs' configuration keys (./configuration.ts configurationKey); null or absent in calibrations and files made
   * before ringlab recorded them, where the fingerprints decide what was seen.
   */
  readonly configurations?: readonly string[] | null;
  /**
   * SHA-256 of the entry's canonical JSON (keys sorted): the numbers the predictions used, checkable against the
   * calibration file.
   */
  readonly sha256: string;
}

/** Whether the calibration held runs of the campaign it predicted: then the score is no test of the model. */
export type PredictionSample =
  | { readonly kind: "out-of-sample" }
  | { readonly kind: "in-sample"; readonly reasons: readonly string[] };

export interface PredictionsFile {
  readonly schema: typeof PREDICTIONS_SCHEMA;
  readonly calibration: string;
  readonly madeAt: string;
  /**
   * The campaign's runs with a measurement in the results folder when the predictions were made: none, or the file is
   * not written.
   */
  readonly runsDoneBefore: readonly string[];
  readonly calibrationInputs: readonly CalibrationInput[];
  readonly sample: PredictionSample;
  readonly predictions: readonly SavedPrediction[];
  readonly missing: readonly UnpredictedRun[];
}

/** A run whose step the calibration could not predict: what it lacked, and its memory peak where that was predicted. */
export interface UnpredictedRun {
  readonly runId: string;
  readonly missing: string;
  readonly memory?: SavedPrediction["memory"];
}

/** A v1 file: made when predictions.json was absent, whatever had run, and without the calibration's inputs. */
export interface PredictionsFileV1 {
  readonly schema: typeof PREDICTIONS_SCHEMA_V1;
  readonly calibration: string;
  readonly madeAt: string;
  readonly predictions: readonly SavedPrediction[];
  readonly missing: readonly { readonly runId: string; readonly missing: string }[];
}

export type AnyPredictionsFile = PredictionsFile | PredictionsFileV1;

/** A predictions file read back (this version or v1), or why it is not one. */
export function parsePredictions(json: unknown): { file: AnyPredictionsFile } | { problem: string } {
  const v1 = (json as { schema?: unknown } | null)?.schema === PREDICTIONS_SCHEMA_V1;
  const parsed = (v1 ? v1FileSchema : predictionsFileSchema).safeParse(json);
  if (parsed.success) return { file: parsed.data as AnyPredictionsFile };
  const issue = parsed.error.issues[0]!;
  return {
    problem: `not a ${v1 ? PREDICTIONS_SCHEMA_V1 : PREDICTIONS_SCHEMA} file at ${issue.path.join(".") || "(top)"}: ${issue.message}`,
  };
}

/** What decidePredictions needs of a planned run. */
export interface RunToPredict {
  readonly id: string;
  readonly fingerprint: string;
  /** ./configuration.ts configurationKey of the run on the campaign's testbed. */
  readonly configuration: string;
}

/** What decidePredictions needs of a record in the campaign's results folder (every attempt). */
export interface RecordedRun {
  readonly runId: string;
  readonly status: string;
}

export interface PredictionsQuestion {
  /** Every run of the campaign. */
  readonly planned: readonly RunToPredict[];
  /** Every record in the campaign's results folder, all attempts. */
  readonly recorded: readonly RecordedRun[];
  /** The campaign's results folder, absolute. */
  readonly resultsFolder: string;
  /** The calibration's inputs (none when only published figures and the catalogue predict). */
  readonly calibrationInputs: readonly CalibrationInput[];
}

export type PredictionsDecision =
  /**
   * Nothing of the campaign measured yet: saved, in-sample where the calibration came from this campaign's folder, and
   * each run's configuration seen or not by the calibration.
   */
  | {
      readonly save: true;
      readonly sample: PredictionSample;
      readonly seen: ReadonlyMap<string, ConfigurationSeen>;
    }
  /** Runs of the campaign measured already: predictions made now would not come before them. */
  | { readonly save: false; readonly runsDone: readonly string[] };

/**
 * Whether a campaign may save its predictions, and what they are. Not once any of its runs has a measurement in the
 * results folder: the predictions would not be made before the run. In-sample where an input of the calibration was
 * measured in this results folder. Each run's configuration is seen, partly seen or unseen (ConfigurationSeen) by the
 * calibration's runs' configuration keys: a calibration that timed the same configuration for fewer iterations has
 * seen it. An input of a calibration made before ringlab recorded the keys matches by fingerprint, which also changes
 * with the iteration counts: it can only say too little was seen.
 */
export function decidePredictions(question: PredictionsQuestion): PredictionsDecision {
  const planned = new Set(question.planned.map((run) => run.id));
  const runsDone = [
    ...new Set(
      question.recorded
        .filter((record) => record.status === "ok" && planned.has(record.runId))
        .map((record) => record.runId),
    ),
  ].sort();
  if (runsDone.length > 0) return { save: false, runsDone };
  const fromHere = question.calibrationInputs.filter((input) => input.folder === question.resultsFolder);
  const sample: PredictionSample =
    fromHere.length === 0
      ? { kind: "out-of-sample" }
      : {
          kind: "in-sample",
          reasons: [
            `${fromHere.length} of its ${question.calibrationInputs.length} inputs came from this campaign's results folder ${question.resultsFolder} (${fromHere.map((input) => input.entry).join("; ")})`,
          ],
        };
  const seen = new Map(
    question.planned.map((run) => [run.id, configurationSeen(run, question.calibrationInputs)] as const),
  );
  return { save: true, sample, seen };
}

/** Which of the calibration's inputs measured the run's configuration, and what that makes of its prediction. */
export function configurationSeen(run: RunToPredict, inputs: readonly CalibrationInput[]): ConfigurationSeen {
  const measuring = inputs.filter((input) =>
    input.configurations !== undefined && input.configurations !== null
      ? input.configurations.includes(run.configuration)
      : (input.fingerprints ?? []).includes(run.fingerprint),
  );
  const kinds = new Set(measuring.map(inputKind));
  const replayed = kinds.has("compute") || kinds.has("split-step");
  const kind = replayed || kinds.has("overlap") ? "seen" : measuring.length > 0 ? "partly" : "unseen";
  return { kind, measuredIn: measuring.map((input) => input.entry), replayed };
}

/** An input's kind, from its own field or, in files before it, from its entry's first words. */
function inputKind(input: CalibrationInput): CalibrationInput["kind"] {
  return input.kind ?? CALIBRATION_INPUT_KINDS.find((kind) => input.entry.startsWith(kind.replace("-", " ")));
}

/** "57 unseen, 0 partly seen, 96 seen": the predictions by whether the calibration had measured their configuration. */
export interface SeenCounts {
  readonly unseen: number;
  readonly partly: number;
  readonly seen: number;
  /** Of the seen: their step the calibration's own measurement of the configuration. */
  readonly replayed: number;
}

export function countSeen(seen: readonly ConfigurationSeen[]): SeenCounts {
  return {
    unseen: seen.filter((entry) => entry.kind === "unseen").length,
    partly: seen.filter((entry) => entry.kind === "partly").length,
    seen: seen.filter((entry) => entry.kind === "seen").length,
    replayed: seen.filter((entry) => entry.kind === "seen" && entry.replayed).length,
  };
}

/**
 * "the calibration has seen 96 of these 153 training runs' configurations, 0 partly (13 of them replayed: the
 * calibration's own measurement); 57 unseen": what plan and campaign print before the first run.
 */
export function seenSentence(counts: SeenCounts): string {
  const total = counts.unseen + counts.partly + counts.seen;
  return (
    `the calibration has seen ${counts.seen} of these ${total} training runs' configurations, ${counts.partly} partly` +
    (counts.replayed === 0
      ? ""
      : ` (${counts.replayed} of them replayed: the prediction is the calibration's own measurement of it)`) +
    `; ${counts.unseen} unseen, the ones whose score tests the model`
  );
}

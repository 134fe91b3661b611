/**
 * `predictions.json` in a results folder (`ringlab.predictions/v1`): what `ringlab plan`'s model predicted for every
 * training run, saved by the campaign before its first run, so that the report can score the prediction against
 * the measurement. Written once: a resumed campaign keeps the predictions made before anything ran. Pure.
 */
import { z } from "zod";

export const PREDICTIONS_SCHEMA = "ringlab.predictions/v1";

const predictionSchema = z.looseObject({
  runId: z.string(),
  stepSeconds: z.number(),
  imagesPerSecond: z.number(),
  scalingEfficiency: z.looseObject({ value: z.number(), low: z.number(), high: z.number() }),
  overlapShare: z.number().optional(),
  noOverlapEfficiency: z.number().optional(),
  fullOverlapEfficiency: z.number(),
  sources: z.looseObject({ compute: z.string(), link: z.string(), overlap: z.string().optional() }),
});

const predictionsFileSchema = z.looseObject({
  schema: z.literal(PREDICTIONS_SCHEMA),
  /** The calibration the predictions came from (a file or a results folder). */
  calibration: z.string(),
  madeAt: z.string(),
  predictions: z.array(predictionSchema),
  /** Runs the calibration could not predict, and what it lacked. */
  missing: z.array(z.looseObject({ runId: z.string(), missing: z.string() })),
});

export interface SavedPrediction {
  readonly runId: string;
  readonly stepSeconds: number;
  readonly imagesPerSecond: number;
  /** With the calibration's overlap share φ (none in files written before ringlab fitted it), with its 95 % interval. */
  readonly scalingEfficiency: { readonly value: number; readonly low: number; readonly high: number };
  /** Absent in files written before ringlab fitted the overlap, whose prediction was the no-overlap one. */
  readonly overlapShare?: number;
  readonly noOverlapEfficiency?: number;
  readonly fullOverlapEfficiency: number;
  readonly sources: { readonly compute: string; readonly link: string; readonly overlap?: string };
}

export interface PredictionsFile {
  readonly schema: typeof PREDICTIONS_SCHEMA;
  readonly calibration: string;
  readonly madeAt: string;
  readonly predictions: readonly SavedPrediction[];
  readonly missing: readonly { readonly runId: string; readonly missing: string }[];
}

/** A predictions file read back, or why it is not one. */
export function parsePredictions(json: unknown): { file: PredictionsFile } | { problem: string } {
  const parsed = predictionsFileSchema.safeParse(json);
  if (parsed.success) return { file: parsed.data as PredictionsFile };
  const issue = parsed.error.issues[0]!;
  return { problem: `not a ${PREDICTIONS_SCHEMA} file at ${issue.path.join(".") || "(top)"}: ${issue.message}` };
}

/**
 * The worker's JSON result (docker/worker/result.schema.json), as far as ringlab reads it. Unknown fields are
 * kept: the record stores the whole result, the report reads these.
 */
import { z } from "zod";

/**
 * A throughput over the timed iterations of one run. `ci95` is a spread, not a confidence interval: 1.96 ×
 * the (population) standard deviation of the per-iteration throughput (Horovod's synthetic benchmark prints the same),
 * which says how steady the run was. The name is the file format's (ringlab.result/v1) and stays; the report's
 * confidence intervals come from repeats (analysis/data.ts).
 */
const meanWithSpread = z.object({ mean: z.number(), ci95: z.number() });

/** What a training run's throughput counts: images (the CNNs), or tokens (the language models). */
export const THROUGHPUT_UNITS = ["images", "tokens"] as const;
export type ThroughputUnit = (typeof THROUGHPUT_UNITS)[number];

/**
 * One collective of a layout's step (the worker's parallel/*.py traffic()): the bytes of all its calls, how many calls,
 * over which mesh dimension.
 */
const collectiveSchema = z.looseObject({
  op: z.enum(["all_reduce", "all_gather", "reduce_scatter", "send"]),
  bytes: z.number(),
  calls: z.number(),
  group: z.string(),
  /** send: the pipeline's stage boundaries (each carries `count` sends of `bytes`). */
  boundaries: z.number().optional(),
});

/**
 * Peak memory of every rank (the worker's memory.py): on a GPU the caching allocator's peak allocated and reserved
 * bytes, on a CPU the process's peak resident set; each over the baseline taken before the model was built.
 */
const memorySchema = z.looseObject({
  method: z.enum(["cuda-allocator", "resident-set"]),
  peakSince: z.enum(["model", "process"]),
  perRank: z.array(
    z.looseObject({ peakBytes: z.number(), baselineBytes: z.number(), peakReservedBytes: z.number().optional() }),
  ),
});

export const trainMetricsSchema = z
  .looseObject({
    /** Absent in records before language models: images. */
    unit: z.enum(THROUGHPUT_UNITS).optional(),
    imagesPerSecondPerWorker: meanWithSpread.optional(),
    imagesPerSecondTotal: meanWithSpread.optional(),
    tokensPerSecondPerWorker: meanWithSpread.optional(),
    tokensPerSecondTotal: meanWithSpread.optional(),
    stepSeconds: z.array(z.number()),
    parameterCount: z.number(),
    gradientBytes: z.number(),
    /**
     * Bytes one rank sends into the ring per step by its reduction (absent in older records: the gradient, halved by
     * fp16).
     */
    wireBytesPerStep: z.number().optional(),
    /** Largest difference of a parameter from rank 0's at the end (absent in older records). */
    replicaDivergence: z.number().optional(),
    /** reduction local-sgd: at each averaging, the largest difference of a parameter from the average (over ranks). */
    averagingDrift: z.array(z.number()).optional(),
    /**
     * reduction async-parameter-server: the staleness of every update the server applied (updates since the gradient's
     * parameters).
     */
    staleness: z
      .object({
        bound: z.number(),
        updates: z.number(),
        max: z.number(),
        mean: z.number(),
        histogram: z.record(z.string(), z.number()),
      })
      .optional(),
    finalLoss: z.number(),
    /** Real data (train --data): where the batches came from and, per timed step, the wait for its batch. */
    data: z.looseObject({ kind: z.string() }).optional(),
    dataWaitSeconds: z.array(z.number()).optional(),
    /** Time to train (train --epochs): each epoch's wall time and held-out accuracy, restarts and what they cost. */
    timeToTrainSeconds: z.number().optional(),
    targetAccuracy: z.number().nullable().optional(),
    reachedTargetAtEpoch: z.number().nullable().optional(),
    epochs: z.array(z.looseObject({ epoch: z.number(), seconds: z.number(), heldOutAccuracy: z.number() })).optional(),
    restarts: z.number().optional(),
    stepsRedone: z.number().optional(),
    secondsLost: z.number().optional(),
    /** Elastic runs (train --min-nodes): the nodes the run started with; world.nodes is what it ended with. */
    nodesAtStart: z.number().optional(),
    /**
     * How the model was laid out (absent in older records: ddp): the parallelism, its degrees and its collectives per
     * step.
     */
    layout: z
      .looseObject({
        parallelism: z.string(),
        dims: z.record(z.string(), z.number()),
        traffic: z.array(collectiveSchema),
      })
      .optional(),
    memory: memorySchema.optional(),
    /** Every step's loss, warm-up included (absent in older records). */
    losses: z.array(z.number().nullable()).optional(),
  })
  .refine((metrics) => throughputFields(metrics.unit ?? "images").every((field) => metrics[field] !== undefined), {
    error:
      "a train result holds its unit's throughput: imagesPerSecondTotal and imagesPerSecondPerWorker, or tokensPerSecondTotal and tokensPerSecondPerWorker with unit tokens",
  });

function throughputFields(unit: ThroughputUnit) {
  return unit === "tokens"
    ? (["tokensPerSecondTotal", "tokensPerSecondPerWorker"] as const)
    : (["imagesPerSecondTotal", "imagesPerSecondPerWorker"] as const);
}

type MeanWithSpread = z.output<typeof meanWithSpread>;

/** A training run's throughput in its unit (images/s, or tokens/s): over all workers, and per worker. */
export function throughputOf(metrics: TrainResult["metrics"]): {
  readonly unit: ThroughputUnit;
  readonly total: MeanWithSpread;
  readonly perWorker: MeanWithSpread;
} {
  const unit = metrics.unit ?? "images";
  const [total, perWorker] = throughputFields(unit);
  return { unit, total: metrics[total]!, perWorker: metrics[perWorker]! };
}

/** How a unit reads after a number: "img/s", "tok/s". */
export function rateUnit(unit: ThroughputUnit): string {
  return unit === "tokens" ? "tok/s" : "img/s";
}

export const allReduceRowSchema = z.looseObject({
  sizeBytes: z.number(),
  count: z.number(),
  dtype: z.string(),
  redop: z.string(),
  timeSeconds: z.number(),
  algbwGbps: z.number(),
  busbwGbps: z.number(),
  wrong: z.number(),
  /** CPU time of one rank's process per all-reduce (mean over ranks); absent in older results. */
  cpuSeconds: z.number().optional(),
});

const common = {
  schema: z.literal("ringlab.result/v1"),
  runId: z.string().nullable(),
  knobs: z.record(z.string(), z.unknown()),
  world: z.looseObject({
    size: z.number(),
    nodes: z.number(),
    procsPerNode: z.number(),
    backend: z.string(),
    engine: z.string(),
    hostnames: z.array(z.string()),
  }),
  provenance: z.looseObject({
    torch: z.string(),
    device: z.string(),
    deviceModel: z.string(),
    /** When the worker command started, before importing torch and the rendezvous (absent in older results). */
    launchedAt: z.string().optional(),
    /** The process's malloc: the CPU image preloads tcmalloc since 2026-11-28 (absent before: glibc's). */
    allocator: z.string().optional(),
    startedAt: z.string(),
    endedAt: z.string(),
  }),
  /**
   * The CPU check: every rank's GFLOP/s at a fixed compute micro-benchmark just before the job (absent in older
   * results; `calibration` in those before 2026-12-06, read as this): per second of CPU time on CPU nodes (clock
   * "cpu": free of the quota's periods), of wall time on GPUs.
   */
  cpuCheck: z
    .looseObject({ seconds: z.number(), clock: z.enum(["cpu", "wall"]).optional(), computeGflops: z.array(z.number()) })
    .optional(),
};

/** A result as written before the CPU check had its own name: its `calibration` read as `cpuCheck`. */
function withOldNamesRead(json: unknown): unknown {
  if (typeof json !== "object" || json === null || !("calibration" in json)) return json;
  const { calibration, ...rest } = json as Record<string, unknown>;
  return "cpuCheck" in rest ? rest : { ...rest, cpuCheck: calibration };
}

const currentResultSchema = z.discriminatedUnion("job", [
  z.looseObject({ ...common, job: z.literal("train"), metrics: trainMetricsSchema }),
  z.looseObject({
    ...common,
    job: z.literal("allreduce"),
    metrics: z.looseObject({
      rows: z.array(allReduceRowSchema),
      peakBusbwGbps: z.number(),
      referenceGbps: z.number().optional(),
    }),
  }),
]);

export const workerResultSchema = z.preprocess(withOldNamesRead, currentResultSchema);

export type WorkerResult = z.output<typeof currentResultSchema>;
export type TrainResult = Extract<WorkerResult, { job: "train" }>;
export type AllReduceResult = Extract<WorkerResult, { job: "allreduce" }>;

/** Parses a result; throws naming the first field that does not fit. */
export function parseWorkerResult(json: unknown): WorkerResult {
  const parsed = workerResultSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new Error(
    `worker result does not match ringlab.result/v1 at ${issue.path.join(".") || "(top)"}: ${issue.message}`,
  );
}

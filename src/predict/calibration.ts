/**
 * A calibration: what a prediction needs and where each number came from (issue #35). Built from a campaign's
 * results with the numbers the report shows (src/analysis/data.ts): each single-node baseline gives one step's compute,
 * each probe's alpha-beta fit gives a link, and each shaped multi-node training point how much of its all-reduce
 * DDP hid behind backward (the overlap share φ, per node count). Merged calibrations keep the newest entry of each
 * key. Pure: records and plain data in, plain data out; src/cli/commands/calibrate.ts reads and writes the file.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { configurationKey } from "../results/configuration.ts";
import { reportData } from "../analysis/data.ts";
import { splitLabel as layoutSplitLabel, sumsWithReduction } from "../layouts/index.ts";
import { overlapShare } from "../results/comm-model.ts";
import { meanWithInterval } from "../results/statistics.ts";
import type { CalibrationInput } from "../results/predictions.ts";
import { latestAttempts, type RunRecord } from "../results/record.ts";
import { disturbance } from "../results/steadiness.ts";
import { inCurrentCpuPeriod } from "../testbed/cpu-quota.ts";
import { computeWorkload, currentWorkload, unitsPerSample } from "../workload/transformer.ts";
import { memoryEntriesFromRecords, type MemoryEntry } from "./memory.ts";

/**
 * v3: entries come only from workers on torch 2.10 or newer (v2's may be Debian's 1.13, whose CPU steps took 5.3x as
 * long: test/bench/README.md); v2: local entries come only from runs in 10 ms CPU periods
 * (src/rules/cpu-quota-limits.ts CPU_PERIOD_MS); v1's may be Docker's 100 ms.
 */
export const CALIBRATION_SCHEMA = "ringlab.calibration/v3";

/** The oldest torch whose runs calibrate: the worker's floor (docker/worker/ringlab_worker/compat.py MINIMUM). */
export const OLDEST_CALIBRATING_TORCH: readonly [number, number] = [2, 10];

/** Whether a run's worker ran a torch that calibrates (a run without a result has nothing to calibrate from either). */
export function onSupportedTorch(record: RunRecord): boolean {
  const match = /^(\d+)\.(\d+)/.exec(record.result?.provenance.torch ?? "");
  if (match === null) return record.result === undefined;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  const [floorMajor, floorMinor] = OLDEST_CALIBRATING_TORCH;
  return major > floorMajor || (major === floorMajor && minor >= floorMinor);
}

/**
 * Where a number came from, in order of trust: measured by the user, published (with its citation), or derived. A
 * measurement names its runs (their ids and fingerprints) and its folder's absolute path, so that a campaign can tell
 * whether a calibration holds runs of its own (src/results/predictions.ts decidePredictions); calibrations made before
 * ringlab recorded them lack the three.
 */
export type Source =
  | {
      readonly kind: "measured";
      readonly resultsDir: string;
      readonly date: string;
      readonly folder?: string;
      readonly runIds?: readonly string[];
      readonly fingerprints?: readonly string[];
      /**
       * The runs' configuration keys (results/configuration.ts configurationKey: what a run measures, however long it
       * times it); absent in calibrations made before ringlab recorded them, for which the fingerprints decide.
       */
      readonly configurations?: readonly string[];
    }
  | { readonly kind: "derived"; readonly how: string };

/** One step's compute on one worker: what the training configuration's single-node runs measured. */
export interface ComputeEntry {
  readonly model: string;
  readonly batchSize: number;
  /** fp32 or amp (the precision knob; fp32 when the campaign did not set it). */
  readonly precision: string;
  /**
   * Present (true) when the runs used channelsLast: NHWC trains twice as fast under AMP on a GPU
   * (test/bench/README.md).
   */
  readonly channelsLast?: true;
  /**
   * Language models: the shape and knobs that set one worker's compute (src/workload/transformer.ts computeWorkload).
   */
  readonly workload?: Readonly<Record<string, string | number | boolean>>;
  readonly device: string;
  /** CPU model or GPU name, as the worker's provenance gives it. */
  readonly deviceModel: string;
  /** The local testbed's CPU quota per worker process; null on machines of their own (AWS). */
  readonly cpusPerNode: number | null;
  /** Batch size / one worker's images per second, over the baseline's repeats. */
  readonly computeSeconds: { readonly mean: number; readonly halfWidth95: number; readonly repeats: number };
  /** Bytes of the model's gradient (fp32). */
  readonly gradientBytes: number;
  /**
   * The worker's CPU check over the baseline's runs: GFLOP/s at its fixed fp32 matrix products, timed just before each
   * run (result.cpuCheck). A run whose own check reads far from it ran on another machine than the one calibrated
   * (src/report/predictions.ts machineCaveat). Absent in calibrations made before ringlab kept it, and on GPUs' runs
   * without one.
   */
  readonly cpuCheckGflops?: number;
  readonly source: Source;
}

/** A link as the probe measured it: the ring model's α and β at one rate, node count, placement and reduction. */
export interface LinkEntry {
  /** The tc rate ("1gbit"), "unlimited", or "in one node". */
  readonly bandwidth: string;
  readonly nodes: number;
  readonly processesPerNode: number;
  readonly reduction: string;
  /** The collective the probe timed (probe.collective), absent for the all-reduce; α and β are that collective's. */
  readonly collective?: string;
  readonly cpusPerNode: number | null;
  /** The AWS instance type the probe ran on (an unshaped link is the instance's); absent on the local testbed. */
  readonly instanceType?: string;
  readonly alphaSeconds: number;
  readonly betaSecondsPerByte: number;
  readonly rSquared: number;
  readonly source: Source;
}

/**
 * How much of the all-reduce DDP hid behind backward at one node count, placement and reduction: the share φ of
 * min(t_c, Σ t_ar) that the measured steps saved against the no-overlap model (results/comm-model.ts overlapShare),
 * over the shaped-link training points of that placement. A prediction's step is t_c + Σ t_ar − φ·min(t_c, Σ t_ar).
 * Another layout's φ (`parallelism`) is the same share of its compute and collectives as predict.ts has them
 * (src/predict/layout-overlap.ts).
 */
export interface OverlapEntry {
  /** The layout whose runs measured it; absent: DDP's (every file before layouts had their own). */
  readonly parallelism?: string;
  readonly nodes: number;
  readonly processesPerNode: number;
  readonly reduction: string;
  readonly cpusPerNode: number | null;
  readonly instanceType?: string;
  /** φ over the points (each point the mean of its repeats), with the half-width of its 95 % interval. */
  readonly share: { readonly mean: number; readonly halfWidth95: number; readonly points: number };
  readonly source: Source;
}

/**
 * A tensor-parallel or pipeline step measured on several workers over an unshaped link: what splitting each block's
 * matrices over `tensorDegree` workers gave on this machine, where the model's share of the split compute (1/tp of it)
 * promises more (test/bench/README.md, "Layouts, predicted before the run"); or what cutting the blocks into stages
 * gave, where the model gives GPipe and 1F1B the same bubble and GPipe with 6 micro-batches measured 11-16 % slower
 * ("Layouts on a newer CPU"). A prediction of the same workload on as many workers takes this step's collectives at the
 * unshaped link out (src/predict/predict.ts) and keeps the rest as the split compute.
 */
export interface SplitStepEntry {
  readonly model: string;
  readonly batchSize: number;
  readonly precision: string;
  readonly workload: Readonly<Record<string, string | number | boolean>>;
  readonly nodes: number;
  readonly processesPerNode: number;
  readonly tensorDegree: number;
  readonly device: string;
  readonly deviceModel: string;
  readonly cpusPerNode: number | null;
  /** The batch's step on the group (batch × data-parallel degree over the measured throughput), over the repeats. */
  readonly stepSeconds: { readonly mean: number; readonly halfWidth95: number; readonly repeats: number };
  readonly source: Source;
}

export interface Calibration {
  readonly schema: typeof CALIBRATION_SCHEMA;
  readonly compute: readonly ComputeEntry[];
  /** Absent from files written before ringlab measured it: read as none. */
  readonly splitSteps: readonly SplitStepEntry[];
  readonly links: readonly LinkEntry[];
  /** Absent from files written before ringlab fitted it: read as none. */
  readonly overlap: readonly OverlapEntry[];
  /**
   * What the process adds to the memory model's bytes, per device and CPU quota (src/predict/memory.ts); absent from
   * older files: none.
   */
  readonly memory: readonly MemoryEntry[];
}

const source = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("measured"),
    resultsDir: z.string(),
    date: z.string(),
    folder: z.string().optional(),
    runIds: z.array(z.string()).optional(),
    fingerprints: z.array(z.string()).optional(),
    configurations: z.array(z.string()).optional(),
  }),
  z.strictObject({ kind: z.literal("derived"), how: z.string() }),
]);

/** A compute entry's workload, read as computeWorkload writes it today (older files' knob values updated). */
const savedWorkload = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).transform(currentWorkload);

const calibrationSchema = z.strictObject({
  schema: z.literal(CALIBRATION_SCHEMA),
  compute: z.array(
    z.strictObject({
      model: z.string(),
      batchSize: z.number().int().positive(),
      precision: z.string(),
      channelsLast: z.literal(true).optional(),
      workload: savedWorkload.optional(),
      device: z.string(),
      deviceModel: z.string(),
      cpusPerNode: z.number().positive().nullable(),
      computeSeconds: z.strictObject({
        mean: z.number().positive(),
        halfWidth95: z.number().nonnegative(),
        repeats: z.number().int().positive(),
      }),
      gradientBytes: z.number().positive(),
      cpuCheckGflops: z.number().positive().optional(),
      source,
    }),
  ),
  links: z.array(
    z.strictObject({
      bandwidth: z.string(),
      nodes: z.number().int().min(1),
      processesPerNode: z.number().int().positive(),
      reduction: z.string(),
      collective: z.string().optional(),
      cpusPerNode: z.number().positive().nullable(),
      instanceType: z.string().optional(),
      alphaSeconds: z.number().nonnegative(),
      betaSecondsPerByte: z.number().positive(),
      rSquared: z.number(),
      source,
    }),
  ),
  overlap: z
    .array(
      z.strictObject({
        parallelism: z.string().optional(),
        nodes: z.number().int().min(2),
        processesPerNode: z.number().int().positive(),
        reduction: z.string(),
        cpusPerNode: z.number().positive().nullable(),
        instanceType: z.string().optional(),
        share: z.strictObject({
          mean: z.number(),
          halfWidth95: z.number().nonnegative(),
          points: z.number().int().positive(),
        }),
        source,
      }),
    )
    .default([]),
  splitSteps: z
    .array(
      z.strictObject({
        model: z.string(),
        batchSize: z.number().int().positive(),
        precision: z.string(),
        workload: savedWorkload,
        nodes: z.number().int().min(1),
        processesPerNode: z.number().int().positive(),
        tensorDegree: z.number().int().min(1),
        device: z.string(),
        deviceModel: z.string(),
        cpusPerNode: z.number().positive().nullable(),
        stepSeconds: z.strictObject({
          mean: z.number().positive(),
          halfWidth95: z.number().nonnegative(),
          repeats: z.number().int().positive(),
        }),
        source,
      }),
    )
    .default([]),
  memory: z
    .array(
      z.strictObject({
        device: z.string(),
        deviceModel: z.string(),
        cpusPerNode: z.number().positive().nullable(),
        parallelism: z.string().optional(),
        overheadBytes: z.number(),
        scale: z.number(),
        worstError: z.number().nonnegative(),
        runs: z.number().int().positive(),
        baselineBytes: z.number().nonnegative(),
        launcherBytes: z.number().nonnegative().nullable(),
        source,
      }),
    )
    .default([]),
});

/** The schema a calibration's JSON names, where it is another than the one this ringlab reads. */
export function otherCalibrationVersion(json: unknown): string | undefined {
  const version = (json as { schema?: unknown } | null)?.schema;
  return typeof version === "string" && version !== CALIBRATION_SCHEMA ? version : undefined;
}

/** A calibration read back from a file, or why it is not one (another version, a field that does not fit). */
export function parseCalibration(json: unknown): { calibration: Calibration } | { problem: string } {
  const version = otherCalibrationVersion(json);
  if (version !== undefined) {
    return {
      problem: `it is a ${version} file; this ringlab reads ${CALIBRATION_SCHEMA}: make it again with \`ringlab calibrate <results dir>...\``,
    };
  }
  const parsed = calibrationSchema.safeParse(json);
  if (parsed.success) return { calibration: parsed.data };
  const issue = parsed.error.issues[0]!;
  return { problem: `not a ${CALIBRATION_SCHEMA} file at ${issue.path.join(".") || "(top)"}: ${issue.message}` };
}

/**
 * The calibration of one campaign's results (`resultsDir` names them in every entry's source, `folder` is their
 * absolute path, and each entry lists the runs it came from). A probe whose sizes determine no link (fewer than two
 * sizes, or times that do not grow with the size: noise larger than the signal) gives no entry, and `warn` says which
 * and how to measure it.
 */
export function calibrationFromRecords(
  everyRecord: readonly RunRecord[],
  resultsDir: string,
  warn: (message: string) => void = () => {},
  folder?: string,
): Calibration {
  const { records, data, recordOf, measured } = calibratingRecords(everyRecord, resultsDir, warn, folder);
  const compute: ComputeEntry[] = data.training.flatMap((config) => {
    const baseline = config.baseline;
    const first = baseline === null ? undefined : recordOf.get(baseline.runIds[0]!);
    if (baseline === null || first?.result?.job !== "train") return [];
    const perWorker = baseline.throughput.mean / baseline.workers;
    // A step's samples (images, or sequences of tokens) over one worker's throughput in the same unit.
    const knobs = first.result.knobs;
    const computeSeconds = (config.batchSize * unitsPerSample(config.model, knobs)) / perWorker;
    const workload = computeWorkload(config.model, knobs);
    // The interval of the mean throughput carried to t_c = batch / throughput (first order).
    const halfWidth95 = computeSeconds * (baseline.throughput.halfWidth95 / baseline.throughput.mean);
    return [
      {
        model: config.model,
        batchSize: config.batchSize,
        precision: String(first.params.knobs["precision"] ?? "fp32"),
        ...(first.params.knobs["channelsLast"] === true ? { channelsLast: true as const } : {}),
        ...(workload === undefined ? {} : { workload }),
        device: first.result.provenance.device,
        deviceModel: first.result.provenance.deviceModel,
        cpusPerNode: first.params.cpusPerNode ?? null,
        computeSeconds: { mean: computeSeconds, halfWidth95, repeats: baseline.throughput.n },
        gradientBytes: first.result.metrics.gradientBytes,
        ...(baseline.cpuCheckGflops === null ? {} : { cpuCheckGflops: baseline.cpuCheckGflops.mean }),
        source: measured(baseline.runIds),
      },
    ];
  });
  // DDP sums through torch.distributed: a probe through Open MPI (probe.library mpi) is no link it predicts.
  const links: LinkEntry[] = data.probes
    .filter((probe) => probe.library === "torch")
    .flatMap((probe) => {
      if (probe.fit === null || !(probe.fit.betaSecondsPerByte > 0)) {
        const largest = probe.rows.at(-1)?.sizeBytes ?? 0;
        warn(
          `${resultsDir}: probe ${probe.bandwidth}, ${probe.nodes} nodes × ${probe.processesPerNode}, ${probe.reduction}${probe.collective === "all-reduce" ? "" : `, ${probe.collective}`} gives no link: ` +
            (probe.fit === null
              ? `${probe.rows.length} message size(s), a line needs two`
              : `its times do not grow with the message size up to ${largest} bytes (noise larger than the signal)`) +
            "; probe larger messages or more iterations (campaign.probe.maxBytes, campaign.probe.iters) and calibrate again",
        );
        return [];
      }
      const first = recordOf.get(probe.runIds[0]!);
      const instanceType = first?.testbed.instanceType;
      return [
        {
          bandwidth: probe.bandwidth,
          nodes: probe.nodes,
          processesPerNode: probe.processesPerNode,
          reduction: probe.reduction,
          ...(probe.collective === "all-reduce" ? {} : { collective: probe.collective }),
          cpusPerNode: first?.params.cpusPerNode ?? null,
          ...(instanceType === undefined ? {} : { instanceType }),
          alphaSeconds: probe.fit.alphaSeconds,
          betaSecondsPerByte: probe.fit.betaSecondsPerByte,
          rSquared: probe.fit.rSquared,
          source: measured(probe.runIds),
        },
      ];
    });
  return {
    schema: CALIBRATION_SCHEMA,
    compute,
    splitSteps: splitStepsFromReport(data, recordOf, measured),
    links,
    overlap: overlapFromReport(data, recordOf, measured),
    memory: memoryEntriesFromRecords(records, measured),
  };
}

/**
 * The records a calibration counts (in the current CPU period, on a supported torch, undisturbed), their report, and
 * each entry's source.
 */
export function calibratingRecords(
  everyRecord: readonly RunRecord[],
  resultsDir: string,
  warn: (message: string) => void = () => {},
  folder?: string,
) {
  const inPeriod = everyRecord.filter(inCurrentCpuPeriod);
  const older = everyRecord.length - inPeriod.length;
  if (older > 0) {
    warn(
      `${resultsDir}: ${older} of ${everyRecord.length} runs left out: they ran under Docker's 100 ms CPU period (ringlab before ` +
        `2026-11-26), in which a worker runs faster after every wait on the network than its quota allows; run that campaign again to calibrate from it`,
    );
  }
  const current = inPeriod.filter(onSupportedTorch);
  const oldTorch = inPeriod.length - current.length;
  if (oldTorch > 0) {
    warn(
      `${resultsDir}: ${oldTorch} of ${everyRecord.length} runs left out: their worker ran torch older than ${OLDEST_CALIBRATING_TORCH.join(".")} ` +
        `(ringlab before 2026-11-27 ran Debian's 1.13, whose CPU steps took 5.3x as long as 2.13's); run that campaign again to calibrate from it`,
    );
  }
  // A run whose latest attempt was disturbed (the machine busy, or its steps changed speed) measured the disturbance,
  // not the testbed: all its attempts stay out (an earlier attempt may have run with other parameters).
  const disturbed = new Map(
    latestAttempts(current).flatMap(({ record }) => {
      const why = disturbance(record);
      return why === undefined ? [] : [[record.runId, why] as const];
    }),
  );
  if (disturbed.size > 0) {
    const one = disturbed.size === 1;
    warn(
      `${resultsDir}: ${disturbed.size} disturbed run${one ? "" : "s"} left out (${[...disturbed].map(([runId, why]) => `${runId}: ${why}`).join(", ")}; ` +
        `the report's Flags say how): \`ringlab campaign --rerun-flagged\` runs ${one ? "it" : "them"} again, or, where most runs changed speed, ` +
        "raise numWarmupBatches",
    );
  }
  const records = current.filter((record) => !disturbed.has(record.runId));
  const data = reportData(records);
  const recordOf = new Map(records.map((record) => [record.runId, record]));
  const dateOf = (runIds: readonly string[]) =>
    runIds
      .map((id) => recordOf.get(id)?.endedAt ?? "")
      .sort()
      .at(-1)!
      .slice(0, 10);
  const measured = (runIds: readonly string[]): Source => ({
    kind: "measured",
    resultsDir,
    date: dateOf(runIds),
    ...(folder === undefined ? {} : { folder }),
    runIds: [...new Set(runIds)].sort(),
    fingerprints: [...new Set(runIds.flatMap((id) => recordOf.get(id)?.fingerprint ?? []))].sort(),
    configurations: [
      ...new Set(runIds.flatMap((id) => (recordOf.has(id) ? [configurationKey(recordOf.get(id)!.params)] : []))),
    ].sort(),
  });
  return { records, data, recordOf, measured };
}

/**
 * Every tensor-parallel and pipeline point over an unshaped link (the link there sets no pace the model describes; the
 * workers' CPU does): its step on the group, for a prediction to take its collectives out of.
 */
function splitStepsFromReport(
  data: ReturnType<typeof reportData>,
  recordOf: ReadonlyMap<string, RunRecord>,
  measured: (runIds: readonly string[]) => Source,
): SplitStepEntry[] {
  return data.training.flatMap((config) =>
    config.series
      .filter((series) => series.linkGbps === null && series.link === "unlimited")
      .flatMap((series) =>
        series.points.flatMap((point) => {
          const first = recordOf.get(point.runIds[0]!);
          if (first?.result?.job !== "train") return [];
          const dims = first.result.metrics.layout?.dims ?? {};
          const workload = computeWorkload(config.model, first.result.knobs);
          if (((dims["tp"] ?? 1) < 2 && (dims["pp"] ?? 1) < 2) || workload === undefined) return [];
          // A step computes the batch once per data-parallel replica: the group's samples over its throughput.
          const replicas = (dims["dp_replicate"] ?? 1) * (dims["dp_shard"] ?? 1);
          const stepSeconds =
            (replicas * config.batchSize * unitsPerSample(config.model, first.result.knobs)) / point.throughput.mean;
          return [
            {
              model: config.model,
              batchSize: config.batchSize,
              precision: String(first.params.knobs["precision"] ?? "fp32"),
              workload,
              nodes: point.nodes,
              processesPerNode: point.processesPerNode,
              tensorDegree: dims["tp"] ?? 1,
              device: first.result.provenance.device,
              deviceModel: first.result.provenance.deviceModel,
              cpusPerNode: first.params.cpusPerNode ?? null,
              stepSeconds: {
                mean: stepSeconds,
                halfWidth95: stepSeconds * (point.throughput.halfWidth95 / point.throughput.mean),
                repeats: point.throughput.n,
              },
              source: measured(point.runIds),
            },
          ];
        }),
      ),
  );
}

/**
 * φ per node count, placement, reduction, quota and instance type, from every multi-node training point whose link
 * was shaped and whose probe gave a fit: the points where the model's t_c and Σ t_ar are both known. An unshaped
 * link is left out: what sets its pace is the workers' CPU, not a link the model describes.
 */
function overlapFromReport(
  data: ReturnType<typeof reportData>,
  recordOf: ReadonlyMap<string, RunRecord>,
  measured: (runIds: readonly string[]) => Source,
): OverlapEntry[] {
  type Group = { key: Omit<OverlapEntry, "share" | "source">; shares: number[]; runIds: string[] };
  const groups = new Map<string, Group>();
  for (const config of data.training) {
    for (const series of config.series) {
      if (series.linkGbps === null) continue;
      for (const point of series.points) {
        if (
          point.nodes < 2 ||
          point.prediction === null ||
          point.computeSecondsPerStep === null ||
          point.scalingEfficiency === null
        )
          continue;
        const first = recordOf.get(point.runIds[0]!);
        // Another layout's φ is fitted against predict.ts's model of it (layout-overlap.ts), not the report's.
        if (!sumsWithReduction(first?.params.knobs ?? {})) continue;
        const instanceType = first?.testbed.instanceType;
        const key = {
          nodes: point.nodes,
          processesPerNode: point.processesPerNode,
          reduction: point.reduction,
          cpusPerNode: first?.params.cpusPerNode ?? null,
          ...(instanceType === undefined ? {} : { instanceType }),
        };
        const group: Group = groups.get(overlapKey(key)) ?? { key, shares: [], runIds: [] };
        const measuredStep = point.computeSecondsPerStep / point.scalingEfficiency;
        group.shares.push(overlapShare(point.computeSecondsPerStep, point.prediction.allReduceSeconds, measuredStep));
        group.runIds.push(...point.runIds);
        groups.set(overlapKey(key), group);
      }
    }
  }
  return [...groups.values()].map(({ key, shares, runIds }) => {
    const share = meanWithInterval(shares);
    return {
      ...key,
      share: { mean: share.mean, halfWidth95: share.halfWidth95, points: share.n },
      source: measured(runIds),
    };
  });
}

function computeKey(entry: ComputeEntry): string {
  return JSON.stringify([
    entry.model,
    entry.batchSize,
    entry.precision,
    entry.channelsLast === true,
    entry.device,
    entry.deviceModel,
    entry.cpusPerNode,
    ...(entry.workload === undefined ? [] : [canonicalJson(entry.workload)]),
  ]);
}

function linkKey(entry: LinkEntry): string {
  return JSON.stringify([
    entry.bandwidth,
    entry.nodes,
    entry.processesPerNode,
    entry.reduction,
    entry.cpusPerNode,
    entry.instanceType ?? null,
    entry.collective ?? "all-reduce",
  ]);
}

/**
 * "tensor over 2", "pipeline 1f1b ×6 over 3 stages": how a split step's layout is named (its unit's splitLabel);
 * `counted`: "tensor over 2 workers".
 */
export function splitLabel(
  entry: Pick<SplitStepEntry, "workload" | "tensorDegree" | "nodes">,
  counted = false,
): string {
  return layoutSplitLabel(entry.workload, entry.tensorDegree, entry.nodes, counted);
}

function splitStepKey(entry: SplitStepEntry): string {
  return JSON.stringify([
    entry.model,
    entry.batchSize,
    entry.precision,
    canonicalJson(entry.workload),
    entry.nodes,
    entry.processesPerNode,
    entry.tensorDegree,
    entry.deviceModel,
    entry.cpusPerNode,
  ]);
}

/** "2 nodes × 1, ring" (DDP's), "tensor, 2 nodes × 1": what an overlap entry measured. */
export function overlapLabel(entry: Omit<OverlapEntry, "share" | "source">): string {
  return entry.parallelism === undefined
    ? `${entry.nodes} nodes × ${entry.processesPerNode}, ${entry.reduction}`
    : `${entry.parallelism}, ${entry.nodes} nodes × ${entry.processesPerNode}`;
}

function overlapKey(entry: Omit<OverlapEntry, "share" | "source">): string {
  return JSON.stringify([
    entry.parallelism ?? "ddp",
    entry.nodes,
    entry.processesPerNode,
    entry.reduction,
    entry.cpusPerNode,
    entry.instanceType ?? null,
  ]);
}

/** The calibrations together, in order: an entry of a later one replaces an earlier one's of the same key. */
export function mergeCalibrations(calibrations: readonly Calibration[]): Calibration {
  const compute = new Map<string, ComputeEntry>();
  const links = new Map<string, LinkEntry>();
  const splitSteps = new Map<string, SplitStepEntry>();
  const overlap = new Map<string, OverlapEntry>();
  const memory = new Map<string, MemoryEntry>();
  for (const calibration of calibrations) {
    for (const entry of calibration.compute) compute.set(computeKey(entry), entry);
    for (const entry of calibration.splitSteps) splitSteps.set(splitStepKey(entry), entry);
    for (const entry of calibration.links) links.set(linkKey(entry), entry);
    for (const entry of calibration.overlap) overlap.set(overlapKey(entry), entry);
    for (const entry of calibration.memory)
      memory.set(
        JSON.stringify([entry.device, entry.deviceModel, entry.cpusPerNode, entry.parallelism ?? "ddp"]),
        entry,
      );
  }
  return {
    schema: CALIBRATION_SCHEMA,
    compute: [...compute.values()],
    splitSteps: [...splitSteps.values()],
    links: [...links.values()],
    overlap: [...overlap.values()],
    memory: [...memory.values()],
  };
}

/** "measured in results/local-seed on 2026-11-25", "derived: ..." */
export function describeSource(source: Source): string {
  return source.kind === "measured" ? `measured in ${source.resultsDir} on ${source.date}` : `derived: ${source.how}`;
}

/**
 * Every entry of the calibration as predictions.json records it: what it is, where and from which runs it was measured,
 * and a hash of its content that does not depend on the order of its keys (the same entry in another file hashes the
 * same).
 */
export function calibrationInputs(calibration: Calibration): CalibrationInput[] {
  const cores = (cpusPerNode: number | null) => (cpusPerNode === null ? "" : ` at ${cpusPerNode} cores`);
  const on = (instanceType: string | undefined) => (instanceType === undefined ? "" : ` on ${instanceType}`);
  return [
    ...calibration.compute.map((entry) =>
      input(
        "compute",
        `compute ${entry.model} batch ${entry.batchSize} ${entry.precision}${entry.channelsLast === true ? " channels-last" : ""} ` +
          `on ${entry.deviceModel}${cores(entry.cpusPerNode)}`,
        entry,
      ),
    ),
    ...calibration.splitSteps.map((entry) =>
      input(
        "split-step",
        `split step ${entry.model} batch ${entry.batchSize} ${entry.precision}, ${splitLabel(entry)} of ` +
          `${entry.nodes} nodes × ${entry.processesPerNode}, unshaped, on ${entry.deviceModel}${cores(entry.cpusPerNode)}`,
        entry,
      ),
    ),
    ...calibration.links.map((entry) =>
      input(
        "link",
        `link ${entry.bandwidth}, ${entry.nodes} nodes × ${entry.processesPerNode}, ${entry.reduction}${entry.collective === undefined ? "" : `, ${entry.collective}`}${cores(entry.cpusPerNode)}${on(entry.instanceType)}`,
        entry,
      ),
    ),
    ...calibration.overlap.map((entry) =>
      input("overlap", `overlap ${overlapLabel(entry)}${cores(entry.cpusPerNode)}${on(entry.instanceType)}`, entry),
    ),
    ...calibration.memory.map((entry) =>
      input(
        "memory",
        `memory on ${entry.deviceModel}${cores(entry.cpusPerNode)}${entry.parallelism === undefined ? "" : `, ${entry.parallelism}`}`,
        entry,
      ),
    ),
  ];
}

function input(
  kind: CalibrationInput["kind"],
  entry: string,
  content: ComputeEntry | SplitStepEntry | LinkEntry | OverlapEntry | MemoryEntry,
): CalibrationInput {
  const { source } = content;
  const measured = source.kind === "measured" ? source : undefined;
  return {
    kind,
    entry,
    source: describeSource(source),
    resultsDir: measured?.resultsDir ?? null,
    folder: measured?.folder ?? null,
    runIds: measured?.runIds ?? null,
    fingerprints: measured?.fingerprints ?? null,
    configurations: measured?.configurations ?? null,
    sha256: createHash("sha256").update(canonicalJson(content)).digest("hex"),
  };
}

/** JSON with every object's keys sorted: the same value gives the same text whatever order its keys were written in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, field]) => field !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, field]) => `${JSON.stringify(key)}:${canonicalJson(field)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * What the campaign report shows, computed from the run records: measured throughput and scaling efficiency
 * next to the ring all-reduce cost model, the all-reduce probe, and the failed runs. Pure: plain data in,
 * plain data out; charts and pages are drawn from it elsewhere.
 */
import { launcherOf } from "../launchers/index.ts";
import {
  COLLECTIVE_OP,
  COLLECTIVES,
  numericKnob,
  PROBE_LIBRARIES,
  probedAs,
  REDUCTIONS,
  STRATEGY_KNOBS,
  type Collective,
  type ProbeLibrary,
  type TrainKnobName,
} from "../config/registry.ts";
import { efficiencyCeiling, type EfficiencyCeiling } from "../results/cost-model.ts";
import { meanWithInterval, type MeanWithInterval } from "../results/statistics.ts";
import {
  allReducesPerStep,
  exchangeShare,
  isReduction,
  reductionLowerBoundSeconds,
  type Reduction,
} from "../reductions/index.ts";
import { fitAlphaBeta, predictTrainingStep, type AlphaBetaFit, type CollectiveOp } from "../results/comm-model.ts";
import { latestAttempts, type RunRecord } from "../results/record.ts";
import type { AllReduceResult, TrainResult } from "../results/worker-result.ts";
import { throughputOf } from "../results/worker-result.ts";
import { predictLayoutStep } from "../results/layout-model.ts";
import { layoutLabel, stepShapeOf, sumsWithReduction } from "../layouts/index.ts";
import { unitsPerSample } from "../workload/transformer.ts";
import { targetNamed } from "../targets/index.ts";

/**
 * A measurement over repeats: the mean with the half-width of its 95% interval (Student's t over the n repeats;
 * 0 when n is 1), the median and the coefficient of variation (null for one repeat), as results/statistics.ts's
 * meanWithInterval computes them.
 */
export interface Interval extends MeanWithInterval {
  /**
   * Only for one repeat of a training run: the worker's 1.96 × std of its per-iteration throughput. A spread
   * that says how steady the run was, not how precisely the mean is known.
   */
  readonly iterationSpread95?: number;
  /** With the campaign's repeatUntil: its target (a share of the mean) and whether the interval is within it. */
  readonly precisionTarget?: { readonly halfWidth: number; readonly reached: boolean };
}

/** The ± a chart's error bar shows: the interval over repeats, or a single repeat's spread over iterations. */
export function errorHalfWidth(interval: Interval): number {
  return interval.n > 1 ? interval.halfWidth95 : (interval.iterationSpread95 ?? 0);
}

/** The single-node measurement every bandwidth's series of a configuration is compared with. */
export interface Baseline {
  /** The largest rank's peak memory over its baseline, over the repeats; null in older records. */
  readonly peakMemoryBytes: Interval | null;
  readonly throughput: Interval;
  readonly throughputPerWorker: number;
  /** t_c: one worker's step, its samples (images, or sequences' tokens) over the throughput per worker. */
  readonly computeSecondsPerStep: number;
  readonly workers: number;
  readonly runIds: readonly string[];
  /**
   * The nodes' CPU check while the baseline ran (runCpuCheckGflops over its repeats); null when no repeat has
   * one.
   */
  readonly cpuCheckGflops: Interval | null;
}

export interface ScalingPoint {
  readonly nodes: number;
  /** Worker processes on each node. */
  readonly processesPerNode: number;
  /** Ranks of the all-reduce (world size). */
  readonly workers: number;
  readonly throughput: Interval;
  readonly runIds: readonly string[];
  /** workers × the baseline's throughput per worker (nodes × single-node throughput); null without a baseline. */
  readonly idealThroughput: number | null;
  readonly scalingEfficiency: number | null;
  /**
   * The nodes' CPU check while the point ran (runCpuCheckGflops over its repeats); null when no repeat has one.
   * Shown, never corrected on: in the seed campaigns a run's CPU check did not track its throughput.
   */
  readonly cpuCheckGflops: Interval | null;
  /** Compute time of one step, batch size / single-node per-worker throughput; null without a baseline. */
  readonly computeSecondsPerStep: number | null;
  /** Bytes each rank all-reduces per step (gradient bytes, halved when the gradients travel as fp16). */
  readonly allReduceBytes: number;
  /** How the gradients were summed (ring unless the campaign chose another reduction). */
  readonly reduction: Reduction;
  /**
   * Lower bound of that reduction at the link rate (results/cost-model.ts); null for an unlimited link, which gives no
   * bound.
   */
  readonly allReduceLowerBoundSeconds: number | null;
  /** Best scaling efficiency the cost model allows; null when t_c or t_ar is unknown. */
  readonly efficiencyCeiling: EfficiencyCeiling | null;
  /** The same as throughput: ideal × ceiling. */
  readonly throughputCeiling: EfficiencyCeiling | null;
  /**
   * The probe's fitted model at this link and node count, against the measurement; null without a fit or a baseline.
   */
  readonly prediction: ModelPrediction | null;
  /**
   * The largest rank's measured peak memory over its process's baseline, over the repeats (the worker's measure); null
   * in older records.
   */
  readonly peakMemoryBytes: Interval | null;
}

/** A training point as the alpha-beta model fitted from the probe predicts it (results/comm-model.ts). */
export interface ModelPrediction {
  readonly buckets: number;
  /** Σ over DDP buckets of the fitted all-reduce time. */
  readonly allReduceSeconds: number;
  readonly efficiency: EfficiencyCeiling;
  readonly throughput: EfficiencyCeiling;
  /** Measured minus predicted scaling efficiency, in percentage points. */
  readonly errorPoints: EfficiencyCeiling;
}

export interface BandwidthSeries {
  /**
   * "1gbit", "unlimited", ...; with several processes per node "1gbit · 2 per node", and "in one node · 4 per
   * node" for one node's processes, which use no link.
   */
  readonly bandwidth: string;
  /** The link alone: its rate, "unlimited", or "in one node". */
  readonly link: string;
  /** Worker processes on each node of the series' points. */
  readonly processesPerNode: number;
  readonly linkGbps: number | null;
  /** Multi-node points, by node count; the configuration's baseline is the 1-node point of every series. */
  readonly points: readonly ScalingPoint[];
}

/** One model × batch size × knob combination: a panel of the throughput and efficiency charts. */
export interface TrainingConfig {
  readonly label: string;
  readonly model: string;
  readonly batchSize: number;
  /** What throughput counts: images, or tokens (language models). */
  readonly unit: "images" | "tokens";
  /** How the model was laid out: "ddp", "fsdp full", "pipeline gpipe × 4 micro-batches", ... */
  readonly layout: string;
  readonly knobs: Readonly<Record<string, unknown>>;
  /** Where it computed: "cpu" or "cuda" (the worker's provenance). */
  readonly device: string;
  readonly baseline: Baseline | null;
  readonly series: readonly BandwidthSeries[];
}

export interface ProbeRow {
  readonly sizeBytes: number;
  readonly busBandwidthGbps: Interval;
  readonly algorithmBandwidthGbps: number;
  readonly timeSeconds: number;
  /** Wrong results summed over the repeats; anything but 0 means the collective is broken. */
  readonly wrong: number;
}

export interface ProbeSeries {
  /** The link's rate, "unlimited", or "in one node". */
  readonly bandwidth: string;
  readonly reduction: Reduction;
  /** What summed: torch.distributed's backend (`backend`), or Open MPI (`libraryVersion`, its first line). */
  readonly library: ProbeLibrary;
  /** The collective it timed (probe.collective; older records: all-reduce), its fit that collective's α and β. */
  readonly collective: Collective;
  readonly backend: string;
  readonly libraryVersion: string | null;
  /**
   * iperf3's one TCP stream on the same link just before the probe (probe.reference), over the repeats; null without.
   */
  readonly referenceGbps: Interval | null;
  readonly processesPerNode: number;
  readonly linkGbps: number | null;
  readonly nodes: number;
  readonly workers: number;
  readonly runIds: readonly string[];
  readonly rows: readonly ProbeRow[];
  /** Bus bandwidth at the largest message size over the link rate; null for an unlimited link. */
  readonly largestSizeLinkFraction: number | null;
  /** α-β least squares over the rows' mean times; null with fewer than two message sizes. */
  readonly fit: AlphaBetaFit | null;
}

export interface FailedRun {
  readonly runId: string;
  /** How often the run was tried; this is the latest attempt. */
  readonly attempts: number;
  readonly job: string;
  readonly nodes: number;
  readonly bandwidth: string | null;
  readonly model?: string;
  readonly batchSize?: number;
  readonly error: string;
  /** Relative to the results directory. */
  readonly logsDir: string;
}

/** A train run that read the dataset: how long it waited for data and, with epochs, its time to train. */
export interface RealDataRun {
  readonly runId: string;
  readonly label: string;
  readonly workers: number;
  readonly throughput: number;
  /** The mean of the same configuration's runs on synthetic data (the data knob as a matrix axis), or null. */
  readonly syntheticThroughput: number | null;
  /** The share of step time spent waiting for the batch. */
  readonly dataWaitFraction: number | null;
  readonly timeToTrainSeconds: number | null;
  readonly epochs: number | null;
  readonly heldOutAccuracy: number | null;
  readonly targetAccuracy: number | null;
  readonly reachedTargetAtEpoch: number | null;
  readonly restarts: number;
  readonly stepsRedone: number;
  readonly secondsLost: number;
  /** The nodes the run started and ended with: fewer at the end when it lost one and went on (elastic). */
  readonly nodesAtStart: number;
  readonly nodesAtEnd: number;
  /**
   * How the gradients were summed, with the strategy's own knobs: "ring", "ring + fp16", "powersgd (powersgdRank 1,
   * powersgdStartIter 2)".
   */
  readonly strategy: string;
  readonly reduction: Reduction;
  /** What the runs a strategy comparison puts side by side share: everything but the strategy and the repeat. */
  readonly comparedWith: string;
  /** That shared part in words: "small · batch 32 · 3 nodes × 1 · 300mbit". */
  readonly context: string;
  readonly linkGbps: number | null;
  /** Steps taken when the epoch that reached the target ended; null when it was not reached. */
  readonly stepsToTarget: number | null;
  /** The best held-out accuracy of any epoch. */
  readonly bestAccuracy: number | null;
  /** The largest difference of a parameter from rank 0's at the end (records before it was kept: null). */
  readonly replicaDivergence: number | null;
  /** local-sgd: the largest drift of a replica from the average at any averaging (null: not recorded). */
  readonly averagingDrift: number | null;
  /** async-parameter-server: the mean and largest staleness of the updates the server applied; null for the others. */
  readonly staleness: { readonly mean: number; readonly max: number } | null;
}

export interface ReportData {
  /** Runs by the status of their latest attempt; `doneAgain`: runs with more than one attempt. */
  readonly runCounts: {
    readonly total: number;
    readonly ok: number;
    readonly failed: number;
    readonly doneAgain: number;
  };
  readonly training: readonly TrainingConfig[];
  /** Train runs on real data, fewest workers first. */
  readonly realData: readonly RealDataRun[];
  readonly probes: readonly ProbeSeries[];
  readonly failures: readonly FailedRun[];
}

/** Where and when the campaign ran, for the report's header. */
export interface ReportMeta {
  readonly campaign: string;
  readonly testbed: string;
  /** ISO times of the first run's start and the last run's end; null without records. */
  readonly firstStartedAt: string | null;
  readonly lastEndedAt: string | null;
  readonly generatedAt: string;
  /** Some local-testbed runs had no CPU quota: their nodes shared one machine's cores. */
  readonly sharedMachine: boolean;
  /** The CPU quotas (cores per node) the runs had, smallest first; empty when none had one (AWS, older records). */
  readonly cpusPerNode: readonly number[];
  /** Some runs had more than one worker process per node (the quota is then per process). */
  readonly severalProcessesPerNode: boolean;
  /** Record files that could not be read, with why: the report is without them. */
  readonly leftOut: readonly string[];
}

type TrainRecord = RunRecord & { readonly result: TrainResult };
type ProbeRecord = RunRecord & { readonly result: AllReduceResult };

/** From every attempt's record; each run counts with its latest attempt. */
export function reportData(records: readonly RunRecord[]): ReportData {
  const runs = latestAttempts(records);
  const ok = runs.filter(({ record }) => record.status === "ok").map(({ record }) => record);
  const failures = runs.filter(({ record }) => record.status !== "ok").map(failedRun);
  const trainRecords = ok.filter((record): record is TrainRecord => record.result?.job === "train");
  const probeRecords = ok.filter((record): record is ProbeRecord => record.result?.job === "allreduce");
  const probes = probeSeries(probeRecords);
  // Training runs sum through torch.distributed: only its probes' fits predict them.
  const fits = new Map(
    probes
      .filter((probe) => probe.library === "torch")
      .map((probe) => [
        fitKey(probe.bandwidth, probe.nodes, probe.processesPerNode, probe.reduction, COLLECTIVE_OP[probe.collective]),
        probe.fit,
      ]),
  );
  return {
    runCounts: {
      total: runs.length,
      ok: ok.length,
      failed: failures.length,
      doneAgain: runs.filter(({ attempts }) => attempts > 1).length,
    },
    // A run that lost a node ran at two node counts: it is no point of a scaling curve (the real-data table has it).
    // PowerSGD and local SGD are ring all-reduces of fewer bytes: the ring's probe fits their link.
    training: trainingConfigs(
      trainRecords.filter((record) => !lostANode(record)),
      (bandwidth, nodes, processes, reduction, op) =>
        fits.get(fitKey(bandwidth, nodes, processes, probedAs(reduction), op)) ?? null,
    ),
    realData: trainRecords
      .filter((record) => record.result.metrics.data?.kind === "folder")
      .map((record) => realDataRun(record, trainRecords))
      .sort((a, b) => a.workers - b.workers || a.runId.localeCompare(b.runId)),
    probes,
    failures,
  };
}

export function reportMeta(
  records: readonly RunRecord[],
  generatedAt: Date,
  leftOut: readonly string[] = [],
): ReportMeta {
  const first = records[0];
  // A run started by another launcher than the default says so next to its testbed ("runs as Slurm jobs").
  const testbeds = [
    ...new Set(
      records.map(({ testbed, params }) => {
        const note = launcherOf(params.launcher).reportNote;
        return `${testbed.name} (${testbed.target}${testbed.instanceType === undefined ? "" : `, ${testbed.instanceType}`}${note === undefined ? "" : `, ${note}`})`;
      }),
    ),
  ];
  const starts = records.map((record) => record.startedAt).sort();
  const ends = records.map((record) => record.endedAt).sort();
  return {
    campaign: [...new Set(records.map((record) => record.campaign))].join(", ") || "(no runs)",
    testbed: testbeds.join(", ") || "(unknown)",
    firstStartedAt: first === undefined ? null : starts[0]!,
    lastEndedAt: first === undefined ? null : ends[ends.length - 1]!,
    generatedAt: generatedAt.toISOString(),
    sharedMachine: records.some(
      (record) =>
        targetNamed(record.testbed.target)?.nodesShareOneMachine === true && record.params.cpusPerNode === undefined,
    ),
    cpusPerNode: [...new Set(records.flatMap((record) => record.params.cpusPerNode ?? []))].sort((a, b) => a - b),
    severalProcessesPerNode: records.some((record) => processesOf(record) > 1),
    leftOut,
  };
}

function failedRun({ record, attempts }: { record: RunRecord; attempts: number }): FailedRun {
  const { params } = record;
  return {
    runId: record.runId,
    attempts,
    job: params.job,
    nodes: params.nodes,
    bandwidth: params.bandwidth,
    ...(params.model === undefined ? {} : { model: params.model }),
    ...(params.batchSize === undefined ? {} : { batchSize: params.batchSize }),
    error: record.error ?? "(no error recorded)",
    logsDir: record.logsDir,
  };
}

/** The probe's fit for a link, node count, reduction and collective. */
type FitLookup = (
  bandwidth: string,
  nodes: number,
  processesPerNode: number,
  reduction: Reduction,
  op: CollectiveOp,
) => AlphaBetaFit | null;
/** A point's fits, by collective. */
type PointFits = (op: CollectiveOp) => AlphaBetaFit | null;

function fitKey(
  bandwidth: string,
  nodes: number,
  processesPerNode: number,
  reduction: Reduction,
  op: CollectiveOp,
): string {
  return `${bandwidth}|${nodes}|${processesPerNode}|${reduction}|${op}`;
}

/** The link a run used: its rate, "unlimited", or "in one node" for one node's processes, which cross no link. */
function linkOf(record: RunRecord): string {
  return record.params.bandwidth ?? (record.params.nodes === 1 ? IN_ONE_NODE : "unlimited");
}

/** The link of one node's processes, which cross none. */
export const IN_ONE_NODE = "in one node";

/** A series' name: its link, and its processes per node when more than one. */
function seriesName(link: string, processesPerNode: number): string {
  return processesPerNode === 1 ? link : `${link} · ${processesPerNode} per node`;
}

/** Processes per node the run had: the worker's own count (the truth on GPU nodes), else the plan's, else 1. */
function realDataRun(record: TrainRecord, all: readonly TrainRecord[]): RealDataRun {
  const metrics = record.result.metrics;
  const synthetic = all.filter(
    (other) => other.result.metrics.data?.kind !== "folder" && sameExceptData(other, record),
  );
  const waited = sum(metrics.dataWaitSeconds ?? []);
  const stepped = sum(metrics.stepSeconds);
  const lastEpoch = metrics.epochs?.at(-1);
  const { model = "?", batchSize = 0 } = record.params;
  const placement = `${record.params.nodes} node${record.params.nodes === 1 ? "" : "s"} × ${processesOf(record)}`;
  return {
    runId: record.runId,
    label: [
      model,
      `batch ${batchSize}`,
      placement,
      ...(record.params.bandwidth === null ? [] : [record.params.bandwidth]),
    ].join(" · "),
    workers: record.result.world.size,
    throughput: throughputOf(metrics).total.mean,
    syntheticThroughput:
      synthetic.length === 0
        ? null
        : sum(synthetic.map((other) => throughputOf(other.result.metrics).total.mean)) / synthetic.length,
    dataWaitFraction: metrics.dataWaitSeconds === undefined || stepped === 0 ? null : waited / stepped,
    timeToTrainSeconds: metrics.timeToTrainSeconds ?? null,
    epochs: metrics.epochs?.length ?? null,
    heldOutAccuracy: lastEpoch?.heldOutAccuracy ?? null,
    targetAccuracy: metrics.targetAccuracy ?? null,
    reachedTargetAtEpoch: metrics.reachedTargetAtEpoch ?? null,
    restarts: metrics.restarts ?? 0,
    stepsRedone: metrics.stepsRedone ?? 0,
    secondsLost: metrics.secondsLost ?? 0,
    nodesAtStart: nodesAtStartOf(record),
    nodesAtEnd: record.result.world.nodes,
    strategy: strategyOf(record),
    reduction: reductionOf(record),
    comparedWith: JSON.stringify([
      model,
      batchSize,
      record.params.nodes,
      processesOf(record),
      record.params.bandwidth,
      sortedEntries(record.params.knobs).filter(([knob]) => !STRATEGY_DEFINING.has(knob)),
    ]),
    context: [
      model,
      `batch ${batchSize}`,
      placement,
      ...(record.params.bandwidth === null ? [] : [record.params.bandwidth]),
    ].join(" · "),
    linkGbps: record.params.linkGbps,
    stepsToTarget:
      metrics.reachedTargetAtEpoch == null
        ? null
        : ((metrics.epochs?.[metrics.reachedTargetAtEpoch - 1]?.["steps"] as number) ?? null),
    bestAccuracy:
      metrics.epochs === undefined || metrics.epochs.length === 0
        ? null
        : Math.max(...metrics.epochs.map((epoch) => epoch.heldOutAccuracy)),
    replicaDivergence: metrics.replicaDivergence ?? null,
    averagingDrift:
      metrics.averagingDrift === undefined || metrics.averagingDrift.length === 0
        ? null
        : Math.max(...metrics.averagingDrift),
    staleness: metrics.staleness === undefined ? null : { mean: metrics.staleness.mean, max: metrics.staleness.max },
  };
}

/** Knobs that say how gradients are summed: the reduction, fp16 on the wire, and the strategies' own knobs. */
const STRATEGY_DEFINING = new Set<string>(["reduction", "fp16Allreduce", ...Object.keys(STRATEGY_KNOBS)]);

/**
 * "ring", "ring + fp16", "local-sgd (localSgdPeriod 4, localSgdWarmup 2)": the reduction and its own knobs' values (the
 * worker's defaults where unset).
 */
function strategyOf(record: RunRecord): string {
  const reduction = reductionOf(record);
  const own = (Object.entries(STRATEGY_KNOBS) as [TrainKnobName, Reduction][])
    .filter(([, owner]) => owner === reduction)
    .map(([knob]) => `${knob} ${numericKnob(record.params.knobs, knob)}`);
  const name = record.params.knobs["fp16Allreduce"] === true ? `${reduction} + fp16` : reduction;
  return own.length === 0 ? name : `${name} (${own.join(", ")})`;
}

/** The nodes a run started with: more than world.nodes, what it ended with, when it lost one (train minNodes). */
function nodesAtStartOf(record: TrainRecord): number {
  return record.result.metrics.nodesAtStart ?? record.result.world.nodes;
}

function lostANode(record: TrainRecord): boolean {
  return nodesAtStartOf(record) > record.result.world.nodes;
}

/** The same configuration and placement, the data knob aside (any repeat). */
function sameExceptData(a: TrainRecord, b: TrainRecord): boolean {
  const rest = (record: TrainRecord) =>
    JSON.stringify([
      record.params.model,
      record.params.batchSize,
      record.params.nodes,
      processesOf(record),
      record.params.bandwidth,
      sortedEntries(Object.fromEntries(Object.entries(record.params.knobs).filter(([knob]) => knob !== "data"))),
    ]);
  return rest(a) === rest(b);
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

export function processesOf(record: RunRecord): number {
  return record.result?.world.procsPerNode ?? record.params.processesPerNode ?? 1;
}

/**
 * "1gbit", "1gbit · 2 per node", "1gbit, parameter-server", "1gbit, Open MPI", "1gbit, all-gather": the probe's link,
 * placement, reduction, library and collective (the all-reduce unnamed).
 */
export function probeLinkLabel(
  probe: Pick<ProbeSeries, "bandwidth" | "reduction" | "processesPerNode"> &
    Partial<Pick<ProbeSeries, "library" | "collective">>,
): string {
  const name = seriesName(probe.bandwidth, probe.processesPerNode);
  const withReduction = probe.reduction === "ring" ? name : `${name}, ${probe.reduction}`;
  const withLibrary = probe.library === "mpi" ? `${withReduction}, Open MPI` : withReduction;
  return probe.collective === undefined || probe.collective === "all-reduce"
    ? withLibrary
    : `${withLibrary}, ${probe.collective}`;
}

/** The reduction a run used: its knob, or ring for runs that did not set one (and records older than the knob). */
export function reductionOf(record: RunRecord): Reduction {
  const value = record.params.knobs["reduction"];
  return isReduction(value) ? value : "ring";
}

function trainingConfigs(records: readonly TrainRecord[], fitFor: FitLookup): TrainingConfig[] {
  const variedKnobs = knobsThatVary(records);
  const byConfig = groupBy(records, (record) =>
    JSON.stringify([record.params.model, record.params.batchSize, sortedEntries(record.params.knobs)]),
  );
  return [...byConfig.values()]
    .map((group) => {
      const { model = "(unknown model)", batchSize = 0, knobs } = group[0]!.params;
      // The baseline: one node with the fewest processes measured (one, unless GPU nodes ran one per GPU throughout).
      const fewest = Math.min(...group.filter((record) => record.params.nodes === 1).map(processesOf));
      const singleNode = group.filter((record) => record.params.nodes === 1 && processesOf(record) === fewest);
      const unitsPerStep = batchSize * unitsPerSample(model, group[0]!.result.knobs);
      const perWorker = meanWithInterval(
        singleNode.map((record) => throughputOf(record.result.metrics).perWorker.mean),
      ).mean;
      const baseline =
        singleNode.length === 0
          ? null
          : {
              peakMemoryBytes: peakMemoryInterval(singleNode),
              throughput: repeatsInterval(singleNode),
              throughputPerWorker: perWorker,
              computeSecondsPerStep: unitsPerStep / perWorker,
              workers: singleNode[0]!.result.world.size,
              runIds: singleNode.map((record) => record.runId),
              cpuCheckGflops: cpuCheckInterval(singleNode),
            };
      const scaled = group.filter((record) => !singleNode.includes(record));
      const series = [
        ...groupBy(scaled, (record) => JSON.stringify([linkOf(record), processesOf(record)])).values(),
      ].map((runs) => {
        const link = linkOf(runs[0]!);
        const processesPerNode = processesOf(runs[0]!);
        return {
          bandwidth: seriesName(link, processesPerNode),
          link,
          processesPerNode,
          linkGbps: runs[0]!.params.linkGbps,
          points: [...groupBy(runs, (record) => String(record.params.nodes)).values()]
            .map((repeats) =>
              scalingPoint(repeats, unitsPerStep, baseline, (op) =>
                fitFor(link, repeats[0]!.params.nodes, processesPerNode, reductionOf(repeats[0]!), op),
              ),
            )
            .sort((a, b) => a.nodes - b.nodes),
        };
      });
      // A knob this configuration did not set (another strategy's, which the plan leaves out of its runs) is not named.
      const knobLabel = variedKnobs
        .filter((knob) => knobs[knob] !== undefined)
        .map((knob) => `${knob}=${String(knobs[knob])}`);
      return {
        label: [model, `batch ${batchSize}`, ...knobLabel].join(" · "),
        model,
        batchSize,
        unit: throughputOf(group[0]!.result.metrics).unit,
        layout: layoutLabel(knobs),
        knobs,
        device: group[0]!.result.provenance.device,
        baseline,
        series: series.sort(byLinkRate),
      };
    })
    .sort((a, b) => a.model.localeCompare(b.model) || a.batchSize - b.batchSize || a.label.localeCompare(b.label));
}

/**
 * A point of a configuration: `unitsPerStep` is what one worker's step counts on one node (batch × sequence length for
 * a language model, the batch for an image model), which over the baseline's throughput per worker is its compute t_c.
 */
function scalingPoint(
  repeats: readonly TrainRecord[],
  unitsPerStep: number,
  baseline: Baseline | null,
  fits: PointFits,
): ScalingPoint {
  const { params, result } = repeats[0]!;
  if (!sumsWithReduction(params.knobs)) return layoutPoint(repeats, unitsPerStep, baseline, fits);
  const fit = fits("all_reduce");
  const throughput = repeatsInterval(repeats);
  const workers = result.world.size;
  const placement = { nodes: params.nodes, processesPerNode: processesOf(repeats[0]!) };
  // What the worker says it sends per step (older records: the gradient, halved by fp16).
  const allReduceBytes =
    result.metrics.wireBytesPerStep ?? result.metrics.gradientBytes / (params.knobs.fp16Allreduce === true ? 2 : 1);
  const reduction = reductionOf(repeats[0]!);
  // Every rate ringlab applies is tc shaping on each node's egress (ansible/roles/net_shaping).
  const allReduceLowerBoundSeconds =
    params.nodes === 1
      ? 0
      : params.linkGbps === null
        ? null
        : reductionLowerBoundSeconds(reduction, allReduceBytes, placement, params.linkGbps, true);
  // Every worker brings the compute of one baseline worker (a GPU; locally a CPU quota per process).
  const ideal = baseline === null ? null : (workers / baseline.workers) * baseline.throughput.mean;
  const computeSecondsPerStep = baseline === null ? null : unitsPerStep / baseline.throughputPerWorker;
  const ceiling =
    computeSecondsPerStep === null || allReduceLowerBoundSeconds === null
      ? null
      : efficiencyCeiling(computeSecondsPerStep, allReduceLowerBoundSeconds);
  return {
    nodes: params.nodes,
    processesPerNode: placement.processesPerNode,
    workers,
    throughput,
    runIds: repeats.map((record) => record.runId),
    reduction,
    idealThroughput: ideal,
    scalingEfficiency: ideal === null ? null : throughput.mean / ideal,
    cpuCheckGflops: cpuCheckInterval(repeats),
    computeSecondsPerStep,
    allReduceBytes,
    allReduceLowerBoundSeconds,
    efficiencyCeiling: ceiling,
    throughputCeiling:
      ceiling === null || ideal === null
        ? null
        : { noOverlap: ideal * ceiling.noOverlap, perfectOverlap: ideal * ceiling.perfectOverlap },
    prediction:
      fit === null || computeSecondsPerStep === null || ideal === null
        ? null
        : modelPrediction(fit, {
            computeSeconds: computeSecondsPerStep,
            gradientBytes: allReduceBytes * exchangeShare(reduction, workers),
            ranks: workers,
            bucketCapMb: numericKnob(params.knobs, "bucketCapMb"),
            allReduces: allReducesPerStep(reduction, result.metrics.gradientBytes, params.knobs),
            idealThroughput: ideal,
            measuredEfficiency: throughput.mean / ideal,
          }),
    peakMemoryBytes: peakMemoryInterval(repeats),
  };
}

/**
 * A point of a layout other than DDP: its collectives as the worker recorded them (metrics.layout.traffic) timed on the
 * probe's fitted link (results/layout-model.ts), each on its own collective's fit where the campaign probed it
 * (probe.collective), else on the all-reduce's; its lower bound the same at the link's rate without latency.
 */
function layoutPoint(
  repeats: readonly TrainRecord[],
  unitsPerStep: number,
  baseline: Baseline | null,
  fits: PointFits,
): ScalingPoint {
  const fit = fits("all_reduce");
  const fitOf = (op: CollectiveOp) => fits(op) ?? fit!;
  const { params, result } = repeats[0]!;
  const throughput = repeatsInterval(repeats);
  const workers = result.world.size;
  const layout = result.metrics.layout;
  const dims = layout?.dims ?? {};
  const groupSize = (group: string) => (group === "pp" ? 2 : (dims[group] ?? workers));
  const collectives = (layout?.traffic ?? []).map((item) => ({
    op: item.op,
    bytes: item.bytes,
    calls: item.calls,
    ranks: groupSize(item.group),
  }));
  // The step's shape by the layout the worker recorded (its tensor split, its pipeline's slots).
  const stepShape =
    layout === undefined
      ? {}
      : stepShapeOf(
          params.model ?? "",
          { ...result.knobs, parallelism: layout.parallelism },
          {
            pp: dims["pp"] ?? 1,
            dpReplicate: dims["dp_replicate"] ?? 1,
            dpShard: dims["dp_shard"] ?? 1,
            tp: dims["tp"] ?? 1,
          },
        );
  const ideal = baseline === null ? null : (workers / baseline.workers) * baseline.throughput.mean;
  const computeSecondsPerStep = baseline === null ? null : unitsPerStep / baseline.throughputPerWorker;
  const dataParallel = (dims["dp_replicate"] ?? 1) * (dims["dp_shard"] ?? 1);
  const stepOn = (
    linkOf: (op: CollectiveOp) => { alphaSeconds: number; betaSecondsPerByte: number },
    overlapShare: number,
  ) =>
    predictLayoutStep({
      computeSeconds: computeSecondsPerStep!,
      collectives,
      linkOf,
      overlapShare,
      ...stepShape,
    });
  const efficiencyOf = (stepSeconds: number) => (dataParallel * computeSecondsPerStep!) / (workers * stepSeconds);
  const atLinkRate =
    params.linkGbps === null ? null : { alphaSeconds: 0, betaSecondsPerByte: 8 / (params.linkGbps * 1e9) };
  const bound = computeSecondsPerStep === null || atLinkRate === null ? null : stepOn(() => atLinkRate, 0);
  const ceiling =
    bound === null
      ? null
      : {
          noOverlap: efficiencyOf(bound.stepSeconds),
          perfectOverlap: efficiencyOf(stepOn(() => atLinkRate!, 1).stepSeconds),
        };
  const measuredEfficiency = ideal === null ? null : throughput.mean / ideal;
  const prediction =
    fit === null || computeSecondsPerStep === null || ideal === null
      ? null
      : (() => {
          const step = stepOn(fitOf, 0);
          const efficiency = {
            noOverlap: efficiencyOf(step.stepSeconds),
            perfectOverlap: efficiencyOf(stepOn(fitOf, 1).stepSeconds),
          };
          return {
            buckets: collectives.reduce((sum, item) => sum + item.calls, 0),
            allReduceSeconds: step.communicationSeconds,
            efficiency,
            throughput: { noOverlap: ideal * efficiency.noOverlap, perfectOverlap: ideal * efficiency.perfectOverlap },
            errorPoints: {
              noOverlap: 100 * (measuredEfficiency! - efficiency.noOverlap),
              perfectOverlap: 100 * (measuredEfficiency! - efficiency.perfectOverlap),
            },
          };
        })();
  return {
    nodes: params.nodes,
    processesPerNode: processesOf(repeats[0]!),
    workers,
    throughput,
    runIds: repeats.map((record) => record.runId),
    reduction: "ring",
    idealThroughput: ideal,
    scalingEfficiency: measuredEfficiency,
    cpuCheckGflops: cpuCheckInterval(repeats),
    computeSecondsPerStep,
    allReduceBytes: result.metrics.wireBytesPerStep ?? 0,
    allReduceLowerBoundSeconds: bound === null ? null : bound.communicationSeconds,
    efficiencyCeiling: ceiling,
    throughputCeiling:
      ceiling === null || ideal === null
        ? null
        : { noOverlap: ideal * ceiling.noOverlap, perfectOverlap: ideal * ceiling.perfectOverlap },
    prediction,
    peakMemoryBytes: peakMemoryInterval(repeats),
  };
}

/** The largest rank's peak over its baseline, over the repeats that measured it; null where none did. */
function peakMemoryInterval(repeats: readonly TrainRecord[]): Interval | null {
  const peaks = repeats.flatMap((record) => largestRankPeak(record.result.metrics.memory?.perRank ?? []) ?? []);
  return peaks.length === 0 ? null : meanWithInterval(peaks);
}

/**
 * A run's largest rank's peak memory over its process's baseline (the worker's measure); null where no rank measured
 * it.
 */
export function largestRankPeak(
  ranks: readonly { readonly peakBytes: number; readonly baselineBytes: number }[],
): number | null {
  return ranks.length === 0 ? null : Math.max(...ranks.map((rank) => rank.peakBytes - rank.baselineBytes));
}

function modelPrediction(
  fit: AlphaBetaFit,
  point: {
    computeSeconds: number;
    gradientBytes: number;
    ranks: number;
    bucketCapMb: number | undefined;
    allReduces: number | undefined;
    idealThroughput: number;
    measuredEfficiency: number;
  },
): ModelPrediction {
  const { bucketCapMb, allReduces, ...rest } = point;
  const step = predictTrainingStep(fit, {
    ...rest,
    ...(bucketCapMb === undefined ? {} : { bucketCapMb }),
    ...(allReduces === undefined ? {} : { allReduces }),
  });
  const efficiency = { noOverlap: step.noOverlapEfficiency, perfectOverlap: step.fullOverlapEfficiency };
  return {
    buckets: step.buckets,
    allReduceSeconds: step.allReduceSeconds,
    efficiency,
    throughput: {
      noOverlap: point.idealThroughput * efficiency.noOverlap,
      perfectOverlap: point.idealThroughput * efficiency.perfectOverlap,
    },
    errorPoints: {
      noOverlap: 100 * (point.measuredEfficiency - efficiency.noOverlap),
      perfectOverlap: 100 * (point.measuredEfficiency - efficiency.perfectOverlap),
    },
  };
}

/**
 * Mean over repeats with Student's t; one repeat has no interval, so it keeps the worker's spread over its iterations.
 */
function repeatsInterval(repeats: readonly TrainRecord[]): Interval {
  const totals = repeats.map((record) => throughputOf(record.result.metrics).total);
  // The worker calls its spread ci95 (ringlab.result/v1); see worker-result.ts.
  const interval: Interval =
    totals.length > 1
      ? meanWithInterval(totals.map((total) => total.mean))
      : { ...meanWithInterval([totals[0]!.mean]), iterationSpread95: totals[0]!.ci95 };
  const target = repeats.find((record) => record.params.repeatUntil !== undefined)?.params.repeatUntil;
  if (target === undefined) return interval;
  // As the campaign decided its rounds (src/campaign/precision.ts): one repeat has no interval, so never reached.
  const reached = interval.n >= 2 && interval.mean > 0 && interval.halfWidth95 <= target.halfWidth * interval.mean;
  return { ...interval, precisionTarget: { halfWidth: target.halfWidth, reached } };
}

/**
 * A run's CPU check just before its job: the mean of its ranks' GFLOP/s at the worker's fixed fp32 matrix products
 * (result.cpuCheck); undefined for records older than the CPU check, or one that timed none.
 */
export function runCpuCheckGflops(record: RunRecord): number | undefined {
  const perRank = record.result?.cpuCheck?.computeGflops ?? [];
  return perRank.length === 0 ? undefined : sum(perRank) / perRank.length;
}

/**
 * The repeats' CPU checks as an interval (Student's t over the runs that have one); null when none has. One run
 * gets no spread: its ranks ran at once on the same machine, so their spread says nothing about the moment.
 */
function cpuCheckInterval(repeats: readonly RunRecord[]): Interval | null {
  const perRun = repeats.flatMap((record) => runCpuCheckGflops(record) ?? []);
  return perRun.length === 0 ? null : meanWithInterval(perRun);
}

function probeSeries(records: readonly ProbeRecord[]): ProbeSeries[] {
  const groups = groupBy(records, (record) =>
    JSON.stringify([
      record.params.bandwidth,
      record.params.nodes,
      processesOf(record),
      reductionOf(record),
      libraryOf(record),
      collectiveOf(record),
    ]),
  );
  return [...groups.values()]
    .map((repeats) => {
      const { params, result } = repeats[0]!;
      const rowsBySize = groupBy(
        repeats.flatMap((record) => record.result.metrics.rows),
        (row) => String(row.sizeBytes),
      );
      const rows = [...rowsBySize.values()]
        .map((samples) => ({
          sizeBytes: samples[0]!.sizeBytes,
          busBandwidthGbps: meanWithInterval(samples.map((row) => row.busbwGbps)),
          algorithmBandwidthGbps: meanWithInterval(samples.map((row) => row.algbwGbps)).mean,
          timeSeconds: meanWithInterval(samples.map((row) => row.timeSeconds)).mean,
          wrong: samples.reduce((sum, row) => sum + row.wrong, 0),
        }))
        .sort((a, b) => a.sizeBytes - b.sizeBytes);
      const largest = rows[rows.length - 1];
      return {
        bandwidth: linkOf(repeats[0]!),
        reduction: reductionOf(repeats[0]!),
        library: libraryOf(repeats[0]!),
        collective: collectiveOf(repeats[0]!),
        backend: result.world.backend,
        libraryVersion: typeof result.metrics["libraryVersion"] === "string" ? result.metrics["libraryVersion"] : null,
        referenceGbps: referenceOf(repeats),
        processesPerNode: processesOf(repeats[0]!),
        linkGbps: params.linkGbps,
        nodes: params.nodes,
        workers: result.world.size,
        runIds: repeats.map((record) => record.runId),
        rows,
        largestSizeLinkFraction:
          largest === undefined || params.linkGbps === null ? null : largest.busBandwidthGbps.mean / params.linkGbps,
        fit: fitAlphaBeta(rows, result.world.size, COLLECTIVE_OP[collectiveOf(repeats[0]!)]),
      };
    })
    .sort(
      (a, b) =>
        byLinkRate(a, b) ||
        a.nodes - b.nodes ||
        a.processesPerNode - b.processesPerNode ||
        REDUCTIONS.indexOf(a.reduction) - REDUCTIONS.indexOf(b.reduction) ||
        PROBE_LIBRARIES.indexOf(a.library) - PROBE_LIBRARIES.indexOf(b.library) ||
        COLLECTIVES.indexOf(a.collective) - COLLECTIVES.indexOf(b.collective),
    );
}

function referenceOf(repeats: readonly ProbeRecord[]): Interval | null {
  const rates = repeats.flatMap((record) => record.result.metrics.referenceGbps ?? []);
  return rates.length === 0 ? null : meanWithInterval(rates);
}

/** The collective the probe timed, as its result says (older results: all-reduce). */
function collectiveOf(record: ProbeRecord): Collective {
  const value = record.result.metrics["collective"];
  return (COLLECTIVES as readonly unknown[]).includes(value) ? (value as Collective) : "all-reduce";
}

/** What the probe summed with, as its result says (older results: torch). */
function libraryOf(record: ProbeRecord): ProbeLibrary {
  return record.result.metrics["library"] === "mpi" ? "mpi" : "torch";
}

/** Slowest link first; "unlimited" last. */
function byLinkRate(
  a: { linkGbps: number | null; bandwidth: string },
  b: { linkGbps: number | null; bandwidth: string },
): number {
  return (a.linkGbps ?? Infinity) - (b.linkGbps ?? Infinity) || a.bandwidth.localeCompare(b.bandwidth);
}

/** Knob names whose values differ between training runs: the ones a panel's label must name to tell panels apart. */
function knobsThatVary(records: readonly TrainRecord[]): string[] {
  const names = [...new Set(records.flatMap((record) => Object.keys(record.params.knobs)))].sort();
  return names.filter(
    (name) =>
      new Set(records.map((record) => JSON.stringify((record.params.knobs as Record<string, unknown>)[name] ?? null)))
        .size > 1,
  );
}

function sortedEntries(object: object): [string, unknown][] {
  return Object.entries(object).sort(([a], [b]) => a.localeCompare(b));
}

export function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [item]);
    else group.push(item);
  }
  return groups;
}

/**
 * `ringlab predict`: a training configuration's throughput and scaling efficiency over node counts nobody has to run,
 * from a calibration (`ringlab calibrate`): the model plan and the report use, and where communication starts to take
 * longer than compute.
 */
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { InvalidArgumentError, Option, type Command } from "commander";
import { MODELS, REDUCTIONS, throughputUnit, TRAIN_KNOBS } from "../../config/registry.ts";
import { UsageError } from "../../util/errors.ts";
import { isPrediction, predictTraining, type MissingInput, type RunPrediction } from "../../predict/predict.ts";
import { PUBLISHED_ONLY, type PredictionContext } from "../../predict/inputs.ts";
import { defaultCalibrationFile, loadCalibration } from "../../predict/store.ts";
import { AWS_INSTANCE_TYPES, instanceTypeFacts } from "../../catalogue/aws-instance-types.ts";
import { formatTable } from "../format.ts";
import {
  parseBandwidth,
  parseCpuQuota,
  parseNodeCounts,
  parsePositiveInt,
  parsePositiveNumber,
  parseSafePath,
} from "../options.ts";
import { ASSUMED_MEMORY, constantsOf, isMemoryPrediction, type MemoryConstants } from "../../predict/memory.ts";
import { recommend, type Recommendation } from "../../predict/recommend.ts";
import type { Calibration } from "../../predict/calibration.ts";
import type { CommandHost } from "../host.ts";
import { rateUnit } from "../../results/worker-result.ts";
import { err, out } from "../../util/output.ts";
import { DP_SHARDINGS, PIPELINE_SCHEDULES } from "../../layouts/composition.ts";
import { predictOnCluster, type ClusterOptions } from "./predict-cluster.ts";
import { loadCaseFile } from "../../predict/case-file.ts";
import { scoreCase, type CaseScore } from "../../predict/case-score.ts";
import type { CaseFile } from "../../predict/case.ts";

interface PredictOptions extends Omit<ClusterOptions, "cluster" | "optimizer" | "bandwidth" | "batch"> {
  readonly cluster?: string;
  readonly model: string;
  readonly batch: number;
  readonly bandwidth: string;
  readonly case?: string;
  readonly nodes: number[];
  readonly processesPerNode: number;
  readonly reduction: string;
  readonly precision: string;
  readonly parallelism: string;
  readonly fsdpSharding?: string;
  readonly microBatches?: number;
  readonly pipelineSchedule?: string;
  readonly optimizer: string;
  readonly sequenceLength?: number;
  readonly layers?: number;
  readonly width?: number;
  readonly heads?: number;
  readonly activationCheckpointing: boolean;
  readonly memoryPerNode?: number;
  readonly recommend: boolean;
  readonly cpus?: number;
  readonly instanceType?: string;
  readonly hierarchical: boolean;
  readonly intraNodeBandwidth?: string;
  readonly calibration?: string;
  readonly format: string;
}

/**
 * `ringlab predict`: its options, and an action that checks them, then prints the curve or, with --recommend, the
 * layouts.
 */
export function registerPredict(program: Command, host: CommandHost): void {
  program
    .command("predict")
    .description(
      "predict a training configuration's throughput and scaling efficiency over node counts from a calibration, and where communication overtakes compute",
    )
    .addOption(new Option("--model <model>", "the model (required without --case)").choices([...MODELS]))
    .option(
      "--batch <n>",
      "batch size per worker (required without --case; with --cluster: per GPU and micro-batch, default 1)",
      parsePositiveInt,
    )
    .option(
      "--bandwidth <rate>",
      "the link, as a campaign's bandwidth (1gbit, 300mbit, unlimited; required without --case or --cluster)",
      parseBandwidth,
    )
    .option(
      "--case <file>",
      "a published case (test/bench/data/published/*.yaml; docs/case.schema.json): the prediction beside each figure it publishes, and the error",
      parseSafePath,
    )
    .option(
      "--nodes <counts>",
      "node counts: 1..64 or 1,2,4,8 (at most 1024)",
      parseNodeCounts,
      parseNodeCounts("1..10"),
    )
    .option("--processes-per-node <p>", "worker processes per node", parsePositiveInt, 1)
    .addOption(
      new Option("--reduction <reduction>", "how gradients are summed").choices([...REDUCTIONS]).default("ring"),
    )
    .addOption(
      new Option("--precision <precision>", "fp32, amp (mixed precision, GPUs only) or bf16")
        .choices([...TRAIN_KNOBS.precision.choices!])
        .default("fp32"),
    )
    .addOption(
      new Option("--parallelism <layout>", "how the model is laid out over the workers")
        .choices([...TRAIN_KNOBS.parallelism.choices!])
        .default("ddp"),
    )
    .addOption(
      new Option("--fsdp-sharding <sharding>", "parallelism fsdp: full (ZeRO-3), grad-op (ZeRO-2) or none").choices([
        ...TRAIN_KNOBS.fsdpSharding.choices!,
      ]),
    )
    .option("--micro-batches <m>", "parallelism pipeline: micro-batches per batch", parsePositiveInt)
    .addOption(
      new Option("--pipeline-schedule <schedule>", "parallelism pipeline: gpipe or 1f1b").choices([
        ...TRAIN_KNOBS.pipelineSchedule.choices!,
      ]),
    )
    .addOption(
      new Option("--optimizer <optimizer>", "sgd or adamw").choices([...TRAIN_KNOBS.optimizer.choices!]).default("sgd"),
    )
    .option("--sequence-length <s>", "language models: tokens per sequence (default: the model's)", parsePositiveInt)
    .option("--layers <n>", "language models: blocks (default: the model's)", parsePositiveInt)
    .option("--width <h>", "language models: hidden width (default: the model's)", parsePositiveInt)
    .option("--heads <n>", "language models: attention heads (default: the model's)", parsePositiveInt)
    .option("--activation-checkpointing", "language models: recompute each block's activations in backward", false)
    .option(
      "--memory-per-node <GiB>",
      "what one node may hold (a local testbed's memoryPerNodeGiB): says which layouts fit",
      parsePositiveNumber,
    )
    .option(
      "--recommend",
      "every layout ringlab knows at each node count, those that fit ranked by predicted throughput, and on the local testbed the campaign that would check the top two",
      false,
    )
    .option(
      "--cpus <cores>",
      "the CPU quota per worker the calibration was measured at (local testbed; default: the calibration's, when it has one for this model and batch)",
      parseCpuQuota,
    )
    .option(
      "--instance-type <type>",
      "an AWS instance type of the catalogue: its GPU's published throughput and its network's baseline answer where the calibration does not (each said so)",
      parseInstanceType,
    )
    .option(
      "--hierarchical",
      "a two-level all-reduce (inside each node, then between nodes: Horovod's hierarchical all-reduce, NCCL's rings) instead of one ring over every worker; needs --processes-per-node 2 or more",
      false,
    )
    .option(
      "--intra-node-bandwidth <rate>",
      "with --hierarchical: the link between a node's GPUs (2400gbit for 300 GB/s of NVLink per direction), where no probe of one node measured it",
      parseBandwidth,
    )
    .option(
      "--calibration <file-or-results-dir>",
      "default: <state-dir>/calibration.json (see `ringlab calibrate`); optional with --instance-type",
      parseSafePath,
    )
    .option(
      "--cluster <name-or-file>",
      "a GPU cluster of the catalogue (src/catalogue/clusters/nodes/: p5.48xlarge, dgx-h100, ...) or a cluster file of one's own: predicts from datasheets and published figures, no calibration",
      parseClusterName,
    )
    .option("--tp <n>", "with --cluster: tensor-parallel degree (default 1)", parsePositiveInt)
    .option("--pp <n>", "with --cluster: pipeline stages (default 1)", parsePositiveInt)
    .option("--dp <n>", "with --cluster: data-parallel degree (default: the GPUs over tp × pp × cp)", parsePositiveInt)
    .option("--cp <n>", "with --cluster: context-parallel degree (default 1)", parsePositiveInt)
    .addOption(
      new Option(
        "--dp-sharding <sharding>",
        "with --cluster: none, optimizer, gradients or full (ZeRO-0 to 3; default full for a language model)",
      ).choices([...DP_SHARDINGS]),
    )
    .addOption(
      new Option("--schedule <schedule>", "with --cluster and --pp: the pipeline's schedule (default 1f1b)").choices([
        ...PIPELINE_SCHEDULES,
      ]),
    )
    .option(
      "--virtual-stages <v>",
      "with --schedule interleaved-1f1b: stages a rank holds (default 2)",
      parsePositiveInt,
    )
    .option(
      "--gradient-accumulation <k>",
      "with --cluster: micro-batches a step accumulates (default 1)",
      parsePositiveInt,
    )
    .addOption(
      new Option("--checkpointing <mode>", "with --cluster: activation checkpointing, none, selective or full").choices(
        ["none", "selective", "full"],
      ),
    )
    .option(
      "--gpu-throughput <per-second>",
      "with --cluster: one GPU's measured throughput (tokens/s or images/s), which wins over the published figures",
      parsePositiveNumber,
    )
    .option("--allow-cross-node-tensor", "with --cluster: accept a tensor-parallel group wider than a node", false)
    .option("--format <format>", "text, or json for scripts", "text")
    .action(
      host.action((options: PredictOptions, command: Command) => {
        if (options.case !== undefined) {
          printCase(options);
          return;
        }
        if (options.format !== "text" && options.format !== "json")
          throw new UsageError(`--format ${JSON.stringify(options.format)}: expected text or json`);
        if (options.cluster !== undefined) {
          const optimizerGiven = command.getOptionValueSource("optimizer") !== "default";
          const nodesGiven = command.getOptionValueSource("nodes") !== "default";
          const precisionGiven = command.getOptionValueSource("precision") !== "default";
          // The optimizer default is the CPU testbed's (sgd); on a cluster a language model trains with AdamW.
          const { optimizer: _default, ...given } = options;
          predictOnCluster({
            ...given,
            cluster: options.cluster,
            // A GPU cluster trains in bf16 unless told otherwise; fp32 is the CPU testbed's default.
            precision: precisionGiven ? options.precision : "bf16",
            ...(optimizerGiven ? { optimizer: options.optimizer } : {}),
            nodes: nodesGiven ? options.nodes : [1],
          } as ClusterOptions);
          return;
        }
        checkCurveOptions(options);
        const basis = basisOf(options, String(command.optsWithGlobals()["stateDir"]));
        if (options.recommend) printRecommendations(options, basis);
        else printCurve(options, basis);
      }),
    );
}

/** A catalogue name or a cluster file's path: the name only a lookup key, the path a safe one. */
function parseClusterName(value: string): string {
  return /\.ya?ml$/.test(value)
    ? parseSafePath(value)
    : value.replace(/[^A-Za-z0-9._-]/g, "") === value
      ? value
      : parseSafePath(value);
}

/** Without --case, the model, batch and link are required: exit 2 naming those missing. */
function checkCurveOptions(options: PredictOptions): void {
  const missing = [
    ...(options.model === undefined ? ["--model"] : []),
    ...(options.batch === undefined ? ["--batch"] : []),
    ...(options.bandwidth === undefined ? ["--bandwidth"] : []),
  ];
  if (missing.length > 0)
    throw new UsageError(`required option${missing.length === 1 ? "" : "s"} ${missing.join(", ")} not specified`, {
      hint: "or ask about a published case with --case FILE, or a GPU cluster with --cluster (p5.48xlarge, dgx-h100, ...)",
    });
}

/** --case: the case's published figures beside ringlab's predictions, as text or JSON (exit 2 on a bad file). */
function printCase(options: PredictOptions): void {
  if (options.format !== "text" && options.format !== "json")
    throw new UsageError(`--format ${JSON.stringify(options.format)}: expected text or json`);
  const file = loadCaseFile(options.case!);
  const score = scoreCase(file, dirname(resolve(options.case!)));
  if (options.format === "json") {
    out(`${JSON.stringify({ case: options.case, ...score }, null, 2)}\n`);
    return;
  }
  out(formatCaseScore(options.case!, file, score));
}

/**
 * The case's text: what it is, a row per published figure (published, predicted, error), and the memory model's terms
 * for the largest rank.
 */
function formatCaseScore(path: string, file: CaseFile, score: CaseScore): string {
  const number = (value: number | null) => (value === null ? "-" : value.toPrecision(4));
  const rows = score.figures.map((figure) => [
    figure.figure,
    number(figure.published),
    number(figure.predicted),
    figure.error === null ? "-" : `${(100 * figure.error).toFixed(1)}%`,
    figure.band === undefined
      ? "-"
      : `${number(figure.band.low)}-${number(figure.band.high)}${inBand(figure.published, figure.band) ? "" : " (outside)"}`,
    figure.why ?? figure.note ?? "",
  ]);
  const terms =
    score.terms === null
      ? []
      : [
          `the largest rank's terms (GiB, before the allocator's reserve): ${Object.entries(score.terms)
            .filter(([, bytes]) => bytes > 0)
            .map(([term, bytes]) => `${term} ${(bytes / 2 ** 30).toFixed(2)}`)
            .join(", ")}`,
        ];
  const throughput =
    "problem" in score.throughput
      ? `no throughput prediction: ${score.throughput.problem}`
      : `throughput: compute ${score.throughput.basis}: ${score.throughput.source}; the band is the no-overlap and full-overlap steps`;
  return [
    `${path}${file.about === undefined ? "" : `: ${file.about}`}`,
    `source: ${score.source}`,
    `model states counted as ${score.framework}; a peak is the allocator's reserve at the tensors' peak`,
    formatTable(["figure", "published", "ringlab", "error", "band", "note"], rows).trimEnd(),
    ...terms,
    ...(score.problem === null ? [] : [`no memory prediction: ${score.problem}`]),
    throughput,
    "",
  ].join("\n");
}

/** Whether a published figure lies between the no-overlap and full-overlap predictions. */
function inBand(published: number, band: { readonly low: number; readonly high: number }): boolean {
  return published >= Math.min(band.low, band.high) && published <= Math.max(band.low, band.high);
}

/**
 * What a prediction is made from: the calibration (if any), how the output names it, the CPU quota, and the context
 * asked against.
 */
interface Basis {
  readonly calibration: Calibration | undefined;
  /** The calibration's path, or PUBLISHED_ONLY without one. */
  readonly from: string;
  readonly cpus: number | undefined;
  readonly context: PredictionContext;
}

/**
 * The options checked, the calibration loaded and the CPU quota settled: what the prediction is made from (exit 2 where
 * they do not go together).
 */
function basisOf(options: PredictOptions, stateDir: string): Basis {
  const file = options.calibration ?? defaultCalibrationFile(resolve(stateDir));
  const hasCalibration = options.calibration !== undefined || existsSync(file);
  checkOptions(options, file, hasCalibration);
  const calibration = hasCalibration ? loadCalibration(file, (message) => err(`warning: ${message}\n`)) : undefined;
  const cpus = cpuQuotaOf(options, calibration);
  checkProcessesPerNode(options);
  const context = {
    ...(calibration === undefined ? {} : { calibration }),
    ...(cpus === undefined ? {} : { cpusPerNode: cpus }),
    ...(options.instanceType === undefined ? {} : { instanceType: options.instanceType }),
    ...(options.intraNodeBandwidth === undefined ? {} : { intraNodeBandwidth: options.intraNodeBandwidth }),
  };
  return { calibration, from: calibration === undefined ? PUBLISHED_ONLY : resolve(file), cpus, context };
}

/** The options that do not go together, or ask for what is not there (no calibration and no instance type): exit 2. */
function checkOptions(options: PredictOptions, file: string, hasCalibration: boolean): void {
  if (options.format !== "text" && options.format !== "json")
    throw new UsageError(`--format ${JSON.stringify(options.format)}: expected text or json`);
  if (!hasCalibration && options.instanceType === undefined) {
    throw new UsageError(
      `no calibration at ${file}: predict needs what earlier campaigns measured, or an instance type`,
      {
        hint: "make one with `ringlab calibrate <results dir>...`, pass --calibration, or ask about AWS with --instance-type (e.g. p4d.24xlarge)",
      },
    );
  }
  if (options.instanceType !== undefined && options.cpus !== undefined)
    throw new UsageError("--cpus is the local testbed's CPU quota: it does not go with --instance-type");
  if (options.hierarchical && (options.processesPerNode < 2 || options.reduction !== "ring")) {
    throw new UsageError(
      `--hierarchical: a two-level ring needs several processes per node (--processes-per-node ${options.processesPerNode}) and --reduction ring (${options.reduction})`,
    );
  }
  if (
    options.intraNodeBandwidth !== undefined &&
    (!options.hierarchical || options.intraNodeBandwidth === "unlimited")
  ) {
    throw new UsageError(
      "--intra-node-bandwidth: a rate (such as 2400gbit) for the link inside a node of a --hierarchical all-reduce",
    );
  }
}

/**
 * The CPU quota per worker: --cpus, else the calibration's one quota for the model (exit 2 when it has several); none
 * on AWS.
 */
function cpuQuotaOf(options: PredictOptions, calibration: Calibration | undefined): number | undefined {
  // A local calibration is per CPU quota (for any batch size of the model: another batch's compute is derived); an AWS
  // question has none.
  const quotas =
    options.instanceType !== undefined || calibration === undefined
      ? []
      : [
          ...new Set(
            calibration.compute
              .filter((entry) => entry.model === options.model && entry.precision === options.precision)
              .map((entry) => entry.cpusPerNode),
          ),
        ];
  if (options.cpus === undefined && quotas.length > 1) {
    throw new UsageError(
      `the calibration has ${options.model} under several CPU quotas (${quotas.map((q) => q ?? "none").join(", ")})`,
      { hint: "pick one with --cpus" },
    );
  }
  return options.cpus ?? quotas[0] ?? undefined;
}

/** On AWS, one process per GPU: exit 2 when --processes-per-node asks for more than the instance type has. */
function checkProcessesPerNode(options: PredictOptions): void {
  const gpus = options.instanceType === undefined ? undefined : instanceTypeFacts(options.instanceType)!.gpus;
  if (gpus !== undefined && options.processesPerNode > gpus) {
    throw new UsageError(
      `--processes-per-node ${options.processesPerNode}: ${options.instanceType} has ${gpus} GPU${gpus === 1 ? "" : "s"}, one process each`,
    );
  }
}

/** --recommend: every layout at each node count, those that fit ranked by predicted throughput, as text or JSON. */
function printRecommendations(options: PredictOptions, { calibration, from, cpus, context }: Basis): void {
  const memory = memoryConstantsOf(calibration, options.instanceType === undefined ? "cpu" : "cuda", cpus);
  const workload = workloadKnobs(options);
  const tables = options.nodes.map((nodes) => ({
    nodes,
    rows: recommend(
      {
        model: options.model,
        batchSize: options.batch,
        nodes,
        processesPerNode: options.processesPerNode,
        bandwidth: nodes === 1 ? null : options.bandwidth,
        knobs: workload,
        ...(options.memoryPerNode === undefined ? {} : { memoryPerNodeBytes: options.memoryPerNode * 2 ** 30 }),
      },
      context,
      memory,
    ),
  }));
  if (options.format === "json") {
    out(`${JSON.stringify({ from, memory: memory.source, nodes: tables }, null, 2)}\n`);
    return;
  }
  out(formatRecommendations(options, tables, from, memory.source, cpus));
}

/**
 * The curve over the node counts for the options' layout, as text or JSON, and where communication overtakes compute.
 */
function printCurve(options: PredictOptions, { from, cpus, context }: Basis): void {
  const curve = predictCurve(options, context);
  const points = curve.flatMap(({ nodes, outcome }) => (isPrediction(outcome) ? [{ nodes, prediction: outcome }] : []));
  const missing = curve.flatMap(({ outcome }) => (isPrediction(outcome) ? [] : [outcome]));
  // Nothing to draw (one node alone is no curve when more were asked for): exit 2 with what is missing. Some
  // points missing (one node's processes, say): drawn without them, each said.
  const curveDrawn = options.nodes.every((nodes) => nodes === 1)
    ? points.length > 0
    : points.some((point) => point.nodes > 1);
  if (!curveDrawn) throw new UsageError(`cannot predict: ${missing[0]!.missing}`);
  const overtakes = points.find(({ prediction }) => prediction.allReduceSeconds > prediction.computeSeconds)?.nodes;
  if (options.format === "json") {
    out(
      `${JSON.stringify(
        {
          from,
          instanceType: options.instanceType ?? null,
          cpusPerNode: cpus ?? null,
          nodes: points.map((point) => point.nodes),
          points: points.map((point) => point.prediction),
          missing,
          communicationOvertakesComputeAtNodes: overtakes ?? null,
        },
        null,
        2,
      )}\n`,
    );
    return;
  }
  out(formatCurve(options, points, missing, from, overtakes));
}

/** Each node count's prediction for the options' layout and workload, or what it is missing. */
function predictCurve(
  options: PredictOptions,
  context: PredictionContext,
): { nodes: number; outcome: RunPrediction | MissingInput }[] {
  const layout = {
    parallelism: options.parallelism,
    ...(options.fsdpSharding === undefined ? {} : { fsdpSharding: options.fsdpSharding }),
    ...(options.microBatches === undefined ? {} : { microBatches: options.microBatches }),
    ...(options.pipelineSchedule === undefined ? {} : { pipelineSchedule: options.pipelineSchedule }),
  };
  // One node uses no link, as a campaign's plan has it (its processes exchange inside the node).
  return options.nodes.map((nodes) => ({
    nodes,
    outcome: predictTraining(
      {
        runId: `${nodes} node${nodes === 1 ? "" : "s"}`,
        model: options.model,
        batchSize: options.batch,
        nodes,
        processesPerNode: options.processesPerNode,
        bandwidth: nodes === 1 ? null : options.bandwidth,
        knobs: { reduction: options.reduction, ...workloadKnobs(options), ...layout },
        hierarchical: options.hierarchical,
      },
      context,
    ),
  }));
}

/**
 * The curve's text: one row per node count, then where communication overtakes compute, the sources, and the node
 * counts with no prediction.
 */
function formatCurve(
  options: PredictOptions,
  points: readonly { nodes: number; prediction: RunPrediction }[],
  missing: readonly MissingInput[],
  file: string,
  overtakes: number | undefined,
): string {
  const pct = (value: number) => `${(value * 100).toFixed(1)}%`;
  const rows = points.map(({ nodes, prediction: point }) => [
    String(nodes),
    String(nodes * options.processesPerNode),
    point.computeSeconds.toFixed(4),
    point.allReduceSeconds.toFixed(4),
    point.stepSeconds.toFixed(4),
    point.throughput.toFixed(1),
    pct(point.scalingEfficiency.value),
    point.overlapShare.toFixed(2),
    pct(point.noOverlapEfficiency),
    pct(point.fullOverlapEfficiency),
  ]);
  const last = points[points.length - 1]!.nodes;
  // One line per source, not per node count: "derived ... for 4 nodes", "... for 5 nodes" say the same.
  const sources = [
    ...new Set(
      points.flatMap(({ prediction }) =>
        [prediction.sources.compute, prediction.sources.link, prediction.sources.overlap].map((source) =>
          source.replace(/ for \d+ nodes( at |$)/, " for the other node counts$1"),
        ),
      ),
    ),
  ].filter((source) => source !== "no link (one node)");
  return [
    `${options.model} at batch ${options.batch} per worker, ${options.precision}, ${options.bandwidth}, ${options.hierarchical ? "hierarchical ring" : options.reduction}, ${options.processesPerNode} process${options.processesPerNode === 1 ? "" : "es"} per node` +
      `${options.instanceType === undefined ? "" : ` on ${options.instanceType}`}; from ${file} (φ: the share of the all-reduce hidden behind compute; no overlap and full overlap are the bounds):`,
    formatTable(
      [
        "nodes",
        "workers",
        "t_c (s)",
        "t_ar (s)",
        "step (s)",
        rateUnit(points[0]!.prediction.unit),
        "efficiency",
        "φ",
        "no overlap",
        "full overlap",
      ],
      rows,
    ).trimEnd(),
    overtakes === undefined
      ? `communication stays below compute up to ${last} nodes`
      : `communication takes longer than compute from ${overtakes} nodes on (t_ar > t_c)`,
    ...sources.map((source) => `source: ${source}`),
    ...missing.map((entry) => `${entry.runId}: no prediction: ${entry.missing}`),
    "",
  ].join("\n");
}

/** An instance type of the catalogue, nothing else (the value becomes a lookup key only). */
function parseInstanceType(value: string): string {
  if (instanceTypeFacts(value)?.gpuModel == null) {
    const gpuTypes = Object.entries(AWS_INSTANCE_TYPES)
      .filter(([, facts]) => facts.gpus > 0)
      .map(([type]) => type);
    throw new InvalidArgumentError(
      `${JSON.stringify(value)} is not a GPU instance type ringlab's catalogue knows (src/catalogue/aws-instance-types.ts): one of ${gpuTypes.join(", ")}`,
    );
  }
  return value;
}

/**
 * The workload's own knobs from the options (precision, optimizer, a language model's shape), as a campaign's train
 * section sets them.
 */
function workloadKnobs(options: PredictOptions): Record<string, string | number | boolean> {
  return {
    precision: options.precision,
    optimizer: options.optimizer,
    ...(options.sequenceLength === undefined ? {} : { sequenceLength: options.sequenceLength }),
    ...(options.layers === undefined ? {} : { layers: options.layers }),
    ...(options.width === undefined ? {} : { width: options.width }),
    ...(options.heads === undefined ? {} : { heads: options.heads }),
    ...(options.activationCheckpointing ? { activationCheckpointing: true } : {}),
  };
}

/** The calibration's memory entry for the machine asked about, else ringlab's assumption. */
function memoryConstantsOf(
  calibration: Calibration | undefined,
  device: "cpu" | "cuda",
  cpus: number | undefined,
): MemoryConstants {
  const entries =
    calibration?.memory.filter(
      (candidate) => candidate.device === device && (device === "cuda" || candidate.cpusPerNode === (cpus ?? null)),
    ) ?? [];
  return constantsOf(entries, ASSUMED_MEMORY[device]) ?? ASSUMED_MEMORY[device];
}

/**
 * The --recommend text: a table of layouts per node count, the campaign that would check the top two, and the sources.
 */
function formatRecommendations(
  options: PredictOptions,
  tables: readonly { nodes: number; rows: readonly Recommendation[] }[],
  file: string,
  memorySource: string,
  cpus: number | undefined,
): string {
  const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(2);
  const lines = [
    `${options.model} at batch ${options.batch} per replica, ${options.precision}, ${options.optimizer}, ${options.bandwidth}; every layout, ` +
      `those that fit${options.memoryPerNode === undefined ? "" : ` ${options.memoryPerNode} GiB per node`} first, fastest first; from ${file}:`,
  ];
  const sources = new Set<string>([`memory: ${memorySource}`]);
  for (const { nodes, rows } of tables) {
    const table = rows.map((row) => {
      const prediction = "throughput" in row.prediction ? row.prediction : undefined;
      const memory = isMemoryPrediction(row.memory) ? row.memory : undefined;
      if (prediction !== undefined) for (const source of Object.values(prediction.sources)) sources.add(source);
      return [
        row.candidate.name,
        row.fits === null ? "-" : row.fits ? "yes" : "NO",
        memory === undefined ? "-" : gib(memory.rankBytes),
        memory === undefined ? "-" : gib(memory.nodeBytes),
        prediction === undefined ? "-" : prediction.stepSeconds.toFixed(3),
        prediction === undefined ? "-" : prediction.throughput.toFixed(1),
        prediction === undefined
          ? `no prediction: ${"missing" in row.prediction ? row.prediction.missing : ""}`
          : `${(100 * prediction.scalingEfficiency.value).toFixed(1)}%`,
      ];
    });
    lines.push(
      "",
      `${nodes} node${nodes === 1 ? "" : "s"} × ${options.processesPerNode}:`,
      formatTable(
        [
          "layout",
          "fits",
          "GiB per rank",
          "GiB per node",
          "step (s)",
          rateUnit(throughputUnit(options.model)),
          "efficiency",
        ],
        table,
      ).trimEnd(),
    );
    const top = rows.filter((row) => row.fits !== false && "throughput" in row.prediction).slice(0, 2);
    if (cpus !== undefined && nodes > 1 && top.length > 0) lines.push(checkCampaign(options, nodes, top, cpus));
  }
  lines.push("", ...[...sources].map((source) => `source: ${source}`), "");
  return lines.join("\n");
}

/**
 * The local campaign that would measure the top layouts at this node count and link: their knobs as matrix axes (a
 * layout's own knobs vary only its runs; two variants of one layout make their product), the workload's in train.
 */
function checkCampaign(options: PredictOptions, nodes: number, top: readonly Recommendation[], cpus: number): string {
  const names = top.map((row) => row.candidate.name).join(" and ");
  const axes = new Map<string, Set<string>>();
  for (const row of top)
    for (const [knob, value] of Object.entries(row.candidate.knobs))
      axes.set(knob, (axes.get(knob) ?? new Set()).add(String(value)));
  const matrix = [...axes].map(([knob, values]) => `${knob}: [${[...values].join(", ")}]`).join(", ");
  const workload = Object.entries(workloadKnobs(options))
    .map(([knob, value]) => `${knob}: ${String(value)}`)
    .join(", ");
  // One node holds a whole replica, which a memory limit may not: no baseline then.
  const nodeCounts = options.memoryPerNode === undefined ? `[1, ${nodes}]` : `[${nodes}]`;
  return [
    `the campaign that would check ${names} (save it as a file; ringlab plan FILE, then ringlab campaign FILE):`,
    `  testbed: {target: local, name: recommend, nodes: ${nodes}, cpusPerNode: ${cpus}${options.memoryPerNode === undefined ? "" : `, memoryPerNodeGiB: ${options.memoryPerNode}`}}`,
    "  campaign:",
    `    matrix: {nodes: ${nodeCounts}, model: ${options.model}, batchSize: ${options.batch}, bandwidth: ${options.bandwidth}, ${matrix}}`,
    `    train: {${workload}}`,
  ].join("\n");
}

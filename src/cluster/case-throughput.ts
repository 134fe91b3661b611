/**
 * A published case's throughput figures (tokens or images per second, per GPU or in all, scaling efficiency, MFU,
 * TFLOP/s per GPU) predicted from what a user has before renting: the case's cluster (a catalogue entry or its own
 * cluster file), model, layout, batch and precision, and its `inputs` (a published single-GPU throughput), nothing of
 * its published multi-GPU figures. Each figure comes with the error and whether it lies inside the no-overlap /
 * full-overlap band. The case file itself is read by src/predict/case.ts; this takes its fields. Pure but for
 * resolving the cluster's name (./load.ts).
 */
import type { ActivationCheckpointing } from "../workload/transformer.ts";
import { clusterCatalogue, resolveNodeType } from "./load.ts";
import type { NodeType } from "./description.ts";
import type { DataParallelSharding, PipelineSchedule } from "../layouts/composition.ts";
import type { LayoutDegrees } from "./groups.ts";
import type { Float8Recipe, Transport } from "./software.ts";
import { predictClusterStep, type ClusterPrediction } from "./step.ts";
import { clusterWorkload, type ClusterWorkload } from "./workload.ts";

/** The fields of a case file (src/predict/case.ts's CaseFile) a throughput prediction reads. */
export interface ThroughputCase {
  readonly cluster?: string | undefined;
  readonly nodes: number;
  readonly gpusPerNode?: number | undefined;
  readonly model: string | object;
  readonly layout: {
    readonly dp: number;
    readonly dpSharding: DataParallelSharding;
    readonly tp: number;
    readonly pp: number;
    readonly cp: number;
    readonly pipelineSchedule?: PipelineSchedule | undefined;
    readonly virtualStages?: number | undefined;
    readonly microBatches?: number | undefined;
  };
  readonly batch?:
    | {
        readonly micro: number;
        readonly sequence?: number | undefined;
        readonly gradientAccumulation?: number | undefined;
      }
    | undefined;
  readonly precision: string;
  readonly optimizer: string;
  readonly activationCheckpointing: ActivationCheckpointing;
  readonly compile?: boolean | undefined;
  readonly float8?: Float8Recipe | undefined;
  readonly asyncTensorParallel?: boolean | undefined;
  readonly transport?: Transport | undefined;
  readonly inputs?:
    | Readonly<Record<string, { readonly value: number; readonly unit?: string | undefined; readonly source: string }>>
    | undefined;
}

export const THROUGHPUT_FIGURES = [
  "tokensPerSecondPerGpu",
  "imagesPerSecond",
  "imagesPerSecondPerGpu",
  "scalingEfficiency",
  "mfu",
  "tflopsPerGpu",
] as const;
export type ThroughputFigure = (typeof THROUGHPUT_FIGURES)[number];

export interface ThroughputAnswer {
  /** Each figure predicted, with the no-overlap and full-overlap bounds (lower and upper). */
  readonly figures: Readonly<
    Record<ThroughputFigure, { readonly predicted: number; readonly low: number; readonly high: number }>
  >;
  readonly prediction: ClusterPrediction;
}

/** torchtitan's default micro-batches for a pipeline: as many as stages (pipeline_parallel_microbatches). */
function microBatchesOf(layout: ThroughputCase["layout"]): number {
  return layout.pp > 1 ? (layout.microBatches ?? layout.pp) : 1;
}

/** The case's question to the cluster predictor, or why ringlab cannot ask it. */
export function predictCaseThroughput(
  file: ThroughputCase,
  caseFolder: string,
): ThroughputAnswer | { readonly missing: string } {
  if (file.cluster === undefined) return { missing: "the case names no cluster" };
  const node = nodeWithGpus(resolveNodeType(file.cluster, caseFolder), file.gpusPerNode);
  const workload = workloadOf(file);
  if ("missing" in workload) return workload;
  const schedule = file.layout.pipelineSchedule ?? "1f1b";
  const layout: LayoutDegrees = {
    tp: file.layout.tp,
    pp: file.layout.pp,
    dp: file.layout.dp,
    cp: file.layout.cp,
    dpSharding: file.layout.dpSharding,
    pipelineSchedule: schedule,
    virtualStages: file.layout.virtualStages ?? (schedule === "interleaved-1f1b" ? 2 : 1),
    microBatches: microBatchesOf(file.layout),
  };
  const micro = file.batch?.micro ?? 1;
  const throughput = file.inputs?.["gpuThroughput"];
  const catalogue = clusterCatalogue();
  const prediction = predictClusterStep({
    cluster: { node, nodes: file.nodes },
    workload,
    layout,
    // A pipeline's local batch is cut into its micro-batches.
    microSamples: micro / layout.microBatches,
    gradientAccumulation: file.batch?.gradientAccumulation ?? 1,
    precision: file.precision,
    optimizer: file.optimizer,
    published: {
      rows: catalogue.collectives,
      nodeTypes: new Map([...catalogue.nodes].map(([name, entry]) => [name, entry.type])),
    },
    software: {
      compile: file.compile ?? false,
      float8: file.float8 ?? "none",
      asyncTensorParallel: file.asyncTensorParallel ?? false,
      transport: file.transport,
    },
    ...(throughput === undefined
      ? {}
      : {
          measured: {
            samplesPerSecond: throughput.value,
            unit: throughput.unit ?? "samples/s",
            source: throughput.source,
          },
        }),
  });
  if ("missing" in prediction) return prediction;
  const gpus = prediction.gpus;
  const peak = node.device.kind === "gpu" ? peakOf(node, file.precision) : undefined;
  const mfuOf = (tflops: number | undefined) =>
    tflops === undefined || peak === undefined ? Number.NaN : tflops / peak;
  const tflops = (perGpu: number) =>
    workload.kind === "language" ? (perGpu * workload.flopsPerToken) / 1e12 : Number.NaN;
  const band = (of: (perGpu: number) => number) => ({
    predicted: of(prediction.perGpu.predicted),
    low: of(prediction.perGpu.noOverlap),
    high: of(prediction.perGpu.fullOverlap),
  });
  return {
    prediction,
    figures: {
      tokensPerSecondPerGpu: band((perGpu) => perGpu),
      imagesPerSecondPerGpu: band((perGpu) => perGpu),
      imagesPerSecond: band((perGpu) => perGpu * gpus),
      scalingEfficiency: {
        predicted: prediction.scalingEfficiency.predicted,
        low: prediction.scalingEfficiency.noOverlap,
        high: prediction.scalingEfficiency.fullOverlap,
      },
      tflopsPerGpu: band(tflops),
      mfu: band((perGpu) => mfuOf(tflops(perGpu))),
    },
  };
}

/**
 * The case's model: a registry name, or {parameters} for an image model the registry lacks (VGG-16), whose compute
 * only a measured throughput (inputs.gpuThroughput) can give.
 */
function workloadOf(file: ThroughputCase): ClusterWorkload | { readonly missing: string } {
  if (typeof file.model === "string")
    return clusterWorkload(file.model, file.batch?.sequence, file.activationCheckpointing);
  const parameters = (file.model as { parameters?: unknown }).parameters;
  if (typeof parameters === "number" && file.inputs?.["gpuThroughput"] !== undefined) {
    return { kind: "image", model: "(parameters only)", parameters };
  }
  return {
    missing: "a model written out as a shape, or by its parameters without inputs.gpuThroughput, has nothing to time",
  };
}

function peakOf(node: NodeType, precision: string): number | undefined {
  if (node.device.kind !== "gpu") return undefined;
  const peaks = node.device.gpu.denseTflops;
  return precision === "fp32" ? peaks.fp32?.value : (peaks.bf16 ?? peaks.fp16)?.value;
}

/**
 * A case that runs another number of GPUs a node than the node type has (gpusPerNode): each GPU keeps its own rail's
 * NICs where they are one per GPU; shared cards stay the node's.
 */
export function nodeWithGpus(node: NodeType, gpusPerNode: number | undefined): NodeType {
  const physical = node.devicesPerNode.value;
  if (gpusPerNode === undefined || gpusPerNode === physical) return node;
  const count = node.nics.perGpu ? (node.nics.count / physical) * gpusPerNode : node.nics.count;
  return {
    ...node,
    devicesPerNode: { value: gpusPerNode, source: "the case's gpusPerNode" },
    nics: { ...node.nics, count },
  };
}

/**
 * One GPU's compute in a training step (issue #69, item 4), by order of trust:
 *   1. a measured single-GPU throughput: `--gpu-throughput`, or a case's `inputs.gpuThroughput` (a figure a user has
 *      before renting: a published one-GPU run, or one rented GPU for an hour);
 *   2. a language model: the step's FLOPs from its shape (src/workload/transformer.ts) at the share of the GPU's
 *      dense peak that published runs of a model of that width and sequence reach (src/catalogue/gpu-efficiency.ts),
 *      tensor parallelism's thinner matrices looked up at width / tp; plus the optimizer step, memory-bound, as its
 *      bytes over the GPU's HBM bandwidth;
 *   3. an image model: the published single-GPU throughput of the GPU (src/catalogue/published-throughput.ts).
 * Anything else is missing, with what would answer it. The result says which was used. Pure.
 */
import { GPU_EFFICIENCY, SAME_CHIP, EFFICIENCY_SOURCE, type EfficiencyRow } from "../catalogue/gpu-efficiency.ts";
import { describeCitation, publishedThroughput } from "../catalogue/published-throughput.ts";
import { peakTflops, type GpuSpec } from "./description.ts";

/** A language model's step on one GPU, before any split but tensor parallelism's. */
export interface LanguageCompute {
  readonly kind: "language";
  /** The blocks' hidden width: what sets the GEMMs' shapes. */
  readonly width: number;
  readonly sequence: number;
  readonly layers: number;
  /** Width of the keys (and of the values): kvHeads × the head's width. */
  readonly kvWidth: number;
  /** The MLP's inner width. */
  readonly ffnWidth: number;
  readonly parameters: number;
  /** Training FLOPs per token (forward and backward, attention included), without recomputation. */
  readonly flopsPerToken: number;
  readonly activationCheckpointing: "none" | "selective" | "full";
}

export interface ImageCompute {
  readonly kind: "image";
  /** The registry's model name (resnet50). */
  readonly model: string;
}

export interface ComputeQuestion {
  readonly gpu: GpuSpec;
  readonly precision: string;
  readonly workload: LanguageCompute | ImageCompute;
  readonly tensorParallel: number;
  /** Samples (sequences or images) a GPU computes in one step, over its micro-batches. */
  readonly samplesPerGpu: number;
  /** Parameters whose optimizer step this GPU takes (its shard), and whether it is Adam's (12 bytes of state). */
  readonly optimizerParameters: number;
  readonly optimizer: string;
  /** A measured single-GPU throughput, in samples (images or tokens) per second, with where it comes from. */
  readonly measured?: { readonly samplesPerSecond: number; readonly unit: string; readonly source: string };
}

export interface ComputeAnswer {
  /** Forward and backward of the step's samples on one GPU. */
  readonly seconds: number;
  /** The optimizer step: memory-bound. */
  readonly optimizerSeconds: number;
  /** Which figure set the rate: "measured", "published efficiency" or "published throughput". */
  readonly basis: "measured" | "published efficiency" | "published throughput";
  readonly source: string;
}

/** AdamW in fp32 master weights: read parameter, gradient and two moments, write three (PyTorch's foreach step). */
const ADAM_BYTES_PER_PARAMETER = 7 * 4;
/** SGD with momentum: read parameter, gradient and momentum, write two. */
const SGD_BYTES_PER_PARAMETER = 5 * 4;

export function computeOnGpu(question: ComputeQuestion): ComputeAnswer | { readonly missing: string } {
  const optimizerSeconds = optimizerStepSeconds(question);
  if (question.measured !== undefined) {
    const perSample = question.workload.kind === "language" ? question.workload.sequence : 1;
    const seconds = (question.samplesPerGpu * perSample) / question.measured.samplesPerSecond / question.tensorParallel;
    return {
      seconds,
      optimizerSeconds: 0,
      basis: "measured",
      source: `measured on one GPU: ${question.measured.samplesPerSecond} ${question.measured.unit} (${question.measured.source}); its optimizer step is in the figure`,
    };
  }
  return question.workload.kind === "language"
    ? languageCompute(question, question.workload, optimizerSeconds)
    : imageCompute(question, question.workload);
}

/** The optimizer step's bytes over HBM bandwidth; NaN where the datasheet gives no bandwidth. */
function optimizerStepSeconds(question: ComputeQuestion): number {
  const bytes = question.optimizer === "adamw" ? ADAM_BYTES_PER_PARAMETER : SGD_BYTES_PER_PARAMETER;
  return (question.optimizerParameters * bytes) / ((question.gpu.memoryTBps?.value ?? Number.NaN) * 1e12);
}

function languageCompute(
  question: ComputeQuestion,
  workload: LanguageCompute,
  optimizerSeconds: number,
): ComputeAnswer | { readonly missing: string } {
  // bf16, fp16 and amp run on the same tensor cores at the same peak; the table has no fp32 language model.
  const tablePrecision = question.precision === "fp8" ? "fp8" : "bf16";
  const lowPrecision = question.precision !== "fp32" && question.precision !== "tf32";
  const peak = peakTflops(question.gpu, tablePrecision);
  const table = lowPrecision ? efficiencyTable(question.gpu.key, tablePrecision) : undefined;
  if (Number.isNaN(optimizerSeconds)) {
    return {
      missing: `no HBM bandwidth for the ${question.gpu.name} (its catalogue entry): the optimizer step needs it`,
    };
  }
  if (peak === undefined || table === undefined) {
    return {
      missing: `no published training efficiency for the ${question.gpu.name} at ${question.precision} (src/catalogue/gpu-efficiency.ts has ${Object.keys(GPU_EFFICIENCY).join(", ")}): give the GPU's throughput with --gpu-throughput`,
    };
  }
  const width = workload.width / question.tensorParallel;
  const row = nearestRow(table.rows, width, workload.sequence, workload.activationCheckpointing !== "none");
  const flops = (question.samplesPerGpu * workload.sequence * workload.flopsPerToken) / question.tensorParallel;
  const rate = row.mfu * peak.value * 1e12;
  return {
    seconds: flops / rate,
    optimizerSeconds,
    basis: "published efficiency",
    source:
      `${(100 * row.mfu).toFixed(1)} % of the ${question.gpu.name}'s ${peak.value} TFLOP/s (${peak.source}): ` +
      `${row.model} (width ${row.width}, sequence ${row.sequence}, checkpointing ${row.activationCheckpointing ? "full" : "none"}) ` +
      `for width ${width}${question.tensorParallel > 1 ? ` (${workload.width} / tp ${question.tensorParallel})` : ""}, sequence ${workload.sequence}, ` +
      `checkpointing ${workload.activationCheckpointing}, from ${EFFICIENCY_SOURCE.repo}@${EFFICIENCY_SOURCE.commit.slice(0, 8)} ` +
      `${EFFICIENCY_SOURCE.path} "${row.heading.replace(/^#+ /, "")}"${table.borrowed ? `, the same chip's table (${table.key})` : ""}`,
  };
}

function efficiencyTable(
  gpuKey: string,
  precision: "bf16" | "fp8",
): { rows: readonly EfficiencyRow[]; key: string; borrowed: boolean } | undefined {
  const key = Object.hasOwn(GPU_EFFICIENCY, gpuKey) ? gpuKey : SAME_CHIP[gpuKey];
  const rows = key === undefined ? undefined : GPU_EFFICIENCY[key]?.[precision];
  return rows === undefined || key === undefined ? undefined : { rows, key, borrowed: key !== gpuKey };
}

/**
 * The row nearest in width and sequence (on a log scale: twice the width is as far as twice the sequence), of the same
 * checkpointing where the table has one: the table has no selective rows, and a full row's recomputation stands for
 * selective's (torchtitan's per-op mode recomputes every other matrix product).
 */
export function nearestRow(
  rows: readonly EfficiencyRow[],
  width: number,
  sequence: number,
  checkpointing: boolean,
): EfficiencyRow {
  const sameClass = rows.filter((row) => row.activationCheckpointing === checkpointing);
  const candidates = sameClass.length > 0 ? sameClass : rows;
  const distance = (row: EfficiencyRow) =>
    Math.abs(Math.log2(row.width / width)) + Math.abs(Math.log2(row.sequence / sequence));
  return candidates.reduce((best, row) => (distance(row) < distance(best) ? row : best));
}

/** The catalogue's GPU model names of published-throughput.ts, by the catalogue GPU's name. */
function publishedGpuModel(gpu: GpuSpec): string | undefined {
  for (const model of ["V100", "A100", "H100", "H200"]) if (gpu.name.includes(model)) return `NVIDIA ${model}`;
  return undefined;
}

function imageCompute(question: ComputeQuestion, workload: ImageCompute): ComputeAnswer | { readonly missing: string } {
  const gpuModel = publishedGpuModel(question.gpu);
  const precision = question.precision === "fp32" || question.precision === "tf32" ? "fp32" : "amp";
  const rows = gpuModel === undefined ? [] : publishedThroughput(gpuModel, workload.model, precision);
  const row = rows[0];
  if (row === undefined) {
    return {
      missing: `no published single-GPU throughput of ${workload.model} (${precision}) on the ${question.gpu.name} (src/catalogue/published-throughput.ts): give it with --gpu-throughput`,
    };
  }
  return {
    seconds: question.samplesPerGpu / row.imagesPerSecond,
    optimizerSeconds: 0,
    basis: "published throughput",
    source: `${row.imagesPerSecond} images/s on one ${row.card} (${describeCitation(row.throughputAt)}); its optimizer step is in the figure`,
  };
}

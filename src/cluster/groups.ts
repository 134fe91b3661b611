/**
 * A `tp × cp × dp × pp` layout's process groups and the collectives each runs in a step, placed on the tier they span
 * (issue #69, item 2): ranks numbered tensor-parallel innermost, then context-parallel, data-parallel, pipeline stages
 * outermost (torchtitan's ParallelDims and Megatron's mesh order), so a tensor group stays inside a node while it fits
 * one, data-parallel groups span nodes, and each stage boundary's sends cross between nodes once a stage fills a node.
 * Bytes follow PyTorch's FSDP2 mixed precision (parameters gathered in bf16, gradients reduced in fp32) and DDP's
 * 25 MiB buckets; tensor parallelism is Megatron's with sequence parallelism (an all-gather and a reduce-scatter of
 * the activations around attention and around the MLP, forward and backward). Pure.
 */
import { spanOf, type GroupCollective } from "./collectives.ts";
import type { LanguageCompute } from "./compute.ts";

export const DP_SHARDINGS = ["none", "optimizer", "gradients", "full"] as const;
export type DpSharding = (typeof DP_SHARDINGS)[number];
export const PIPELINE_SCHEDULES = ["gpipe", "1f1b", "interleaved-1f1b"] as const;
export type PipelineSchedule = (typeof PIPELINE_SCHEDULES)[number];

export interface LayoutDegrees {
  readonly tp: number;
  readonly pp: number;
  readonly dp: number;
  readonly cp: number;
  readonly dpSharding: DpSharding;
  readonly pipelineSchedule: PipelineSchedule;
  /** Stages a rank holds under interleaved 1F1B (v); 1 otherwise. */
  readonly virtualStages: number;
  /** Micro-batches a step runs through the pipeline (1 without one), each `micro` samples a replica. */
  readonly microBatches: number;
}

/** The step's shape on one replica: what the collectives' sizes follow from. */
export interface StepShape {
  /** Samples in one micro-batch of one data-parallel replica. */
  readonly microSamples: number;
  /** Micro-batches a step runs: the pipeline's, times gradient accumulation. */
  readonly microBatchesPerStep: number;
  readonly precision: string;
}

/** PyTorch DDP's default bucket_cap_mb. */
const DDP_BUCKET_BYTES = 25 * 2 ** 20;
const GRADIENT_BYTES = 4;

/** Bytes of a parameter as compute sees it: gathered in bf16 under mixed precision, fp32 otherwise. */
function parameterBytes(precision: string): number {
  return precision === "fp32" || precision === "tf32" ? 4 : 2;
}

/** Bytes of an activation: half precision under bf16, fp16 or autocast. */
function activationBytes(precision: string): number {
  return parameterBytes(precision);
}

/**
 * The data-parallel collectives of a step over the parameters one rank holds of the model (`parameters` / (tp·pp)),
 * on the dp × cp ranks that share them.
 */
export function dataParallelCollectives(
  layout: LayoutDegrees,
  rankParameters: number,
  units: number,
  precision: string,
  perNode: number,
): GroupCollective[] {
  const ranks = layout.dp * layout.cp;
  if (ranks < 2) return [];
  const span = spanOf(ranks, layout.tp, perNode);
  const gradients = rankParameters * GRADIENT_BYTES;
  const gathered = rankParameters * parameterBytes(precision);
  if (layout.dpSharding === "none") {
    const calls = Math.max(1, Math.ceil(gradients / DDP_BUCKET_BYTES));
    return [
      {
        label: "DDP all-reduce of the gradients",
        op: "all_reduce",
        bytesPerCall: gradients / calls,
        calls,
        span,
        overlap: "backward",
      },
    ];
  }
  const reduceScatter: GroupCollective = {
    label: "reduce-scatter of the gradients",
    op: "reduce_scatter",
    bytesPerCall: gradients / units,
    calls: units,
    span,
    overlap: "backward",
  };
  if (layout.dpSharding !== "full") {
    return [
      reduceScatter,
      {
        label: "all-gather of the updated parameters",
        op: "all_gather",
        bytesPerCall: gathered / units,
        calls: units,
        span,
        overlap: "exposed",
      },
    ];
  }
  return [
    {
      label: "FSDP all-gather (forward)",
      op: "all_gather",
      bytesPerCall: gathered / units,
      calls: units,
      span,
      overlap: "forward",
    },
    {
      label: "FSDP all-gather (backward)",
      op: "all_gather",
      bytesPerCall: gathered / units,
      calls: units,
      span,
      overlap: "backward",
    },
    reduceScatter,
  ];
}

/** Megatron's sequence-parallel collectives: 2 all-gathers and 2 reduce-scatters a block forward, as many backward. */
export function tensorParallelCollectives(
  layout: LayoutDegrees,
  workload: LanguageCompute,
  step: StepShape,
  perNode: number,
): GroupCollective[] {
  if (layout.tp < 2) return [];
  const span = spanOf(layout.tp, 1, perNode);
  const blocks = Math.ceil(workload.layers / layout.pp);
  const recompute = workload.activationCheckpointing === "full" ? 2 : 0;
  const calls = (4 + recompute) * blocks * step.microBatchesPerStep;
  const bytesPerCall =
    (step.microSamples * workload.sequence * workload.width * activationBytes(step.precision)) / layout.cp;
  return [
    { label: "tensor-parallel all-gather", op: "all_gather", bytesPerCall, calls, span, overlap: "exposed" },
    { label: "tensor-parallel reduce-scatter", op: "reduce_scatter", bytesPerCall, calls, span, overlap: "exposed" },
  ];
}

/**
 * Context parallelism's ring attention: each block's keys and values gathered from the other cp ranks forward, and
 * their gradients reduce-scattered backward.
 */
export function contextParallelCollectives(
  layout: LayoutDegrees,
  workload: LanguageCompute,
  step: StepShape,
  perNode: number,
): GroupCollective[] {
  if (layout.cp < 2) return [];
  const span = spanOf(layout.cp, layout.tp, perNode);
  const blocks = Math.ceil(workload.layers / layout.pp);
  const calls = blocks * step.microBatchesPerStep;
  const bytesPerCall =
    (2 * step.microSamples * workload.sequence * workload.kvWidth * activationBytes(step.precision)) / layout.tp;
  return [
    {
      label: "context-parallel all-gather of keys and values",
      op: "all_gather",
      bytesPerCall,
      calls,
      span,
      overlap: "forward",
    },
    {
      label: "context-parallel reduce-scatter of their gradients",
      op: "reduce_scatter",
      bytesPerCall,
      calls,
      span,
      overlap: "backward",
    },
  ];
}

/** Each micro-batch's activations to the next stage and their gradients back, from one stage's rank. */
export function pipelineSends(
  layout: LayoutDegrees,
  workload: LanguageCompute,
  step: StepShape,
  perNode: number,
): GroupCollective[] {
  if (layout.pp < 2) return [];
  const stride = layout.tp * layout.cp * layout.dp;
  // A send crosses to another node once a stage fills one (or more) nodes.
  const span = stride >= perNode ? { ranks: 2, ranksPerNode: 1 } : { ranks: 2, ranksPerNode: 2 };
  const bytesPerCall =
    (step.microSamples * workload.sequence * workload.width * activationBytes(step.precision)) /
    (layout.tp * layout.cp);
  return [
    {
      label: "pipeline sends (activations forward, gradients back)",
      op: "send",
      bytesPerCall,
      calls: 2 * step.microBatchesPerStep * layout.virtualStages,
      span,
      overlap: "pipeline",
    },
  ];
}

/** A problem with a layout's degrees, at the field (or option) that holds the wrong number. */
export interface LayoutProblem {
  readonly field: "tp" | "pp" | "dp" | "cp" | "microBatches" | "virtualStages";
  readonly message: string;
}

/**
 * Why a layout cannot run on `gpus` GPUs of `perNode` a node, or none: its degrees must multiply to the GPU count; a
 * tensor group wider than a node sends every block's activations over the network, which only an explicit
 * `allowCrossNodeTensor` accepts; a pipeline needs micro-batches (1F1B: one a stage at least) and blocks to split.
 */
export function layoutProblems(
  layout: LayoutDegrees,
  gpus: number,
  perNode: number,
  layers: number | undefined,
  allowCrossNodeTensor: boolean,
): LayoutProblem[] {
  const problems: LayoutProblem[] = [];
  const product = layout.tp * layout.pp * layout.dp * layout.cp;
  if (product !== gpus) {
    problems.push({
      field: "dp",
      message: `tp ${layout.tp} × pp ${layout.pp} × dp ${layout.dp} × cp ${layout.cp} = ${product}, but the cluster has ${gpus} GPUs: the degrees must multiply to the GPU count`,
    });
  }
  if (layout.tp > perNode && !allowCrossNodeTensor) {
    problems.push({
      field: "tp",
      message: `${layout.tp} is more than a node's ${perNode} GPUs: every block's activations would cross the network twice a pass; say so with allowCrossNodeTensor (--allow-cross-node-tensor), or use tp ${perNode} or less`,
    });
  }
  if (layout.pp > 1 && layers !== undefined && layout.pp * layout.virtualStages > layers) {
    problems.push({
      field: "pp",
      message: `${layout.pp} stages × ${layout.virtualStages} virtual stages is more than the model's ${layers} blocks`,
    });
  }
  if (layout.pp > 1 && layout.pipelineSchedule !== "gpipe" && layout.microBatches < layout.pp) {
    problems.push({
      field: "microBatches",
      message: `${layout.microBatches} micro-batches on ${layout.pp} stages: ${layout.pipelineSchedule} needs at least one a stage`,
    });
  }
  if (layout.pipelineSchedule === "interleaved-1f1b" && layout.virtualStages < 2) {
    problems.push({ field: "virtualStages", message: `interleaved-1f1b needs 2 or more virtual stages a rank` });
  }
  return problems;
}

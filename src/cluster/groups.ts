/**
 * A `tp × cp × dp × pp` layout's process groups and the collectives each runs in a step, placed on the tier they span
 * (issue #69, item 2). The layout is a composition of degrees (src/layouts/composition.ts, the one home of the degrees'
 * rules and of where each mesh group's ranks lie: tensor-parallel innermost, then context-parallel, data-parallel,
 * pipeline stages outermost, as torchtitan's ParallelDims builds its mesh), so a tensor group stays inside a node
 * while it fits one, data-parallel groups span nodes, and each stage boundary's sends cross between nodes once a stage
 * fills a node. Bytes follow PyTorch's FSDP2 mixed precision (parameters gathered in bf16, gradients reduced in fp32)
 * and DDP's 25 MiB buckets; tensor parallelism is Megatron's with sequence parallelism (an all-gather and a
 * reduce-scatter of the activations around attention and around the MLP, forward and backward). Pure.
 */
import {
  compositionProblemsAt,
  meshGroupSpan,
  type Composition,
  type DataParallelSharding,
  type MeshDimension,
  type PipelineSchedule,
} from "../layouts/composition.ts";
import type { GroupCollective, GroupSpan } from "./collectives.ts";
import type { LanguageCompute } from "./compute.ts";

/**
 * A layout as `predict --cluster` and a published case give it: a composition's degrees (src/layouts/composition.ts)
 * with its pipeline's schedule, virtual stages and micro-batches filled in; the batch is the step's (./step.ts).
 */
export interface LayoutDegrees {
  readonly tp: number;
  readonly pp: number;
  readonly dp: number;
  readonly cp: number;
  readonly dpSharding: DataParallelSharding;
  readonly pipelineSchedule: PipelineSchedule;
  /** Stages a rank holds under interleaved 1F1B (v); 1 otherwise. */
  readonly virtualStages: number;
  /** Micro-batches a step runs through the pipeline (1 without one), each `micro` samples a replica. */
  readonly microBatches: number;
}

/** The layout as composition.ts composes it, `microSamples` a micro-batch. */
export function compositionOfLayout(
  layout: LayoutDegrees,
  microSamples = 1,
  allowCrossNodeTensor = false,
  gradientAccumulation = 1,
): Composition {
  return {
    tp: layout.tp,
    cp: layout.cp,
    pp: layout.pp,
    dp: layout.dp,
    dpSharding: layout.dpSharding,
    schedule: layout.pipelineSchedule,
    virtualStages: layout.virtualStages,
    microBatchSize: microSamples,
    microBatches: layout.microBatches,
    gradientAccumulation,
    allowCrossNodeTensor,
  };
}

/** The span of the groups of `dimensions` (flattened into one) when a node holds `perNode` ranks. */
function spanOn(layout: LayoutDegrees, dimensions: readonly MeshDimension[], perNode: number): GroupSpan {
  const span = meshGroupSpan(compositionOfLayout(layout), { nodes: 1, gpusPerNode: perNode }, dimensions);
  return { ranks: span.size, ranksPerNode: span.ranksPerNode };
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
  if (layout.dp * layout.cp < 2) return [];
  // DDP's all-reduce and FSDP's gathers and reduce-scatters run over every data-parallel and context-parallel rank.
  const span = spanOn(layout, ["dp_replicate", "dp_shard", "cp"], perNode);
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
  const span = spanOn(layout, ["tp"], perNode);
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
  const span = spanOn(layout, ["cp"], perNode);
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
  // A send crosses to another node once a stage fills one (or more) nodes: a pipeline group with one rank a node.
  const span = { ranks: 2, ranksPerNode: Math.min(2, spanOn(layout, ["pp"], perNode).ranksPerNode) };
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
      overlap: "steady-state",
    },
  ];
}

/** A problem with a layout's degrees, at the composition's field (./groups.ts's names) that holds the wrong number. */
export interface LayoutProblem {
  readonly field: keyof Composition;
  readonly message: string;
}

/**
 * Why a layout cannot run on `gpus` GPUs of `perNode` a node, or none: composition.ts's rules (the degrees multiply to
 * the GPU count; a tensor group wider than a node, its activations over the network on every block, only with
 * `allowCrossNodeTensor`; torch's schedules' micro-batches; a chunk of the model a block at least).
 */
export function layoutProblems(
  layout: LayoutDegrees,
  gpus: number,
  perNode: number,
  layers: number | undefined,
  allowCrossNodeTensor: boolean,
): LayoutProblem[] {
  return compositionProblemsAt(
    compositionOfLayout(layout, 1, allowCrossNodeTensor),
    { nodes: gpus / perNode, gpusPerNode: perNode },
    layers,
  );
}

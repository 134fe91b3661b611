/**
 * The collectives of one training step on each layout, before it runs, as pieces each layout's unit
 * (src/layouts/<name>.ts traffic) puts together: what the worker's parallel/*.py `traffic()` records after it. Bytes
 * are one call's buffer: an all-reduce's S, an all-gather's gathered whole, a send's message. `calls` is how many times
 * a step pays the collective's latency (one per DDP bucket, per FSDP unit and direction, per block and direction of
 * tensor parallelism, per micro-batch and direction of a pipeline). Pure.
 */
import { PARAMETER_COUNT, type Model, shapeOf } from "../config/registry.ts";
import type { MeshDimension } from "../layouts/composition.ts";
import { stageBlocks, type ParallelDims } from "./layout.ts";
import { blockParametersPerTensorRank, checkpointingOf, parameterParts, type TransformerShape } from "./transformer.ts";

export type CollectiveOp = "all_reduce" | "all_gather" | "reduce_scatter" | "send";

export interface Collective {
  readonly op: CollectiveOp;
  /** Bytes of all the step's calls together (each call's buffer × its calls). */
  readonly bytes: number;
  /** Calls per step: each pays the collective's latency once. */
  readonly calls: number;
  /** Ranks taking part in each call (a send: 2). */
  readonly ranks: number;
  /**
   * The mesh dimension whose groups it runs in (a send: between neighbouring stages of "pp"), as the worker's records
   * name it: where the cluster puts that group's ranks says which links it crosses (composition.ts groupSpans).
   */
  readonly group: MeshDimension;
}

const BYTES = 4;
/** PyTorch DDP's default bucket_cap_mb. */
const DDP_BUCKET_MIB = 25;

export interface TrafficQuestion {
  readonly model: string;
  readonly batchSize: number;
  readonly knobs: Readonly<Record<string, unknown>>;
  readonly dims: ParallelDims;
}

/** What every layout's collectives are made of: the model's shape (a language model), its FSDP units, their sum. */
export interface TrafficParts {
  readonly shape: TransformerShape | undefined;
  /** FSDP's units in bytes (each block, then the root); an image model's whole gradient as one. */
  readonly units: readonly number[];
  readonly whole: number;
}

export function trafficParts(question: TrafficQuestion): TrafficParts {
  const shape = shapeOf(question.model, question.knobs);
  const units =
    shape === undefined ? [BYTES * PARAMETER_COUNT[question.model as Model]] : unitBytes(shape, question.dims.tp);
  return { shape, units, whole: units.reduce((sum, bytes) => sum + bytes, 0) };
}

/** DDP's all-reduce of the whole gradient over the replicas, one call per bucket of bucketCapMb. */
export function bucketedAllReduce(question: TrafficQuestion, whole: number): Collective {
  const { knobs, dims } = question;
  const bucketBytes = (typeof knobs["bucketCapMb"] === "number" ? knobs["bucketCapMb"] : DDP_BUCKET_MIB) * 2 ** 20;
  return {
    op: "all_reduce",
    bytes: whole,
    calls: Math.max(1, Math.ceil(whole / bucketBytes)),
    ranks: dims.dpReplicate,
    group: "dp_replicate",
  };
}

/**
 * FSDP's collectives: per unit, all-gathers of the parameters (twice under full sharding: forward and backward) and a
 * reduce-scatter of the gradients over the shards; `none` shards nothing and all-reduces each unit (the control).
 */
export function shardedTraffic(question: TrafficQuestion, parts: TrafficParts): Collective[] {
  const { knobs, dims } = question;
  const { units, whole } = parts;
  const sharding = String(knobs["fsdpSharding"] ?? "full");
  return sharding === "none"
    ? [{ op: "all_reduce", bytes: whole, calls: units.length, ranks: dims.dpReplicate, group: "dp_replicate" }]
    : [
        {
          op: "all_gather",
          bytes: (sharding === "full" ? 2 : 1) * whole,
          calls: (sharding === "full" ? 2 : 1) * units.length,
          ranks: dims.dpShard,
          group: "dp_shard",
        },
        { op: "reduce_scatter", bytes: whole, calls: units.length, ranks: dims.dpShard, group: "dp_shard" },
      ];
}

/**
 * FSDP's units in bytes: each block (its tensor-parallel part), then the root (embeddings, final LayerNorm and head).
 */
function unitBytes(shape: TransformerShape, tp: number): number[] {
  const block = blockParametersPerTensorRank(shape, tp);
  const parts = parameterParts(shape);
  const root = parts.embeddings + parts.final;
  return [...Array.from({ length: shape.layers }, () => BYTES * block), BYTES * root];
}

/**
 * One block boundary's activations: batch × sequence × width numbers, 2 bytes under bf16 or amp autocast, 4 in fp32.
 */
export function activationBytes(shape: TransformerShape, samples: number, precision: unknown): number {
  return samples * shape.sequenceLength * shape.width * (precision === "bf16" || precision === "amp" ? 2 : BYTES);
}

/**
 * Megatron's all-reduces: two per block in forward, two in backward, two more when backward computes the whole forward
 * again (full activation checkpointing; selective keeps the collectives' outputs, as torchtitan's policy does).
 */
export function tensorTraffic(question: TrafficQuestion, shape: TransformerShape): Collective {
  const perBlock = 4 + (checkpointingOf(question.knobs) === "full" ? 2 : 0);
  const calls = perBlock * shape.layers;
  return {
    op: "all_reduce",
    bytes: calls * activationBytes(shape, question.batchSize, question.knobs["precision"]),
    calls,
    ranks: question.dims.tp,
    group: "tp",
  };
}

/**
 * Each micro-batch's activations forward and their gradients back, across a boundary; each stage's gradients averaged
 * over its replicas (parallel/pipeline.py, in DDP's bucket sizes).
 */
export function pipelineTraffic(question: TrafficQuestion, shape: TransformerShape): Collective[] {
  const { dims, knobs } = question;
  const microBatches = typeof knobs["microBatches"] === "number" ? knobs["microBatches"] : 4;
  const sends: Collective[] =
    dims.pp < 2
      ? []
      : [
          {
            op: "send",
            bytes: 2 * microBatches * activationBytes(shape, question.batchSize / microBatches, knobs["precision"]),
            calls: 2 * microBatches,
            ranks: 2,
            group: "pp",
          },
        ];
  if (dims.dpReplicate < 2) return sends;
  const stage =
    BYTES *
    (stageBlocks(shape.layers, dims.pp, 0) * blockParametersPerTensorRank(shape, 1) + parameterParts(shape).embeddings);
  return [
    ...sends,
    {
      op: "all_reduce",
      bytes: stage,
      calls: Math.max(1, Math.ceil(stage / (DDP_BUCKET_MIB * 2 ** 20))),
      ranks: dims.dpReplicate,
      group: "dp_replicate",
    },
  ];
}

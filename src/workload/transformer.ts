/**
 * What a language model is, in numbers: its shape (the registry's, with the knobs a campaign may change), its
 * parameters part by part, and the FLOPs of training on a token. The same counts as the worker's
 * docker/worker/ringlab_worker/models/transformer.py (test/workload/transformer.test.ts checks them against the
 * registry's, which test/worker/test_parallel_units.py checks against the built models). Pure.
 */
import { LANGUAGE_SHAPE, type TransformerShape } from "../config/registry.ts";
import { stageBlocks } from "./layout.ts";

export type { TransformerShape };

/** A language model's shape as a run has it: the registry's, with the run's sequenceLength, layers, width and heads. */
export function shapeOf(model: string, knobs: Readonly<Record<string, unknown>>): TransformerShape | undefined {
  const registered = (LANGUAGE_SHAPE as Readonly<Record<string, TransformerShape>>)[model];
  if (registered === undefined) return undefined;
  const pick = (knob: string, fallback: number) => (typeof knobs[knob] === "number" ? knobs[knob] : fallback);
  return {
    layers: pick("layers", registered.layers),
    width: pick("width", registered.width),
    heads: pick("heads", registered.heads),
    sequenceLength: pick("sequenceLength", registered.sequenceLength),
    vocab: registered.vocab,
  };
}

/** One block: q, k, v and the attention's projection 4(h² + h), the MLP 8h² + 5h, two LayerNorms 4h. */
export function blockParameters(shape: TransformerShape): number {
  const h = shape.width;
  return 12 * h * h + 13 * h;
}

/**
 * The model's parameters by part: the blocks, the embeddings (tokens V h and positions S h: a pipeline's first stage)
 * and the final LayerNorm with the head (2h + h V: its last stage). The learned positions count for the model's
 * longest sequence, the registry's, whatever sequence a run trains on.
 */
export function parameterParts(
  shape: TransformerShape,
  positions: number,
): { blocks: number; embeddings: number; final: number } {
  const h = shape.width;
  return {
    blocks: shape.layers * blockParameters(shape),
    embeddings: shape.vocab * h + positions * h,
    final: 2 * h + h * shape.vocab,
  };
}

export function parameterCount(shape: TransformerShape, positions = shape.sequenceLength): number {
  const parts = parameterParts(shape, positions);
  return parts.blocks + parts.embeddings + parts.final;
}

/**
 * Training FLOPs per token at a sequence length: 6 per weight of the blocks and the head (forward 2, backward 4),
 * and attention's 12 L h s (the scores and their weighted sum, forward and backward: PaLM's appendix B). Embedding
 * lookups cost no multiplications.
 */
export function trainingFlopsPerToken(shape: TransformerShape, sequenceLength: number): number {
  const weights = shape.layers * blockParameters(shape) + shape.width * shape.vocab;
  return 6 * weights + 12 * shape.layers * shape.width * sequenceLength;
}

/** What throughput counts per sample: a language model's sequence of tokens, an image model's one image. */
export function unitsPerSample(model: string, knobs: Readonly<Record<string, unknown>>): number {
  return shapeOf(model, knobs)?.sequenceLength ?? 1;
}

/**
 * The knobs besides model, batch and precision that set a language model's compute on one worker, by their defaults.
 */
const COMPUTE_KNOBS: Readonly<Record<string, unknown>> = {
  optimizer: "sgd",
  momentum: 0,
  activationCheckpointing: false,
  parallelism: "ddp",
  fsdpSharding: "full",
  fsdpPrefetch: 0,
  microBatches: 4,
  pipelineSchedule: "gpipe",
};
/**
 * The layout knobs that only a parallelism's own runs have (registry.json's belongsTo): left out of the others'
 * workload.
 */
const LAYOUT_OWNED: Readonly<Record<string, string>> = {
  fsdpSharding: "fsdp",
  fsdpPrefetch: "fsdp",
  microBatches: "pipeline",
  pipelineSchedule: "pipeline",
};

/**
 * What a language model's single-node compute depends on beyond model, batch and precision: its shape and the knobs
 * that change one worker's step (optimizer, activation checkpointing, the layout and its own knobs), every one with its
 * default filled in, so that a calibration's entry and a question compare as the worker ran them. Undefined for an
 * image model, whose entries have always been model, batch and precision alone.
 */
export function computeWorkload(
  model: string,
  knobs: Readonly<Record<string, unknown>>,
): Readonly<Record<string, string | number | boolean>> | undefined {
  const shape = shapeOf(model, knobs);
  if (shape === undefined) return undefined;
  const parallelism = String(knobs["parallelism"] ?? "ddp");
  const workload: Record<string, string | number | boolean> = {
    sequenceLength: shape.sequenceLength,
    layers: shape.layers,
    width: shape.width,
    heads: shape.heads,
  };
  for (const [knob, fallback] of Object.entries(COMPUTE_KNOBS)) {
    if (LAYOUT_OWNED[knob] !== undefined && LAYOUT_OWNED[knob] !== parallelism) continue;
    workload[knob] = (knobs[knob] ?? fallback) as string | number | boolean;
  }
  return workload;
}

/**
 * Of a language model's training compute per token (trainingFlopsPerToken's terms): the share tensor parallelism splits
 * (every block's matrices and attention) and the slowest of `stages` pipeline stages' share (its blocks, and the head
 * on the last).
 */
export function computeShares(
  shape: TransformerShape,
  stages: number,
): { readonly split: number; readonly slowestStage: number } {
  const perBlock = 6 * 12 * shape.width * shape.width + 12 * shape.width * shape.sequenceLength;
  const head = 6 * shape.width * shape.vocab;
  const total = shape.layers * perBlock + head;
  const stage = (index: number) =>
    (stageBlocks(shape.layers, stages, index) * perBlock + (index === stages - 1 ? head : 0)) / total;
  return {
    split: (shape.layers * perBlock) / total,
    slowestStage: Math.max(...Array.from({ length: stages }, (_, index) => stage(index))),
  };
}

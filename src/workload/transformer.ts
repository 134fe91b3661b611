/**
 * What a language model is, in numbers: its shape (the registry's, with the knobs a campaign may change), its
 * parameters part by part, the FLOPs of training on a token, and those activation checkpointing adds. Each family's
 * counts are its unit in ./families/, the same counts as the worker's module of that family
 * (docker/worker/ringlab_worker/models/); test/workload/transformer.test.ts checks them against the registry's and the
 * published counts, test/worker/test_parallel_units.py the built models against the registry. Pure.
 */
import { currentKnobValue, shapeOf, type TransformerShape } from "../config/registry.ts";
import { FAMILIES } from "./families/index.ts";
import { sum } from "./families/family.ts";
import { stageBlocks } from "./layout.ts";

export type { TransformerShape };

/** One block's parameters (its family's count: gpt2's 12h² + 13h). */
export function blockParameters(shape: TransformerShape): number {
  return FAMILIES[shape.family].blockParameters(shape);
}

/** The weights of one block's matrices (gpt2's 12h²): what multiplies activations, what tensor parallelism splits. */
export function blockMatrixWeights(shape: TransformerShape): number {
  return sum(FAMILIES[shape.family].blockMatrices(shape));
}

/** One block's parameters on one of `tp` tensor-parallel ranks (the whole block when tp is 1). */
export function blockParametersPerTensorRank(shape: TransformerShape, tp: number): number {
  return tp === 1 ? blockParameters(shape) : FAMILIES[shape.family].blockParametersPerTensorRank(shape, tp);
}

/**
 * The model's parameters by part: the blocks, the embeddings (a pipeline's first stage) and the final norm with the
 * head (its last stage). A gpt2 model's learned positions count for its longest sequence (maxPositions), whatever
 * sequence a run trains on; a tied head counts once, in the embeddings.
 */
export function parameterParts(
  shape: TransformerShape,
  positions = shape.maxPositions,
): { blocks: number; embeddings: number; final: number } {
  const family = FAMILIES[shape.family];
  return {
    blocks: shape.layers * family.blockParameters(shape),
    embeddings: family.embeddingParameters(shape, positions),
    final: family.finalParameters(shape),
  };
}

export function parameterCount(shape: TransformerShape, positions = shape.maxPositions): number {
  const parts = parameterParts(shape, positions);
  return parts.blocks + parts.embeddings + parts.final;
}

/**
 * Training FLOPs per token at a sequence length: 6 per weight of the blocks and the head (forward 2, backward 4; a
 * tied head multiplies as an untied one does; the norms' and biases' few weights counted alike, as GPT-2's figures
 * always have), and attention's 12 L h s (the scores and their weighted sum, forward and backward: PaLM's appendix B).
 * Grouped-query attention does not change that term: every query head still scores every position, over
 * heads x headDim = h columns; sharing key and value heads shrinks k's and v's matrices, which the weights count.
 * Embedding lookups and rotary positions cost no multiplications worth counting.
 */
export function trainingFlopsPerToken(shape: TransformerShape, sequenceLength: number): number {
  const weights = shape.layers * blockParameters(shape) + shape.width * shape.vocab;
  return 6 * weights + 12 * shape.layers * shape.width * sequenceLength;
}

/** What activation checkpointing keeps of each block's activations for backward (the activationCheckpointing knob). */
export const CHECKPOINTING_MODES = ["none", "selective", "full"] as const;
export type ActivationCheckpointing = (typeof CHECKPOINTING_MODES)[number];

/**
 * A run's activation checkpointing: its knob, where records and campaign files older than the modes said true (every
 * block recomputed: full) or false (none).
 */
export function checkpointingOf(knobs: Readonly<Record<string, unknown>>): ActivationCheckpointing {
  const value = currentKnobValue("activationCheckpointing", knobs["activationCheckpointing"] ?? "none");
  return (CHECKPOINTING_MODES as readonly unknown[]).includes(value) ? (value as ActivationCheckpointing) : "none";
}

/**
 * FLOPs per token that activation checkpointing adds to a step, recomputed in backward: none, nothing; full, every
 * block's forward again (2 per weight, and attention's forward 4 L h s); selective, torchtitan's per-op policy, which
 * keeps the outputs of attention and of every other matrix product of a block, in the order the block multiplies,
 * and recomputes the rest: 2 per weight of every second matrix (gpt2: k and the attention's projection; llama: k, the
 * attention's output and w3), nothing of attention's. Either way torch's checkpoint stops recomputing once it has what
 * backward needs, which is before the block's last product (its output only joins the residual sum): that one is
 * never recomputed (test/worker/test_parallel_units.py counts the built model's recomputation with torch's own FLOP
 * counter).
 */
export function recomputeFlopsPerToken(
  shape: TransformerShape,
  sequenceLength: number,
  mode: ActivationCheckpointing,
): number {
  if (mode === "none") return 0;
  const matrices = FAMILIES[shape.family].blockMatrices(shape);
  const last = matrices.at(-1)!;
  if (mode === "full") return shape.layers * (2 * (blockParameters(shape) - last) + 4 * shape.width * sequenceLength);
  const everySecond = matrices.slice(0, -1).filter((_, index) => index % 2 === 1);
  return shape.layers * 2 * sum(everySecond);
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
  activationCheckpointing: "none",
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
    // A gpt2 model's workload keeps the fields it always had (committed calibrations match on them).
    ...(shape.family === "gpt2" ? {} : { kvHeads: shape.kvHeads }),
  };
  for (const [knob, fallback] of Object.entries(COMPUTE_KNOBS)) {
    if (LAYOUT_OWNED[knob] !== undefined && LAYOUT_OWNED[knob] !== parallelism) continue;
    workload[knob] = currentKnobValue(knob, knobs[knob] ?? fallback) as string | number | boolean;
  }
  return workload;
}

/**
 * A workload a calibration saved before a knob's values changed, as computeWorkload writes it today (its
 * activationCheckpointing false as "none"), so that the two still match.
 */
export function currentWorkload(
  workload: Readonly<Record<string, string | number | boolean>>,
): Readonly<Record<string, string | number | boolean>> {
  return Object.fromEntries(
    Object.entries(workload).map(([knob, value]) => [knob, currentKnobValue(knob, value) as string | number | boolean]),
  );
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
  const perBlock = 6 * sum(FAMILIES[shape.family].blockMatrices(shape)) + 12 * shape.width * shape.sequenceLength;
  const head = 6 * shape.width * shape.vocab;
  const total = shape.layers * perBlock + head;
  const stage = (index: number) =>
    (stageBlocks(shape.layers, stages, index) * perBlock + (index === stages - 1 ? head : 0)) / total;
  return {
    split: (shape.layers * perBlock) / total,
    slowestStage: Math.max(...Array.from({ length: stages }, (_, index) => stage(index))),
  };
}

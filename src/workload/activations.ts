/**
 * What a language model's forward keeps for backward, in bytes per token: each family's tensors (./families/, the
 * terms of Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", section 4) priced
 * by how the run stores them, divided by tensor parallelism where it splits them, and chosen by activation
 * checkpointing's mode. Pure.
 *
 * The worker's own gpt2 model is the check: test/bench/activation-census.py measures what autograd saves of it over 8
 * shapes (src/catalogue/transformer-activations.json), and test/workload/activations.test.ts holds this accounting to
 * that census within 1 %. The census's constant (the tokens and the loss's indices, about 52 bytes a token) is the one
 * figure taken from it.
 */
import census from "../catalogue/transformer-activations.json" with { type: "json" };
import { FAMILIES } from "./families/index.ts";
import type { BlockTensor } from "./families/family.ts";
import type { ActivationCheckpointing, TransformerShape } from "./transformer.ts";

/**
 * How a run stores its activations: fp32, every tensor in 4 bytes; autocast (the worker's bf16 and amp: fp32 weights,
 * torch.autocast), matrix products' outputs in 2 bytes, the residual stream in fp32, and each product's input cast to
 * 16 bits on its own (q, k and v each make a copy of the norm's output); 16-bit weights (FSDP2's MixedPrecisionPolicy
 * with a 16-bit param_dtype, a model cast to bf16), every tensor in 2 bytes.
 */
export type ActivationStorage = "fp32" | "autocast" | "16-bit";

/** The loss's log-softmax and its two gradients are fp32 whatever the precision (the worker casts the logits). */
const LOSS_BYTES = 4;

/** Bytes per token of one tensor as `storage` keeps it. */
export function tensorBytes(tensor: BlockTensor, storage: ActivationStorage): number {
  const bytes = {
    stream: storage === "16-bit" ? 2 : 4,
    input: storage === "fp32" ? 4 : storage === "autocast" ? 2 * (tensor.consumers ?? 1) : 2,
    output: storage === "fp32" ? 4 : 2,
    statistic: 4,
  }[tensor.kind];
  return bytes * tensor.numbers;
}

/** Bytes per token of the tensors `mode` keeps, a split tensor's share on one of `tp` ranks. */
export function keptBytes(
  tensors: readonly BlockTensor[],
  storage: ActivationStorage,
  mode: ActivationCheckpointing,
  tp: number,
): number {
  return tensors
    .filter((tensor) => tensor.keptBy.includes(mode))
    .reduce((sum, tensor) => sum + tensorBytes(tensor, storage) / (tensor.split ? tp : 1), 0);
}

export interface StageActivations {
  /** What the stage keeps per token from the end of forward into backward. */
  readonly kept: number;
  /**
   * One block's tensors computed again in backward (selective: what its policy did not keep; full: the whole block),
   * counted on top of the kept ones, as they live while that block's backward runs.
   */
  readonly recomputed: number;
}

/** Bytes per token a pipeline stage of `blocks` blocks keeps (the first stage the tokens, the last the loss). */
export function stageActivationBytes(
  shape: TransformerShape,
  storage: ActivationStorage,
  mode: ActivationCheckpointing,
  place: { readonly blocks: number; readonly tp: number; readonly first: boolean; readonly last: boolean },
): StageActivations {
  const family = FAMILIES[shape.family];
  const block = family.blockTensors(shape);
  const perBlock = keptBytes(block, storage, mode, place.tp);
  // What backward needs of a block that the mode did not keep: computed again, one block at a time.
  const notKept = block.filter((tensor) => !tensor.keptBy.includes(mode));
  const head = place.last ? keptBytes(family.finalTensors(shape), storage, "none", 1) + LOSS_BYTES * shape.vocab : 0;
  return {
    kept: place.blocks * perBlock + (place.first ? census.fp32.constant : 0) + head,
    recomputed: keptBytes(notKept, storage, "none", place.tp),
  };
}

/** The loss's two fp32 gradients over the vocabulary per token, at the start of backward (last stage). */
export function lossGradientBytes(shape: TransformerShape): number {
  return 2 * LOSS_BYTES * shape.vocab;
}

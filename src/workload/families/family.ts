/**
 * What ringlab counts of a family of language models (src/config/registry.ts's ModelFamily): one unit per family
 * (gpt2.ts, llama.ts), each counting what the worker's module of the same family builds
 * (docker/worker/ringlab_worker/models/). Pure.
 */
import type { TransformerShape } from "../../config/registry.ts";

export interface FamilyCounts {
  /**
   * The weight matrices of one block, each as its number of weights, in the order its forward multiplies by them: what
   * selective activation checkpointing takes every second of.
   */
  readonly blockMatrices: (shape: TransformerShape) => readonly number[];
  /** One block's parameters: its matrices, and its biases and norms. */
  readonly blockParameters: (shape: TransformerShape) => number;
  /** One block's parameters on one of `tp` tensor-parallel ranks: the split matrices' share and what stays whole. */
  readonly blockParametersPerTensorRank: (shape: TransformerShape, tp: number) => number;
  /** The embeddings: the tokens', and the learned positions' (`positions` of them) where the family has them. */
  readonly embeddingParameters: (shape: TransformerShape, positions: number) => number;
  /** The final norm and the head (none where the head is the token embedding's matrix). */
  readonly finalParameters: (shape: TransformerShape) => number;
  /** One block's activations per token, tensor by tensor (Korthikanti et al.'s accounting of this family's block). */
  readonly blockTensors: (shape: TransformerShape) => readonly BlockTensor[];
  /** The final norm's tensors per token (its input and output; the head's input), on the last stage. */
  readonly finalTensors: (shape: TransformerShape) => readonly BlockTensor[];
}

export const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

/** Activation checkpointing's modes (src/workload/transformer.ts's ActivationCheckpointing). */
export type CheckpointingMode = "none" | "selective" | "full";

/**
 * A tensor one block's forward makes, per token, that its backward or activation checkpointing keeps: the terms of
 * Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", section 4), one by one,
 * priced by src/workload/activations.ts.
 */
export interface BlockTensor {
  /** What it is, for people. */
  readonly name: string;
  /** Numbers per token. */
  readonly numbers: number;
  /**
   * How it is stored: stream, the residual stream a norm takes (the weights' type: fp32 under autocast); input, a
   * norm's output that `consumers` matrix products take (one tensor, or under autocast a 16-bit copy for each); output,
   * what an operation computes, in the compute type; statistic, fp32 whatever the precision (attention's log-sum-exp
   * per head, a norm's reciprocal root).
   */
  readonly kind: "stream" | "input" | "output" | "statistic";
  readonly consumers?: number;
  /** Split over tensor-parallel ranks (q, k, v, attention, the MLP's wide tensors); the rest is whole on each rank. */
  readonly split: boolean;
  /**
   * The modes that keep it: none, what autograd saves for backward; selective, torchtitan's per-op policy (the block's
   * input, attention's outputs and every other matrix product's output, in the order `blockMatrices` lists them:
   * the 1st, 3rd, ...); full, the checkpoint's input alone.
   */
  readonly keptBy: readonly CheckpointingMode[];
}

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
}

export const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

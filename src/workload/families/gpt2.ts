/**
 * GPT-2's decoder as ringlab_worker/models/transformer.py builds it: per block q, k, v and the attention's projection
 * (each h x h with a bias), the MLP's two layers (h x f and f x h, f = 4h, with biases) and two LayerNorms (weight and
 * bias); learned positions beside the token embedding; a final LayerNorm and an untied head without bias. Pure.
 */
import type { TransformerShape } from "../../config/registry.ts";
import { type FamilyCounts, sum } from "./family.ts";

const blockMatrices = ({ width: h, ffnWidth: f }: TransformerShape) => [h * h, h * h, h * h, h * h, h * f, f * h];

export const gpt2: FamilyCounts = {
  blockMatrices,
  // Biases: q, k, v, the projection and the MLP's second layer h each, its first f; LayerNorms 2h each.
  blockParameters: (shape) => sum(blockMatrices(shape)) + 9 * shape.width + shape.ffnWidth,
  // Split: the matrices, and the biases of the column-parallel layers (q, k, v, the MLP's first); whole: the
  // row-parallel layers' biases and the LayerNorms.
  blockParametersPerTensorRank: (shape, tp) =>
    (sum(blockMatrices(shape)) + 3 * shape.width + shape.ffnWidth) / tp + 6 * shape.width,
  embeddingParameters: (shape, positions) => shape.vocab * shape.width + positions * shape.width,
  finalParameters: (shape) => 2 * shape.width + (shape.tiedEmbeddings ? 0 : shape.width * shape.vocab),
};

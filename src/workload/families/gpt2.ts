/**
 * GPT-2's decoder as ringlab_worker/models/transformer.py builds it: per block q, k, v and the attention's projection
 * (each h x h with a bias), the MLP's two layers (h x f and f x h, f = 4h, with biases) and two LayerNorms (weight and
 * bias); learned positions beside the token embedding; a final LayerNorm and an untied head without bias. Pure.
 */
import type { TransformerShape } from "../../config/registry.ts";
import { type BlockTensor, type FamilyCounts, sum } from "./family.ts";

const blockMatrices = ({ width: h, ffnWidth: f }: TransformerShape) => [h * h, h * h, h * h, h * h, h * f, f * h];

/**
 * Korthikanti et al.'s GPT block (their sbh(34 + 5as/h) bytes in 16 bits) as the worker's module keeps it: no dropout
 * (their 2sbh of masks and the 3as²b of the softmax's dropout are not there) and attention through
 * scaled_dot_product_attention's flash kernel, which keeps its output and a log-sum-exp per head instead of the
 * as²b scores: 16 widths of h per token, 32sbh bytes in 16 bits. The MLP's second layer and the attention's
 * projection leave nothing autograd needs (their outputs only join the residual stream).
 */
function blockTensors({ width: h, heads, ffnWidth: f }: TransformerShape): BlockTensor[] {
  return [
    {
      name: "the block's input (norm 1's)",
      numbers: h,
      kind: "stream",
      split: false,
      keptBy: ["none", "selective", "full"],
    },
    {
      name: "norm 1's output (q, k and v's input)",
      numbers: h,
      kind: "input",
      consumers: 3,
      split: false,
      keptBy: ["none"],
    },
    { name: "q", numbers: h, kind: "output", split: true, keptBy: ["none", "selective"] },
    { name: "k", numbers: h, kind: "output", split: true, keptBy: ["none"] },
    { name: "v", numbers: h, kind: "output", split: true, keptBy: ["none", "selective"] },
    { name: "attention's output", numbers: h, kind: "output", split: true, keptBy: ["none", "selective"] },
    { name: "attention's log-sum-exp", numbers: heads, kind: "statistic", split: true, keptBy: ["none", "selective"] },
    { name: "norm 2's input", numbers: h, kind: "stream", split: false, keptBy: ["none"] },
    {
      name: "norm 2's output (the MLP's input)",
      numbers: h,
      kind: "input",
      consumers: 1,
      split: false,
      keptBy: ["none"],
    },
    { name: "the MLP's first layer's output", numbers: f, kind: "output", split: true, keptBy: ["none", "selective"] },
    { name: "GELU's output", numbers: f, kind: "output", split: true, keptBy: ["none"] },
  ];
}

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
  blockTensors,
  finalTensors: ({ width: h }) => [
    { name: "the final norm's input", numbers: h, kind: "stream", split: false, keptBy: ["none"] },
    {
      name: "the final norm's output (the head's input)",
      numbers: h,
      kind: "input",
      consumers: 1,
      split: false,
      keptBy: ["none"],
    },
  ],
};

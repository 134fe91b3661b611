/**
 * Llama's decoder as ringlab_worker/models/llama.py builds it (Meta's Llama 3, torchtitan's llama3 model): per block
 * q (h x h), k and v (h x kvHeads·headDim each: grouped-query attention), the attention's output (h x h), the SwiGLU
 * MLP's w1 and w3 (h x f) and w2 (f x h), no biases, two RMSNorms (a weight each); rotary positions, which have no
 * parameters; a final RMSNorm and a head, untied or the token embedding's own matrix. Pure.
 */
import type { TransformerShape } from "../../config/registry.ts";
import { type BlockTensor, type FamilyCounts, sum } from "./family.ts";

/** In the order the forward multiplies: q, k, v, the output; w1, w3 (the gate's two inputs), w2. */
function blockMatrices({ width: h, heads, kvHeads, ffnWidth: f }: TransformerShape): number[] {
  const kv = kvHeads * (h / heads);
  return [h * h, h * kv, h * kv, h * h, h * f, h * f, f * h];
}

/**
 * Llama's block in Korthikanti et al.'s accounting, derived term by term as they derive the GPT block's: the two
 * RMSNorms keep their input, a reciprocal root per token and (torch's composite nn.RMSNorm) the normalized input in
 * fp32 (no mean, no bias); grouped-query attention keeps k and v at kvHeads·headDim each; attention through the flash
 * kernel (its output and a log-sum-exp per head, no scores), whose output the output matrix takes as a copy (the
 * worker rotates q and k after moving the heads forward, so the kernel's output is laid out by head); SwiGLU keeps w1's
 * and w3's outputs, SiLU's output and their product (w2's input): 4 tensors of ffnWidth where GPT's GELU MLP keeps 2
 * of 4h; no dropout. Bytes per token in 16 bits: h(14 + 4 kv/h + 8 f/h) + 8h + 4 heads + 8 (the normalized inputs in
 * fp32); the worker's model measured within 1 % of this (src/catalogue/llama-activations.json). Selective
 * checkpointing (torchtitan's policy) keeps the 1st, 3rd, 5th and 7th products' outputs (q, v, w1, w2) beside
 * attention's, w2's though nothing needs it (the policy saves by operation, not by use).
 */
function blockTensors(shape: TransformerShape): BlockTensor[] {
  const { width: h, heads, ffnWidth: f } = shape;
  const kv = shape.kvHeads * (h / heads);
  return [
    {
      name: "the block's input (norm 1's)",
      numbers: h,
      kind: "stream",
      split: false,
      keptBy: ["none", "selective", "full"],
    },
    { name: "norm 1's reciprocal root", numbers: 1, kind: "statistic", split: false, keptBy: ["none"] },
    {
      name: "norm 1's normalized input (nn.RMSNorm's composite, fp32)",
      numbers: h,
      kind: "statistic",
      split: false,
      keptBy: ["none"],
    },
    {
      name: "norm 1's output (q, k and v's input)",
      numbers: h,
      kind: "input",
      consumers: 3,
      split: false,
      keptBy: ["none"],
    },
    { name: "q (rotated)", numbers: h, kind: "output", split: true, keptBy: ["none", "selective"] },
    { name: "k (rotated)", numbers: kv, kind: "output", split: true, keptBy: ["none"] },
    { name: "v", numbers: kv, kind: "output", split: true, keptBy: ["none", "selective"] },
    { name: "attention's output", numbers: h, kind: "output", split: true, keptBy: ["none", "selective"] },
    { name: "attention's log-sum-exp", numbers: heads, kind: "statistic", split: true, keptBy: ["none", "selective"] },
    {
      name: "attention's output copied for the output matrix",
      numbers: h,
      kind: "output",
      split: true,
      keptBy: ["none"],
    },
    { name: "norm 2's input", numbers: h, kind: "stream", split: false, keptBy: ["none"] },
    { name: "norm 2's reciprocal root", numbers: 1, kind: "statistic", split: false, keptBy: ["none"] },
    {
      name: "norm 2's normalized input (nn.RMSNorm's composite, fp32)",
      numbers: h,
      kind: "statistic",
      split: false,
      keptBy: ["none"],
    },
    {
      name: "norm 2's output (w1 and w3's input)",
      numbers: h,
      kind: "input",
      consumers: 2,
      split: false,
      keptBy: ["none"],
    },
    { name: "w1's output", numbers: f, kind: "output", split: true, keptBy: ["none", "selective"] },
    { name: "SiLU's output", numbers: f, kind: "output", split: true, keptBy: ["none"] },
    { name: "w3's output", numbers: f, kind: "output", split: true, keptBy: ["none"] },
    { name: "the gate's product (w2's input)", numbers: f, kind: "output", split: true, keptBy: ["none"] },
    { name: "w2's output", numbers: h, kind: "output", split: false, keptBy: ["selective"] },
  ];
}

export const llama: FamilyCounts = {
  blockMatrices,
  blockParameters: (shape) => sum(blockMatrices(shape)) + 2 * shape.width,
  // Every matrix split (q, k, v and w1, w3 by columns, the output and w2 by rows, the KV heads among the ranks); the
  // RMSNorms whole.
  blockParametersPerTensorRank: (shape, tp) => sum(blockMatrices(shape)) / tp + 2 * shape.width,
  embeddingParameters: (shape) => shape.vocab * shape.width,
  finalParameters: (shape) => shape.width + (shape.tiedEmbeddings ? 0 : shape.width * shape.vocab),
  blockTensors,
  finalTensors: ({ width: h }) => [
    { name: "the final norm's input", numbers: h, kind: "stream", split: false, keptBy: ["none"] },
    { name: "the final norm's reciprocal root", numbers: 1, kind: "statistic", split: false, keptBy: ["none"] },
    { name: "the final norm's normalized input (fp32)", numbers: h, kind: "statistic", split: false, keptBy: ["none"] },
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

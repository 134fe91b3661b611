/**
 * Llama's decoder as ringlab_worker/models/llama.py builds it (Meta's Llama 3, torchtitan's llama3 model): per block
 * q (h x h), k and v (h x kvHeads·headDim each: grouped-query attention), the attention's output (h x h), the SwiGLU
 * MLP's w1 and w3 (h x f) and w2 (f x h), no biases, two RMSNorms (a weight each); rotary positions, which have no
 * parameters; a final RMSNorm and a head, untied or the token embedding's own matrix. Pure.
 */
import type { TransformerShape } from "../../config/registry.ts";
import { type FamilyCounts, sum } from "./family.ts";

/** In the order the forward multiplies: q, k, v, the output; w1, w3 (the gate's two inputs), w2. */
function blockMatrices({ width: h, heads, kvHeads, ffnWidth: f }: TransformerShape): number[] {
  const kv = kvHeads * (h / heads);
  return [h * h, h * kv, h * kv, h * h, h * f, h * f, f * h];
}

export const llama: FamilyCounts = {
  blockMatrices,
  blockParameters: (shape) => sum(blockMatrices(shape)) + 2 * shape.width,
  // Every matrix split (q, k, v and w1, w3 by columns, the output and w2 by rows, the KV heads among the ranks); the
  // RMSNorms whole.
  blockParametersPerTensorRank: (shape, tp) => sum(blockMatrices(shape)) / tp + 2 * shape.width,
  embeddingParameters: (shape) => shape.vocab * shape.width,
  finalParameters: (shape) => shape.width + (shape.tiedEmbeddings ? 0 : shape.width * shape.vocab),
};

/**
 * Activations per token (src/workload/activations.ts): Korthikanti et al.'s terms for each family's block, held to the
 * census of what autograd saves of the worker's gpt2 model (src/catalogue/transformer-activations.json, measured by
 * test/bench/activation-census.py over its 8 shapes) and of the worker's Llama decoder
 * (src/catalogue/llama-activations.json, the same script's --llama), and Llama's block as its terms add up for Llama
 * 3.1 8B.
 */
import { describe, expect, it } from "vitest";
import llamaCensus from "../../src/catalogue/llama-activations.json" with { type: "json" };
import census from "../../src/catalogue/transformer-activations.json" with { type: "json" };
import { LANGUAGE_SHAPE, type TransformerShape } from "../../src/config/registry.ts";
import { stageActivationBytes } from "../../src/workload/activations.ts";

/** test/bench/activation-census.py's SHAPES: (layers, width, heads, vocabulary). */
const CENSUS_SHAPES = [
  [1, 64, 4, 256],
  [2, 64, 4, 256],
  [3, 64, 2, 256],
  [1, 128, 4, 256],
  [2, 128, 8, 512],
  [1, 256, 8, 1024],
  [2, 96, 3, 2048],
  [3, 160, 5, 256],
] as const;

const gpt2 = (layers: number, width: number, heads: number, vocab: number): TransformerShape => ({
  family: "gpt2",
  layers,
  width,
  heads,
  kvHeads: heads,
  ffnWidth: 4 * width,
  vocab,
  tiedEmbeddings: false,
  sequenceLength: 32,
  maxPositions: 32,
});

describe("activations per token", () => {
  it("come within 1 % of the census of the worker's gpt2 model at every shape it measured, in fp32 and under bf16 autocast", () => {
    for (const [layers, width, heads, vocab] of CENSUS_SHAPES) {
      for (const [storage, fit] of [
        ["fp32", census.fp32],
        ["autocast", census.bf16],
      ] as const) {
        const measured =
          fit.layersTimesWidth * layers * width +
          fit.layersTimesHeads * layers * heads +
          fit.width * width +
          fit.vocab * vocab +
          fit.constant;
        const derived = stageActivationBytes(gpt2(layers, width, heads, vocab), storage, "none", {
          blocks: layers,
          tp: 1,
          first: true,
          last: true,
        }).kept;
        expect(Math.abs(derived / measured - 1), `${storage} ${layers}x${width}`).toBeLessThan(0.01);
      }
    }
  });

  it("come within 1 % of what autograd saves of the worker's Llama decoder, grouped-query attention on and off", () => {
    for (const measured of llamaCensus.shapes) {
      const shape: TransformerShape = {
        ...measured,
        family: "llama",
        tiedEmbeddings: false,
        sequenceLength: 32,
        maxPositions: 512,
      };
      for (const [storage, bytes] of [
        ["fp32", measured.fp32],
        ["autocast", measured.bf16],
      ] as const) {
        const derived = stageActivationBytes(shape, storage, "none", {
          blocks: shape.layers,
          tp: 1,
          first: true,
          last: true,
        }).kept;
        expect(Math.abs(derived / bytes - 1), `${storage} ${shape.layers}x${shape.width}`).toBeLessThan(0.01);
      }
    }
  });

  it("count Llama 3.1 8B's block in 16 bits as 209,032 bytes a token, 63,616 under selective checkpointing and 8,192 under full", () => {
    const shape = LANGUAGE_SHAPE["llama3.1-8b"]!;
    const block = (mode: "none" | "selective" | "full") =>
      stageActivationBytes(shape, "16-bit", mode, { blocks: 1, tp: 1, first: false, last: false });
    // 14h + 4kv + 8f + 4 heads + 8 and the norms' normalized inputs in fp32 (8h): h = 4096, kv = 1024, f = 14336.
    expect(block("none")).toEqual({ kept: 209_032, recomputed: 0 });
    // The input, q, v, attention's output and log-sum-exp, w1's and w2's outputs: 8h + 2kv + 2f + 4 heads.
    expect(block("selective").kept).toBe(63_616);
    expect(block("selective").recomputed).toBe(209_032 - (63_616 - 2 * 4096));
    expect(block("full")).toEqual({ kept: 8192, recomputed: 209_032 - 8192 });
  });

  it("split attention's and the MLP's tensors over tensor-parallel ranks and keep the norms' whole", () => {
    const shape = LANGUAGE_SHAPE["llama3.1-8b"]!;
    const place = { blocks: 1, first: false, last: false };
    const one = stageActivationBytes(shape, "16-bit", "none", { ...place, tp: 1 }).kept;
    const eight = stageActivationBytes(shape, "16-bit", "none", { ...place, tp: 8 }).kept;
    // Whole: the two norms' inputs, fp32 normalized inputs, outputs and roots (16h + 8); the rest split by 8.
    expect(eight).toBe(16 * 4096 + 8 + (one - 16 * 4096 - 8) / 8);
  });
});

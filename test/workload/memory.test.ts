/**
 * What a rank holds by layout (src/workload/memory.ts), part by part, for gpt-nano (141,056 parameters) at batch 4 of
 * 32 tokens: the accounting ZeRO's paper gives, Korthikanti et al.'s activations per block
 * (src/workload/activations.ts), and what each layout changes of it.
 */
import { describe, expect, it } from "vitest";
import census from "../../src/catalogue/transformer-activations.json" with { type: "json" };
import { PARAMETER_COUNT } from "../../src/config/registry.ts";
import { dimsOf, memoryTermsOf } from "../../src/layouts/index.ts";
import type { ParallelDims } from "../../src/workload/layout.ts";
import { rankMemory } from "../../src/workload/memory.ts";

const P = PARAMETER_COUNT["gpt-nano"];
const TOKENS = 4 * 32;
const base = { sequenceLength: 32 };
const dims = (knobs: Record<string, unknown>, workers: number): ParallelDims => {
  const result = dimsOf(knobs, workers, workers);
  if (!result.ok) throw new Error(result.problem);
  return result.dims;
};
const memory = (knobs: Record<string, unknown>, workers = 1) =>
  rankMemory(
    { model: "gpt-nano", batchSize: 4, knobs: { ...base, ...knobs }, dims: dims(knobs, workers) },
    memoryTermsOf({ ...base, ...knobs }, dims(knobs, workers)),
  );

/**
 * Bytes per token for gpt-nano's blocks of width 64, 4 heads, vocabulary 256: per block 16 widths and a log-sum-exp per
 * head (fp32: 64h + 16; autocast: 40h + 16, q, k and v each casting the norm's output), the final norm's input and
 * output (fp32 8h, autocast 6h), the fp32 log-softmax (4V), and the census's 52 bytes of tokens and indices.
 */
function perToken(precision: "fp32" | "bf16", blocks = 2): number {
  const block = precision === "fp32" ? 64 * 64 + 16 : 40 * 64 + 16;
  const final = precision === "fp32" ? 8 * 64 : 6 * 64;
  return blocks * block + census.fp32.constant + final + 4 * 256;
}

describe("a rank's memory", () => {
  it("holds DDP's replica: fp32 parameters, gradients and buckets, its blocks' activations and the loss's two gradients", () => {
    const [rank] = memory({});
    expect(rank).toMatchObject({
      parameters: 4 * P,
      gradients: 4 * P,
      buckets: 4 * P,
      optimizer: 0,
      gathered: 0,
      casts: 0,
    });
    expect(rank!.activations).toBeCloseTo(TOKENS * perToken("fp32"), 6);
    expect(rank!.transient).toBe(TOKENS * 2 * 4 * 256);
    // Forward's activations outweigh backward's gradients here: the peak is at the start of backward.
    expect(rank!.peak).toBeCloseTo(4 * P + 4 * P + rank!.activations + rank!.transient, 6);
  });

  it("adds AdamW's two numbers per parameter, or SGD's momentum one", () => {
    expect(memory({ optimizer: "adamw" })[0]!.optimizer).toBe(8 * P);
    expect(memory({ momentum: 0.9 })[0]!.optimizer).toBe(4 * P);
  });

  it("shards FSDP's state over its ranks and gathers a unit at a time; grad-op keeps the whole model gathered", () => {
    const [full] = memory({ parallelism: "fsdp", optimizer: "adamw" }, 2);
    expect(full).toMatchObject({ parameters: 2 * P, gradients: 2 * P, buckets: 0, optimizer: 4 * P });
    // The root (embeddings, final LayerNorm and head) and one block of 12h² + 13h.
    expect(full!.gathered).toBe(4 * (256 * 64 + 128 * 64 + 2 * 64 + 64 * 256 + 12 * 64 * 64 + 13 * 64));
    expect(memory({ parallelism: "fsdp", fsdpSharding: "grad-op" }, 2)[0]!.gathered).toBe(4 * P);
    expect(memory({ parallelism: "fsdp", fsdpSharding: "none" }, 2)[0]).toMatchObject({
      parameters: 4 * P,
      gathered: 0,
      buckets: 0,
    });
  });

  it("gives each pipeline stage its blocks, the embeddings to the first and the head to the last", () => {
    const [first, last] = memory({ parallelism: "pipeline", microBatches: 2 }, 2);
    const block = 12 * 64 * 64 + 13 * 64;
    expect(first!.parameters).toBe(4 * (block + 256 * 64 + 128 * 64));
    expect(last!.parameters).toBe(4 * (block + 2 * 64 + 64 * 256));
    expect(last!.transient).toBeGreaterThan(0);
    expect(first!.transient).toBe(0);
  });

  it("holds fewer micro-batches' activations under 1F1B than under GPipe on the first stage", () => {
    const gpipe = memory({ parallelism: "pipeline", microBatches: 4 }, 2)[0]!;
    const oneForwardOneBackward = memory({ parallelism: "pipeline", microBatches: 4, pipelineSchedule: "1f1b" }, 2)[0]!;
    expect(oneForwardOneBackward.activations).toBeCloseTo(gpipe.activations / 2, 6);
  });

  it("splits each block's matrices over tensor-parallel ranks and keeps LayerNorms, embeddings and head whole", () => {
    const [rank] = memory({ parallelism: "tensor" }, 2);
    const block = (12 * 64 * 64 + 7 * 64) / 2 + 6 * 64;
    expect(rank!.parameters).toBe(4 * (2 * block + 256 * 64 + 128 * 64 + 2 * 64 + 64 * 256));
    expect(rank!.activations).toBeLessThan(memory({})[0]!.activations);
  });

  it("keeps only each block's input under activation checkpointing, and one block's activations again in backward", () => {
    const kept = memory({ activationCheckpointing: true })[0]!.activations;
    // One block again, less the input it kept: 15 widths and the log-sum-exp.
    expect(kept).toBeCloseTo(TOKENS * (2 * 4 * 64 + (60 * 64 + 16) + perToken("fp32", 0)), 6);
  });

  it("adds autocast's 16-bit copies of the matrices under bf16, and counts its smaller activations", () => {
    const [rank] = memory({ precision: "bf16" });
    expect(rank!.casts).toBe(2 * (2 * 12 * 64 * 64 + 64 * 256));
    expect(rank!.activations).toBeCloseTo(TOKENS * perToken("bf16"), 6);
  });
});

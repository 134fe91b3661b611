/**
 * Model states per rank (src/workload/model-states.ts): each framework's recipe against the arithmetic its source
 * gives, and the sharding each refuses.
 */
import { describe, expect, it } from "vitest";
import type { DataParallelSharding } from "../../src/layouts/composition.ts";
import { modelStateBytes, STATE_RECIPES, stateProblem, type StateQuestion } from "../../src/workload/model-states.ts";

const question = (sharding: DataParallelSharding, parts: Partial<StateQuestion> = {}): StateQuestion => ({
  parameters: 7.5e9,
  shards: 64,
  sharding,
  sixteenBit: true,
  optimizerNumbers: 2,
  gatheredUnit: 0,
  matrices: 0,
  ddpBuckets: false,
  offload: "none",
  ...parts,
});

describe("model states", () => {
  it("are the ZeRO paper's (2 + 2 + K)Ψ, 2Ψ + 2Ψ + KΨ/N, 2Ψ + (2 + K)Ψ/N and (2 + 2 + K)Ψ/N with K = 12", () => {
    const bytes = (sharding: DataParallelSharding) =>
      modelStateBytes(STATE_RECIPES["zero-paper"].bytes(question(sharding)));
    expect(bytes("none")).toBe(16 * 7.5e9);
    expect(bytes("optimizer")).toBe(4 * 7.5e9 + (12 * 7.5e9) / 64);
    expect(bytes("gradients")).toBe(2 * 7.5e9 + (14 * 7.5e9) / 64);
    expect(bytes("full")).toBe((16 * 7.5e9) / 64);
  });

  it("are DeepSpeed's 4Ψ + 16Ψ/N (ZeRO-2) and 4U + 18Ψ/N (ZeRO-3), less what it offloads", () => {
    const deepspeed = (sharding: DataParallelSharding, offload: StateQuestion["offload"]) =>
      modelStateBytes(
        STATE_RECIPES.deepspeed.bytes(
          question(sharding, { parameters: 2851e6, shards: 8, gatheredUnit: 32e6, offload }),
        ),
      );
    expect(deepspeed("gradients", "none")).toBe(4 * 2851e6 + (16 * 2851e6) / 8);
    expect(deepspeed("gradients", "optimizer")).toBe(2 * 2851e6);
    expect(deepspeed("full", "none")).toBe(4 * 32e6 + (18 * 2851e6) / 8);
    expect(deepspeed("full", "optimizer")).toBe(4 * 32e6 + (2 * 2851e6) / 8);
    expect(deepspeed("full", "parameters-and-optimizer")).toBe(4 * 32e6);
  });

  it("under FSDP2's bf16 policy keep fp32 shards and gather 16-bit units, where the worker gathers fp32 under autocast", () => {
    const fsdp = question("full", { shards: 8, gatheredUnit: 1e8, matrices: 7e9 });
    expect(STATE_RECIPES.pytorch.bytes(fsdp)).toMatchObject({
      parameters: (4 * 7.5e9) / 8,
      gradients: (4 * 7.5e9) / 8,
      optimizer: (8 * 7.5e9) / 8,
      gathered: 2e8,
      gatheredGradients: 6e8,
      casts: 0,
    });
    expect(STATE_RECIPES.worker.bytes(fsdp)).toMatchObject({ gathered: 4e8, gatheredGradients: 4e8, casts: 14e9 });
  });

  it("name what a recipe has no formula for", () => {
    expect(stateProblem("deepspeed", question("optimizer"))).toMatch(/no formula for dpSharding optimizer/);
    expect(stateProblem("zero-paper", question("full", { sixteenBit: false }))).toMatch(/16-bit precision/);
    expect(stateProblem("worker", question("full", { offload: "optimizer" }))).toMatch(/offload optimizer/);
    expect(stateProblem("pytorch", question("optimizer"))).toBeUndefined();
  });
});

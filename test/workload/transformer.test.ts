/**
 * A language model in numbers (src/workload/transformer.ts): the same parameter counts as the worker's models and the
 * registry (test/worker/test_parallel_units.py checks the built models against the registry), training FLOPs, and the
 * workload a calibration's compute is matched on.
 */
import { describe, expect, it } from "vitest";
import { LANGUAGE_SHAPE, PARAMETER_COUNT, type Model } from "../../src/config/registry.ts";
import {
  computeShares,
  computeWorkload,
  parameterCount,
  shapeOf,
  trainingFlopsPerToken,
  unitsPerSample,
} from "../../src/workload/transformer.ts";

describe("the transformer's numbers", () => {
  it("counts every registry language model's parameters as the registry does", () => {
    for (const model of Object.keys(LANGUAGE_SHAPE) as Model[])
      expect(parameterCount(shapeOf(model, {})!), model).toBe(PARAMETER_COUNT[model]);
  });

  it("takes a run's shape knobs over the registry's, keeping the learned positions' count for the embeddings", () => {
    const shape = shapeOf("gpt-nano", { layers: 3, sequenceLength: 64 })!;
    expect(shape).toEqual({ layers: 3, width: 64, heads: 4, sequenceLength: 64, vocab: 256 });
    // One more block of 12h² + 13h; the positions stay the model's 128.
    expect(parameterCount(shape, 128) - PARAMETER_COUNT["gpt-nano"]).toBe(12 * 64 * 64 + 13 * 64);
    expect(shapeOf("resnet50", {})).toBeUndefined();
  });

  it("counts 6 FLOPs per weight of the blocks and the head, and attention's 12·L·h·s", () => {
    const shape = shapeOf("gpt2-small", {})!;
    const weights = 12 * (12 * 768 * 768 + 13 * 768) + 768 * 50304;
    expect(trainingFlopsPerToken(shape, 1024)).toBe(6 * weights + 12 * 12 * 768 * 1024);
  });

  it("throughput counts tokens for a language model and images for an image model", () => {
    expect(unitsPerSample("gpt-nano", { sequenceLength: 32 })).toBe(32);
    expect(unitsPerSample("gpt-nano", {})).toBe(128);
    expect(unitsPerSample("small", {})).toBe(1);
  });

  it("matches a calibration's compute on the workload as it ran, defaults filled in and other layouts' knobs left out", () => {
    expect(computeWorkload("gpt-nano", {})).toEqual(
      computeWorkload("gpt-nano", { optimizer: "sgd", parallelism: "ddp", microBatches: 8 }),
    );
    expect(computeWorkload("gpt-nano", { parallelism: "pipeline" })).toMatchObject({
      parallelism: "pipeline",
      microBatches: 4,
      pipelineSchedule: "gpipe",
    });
    expect(computeWorkload("gpt-nano", { optimizer: "adamw" })).not.toEqual(computeWorkload("gpt-nano", {}));
    expect(computeWorkload("small", { optimizer: "adamw" })).toBeUndefined();
  });

  it("splits the blocks' share of the compute by tensor parallelism and gives the last stage the head", () => {
    const shape = { layers: 4, width: 64, heads: 4, sequenceLength: 32, vocab: 256 };
    const shares = computeShares(shape, 2);
    const block = 6 * 12 * 64 * 64 + 12 * 64 * 32;
    const head = 6 * 64 * 256;
    expect(shares.split).toBeCloseTo((4 * block) / (4 * block + head), 12);
    expect(shares.slowestStage).toBeCloseTo((2 * block + head) / (4 * block + head), 12);
  });
});

import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { nodeWithGpus, predictCaseThroughput, type ThroughputCase } from "../../src/cluster/case-throughput.ts";
import { deviceNetworkGBps } from "../../src/cluster/description.ts";
import { clusterCatalogue } from "../../src/cluster/load.ts";

const PUBLISHED = fileURLToPath(new URL("../bench/data/published/", import.meta.url));

/** DeepLearningExamples' one-DGX-1 ResNet-50 row as a case gives it: the 1-GPU figure an input. */
const dgx1: ThroughputCase = {
  cluster: "dgx-1-v100",
  nodes: 1,
  model: "resnet50",
  layout: { dp: 8, dpSharding: "none", tp: 1, pp: 1, cp: 1 },
  batch: { micro: 256 },
  precision: "amp",
  optimizer: "sgd",
  activationCheckpointing: "none",
  inputs: { gpuThroughput: { value: 1200, unit: "images/s", source: "DLE README, 1 GPU" } },
};

describe("a published case's throughput", () => {
  it("starts from the case's single-GPU input and gives every figure with its band", () => {
    const answer = predictCaseThroughput(dgx1, PUBLISHED);
    if ("missing" in answer) throw new Error(answer.missing);
    expect(answer.prediction.computeBasis).toBe("measured");
    const { imagesPerSecond, scalingEfficiency } = answer.figures;
    // Eight GPUs at 1200 images/s each, less what the all-reduce over NVLink costs.
    expect(imagesPerSecond.predicted).toBeLessThanOrEqual(9600);
    expect(imagesPerSecond.low).toBeLessThanOrEqual(imagesPerSecond.predicted);
    expect(imagesPerSecond.predicted).toBeLessThanOrEqual(imagesPerSecond.high);
    expect(scalingEfficiency.predicted).toBeCloseTo(imagesPerSecond.predicted / 9600, 6);
  });

  it("times a model given by its parameters only from the case's measured throughput, and says what is missing without one", () => {
    const vgg = { ...dgx1, model: { parameters: 138357544 } };
    expect("missing" in predictCaseThroughput(vgg, PUBLISHED)).toBe(false);
    const { inputs: _, ...withoutInput } = vgg;
    const answer = predictCaseThroughput(withoutInput, PUBLISHED);
    expect("missing" in answer && answer.missing).toContain("inputs.gpuThroughput");
  });

  it("reads a pipeline's local batch as its micro-batches' (torchtitan's: as many as stages by default)", () => {
    const pipeline: ThroughputCase = {
      cluster: "p5.48xlarge",
      nodes: 2,
      model: "llama3.1-8b",
      layout: { dp: 2, dpSharding: "full", tp: 4, pp: 2, cp: 1 },
      batch: { micro: 8, sequence: 8192 },
      precision: "bf16",
      optimizer: "adamw",
      activationCheckpointing: "full",
    };
    const answer = predictCaseThroughput(pipeline, PUBLISHED);
    if ("missing" in answer) throw new Error(answer.missing);
    // dp 2 replicas × 8 sequences × 8192 tokens over 16 GPUs a step.
    expect(answer.figures.tokensPerSecondPerGpu.predicted * answer.prediction.stepSeconds).toBeCloseTo(
      (2 * 8 * 8192) / 16,
      3,
    );
    expect(answer.prediction.bubbleSeconds).toBeGreaterThan(0);
  });
});

describe("a case on fewer GPUs a node than its node type has", () => {
  it("keeps each GPU's rail where the NICs are one per GPU, and the node's cards where they are shared", () => {
    const p5 = clusterCatalogue().nodes.get("p5.48xlarge")!.type;
    const four = nodeWithGpus(p5, 4);
    expect(deviceNetworkGBps(four, 4)).toBe(deviceNetworkGBps(p5, 8));
    const g6e = clusterCatalogue().nodes.get("g6e.48xlarge")!.type;
    expect(deviceNetworkGBps(nodeWithGpus(g6e, 4), 4)).toBe(2 * deviceNetworkGBps(g6e, 8));
  });
});

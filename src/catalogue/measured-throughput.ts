/**
 * ringlab's own single-GPU training throughput: test/bench/gpu.sh run on a lent GPU, its results.json committed
 * under test/bench/gpu/<gpu>/ (test/bench/README.md, "GPU benchmark"). Data only, each figure that file's mean
 * rounded to 0.1 img/s (test/catalogue/measured-throughput.test.ts checks every row against it).
 *
 * What `ringlab plan` and `ringlab predict` take from it: how much slower a model trains than ResNet-50 on the same
 * GPU, precision and batch (modelRatio), to scale a GPU's published ResNet-50 figure to a model with no published
 * figure on it (ResNet-101 on a V100, A100 or H100, Inception-v3 on an H100). No catalogue instance type has an H200
 * (AWS p5e/p5en are not in src/catalogue/aws-instance-types.ts), so the figures themselves predict no run yet.
 */
import type { Model } from "../config/schema.ts";

export interface MeasuredThroughput {
  /** As torch names the device (the record's provenance.deviceModel). */
  readonly gpuModel: string;
  readonly model: Model;
  readonly precision: "fp32" | "amp";
  readonly batchSize: number;
  /** Mean over the timed iterations, one process (torchrun, NCCL, DDP), synthetic data; amp with channels-last. */
  readonly imagesPerSecond: number;
  /** The committed results.json, from the repository's root. */
  readonly results: string;
  /** When it was measured (the results' writtenAt day) and on which torch. */
  readonly measuredOn: string;
  readonly torch: string;
}

const H200 = {
  gpuModel: "NVIDIA H200",
  results: "test/bench/gpu/nvidia-h200/results.json",
  measuredOn: "2026-11-26",
  torch: "2.11.0+cu130",
} as const;
const h200 = (
  model: Model,
  precision: "fp32" | "amp",
  batchSize: number,
  imagesPerSecond: number,
): MeasuredThroughput => ({ ...H200, model, precision, batchSize, imagesPerSecond });

export const MEASURED_THROUGHPUT: readonly MeasuredThroughput[] = [
  h200("resnet50", "fp32", 32, 1582.8),
  h200("resnet50", "fp32", 64, 1830.9),
  h200("resnet50", "fp32", 96, 1930.8),
  h200("resnet50", "fp32", 256, 2139.7),
  h200("resnet50", "amp", 32, 1835.8),
  h200("resnet50", "amp", 64, 3530.5),
  h200("resnet50", "amp", 96, 4513.3),
  h200("resnet50", "amp", 256, 5714.1),
  h200("inception_v3", "fp32", 64, 1005.4),
  h200("inception_v3", "fp32", 256, 1153.8),
  h200("inception_v3", "amp", 64, 1930.0),
  h200("inception_v3", "amp", 256, 2638.2),
  h200("resnet101", "fp32", 64, 1160.4),
  h200("resnet101", "fp32", 256, 1399.1),
  h200("resnet101", "amp", 64, 2244.6),
  h200("resnet101", "amp", 256, 3598.9),
];

export interface ModelRatio {
  /** The model's img/s over ResNet-50's: below 1 for a heavier model. */
  readonly ratio: number;
  readonly model: MeasuredThroughput;
  readonly resnet50: MeasuredThroughput;
}

/**
 * The model's throughput over ResNet-50's, measured on one GPU at one precision and the largest batch both were
 * measured at (the published figures' batches are large: 112-1280). Undefined where ringlab has not measured both.
 */
export function modelRatio(model: string, precision: string): ModelRatio | undefined {
  const pairs = MEASURED_THROUGHPUT.filter((row) => row.model === model && row.precision === precision).flatMap(
    (row) => {
      const base = MEASURED_THROUGHPUT.find(
        (other) =>
          other.model === "resnet50" &&
          other.gpuModel === row.gpuModel &&
          other.precision === precision &&
          other.batchSize === row.batchSize,
      );
      return base === undefined
        ? []
        : [{ ratio: row.imagesPerSecond / base.imagesPerSecond, model: row, resnet50: base }];
    },
  );
  return pairs.sort((a, b) => b.model.batchSize - a.model.batchSize)[0];
}

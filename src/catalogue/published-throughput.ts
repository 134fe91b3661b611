/**
 * Published single-GPU training throughput for the GPUs of the instance catalogue (aws-instance-types.ts): what
 * `ringlab plan` and `ringlab predict` use for an AWS run's compute when no campaign of the user's has measured it;
 * and, for those GPUs and the H200 (which no catalogue instance type has), what ringlab's GPU benchmark compares its
 * runs with (test/bench/gpu-report.py, through the generated test/bench/gpu/published-throughput.json). Data only.
 * Every figure is copied as printed from the cited file at the cited commit (test/catalogue/published/ holds the
 * excerpts and the script that extracts them; test/catalogue/published-throughput.test.ts checks every row against
 * them). Nothing is converted or interpolated here.
 *
 * What was looked for and not found (2026-11, NVIDIA DeepLearningExamples, Lambda's PyTorch and TensorFlow
 * benchmarks): any training figure for a T4 (g4dn), an A10G (g5; Lambda's A10 is another card) or an L4 (g6); any
 * ResNet-101 or ResNet-152 figure in PyTorch; Inception-v3 outside TensorFlow. A prediction for those says so.
 */
import type { Model } from "../config/schema.ts";

/**
 * A figure's place: the file at a commit, and the cell (a markdown table under a heading, a CSV row, or a log line).
 */
export interface Citation {
  readonly repo: string;
  readonly commit: string;
  readonly path: string;
  /** Markdown: the heading above the table. */
  readonly heading?: string;
  /** Markdown and CSV: the row's first cell. Log: the field of the summary line ("train.total_ips"). */
  readonly row: string;
  /** Markdown and CSV: the column's header. */
  readonly column?: string;
}

export interface PublishedThroughput {
  /** The catalogue's GPU model (aws-instance-types.ts), which instance types map to. */
  readonly gpuModel: string;
  /** The card that was measured, as its source names it. */
  readonly card: string;
  readonly model: Model;
  /**
   * amp: mixed precision (PyTorch AMP, or TensorFlow's --use_fp16); fp32 is TF32 on an A100 or H100 where the source
   * says so.
   */
  readonly precision: "fp32" | "amp";
  readonly framework: string;
  /** Images per second on one GPU, as printed. */
  readonly imagesPerSecond: number;
  readonly throughputAt: Citation;
  /** Per-GPU batch the figure was measured at, and where that is written. */
  readonly batchSize: number;
  readonly batchAt: Citation;
  /** What else a reader needs to weigh the figure (data, container, how it was averaged). */
  readonly conditions: string;
}

const DLE = { repo: "NVIDIA/DeepLearningExamples", commit: "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd" } as const;
const DLE_RN50 = { ...DLE, path: "PyTorch/Classification/ConvNets/resnet50v1.5/README.md" } as const;
const DLE_CONFIGS = { ...DLE, path: "PyTorch/Classification/ConvNets/configs.yml" } as const;
const DLE_CONDITIONS = "ResNet-50 v1.5, PyTorch 21.03 NGC container, averaged over a training epoch";
const LAMBDA = { repo: "lambdal/deeplearning-benchmark", commit: "aa5addb6a53675a649a80036dad548f1c27cbcc4" } as const;
const LAMBDA_CONDITIONS =
  "NVIDIA's ResNet-50 v1.5 PyTorch code in an NGC container, synthetic data; fp32 means without AMP";
const LAMBDA_TF = {
  repo: "LambdaColdStorage/lambda-tensorflow-benchmark",
  commit: "e086e0e7d88a19991642d0774793693d4b7cbe46",
} as const;
const LAMBDA_TF_CONDITIONS =
  "TensorFlow tf_cnn_benchmarks, synthetic data, --variable_update=replicated; fp16 is --use_fp16";
const A100_P4 = { ...LAMBDA, row: "train.total_ips" } as const;
// Lambda's newer table has no batch-size CSV: the batch is in each run's log; the figure is the mean of the runs'
// train.compute_ips, cut to an integer (pytorch/scripts/compile_results_pytorch_v2.py).
const LAMBDA_V2_H200_CONDITIONS =
  "NVIDIA's ResNet-50 v1.5 PyTorch code in an NGC container, synthetic data, NCHW (memory_format nchw, also under AMP), " +
  "mean of 3 runs on 2024-08-02 (Lambda's LambdaBM_ENG04 machine); fp32 means without AMP";
const H200_RUNS = "pytorch/results_v2/LambdaBM_ENG04_1xH200_140GB_SXM_h200_v2";

const lambdaCsv = (precision: "fp32" | "fp16", row: string, column: string) => ({
  throughputAt: { ...LAMBDA, path: `pytorch/csv_v1_v2/pytorch-train-throughput-${precision}.csv`, row, column },
  batchAt: { ...LAMBDA, path: `pytorch/csv_v1_v2/pytorch-train-bs-${precision}.csv`, row, column },
});
const lambdaV2Csv = (precision: "fp32" | "fp16", row: string, column: string, log: string) => ({
  throughputAt: { ...LAMBDA, path: `pytorch/pytorch-train-throughput-v2-${precision}.csv`, row, column },
  batchAt: { ...LAMBDA, path: log, row: "batch_size" },
});
const lambdaTfCsv = (precision: "fp32" | "fp16", row: string, column: string) => ({
  throughputAt: { ...LAMBDA_TF, path: `tf-train-throughput-${precision}.csv`, row, column },
  batchAt: { ...LAMBDA_TF, path: `tf-train-bs-${precision}.csv`, row, column },
});

const V100 = "NVIDIA V100";
const A100 = "NVIDIA A100";
const H100 = "NVIDIA H100";
const H200 = "NVIDIA H200";

export const PUBLISHED_THROUGHPUT: readonly PublishedThroughput[] = [
  // V100 (p3)
  {
    gpuModel: V100,
    card: "V100 16GB (DGX-1)",
    model: "resnet50",
    precision: "fp32",
    framework: "PyTorch",
    imagesPerSecond: 367,
    batchSize: 112,
    conditions: DLE_CONDITIONS,
    throughputAt: {
      ...DLE_RN50,
      heading: "##### Training performance: NVIDIA DGX-1 16GB (8x V100 16GB)",
      row: "1",
      column: "Throughput - FP32",
    },
    batchAt: { ...DLE_CONFIGS, row: "DGX1V", column: "FP32" },
  },
  {
    gpuModel: V100,
    card: "V100 16GB (DGX-1)",
    model: "resnet50",
    precision: "amp",
    framework: "PyTorch",
    imagesPerSecond: 1200,
    batchSize: 256,
    conditions: DLE_CONDITIONS,
    throughputAt: {
      ...DLE_RN50,
      heading: "##### Training performance: NVIDIA DGX-1 16GB (8x V100 16GB)",
      row: "1",
      column: "Throughput - mixed precision",
    },
    batchAt: { ...DLE_CONFIGS, row: "DGX1V", column: "AMP" },
  },
  {
    gpuModel: V100,
    card: "V100 16GB (Lambda Cloud)",
    model: "resnet50",
    precision: "fp32",
    framework: "PyTorch",
    imagesPerSecond: 369,
    batchSize: 128,
    conditions: LAMBDA_CONDITIONS,
    ...lambdaCsv("fp32", "LambdaCloud 1x V100 16GB", "resnet50"),
  },
  {
    gpuModel: V100,
    card: "V100 16GB (Lambda Cloud)",
    model: "resnet50",
    precision: "amp",
    framework: "PyTorch",
    imagesPerSecond: 833,
    batchSize: 256,
    conditions: LAMBDA_CONDITIONS,
    ...lambdaCsv("fp16", "LambdaCloud 1x V100 16GB", "resnet50"),
  },
  {
    gpuModel: V100,
    card: "V100 SXM3 32GB",
    model: "inception_v3",
    precision: "fp32",
    framework: "TensorFlow 2.2",
    imagesPerSecond: 273,
    batchSize: 192,
    conditions: LAMBDA_TF_CONDITIONS,
    ...lambdaTfCsv("fp32", "V100 32GB", "inception3"),
  },
  {
    gpuModel: V100,
    card: "V100 SXM3 32GB",
    model: "inception_v3",
    precision: "amp",
    framework: "TensorFlow 2.2",
    imagesPerSecond: 771,
    batchSize: 384,
    conditions: LAMBDA_TF_CONDITIONS,
    ...lambdaTfCsv("fp16", "V100 32GB", "inception3"),
  },
  // A100 (p4d)
  {
    gpuModel: A100,
    card: "A100 80GB (DGX A100)",
    model: "resnet50",
    precision: "fp32",
    framework: "PyTorch (TF32)",
    imagesPerSecond: 938,
    batchSize: 256,
    conditions: DLE_CONDITIONS,
    throughputAt: {
      ...DLE_RN50,
      heading: "##### Training performance: NVIDIA DGX A100 (8x A100 80GB)",
      row: "1",
      column: "Throughput - TF32",
    },
    batchAt: { ...DLE_CONFIGS, row: "DGXA100", column: "TF32" },
  },
  {
    gpuModel: A100,
    card: "A100 80GB (DGX A100)",
    model: "resnet50",
    precision: "amp",
    framework: "PyTorch",
    imagesPerSecond: 2470,
    batchSize: 256,
    conditions: DLE_CONDITIONS,
    throughputAt: {
      ...DLE_RN50,
      heading: "##### Training performance: NVIDIA DGX A100 (8x A100 80GB)",
      row: "1",
      column: "Throughput - mixed precision",
    },
    batchAt: { ...DLE_CONFIGS, row: "DGXA100", column: "AMP" },
  },
  {
    gpuModel: A100,
    card: "A100 40GB on an AWS p4d.24xlarge",
    model: "resnet50",
    precision: "fp32",
    framework: "PyTorch",
    imagesPerSecond: 804.77,
    batchSize: 360,
    conditions: "NVIDIA's ResNet-50 v1.5 PyTorch code, synthetic data, one GPU of a p4d, 2020-11-05",
    throughputAt: { ...A100_P4, path: "pytorch/results/A100_p4/PyTorch_resnet50_FP32/05-11-2020_20-52-03.txt" },
    batchAt: {
      ...A100_P4,
      path: "pytorch/results/A100_p4/PyTorch_resnet50_FP32/05-11-2020_20-52-03.txt",
      row: "batch_size",
    },
  },
  {
    gpuModel: A100,
    card: "A100 40GB on an AWS p4d.24xlarge",
    model: "resnet50",
    precision: "amp",
    framework: "PyTorch",
    imagesPerSecond: 1312.66,
    batchSize: 640,
    conditions: "NVIDIA's ResNet-50 v1.5 PyTorch code, synthetic data, one GPU of a p4d, 2020-11-05",
    throughputAt: { ...A100_P4, path: "pytorch/results/A100_p4/PyTorch_resnet50_AMP/05-11-2020_20-28-22.txt" },
    batchAt: {
      ...A100_P4,
      path: "pytorch/results/A100_p4/PyTorch_resnet50_AMP/05-11-2020_20-28-22.txt",
      row: "batch_size",
    },
  },
  {
    gpuModel: A100,
    card: "A100 80GB SXM4 (Lambda)",
    model: "resnet50",
    precision: "fp32",
    framework: "PyTorch",
    imagesPerSecond: 1066,
    batchSize: 640,
    conditions: LAMBDA_CONDITIONS,
    ...lambdaCsv("fp32", "A100 80GB SXM4", "resnet50"),
  },
  {
    gpuModel: A100,
    card: "A100 80GB SXM4 (Lambda)",
    model: "resnet50",
    precision: "amp",
    framework: "PyTorch",
    imagesPerSecond: 1582,
    batchSize: 1280,
    conditions: LAMBDA_CONDITIONS,
    ...lambdaCsv("fp16", "A100 80GB SXM4", "resnet50"),
  },
  {
    gpuModel: A100,
    card: "A100 40GB PCIe",
    model: "inception_v3",
    precision: "fp32",
    framework: "TensorFlow 1.15",
    imagesPerSecond: 627,
    batchSize: 224,
    conditions: LAMBDA_TF_CONDITIONS,
    ...lambdaTfCsv("fp32", "A100 40GB PCIe", "inception3"),
  },
  {
    gpuModel: A100,
    card: "A100 40GB PCIe",
    model: "inception_v3",
    precision: "amp",
    framework: "TensorFlow 1.15",
    imagesPerSecond: 1222,
    batchSize: 360,
    conditions: LAMBDA_TF_CONDITIONS,
    ...lambdaTfCsv("fp16", "A100 40GB PCIe", "inception3"),
  },
  // H100 (p5)
  {
    gpuModel: H100,
    card: "H100 80GB SXM5 (Lambda Cloud)",
    model: "resnet50",
    precision: "fp32",
    framework: "PyTorch",
    imagesPerSecond: 1895,
    batchSize: 640,
    conditions: LAMBDA_CONDITIONS,
    ...lambdaCsv("fp32", "LambdaCloud 1x H100 80GB SXM5", "resnet50"),
  },
  {
    gpuModel: H100,
    card: "H100 80GB SXM5 (Lambda Cloud)",
    model: "resnet50",
    precision: "amp",
    framework: "PyTorch",
    imagesPerSecond: 2791,
    batchSize: 1280,
    conditions: LAMBDA_CONDITIONS,
    ...lambdaCsv("fp16", "LambdaCloud 1x H100 80GB SXM5", "resnet50"),
  },
  // H200 (no catalogue instance type: AWS p5e/p5en are not in aws-instance-types.ts)
  {
    gpuModel: H200,
    card: "H200 140GB SXM (Lambda)",
    model: "resnet50",
    precision: "fp32",
    framework: "PyTorch",
    imagesPerSecond: 2259,
    batchSize: 1280,
    conditions: LAMBDA_V2_H200_CONDITIONS,
    ...lambdaV2Csv(
      "fp32",
      "LambdaBM_ENG04_1xH200_140GB_SXM_h200_v2",
      "resnet50",
      `${H200_RUNS}/PyTorch_resnet50_FP32/02-08-2024_13-03-32.txt`,
    ),
  },
  {
    gpuModel: H200,
    card: "H200 140GB SXM (Lambda)",
    model: "resnet50",
    precision: "amp",
    framework: "PyTorch",
    imagesPerSecond: 3079,
    batchSize: 2560,
    conditions: LAMBDA_V2_H200_CONDITIONS,
    ...lambdaV2Csv(
      "fp16",
      "LambdaBM_ENG04_1xH200_140GB_SXM_h200_v2",
      "resnet50",
      `${H200_RUNS}/PyTorch_resnet50_AMP/02-08-2024_12-39-34.txt`,
    ),
  },
];

/**
 * The catalogue's GPU model of a device, by the whole name torch gives it (torch.cuda.get_device_name, a record's
 * provenance.deviceModel), for the cards the catalogue's instance types carry and the H200 ringlab measured. Another
 * card's name matches nothing, however close: a GH200 ("NVIDIA GH200 480GB") is no H200, an "NVIDIA H100 PCIe" no
 * H100 80GB SXM5.
 */
export const TORCH_DEVICE_NAMES: Readonly<Record<string, string>> = {
  "Tesla V100-SXM2-16GB": V100, // p3
  "Tesla V100-SXM2-32GB": V100, // p3dn
  "NVIDIA A100-SXM4-40GB": A100, // p4d
  "NVIDIA A100-SXM4-80GB": A100, // p4de
  "NVIDIA H100 80GB HBM3": H100, // p5 (SXM5)
  "NVIDIA H200": H200, // test/bench/gpu/nvidia-h200
};

/** The published figures for a GPU, model and precision; empty when nothing was found. */
export function publishedThroughput(gpuModel: string, model: string, precision: string): PublishedThroughput[] {
  return PUBLISHED_THROUGHPUT.filter(
    (row) => row.gpuModel === gpuModel && row.model === model && row.precision === precision,
  );
}

/** Where a figure is, in a form a reader can open: the file's URL at the commit, and the cell. */
export function describeCitation(at: Citation): string {
  const cell = at.column === undefined ? at.row : `row ${JSON.stringify(at.row)}, column ${JSON.stringify(at.column)}`;
  return `https://github.com/${at.repo}/blob/${at.commit.slice(0, 8)}/${at.path}${at.heading === undefined ? "" : ` under "${at.heading.replace(/^#+ /, "")}"`}, ${cell}`;
}

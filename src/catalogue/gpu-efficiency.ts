/**
 * How much of a GPU's dense peak a language model's training reaches, as published: MosaicML's llm-foundry
 * benchmark tables (MPT models, 125M to 30B, FSDP full shard on one node of 8 GPUs, flash attention, bf16 mixed
 * precision), row by row, for the GPUs they cover (H100 80GB, A100 80GB, A100 40GB). MFU there is (6 N + 12 L d s)
 * FLOPs a token, N with the tied embedding, over the GPU's dense peak: the count of src/workload/transformer.ts's
 * trainingFlopsPerToken.
 * A row measured with activation checkpointing (full recomputation) has the recomputation's cost in its figure.
 *
 * The figures are whole steps of 8 GPUs sharing one NVSwitch node, all-gathers and optimizer included: ringlab reads
 * them as the GPU's rate on a model of that width and sequence, which the GEMMs' shapes set (a matrix of width d), and
 * charges what the table's runs did not have (another node count's collectives, the optimizer over another share of
 * the model) on top. No row is fitted to a case of test/bench/data/published/; none comes from the frameworks those
 * cases ran (torchtitan, Megatron-LM, DeepLearningExamples, Horovod). Data only; ../cluster/compute.ts reads it.
 */

/** Where a row is: the file at a commit, its heading, the row's model and sequence. */
export const EFFICIENCY_SOURCE = {
  repo: "mosaicml/llm-foundry",
  commit: "8c8dd48f72168c5d51e2f7b151595892a8fba43d",
  path: "scripts/train/benchmarking/README.md",
  widths: "scripts/train/yamls/pretrain/mpt-<size>.yaml, d_model",
} as const;

/** model (MPT size), d_model, sequence, activation checkpointing, MFU in percent: the table's 8-GPU rows as printed. */
type Row = readonly [model: string, width: number, sequence: number, checkpointing: boolean, mfuPercent: number];

export interface EfficiencyRow {
  readonly model: string;
  readonly width: number;
  readonly sequence: number;
  readonly activationCheckpointing: boolean;
  /** Model FLOPs per second over the dense peak, 0-1. */
  readonly mfu: number;
  readonly heading: string;
}

// "## H100 80GB BF16"
const H100_80GB_BF16: readonly Row[] = [
  ["mpt-30b", 7168, 8192, true, 29.92],
  ["mpt-30b", 7168, 4096, true, 35.86],
  ["mpt-30b", 7168, 2048, true, 38.11],
  ["mpt-30b", 7168, 1024, true, 38.76],
  ["mpt-13b", 5120, 32768, true, 31.68],
  ["mpt-13b", 5120, 16384, true, 35.55],
  ["mpt-13b", 5120, 4096, true, 41.6],
  ["mpt-13b", 5120, 2048, false, 39.79],
  ["mpt-13b", 5120, 1024, true, 44.27],
  ["mpt-7b", 4096, 65536, true, 28.59],
  ["mpt-7b", 4096, 32768, true, 30.94],
  ["mpt-7b", 4096, 8192, true, 37.14],
  ["mpt-7b", 4096, 4096, true, 40.42],
  ["mpt-7b", 4096, 2048, false, 46.44],
  ["mpt-7b", 4096, 1024, true, 42.83],
  ["mpt-3b", 2560, 65536, true, 26.81],
  ["mpt-3b", 2560, 32768, true, 28.84],
  ["mpt-3b", 2560, 16384, false, 36.34],
  ["mpt-3b", 2560, 8192, false, 40.31],
  ["mpt-3b", 2560, 4096, false, 42.31],
  ["mpt-3b", 2560, 1024, false, 46.2],
  ["mpt-3b", 2560, 512, false, 46.32],
  ["mpt-1b", 2048, 65536, true, 26.34],
  ["mpt-1b", 2048, 32768, false, 33.54],
  ["mpt-1b", 2048, 16384, false, 35.22],
  ["mpt-1b", 2048, 8192, false, 37.73],
  ["mpt-1b", 2048, 4096, false, 40.26],
  ["mpt-1b", 2048, 2048, false, 41.82],
  ["mpt-1b", 2048, 1024, false, 41.95],
  ["mpt-1b", 2048, 512, false, 43.21],
  ["mpt-760m", 1536, 32768, false, 31.84],
  ["mpt-760m", 1536, 16384, false, 33.57],
  ["mpt-760m", 1536, 8192, false, 34.84],
  ["mpt-760m", 1536, 4096, false, 35.83],
  ["mpt-760m", 1536, 2048, false, 34.9],
  ["mpt-760m", 1536, 1024, false, 39.76],
  ["mpt-760m", 1536, 512, false, 40.42],
];
// "## H100 80GB FP8"
const H100_80GB_FP8: readonly Row[] = [
  ["mpt-3b", 2560, 32768, true, 14.38],
  ["mpt-3b", 2560, 8192, false, 23.28],
  ["mpt-3b", 2560, 2048, false, 27.7],
  ["mpt-3b", 2560, 512, false, 30.25],
  ["mpt-1b", 2048, 32768, false, 17.55],
  ["mpt-1b", 2048, 8192, false, 20.71],
  ["mpt-1b", 2048, 512, false, 29.06],
];
// "## A100 80GB with 1600 Gbps node-node interconnect (RoCE)"
const A100_80GB_BF16: readonly Row[] = [
  ["mpt-30b", 7168, 8192, true, 39.38],
  ["mpt-30b", 7168, 4096, true, 51.37],
  ["mpt-30b", 7168, 2048, true, 55.3],
  ["mpt-30b", 7168, 1024, true, 55.82],
  ["mpt-30b", 7168, 512, true, 56.4],
  ["mpt-13b", 5120, 32768, true, 51.69],
  ["mpt-13b", 5120, 16384, true, 54.07],
  ["mpt-13b", 5120, 8192, true, 56.07],
  ["mpt-13b", 5120, 4096, true, 57.62],
  ["mpt-13b", 5120, 2048, false, 59.57],
  ["mpt-13b", 5120, 1024, true, 59.48],
  ["mpt-7b", 4096, 65536, true, 46.97],
  ["mpt-7b", 4096, 32768, true, 49.46],
  ["mpt-7b", 4096, 16384, true, 51.96],
  ["mpt-7b", 4096, 8192, true, 54.47],
  ["mpt-7b", 4096, 4096, true, 54.84],
  ["mpt-7b", 4096, 2048, false, 64.23],
  ["mpt-7b", 4096, 1024, true, 58.01],
  ["mpt-3b", 2560, 65536, true, 46.05],
  ["mpt-3b", 2560, 32768, true, 47.18],
  ["mpt-3b", 2560, 16384, false, 57.13],
  ["mpt-3b", 2560, 8192, false, 59.34],
  ["mpt-3b", 2560, 4096, false, 60.53],
  ["mpt-3b", 2560, 2048, false, 62.11],
  ["mpt-3b", 2560, 1024, false, 62.73],
  ["mpt-3b", 2560, 512, false, 63.71],
  ["mpt-1b", 2048, 65536, true, 46.18],
  ["mpt-1b", 2048, 32768, false, 55.52],
  ["mpt-1b", 2048, 16384, false, 56.6],
  ["mpt-1b", 2048, 8192, false, 56.69],
  ["mpt-1b", 2048, 4096, false, 59.0],
  ["mpt-1b", 2048, 2048, false, 59.86],
  ["mpt-1b", 2048, 1024, false, 60.15],
  ["mpt-1b", 2048, 512, false, 60.68],
  ["mpt-760m", 1536, 65536, true, 45.34],
  ["mpt-760m", 1536, 32768, false, 54.57],
  ["mpt-760m", 1536, 16384, false, 54.64],
  ["mpt-760m", 1536, 8192, false, 55.31],
  ["mpt-760m", 1536, 4096, false, 56.05],
  ["mpt-760m", 1536, 2048, false, 56.85],
  ["mpt-760m", 1536, 1024, false, 47.76],
  ["mpt-760m", 1536, 512, false, 45.07],
  ["mpt-350m", 1024, 65536, false, 52.7],
  ["mpt-350m", 1024, 32768, false, 52.46],
  ["mpt-350m", 1024, 16384, false, 53.28],
  ["mpt-350m", 1024, 8192, false, 53.8],
  ["mpt-350m", 1024, 4096, false, 53.31],
  ["mpt-350m", 1024, 2048, false, 51.62],
  ["mpt-350m", 1024, 1024, false, 50.51],
  ["mpt-350m", 1024, 512, false, 50.61],
  ["mpt-125m", 768, 65536, false, 54.13],
  ["mpt-125m", 768, 32768, false, 52.71],
  ["mpt-125m", 768, 16384, false, 50.61],
  ["mpt-125m", 768, 8192, false, 48.85],
  ["mpt-125m", 768, 4096, false, 46.08],
  ["mpt-125m", 768, 2048, false, 44.79],
  ["mpt-125m", 768, 2048, false, 44.45],
  ["mpt-125m", 768, 1024, false, 43.15],
  ["mpt-125m", 768, 512, false, 42.56],
];
// "## A100 40GB with 1600 Gbps node-node interconnect (RoCE)"
const A100_40GB_BF16: readonly Row[] = [
  ["mpt-13b", 5120, 8192, true, 43.95],
  ["mpt-13b", 5120, 4096, true, 44.85],
  ["mpt-13b", 5120, 2048, true, 43.94],
  ["mpt-13b", 5120, 1024, true, 44.07],
  ["mpt-13b", 5120, 512, true, 44.28],
  ["mpt-7b", 4096, 16384, true, 47.65],
  ["mpt-7b", 4096, 8192, true, 49.04],
  ["mpt-7b", 4096, 4096, true, 50.11],
  ["mpt-7b", 4096, 2048, true, 50.92],
  ["mpt-7b", 4096, 1024, true, 51.31],
  ["mpt-7b", 4096, 512, true, 50.85],
  ["mpt-3b", 2560, 32768, true, 46.03],
  ["mpt-3b", 2560, 16384, true, 46.14],
  ["mpt-3b", 2560, 8192, false, 55.13],
  ["mpt-3b", 2560, 4096, false, 56.18],
  ["mpt-3b", 2560, 2048, false, 57.82],
  ["mpt-3b", 2560, 1024, false, 58.14],
  ["mpt-3b", 2560, 512, false, 59.49],
  ["mpt-1b", 2048, 32768, true, 45.07],
  ["mpt-1b", 2048, 16384, false, 55.23],
  ["mpt-1b", 2048, 8192, false, 55.29],
  ["mpt-1b", 2048, 4096, false, 55.85],
  ["mpt-1b", 2048, 2048, false, 56.23],
  ["mpt-1b", 2048, 1024, false, 57.02],
  ["mpt-1b", 2048, 512, false, 57.1],
  ["mpt-760m", 1536, 32768, true, 44.53],
  ["mpt-760m", 1536, 16384, false, 53.26],
  ["mpt-760m", 1536, 8192, false, 53.12],
  ["mpt-760m", 1536, 4096, false, 53.0],
  ["mpt-760m", 1536, 2048, false, 52.89],
  ["mpt-760m", 1536, 1024, false, 53.63],
  ["mpt-760m", 1536, 512, false, 53.47],
  ["mpt-350m", 1024, 32768, false, 51.55],
  ["mpt-350m", 1024, 16384, false, 51.78],
  ["mpt-350m", 1024, 8192, false, 51.39],
  ["mpt-350m", 1024, 4096, false, 50.38],
  ["mpt-350m", 1024, 2048, false, 49.17],
  ["mpt-350m", 1024, 1024, false, 48.73],
  ["mpt-350m", 1024, 512, false, 48.39],
  ["mpt-125m", 768, 32768, false, 47.27],
  ["mpt-125m", 768, 16384, false, 46.77],
  ["mpt-125m", 768, 8192, false, 46.94],
  ["mpt-125m", 768, 4096, false, 44.82],
  ["mpt-125m", 768, 2048, false, 42.75],
  ["mpt-125m", 768, 1024, false, 40.89],
  ["mpt-125m", 768, 512, false, 40.26],
];

function rows(table: readonly Row[], heading: string): EfficiencyRow[] {
  return table.map(([model, width, sequence, activationCheckpointing, mfuPercent]) => ({
    model,
    width,
    sequence,
    activationCheckpointing,
    mfu: mfuPercent / 100,
    heading,
  }));
}

/**
 * A table for a GPU of the cluster catalogue (src/catalogue/clusters/gpus/<key>.yaml) and a precision's peak (bf16:
 * bf16 and fp16 share it; fp8).
 */
export const GPU_EFFICIENCY: Readonly<
  Record<string, Readonly<Partial<Record<"bf16" | "fp8", readonly EfficiencyRow[]>>>>
> = {
  "h100-sxm5-80gb": {
    bf16: rows(H100_80GB_BF16, "## H100 80GB BF16"),
    fp8: rows(H100_80GB_FP8, "## H100 80GB FP8"),
  },
  "a100-sxm4-80gb": { bf16: rows(A100_80GB_BF16, "## A100 80GB with 1600 Gbps node-node interconnect (RoCE)") },
  "a100-sxm4-40gb": { bf16: rows(A100_40GB_BF16, "## A100 40GB with 1600 Gbps node-node interconnect (RoCE)") },
};

/**
 * GPUs without rows of their own that borrow a table of the same chip: the same SMs and tensor cores, other memory
 * (MFU is a share of the peak, which the GPU's own datasheet gives).
 */
export const SAME_CHIP: Readonly<Record<string, string>> = {
  "h100-sxm-96gb-hbm2e": "h100-sxm5-80gb",
  "h200-sxm-141gb": "h100-sxm5-80gb",
};

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AWS_INSTANCE_TYPES } from "../../src/catalogue/aws-instance-types.ts";
import {
  describeCitation,
  PUBLISHED_THROUGHPUT,
  publishedThroughput,
  TORCH_DEVICE_NAMES,
  type Citation,
} from "../../src/catalogue/published-throughput.ts";

// Verbatim excerpts of the cited files at the cited commits (test/catalogue/published/extract.sh writes them).
const EXCERPTS = join(import.meta.dirname, "published");
function excerptOf(at: Citation): string {
  const name =
    at.repo === "NVIDIA/DeepLearningExamples"
      ? at.path.endsWith("README.md")
        ? "dle-pytorch-resnet50v1.5-readme.md"
        : "dle-pytorch-convnets-configs.yml"
      : at.repo === "LambdaColdStorage/lambda-tensorflow-benchmark"
        ? `lambda-${at.path}`
        : at.path.startsWith("pytorch/csv_v1_v2/")
          ? `lambda-${at.path.slice("pytorch/csv_v1_v2/".length)}`
          : at.path.startsWith("pytorch/pytorch-train-throughput-v2-")
            ? `lambda-${at.path.slice("pytorch/".length)}`
            : at.path.startsWith("pytorch/results_v2/LambdaBM_ENG04_1xH200_140GB_SXM_h200_v2/")
              ? `lambda-h200-resnet50-${at.path.includes("_AMP/") ? "amp" : "fp32"}.txt`
              : `lambda-a100-p4-resnet50-${at.path.includes("_AMP/") ? "amp" : "fp32"}.txt`;
  return readFileSync(join(EXCERPTS, name), "utf8");
}

const cells = (line: string) =>
  line
    .split("|")
    .slice(1, -1)
    .map((cell) => cell.replaceAll("**", "").trim());

/** The cell a citation names, as printed. */
function citedCell(at: Citation): string {
  const lines = excerptOf(at).split("\n");
  if (at.path.endsWith(".md")) {
    const from = lines.indexOf(at.heading!);
    expect(from, `heading ${at.heading}`).toBeGreaterThanOrEqual(0);
    const table = lines.slice(from + 1).filter((line) => line.startsWith("|"));
    const column = cells(table[0]!).indexOf(at.column!);
    const row = table.slice(2).find((line) => cells(line)[0] === at.row);
    expect(column, `column ${at.column}`).toBeGreaterThanOrEqual(0);
    return cells(row!)[column]!;
  }
  if (at.path.endsWith(".csv")) {
    const column = lines[0]!.split(",").indexOf(at.column!);
    const row = lines.find((line) => line.split(",")[0] === at.row);
    expect(column, `column ${at.column}`).toBeGreaterThan(0);
    expect(row, `row ${at.row}`).toBeDefined();
    return row!.split(",")[column]!;
  }
  if (at.path.endsWith(".yml")) {
    // configs.yml: the platform ("DGX1V: &RN50_DGX1V"), then the precision, then its batch_size.
    const platform = lines.findIndex((line) => line.startsWith(`        ${at.row}:`));
    const precision = lines.indexOf(`            ${at.column}:`, platform);
    expect(platform, `platform ${at.row}`).toBeGreaterThanOrEqual(0);
    return lines
      .slice(precision)
      .find((line) => line.trim().startsWith("batch_size:"))!
      .split(":")[1]!
      .trim();
  }
  // A DLE log: the excerpt names its file on its first line; the field from the PARAMETER or Summary line.
  expect(lines[0]).toBe(`# ${at.path}`);
  const match = lines
    .map((line) => new RegExp(`\\s${at.row.replaceAll(".", "\\.")} : (\\S+)`).exec(line))
    .find((found) => found !== null);
  return match![1]!;
}

describe("the published throughput table", () => {
  it.each(PUBLISHED_THROUGHPUT.map((row) => [`${row.card} ${row.model} ${row.precision}`, row] as const))(
    "%s: the figure and batch size are the cited cells",
    (_, row) => {
      expect(Number.parseFloat(citedCell(row.throughputAt))).toBe(row.imagesPerSecond);
      expect(Number.parseInt(citedCell(row.batchAt), 10)).toBe(row.batchSize);
    },
  );

  it("labels a row's precision as its run's own parameters say, where a log holds them (amp : True for AMP only)", () => {
    const logged = PUBLISHED_THROUGHPUT.filter((entry) => entry.batchAt.row === "batch_size");
    expect(logged.map((row) => `${row.gpuModel} ${row.precision}`)).toEqual([
      "NVIDIA A100 fp32",
      "NVIDIA A100 amp",
      "NVIDIA H200 fp32",
      "NVIDIA H200 amp",
    ]);
    for (const row of logged)
      expect(citedCell({ ...row.batchAt, row: "amp" })).toBe(row.precision === "amp" ? "True" : "False");
  });

  it("takes an H200 figure from Lambda's v2 table as its 3 runs at the cited batch give it: the mean of train.compute_ips, cut to an integer", () => {
    // pytorch/scripts/compile_results_pytorch_v2.py at the cited commit: int(round(sum / count, 2)) of field 11
    // of each log's "Summary: train.loss" line, which is train.compute_ips.
    const rows = PUBLISHED_THROUGHPUT.filter((entry) => entry.gpuModel === "NVIDIA H200");
    expect(rows.map((row) => [row.precision, row.imagesPerSecond, row.batchSize])).toEqual([
      ["fp32", 2259, 1280],
      ["amp", 3079, 2560],
    ]);
    for (const row of rows) {
      const runs = excerptOf(row.batchAt)
        .split(/^(?=# )/m)
        .map((log) => ({
          file: log.split("\n")[0]!.slice(2),
          batchSize: Number(/\sbatch_size : (\S+)/.exec(log)![1]),
          memoryFormat: /\smemory_format : (\S+)/.exec(log)![1],
          computeIps: Number(/\strain\.compute_ips : (\S+)/.exec(log)![1]),
        }));
      expect(runs.map((run) => run.file.slice(0, run.file.lastIndexOf("/")))).toEqual(
        Array(3).fill(row.batchAt.path.slice(0, row.batchAt.path.lastIndexOf("/"))),
      );
      expect(runs.map((run) => [run.batchSize, run.memoryFormat])).toEqual(Array(3).fill([row.batchSize, "nchw"]));
      const mean = runs.reduce((sum, run) => sum + run.computeIps, 0) / runs.length;
      expect(Math.trunc(Number(mean.toFixed(2)))).toBe(row.imagesPerSecond);
    }
  });

  it("maps every row to a GPU that instance types in the catalogue have, but the H200's (no p5e or p5en in the catalogue)", () => {
    const gpus = new Set(Object.values(AWS_INSTANCE_TYPES).map((entry) => entry.gpuModel));
    expect(gpus).not.toContain("NVIDIA H200");
    for (const row of PUBLISHED_THROUGHPUT.filter((entry) => entry.gpuModel !== "NVIDIA H200"))
      expect(gpus).toContain(row.gpuModel);
  });

  /** The table's GPU model for a device name torch reports, matched whole, as the GPU bench reads it (its JSON). */
  const gpuModelOfDevice = (deviceName: string): string | undefined =>
    Object.hasOwn(TORCH_DEVICE_NAMES, deviceName) ? TORCH_DEVICE_NAMES[deviceName] : undefined;

  it("knows a device by its whole name as torch gives it: a GH200 or an H100 PCIe is none of the table's GPUs", () => {
    expect(gpuModelOfDevice("NVIDIA H200")).toBe("NVIDIA H200");
    expect(gpuModelOfDevice("NVIDIA H100 80GB HBM3")).toBe("NVIDIA H100");
    expect(gpuModelOfDevice("NVIDIA GH200 480GB")).toBeUndefined();
    expect(gpuModelOfDevice("NVIDIA H100 PCIe")).toBeUndefined();
    expect(gpuModelOfDevice("H200")).toBeUndefined();
    expect(gpuModelOfDevice("toString")).toBeUndefined();
    for (const gpuModel of Object.values(TORCH_DEVICE_NAMES))
      expect(publishedThroughput(gpuModel, "resnet50", "amp")).not.toEqual([]);
  });

  it("finds nothing for a GPU or model nobody published (T4; ResNet-101)", () => {
    expect(publishedThroughput("NVIDIA T4", "resnet50", "fp32")).toEqual([]);
    expect(publishedThroughput("NVIDIA V100", "resnet101", "fp32")).toEqual([]);
    expect(publishedThroughput("NVIDIA V100", "resnet50", "amp").map((row) => row.imagesPerSecond)).toEqual([
      1200, 833,
    ]);
  });

  it("cites a cell a reader can open", () => {
    expect(describeCitation(PUBLISHED_THROUGHPUT[0]!.throughputAt)).toBe(
      "https://github.com/NVIDIA/DeepLearningExamples/blob/729963dd/PyTorch/Classification/ConvNets/resnet50v1.5/README.md " +
        'under "Training performance: NVIDIA DGX-1 16GB (8x V100 16GB)", row "1", column "Throughput - FP32"',
    );
  });
});

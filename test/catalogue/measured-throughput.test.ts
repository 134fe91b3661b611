import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MEASURED_THROUGHPUT, modelRatio } from "../../src/catalogue/measured-throughput.ts";

interface BenchResults {
  schema: string;
  writtenAt: string;
  provenance: { deviceModel: string; torch: string };
  runs: {
    model: string;
    precision: string;
    batchSize: number;
    status: string;
    imagesPerSecond: { mean: number } | null;
  }[];
}

describe("ringlab's measured GPU throughput", () => {
  const files = [...new Set(MEASURED_THROUGHPUT.map((row) => row.results))];

  it.each(files)("%s: every successful run is a row, as measured, and every row is a run", (file) => {
    const results = JSON.parse(readFileSync(file, "utf8")) as BenchResults;
    expect(results.schema).toBe("ringlab.gpu-bench/v2");
    const rows = MEASURED_THROUGHPUT.filter((row) => row.results === file);
    const runs = results.runs.filter((run) => run.status === "ok");
    expect(
      rows.map(({ model, precision, batchSize, imagesPerSecond }) => ({
        model,
        precision,
        batchSize,
        imagesPerSecond,
      })),
    ).toEqual(
      runs.map((run) => ({
        model: run.model,
        precision: run.precision,
        batchSize: run.batchSize,
        imagesPerSecond: Math.round(run.imagesPerSecond!.mean * 10) / 10,
      })),
    );
    for (const row of rows) {
      expect(row.gpuModel).toBe(results.provenance.deviceModel);
      expect(row.torch).toBe(results.provenance.torch);
      expect(row.measuredOn).toBe(results.writtenAt.slice(0, 10));
    }
  });

  it("relates a model to ResNet-50 at the largest batch both were measured at, and knows nothing it did not measure", () => {
    expect(modelRatio("resnet101", "fp32")).toMatchObject({
      ratio: 1399.1 / 2139.7,
      model: { batchSize: 256 },
      resnet50: { batchSize: 256 },
    });
    expect(modelRatio("resnet50", "amp")?.ratio).toBe(1);
    expect(modelRatio("resnet152", "amp")).toBeUndefined();
    expect(modelRatio("resnet101", "bf16")).toBeUndefined();
  });
});

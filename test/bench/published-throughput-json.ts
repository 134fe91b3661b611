/**
 * test/bench/gpu/published-throughput.json: src/catalogue/published-throughput.ts for test/bench/gpu-report.py, which
 * runs on a GPU machine with Python and no Node.js. Generated, never edited; test/bench/gpu-published.test.ts fails
 * when it differs from the table.
 *
 *   npx tsx test/bench/published-throughput-json.ts
 */
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  describeCitation,
  PUBLISHED_THROUGHPUT,
  TORCH_DEVICE_NAMES,
} from "../../src/catalogue/published-throughput.ts";

export const PUBLISHED_THROUGHPUT_JSON = join(import.meta.dirname, "gpu", "published-throughput.json");

export function publishedThroughputJson(): string {
  return (
    JSON.stringify(
      {
        generatedFrom: "src/catalogue/published-throughput.ts",
        regenerate: "npx tsx test/bench/published-throughput-json.ts",
        deviceNames: TORCH_DEVICE_NAMES,
        rows: PUBLISHED_THROUGHPUT.map((row) => ({
          gpuModel: row.gpuModel,
          card: row.card,
          model: row.model,
          precision: row.precision,
          framework: row.framework,
          imagesPerSecond: row.imagesPerSecond,
          batchSize: row.batchSize,
          conditions: row.conditions,
          at: describeCitation(row.throughputAt),
          batchAt: describeCitation(row.batchAt),
        })),
      },
      null,
      2,
    ) + "\n"
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const temp = `${PUBLISHED_THROUGHPUT_JSON}.${process.pid}.tmp`;
  writeFileSync(temp, publishedThroughputJson());
  renameSync(temp, PUBLISHED_THROUGHPUT_JSON);
  console.log(`written: ${PUBLISHED_THROUGHPUT_JSON}`);
}

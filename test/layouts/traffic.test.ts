/**
 * Each layout unit's collectives against what the worker recorded on the same runs: every training record of the
 * committed bench campaigns that has a layout (metrics.layout.traffic), collective by collective, with the mesh group
 * each runs in and its calls. Bytes are compared where they are activations (tensor parallelism's all-reduces, a
 * pipeline's sends); the gradients' (ddp, fsdp) count the learned positions at the registry's sequence length
 * (workload/traffic.ts unitBytes) where these runs built the run's 64, 0.7 % of gpt-mini's: the saved predictions were
 * made with that count, and branch model (#68) counts them as built.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { stepTraffic } from "../../src/layouts/index.ts";

interface LayoutRecord {
  readonly runId: string;
  readonly params: { readonly model: string; readonly batchSize: number };
  readonly result: {
    readonly knobs: Readonly<Record<string, unknown>>;
    readonly metrics: {
      readonly layout: {
        readonly parallelism: string;
        readonly dims: Readonly<Record<string, number>>;
        readonly traffic: readonly { op: string; bytes: number; calls: number; group: string }[];
      };
    };
  };
}

function layoutRecords(): LayoutRecord[] {
  const folder = "test/bench/data";
  const found: LayoutRecord[] = [];
  for (const campaign of readdirSync(folder)) {
    for (const file of readdirSync(`${folder}/${campaign}`).filter((name) => name.endsWith(".jsonl"))) {
      for (const line of readFileSync(`${folder}/${campaign}/${file}`, "utf8").split("\n")) {
        if (!line.includes('"traffic"')) continue;
        const record = JSON.parse(line) as LayoutRecord;
        const layout = record.result?.metrics?.layout;
        if (layout === undefined || record.params.model === undefined) continue;
        found.push(record);
      }
    }
  }
  return found;
}

const records = layoutRecords();

function comparable(collectives: readonly { op: string; bytes: number; calls: number; group: string }[]) {
  return collectives.map(({ op, bytes, calls, group }) => ({
    op,
    calls,
    group,
    ...(group === "tp" || group === "pp" ? { bytes } : {}),
  }));
}

describe("each layout's collectives, against the worker's records", () => {
  it("covers every layout the bench campaigns ran", () => {
    expect(new Set(records.map((record) => record.result.metrics.layout.parallelism))).toEqual(
      new Set(["ddp", "fsdp", "tensor", "pipeline"]),
    );
  });

  it("gives each run's collectives as its worker recorded them", () => {
    const differing = records.flatMap((record) => {
      const { dims, traffic } = record.result.metrics.layout;
      const predicted = stepTraffic({
        model: record.params.model,
        batchSize: record.params.batchSize,
        knobs: record.result.knobs,
        dims: {
          pp: dims["pp"] ?? 1,
          dpReplicate: dims["dp_replicate"] ?? 1,
          dpShard: dims["dp_shard"] ?? 1,
          tp: dims["tp"] ?? 1,
        },
      });
      const [ours, theirs] = [comparable(predicted), comparable(traffic)];
      return JSON.stringify(ours) === JSON.stringify(theirs) ? [] : [{ runId: record.runId, ours, theirs }];
    });
    expect(records.length).toBeGreaterThan(100);
    expect(differing).toEqual([]);
  });
});

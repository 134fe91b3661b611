/**
 * A node whose memory holds the language model only sharded (test/bench/README.md, "Sharded on CPU nodes"):
 * campaigns/local-sharded-memory.yaml run on 2026-11-28 (01:29-01:34 UTC, the worker image on tcmalloc), its records
 * in test/bench/data/sharded-memory/. Every figure the README quotes of it is recomputed here.
 *
 *   npx ringlab campaign campaigns/local-sharded-memory.yaml --results <folder>
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { planCampaign } from "../../src/campaign/plan.ts";
import { memoryLimitOf, planProblems } from "../../src/campaign/fits.ts";
import { parseCampaign } from "../../src/config/load.ts";
import { ASSUMED_MEMORY, isMemoryPrediction, predictMemory } from "../../src/predict/memory.ts";
import type { RunRecord } from "../../src/results/record.ts";
import { recordsOf } from "./records.ts";

const MIB = 2 ** 20;
const FOLDER = "test/bench/data/sharded-memory";
const records: RunRecord[] = recordsOf(`${FOLDER}/runs.jsonl`);
const campaign = parseCampaign(readFileSync(`${FOLDER}/campaign.yaml`, "utf8"), "campaign.yaml", undefined, {
  checkFolders: false,
});
const limit = memoryLimitOf(campaign)!;

describe("FSDP where a node holds the model only sharded (test/bench/README.md)", () => {
  it("is refused with DDP beside it, which the memory model puts above the node's 0.75 GiB", () => {
    const withDdp = parseCampaign(
      readFileSync(`${FOLDER}/campaign.yaml`, "utf8").replace("parallelism: fsdp\n", "parallelism: [ddp, fsdp]\n"),
      "c.yaml",
      undefined,
      { checkFolders: false },
    );
    const problems = planProblems(planCampaign(withDdp, "c"), withDdp, ASSUMED_MEMORY.cpu);
    expect(problems).toEqual([
      expect.stringMatching(
        /^train-gpt-mini-b4-n3-1gbit-parallelism-ddp does not fit: 0\.34 GiB predicted per rank, 0\.79 GiB per node, 0\.75 GiB per node .*fits with fsdp full shard on 3 nodes: 0\.68 GiB/,
      ),
    ]);
    expect(planProblems(planCampaign(campaign, "c"), campaign, ASSUMED_MEMORY.cpu)).toEqual([]);
  });

  it("ran its 4 FSDP runs on tcmalloc within the limit, every rank within 6 % of the memory model (the worst +5.3 %)", () => {
    expect(records.map((record) => [record.status, record.result?.provenance.allocator])).toEqual(
      Array(4).fill(["ok", "tcmalloc"]),
    );
    for (const record of records) {
      if (record.result?.job !== "train") throw new Error("training records");
      const predicted = predictMemory(
        { model: "gpt-mini", batchSize: 4, nodes: 3, knobs: record.result.knobs },
        ASSUMED_MEMORY.cpu,
      );
      if (!isMemoryPrediction(predicted)) throw new Error(predicted.problem);
      for (const rank of record.result.metrics.memory!.perRank) {
        const peak = rank.peakBytes - rank.baselineBytes;
        expect(Math.abs(peak / predicted.rankBytes - 1), record.runId).toBeLessThan(0.06);
        // A node: its launcher, the rank's baseline and its peak, under the container's limit.
        expect(((rank["launcherPeakBytes"] as number | undefined) ?? 0) + rank.peakBytes).toBeLessThan(limit.bytes);
      }
    }
  });

  it("trained on the byte-level text corpus, its loss falling from 5.65 to 3.63", () => {
    for (const record of records) {
      if (record.result?.job !== "train") throw new Error("training records");
      const metrics = record.result.metrics as { data?: { kind?: string }; losses?: number[] };
      expect(metrics.data?.kind).toBe("corpus");
      expect([metrics.losses![0]!.toFixed(2), metrics.losses!.at(-1)!.toFixed(2)]).toEqual(["5.65", "3.63"]);
    }
  });

  it("peaked at 243-254 MiB a rank for fsdp full and 265-278 for grad-op (the model: 241 and 278)", () => {
    const peaks = (sharding: string) =>
      records
        .filter((record) => record.params.knobs["fsdpSharding"] === sharding)
        .flatMap((record) =>
          record.result?.job === "train"
            ? record.result.metrics.memory!.perRank.map((rank) =>
                Math.round((rank.peakBytes - rank.baselineBytes) / MIB),
              )
            : [],
        );
    expect([
      Math.min(...peaks("full")),
      Math.max(...peaks("full")),
      Math.min(...peaks("grad-op")),
      Math.max(...peaks("grad-op")),
    ]).toEqual([243, 254, 265, 278]);
  });
});

/**
 * A language model where a node's memory holds it only sharded, predicted before the run from two other campaigns
 * (test/bench/README.md, "Sharded, predicted before the run"): campaigns/local-sharded-baselines.yaml (one worker's
 * step of each layout) and campaigns/local-sharded-links.yaml (the probe of every collective at every rate) on
 * 2026-11-28, calibrated, then campaigns/local-sharded.yaml with that calibration. Every attempt's record of the three,
 * the calibration and the predictions are in test/bench/data/sharded-predicted/; every figure the README quotes of
 * them is recomputed here.
 *
 *   npx ringlab campaign campaigns/local-sharded-baselines.yaml --results <baselines>
 *   npx ringlab campaign campaigns/local-sharded-links.yaml --results <links>
 *   npx ringlab calibrate <baselines> <links> --out calibration.json
 *   npx ringlab campaign campaigns/local-sharded.yaml --calibration calibration.json --results <folder>
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { memoryConstantsFor, planProblems } from "../../src/campaign/fits.ts";
import { planCampaign } from "../../src/campaign/plan.ts";
import { parseCampaign } from "../../src/config/load.ts";
import { calibrationFromRecords, mergeCalibrations } from "../../src/predict/calibration.ts";
import { reportData } from "../../src/analysis/data.ts";
import { layoutComparisons, layoutVerdict } from "../../src/report/layouts.ts";
import { scorePredictions, scoreSummary } from "../../src/report/predictions.ts";
import {
  committedPredictions,
  latestOf,
  recordsOf,
  rounded,
  comparableWithBefore,
  expectMemoryFitsClose,
  seenOf,
} from "./records.ts";
import { countSeen } from "../../src/results/predictions.ts";

const FOLDER = "test/bench/data/sharded-predicted";
/** Where the three campaigns wrote their results on the machine that ran them (the calibration names these folders). */
const RAN_IN = {
  baselines: "/root/evidence/s52/baselines",
  links: "/root/evidence/s52/links",
  sharded: "/root/evidence/s52/sharded",
};
const baselines = recordsOf(`${FOLDER}/baselines-attempts.jsonl`);
const links = recordsOf(`${FOLDER}/links-attempts.jsonl`);
const attempts = recordsOf(`${FOLDER}/attempts.jsonl`);
/** Each run's latest attempt, as the results folder's runs.jsonl holds them. */
const latest = latestOf(attempts);
const { calibration, predictions } = committedPredictions(`${FOLDER}/calibration.json`, `${FOLDER}/predictions.json`);
const campaignText = readFileSync(`${FOLDER}/campaign.yaml`, "utf8");
const campaign = parseCampaign(campaignText, "campaign.yaml", undefined, { checkFolders: false });
const data = reportData(latest);
const score = scorePredictions(predictions, data, attempts);
/** measured step / predicted step − 1, in %: a step trains the same tokens, so predicted / measured throughput − 1. */
const stepError = (row: (typeof score.scored)[number]) => 100 * (row.predictedThroughput / row.measuredThroughput - 1);
const counted = score.scored.filter((row) => row.counted);
const round1 = (value: number) => Math.round(10 * value) / 10;
const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

describe("FSDP where a node holds the model only sharded, predicted before the run from other campaigns (test/bench/README.md)", () => {
  it("ran 24 runs on 3 nodes, all ok, on tcmalloc, under 0.75 GiB a node", () => {
    expect(latest).toHaveLength(24);
    expect(attempts).toHaveLength(24); // none run again
    expect(latest.every((record) => record.status === "ok")).toBe(true);
    expect(new Set(latest.map((record) => record.result?.provenance.allocator))).toEqual(new Set(["tcmalloc"]));
    expect(new Set(latest.map((record) => record.params.memoryPerNodeGiB))).toEqual(new Set([0.75]));
  });

  it("refuses DDP beside it before anything starts, from the same calibration, naming the layout that fits", () => {
    const withDdp = parseCampaign(
      campaignText.replace("parallelism: fsdp\n", "parallelism: [ddp, fsdp]\n"),
      "c.yaml",
      undefined,
      { checkFolders: false },
    );
    const constants = memoryConstantsFor(withDdp, 0.5, calibration);
    const problems = planProblems(planCampaign(withDdp, "c"), withDdp, constants);
    expect(problems).toHaveLength(6);
    for (const problem of problems)
      expect(problem).toMatch(
        /-parallelism-ddp(-data-[a-z]+)? does not fit: 0\.34 GiB predicted per rank, 0\.\d\d GiB per node, 0\.75 GiB per node .*fits with fsdp full shard on 3 nodes/,
      );
    expect(planProblems(planCampaign(campaign, "c"), campaign, memoryConstantsFor(campaign, 0.5, calibration))).toEqual(
      [],
    );
  });

  it("was calibrated from the two other campaigns' records alone, as committed", () => {
    const again = mergeCalibrations([
      calibrationFromRecords(baselines, RAN_IN.baselines, () => {}, RAN_IN.baselines),
      calibrationFromRecords(links, RAN_IN.links, () => {}, RAN_IN.links),
    ]);
    expect(rounded(comparableWithBefore(again))).toEqual(rounded(comparableWithBefore(calibration)));
    expectMemoryFitsClose(again, calibration);
    // The other campaigns ran one worker, or the small CNN and the probes on 3 nodes: no run of this campaign.
    const configurations = new Set(
      [...baselines, ...links].map(
        (record) => `${record.params.job} ${record.params.model ?? "probe"} n${record.params.nodes}`,
      ),
    );
    expect([...configurations].sort()).toEqual(["allreduce probe n3", "train gpt-mini n1", "train tiny n3"]);
  });

  it("saved its predictions before the first run, with every calibration input's folder another campaign's, every run unseen", () => {
    expect(predictions.runsDoneBefore).toEqual([]);
    expect(predictions.sample).toEqual({ kind: "out-of-sample" });
    // By configuration, recomputed from the calibration campaigns' records: none of its runs' configurations.
    const again = mergeCalibrations([
      calibrationFromRecords(baselines, RAN_IN.baselines, () => {}, RAN_IN.baselines),
      calibrationFromRecords(links, RAN_IN.links, () => {}, RAN_IN.links),
    ]);
    expect(countSeen([...seenOf(campaign, again, predictions).values()])).toEqual({
      unseen: 24,
      partly: 0,
      seen: 0,
      replayed: 0,
    });
    for (const record of attempts) expect(Date.parse(record.startedAt)).toBeGreaterThan(Date.parse(predictions.madeAt));
    expect(new Set(predictions.calibrationInputs.map((input) => input.folder))).toEqual(
      new Set([RAN_IN.baselines, RAN_IN.links]),
    );
    expect(predictions.predictions).toHaveLength(24);
  });

  it("put every shaped-link run's step within 15 % of the prediction (−5.4 % to +1.2 %, mean |error| 1.6 %); unshaped, up to 15 % shorter", () => {
    const [shaped, unlimited] = [
      counted.filter((row) => !row.runId.includes("-unlimited-")),
      counted.filter((row) => row.runId.includes("-unlimited-")),
    ];
    expect([shaped.length, unlimited.length]).toEqual([16, 8]);
    expect(shaped.every((row) => Math.abs(stepError(row)) <= 15)).toBe(true);
    const figures = (rows: typeof counted) =>
      [
        Math.min(...rows.map(stepError)),
        Math.max(...rows.map(stepError)),
        mean(rows.map((row) => Math.abs(stepError(row)))),
      ].map(round1);
    expect(figures(shaped)).toEqual([-5.4, 1.2, 1.6]);
    expect(figures(unlimited)).toEqual([-15.3, 1.4, 6.9]);
  });

  it("put every run's peak memory per rank within 10 % of the prediction saved before it (−7.0 % to +6.1 %)", () => {
    expect(counted).toHaveLength(24);
    expect(counted.every((row) => row.memoryError !== null && Math.abs(row.memoryError) <= 0.1)).toBe(true);
    expect(
      [Math.min(...counted.map((row) => row.memoryError!)), Math.max(...counted.map((row) => row.memoryError!))].map(
        (error) => round1(100 * error),
      ),
    ).toEqual([-7.0, 6.1]);
    expect(scoreSummary(score)).toMatch(/24 of 24 runs' peak memory per rank within 10 % of the predicted$/);
  });

  it("names grad-op the fastest layout that fits at every rate, by 26 %, 17 % and 7 % on the text corpus (300 Mbit/s, 1 Gbit/s, unshaped)", () => {
    const verdicts = layoutComparisons(data.training)
      .map(layoutVerdict)
      .filter((verdict) => verdict.includes("data=dataset"));
    expect(
      verdicts.map((verdict) =>
        verdict
          .match(
            / · (\w+) · 3 nodes: (fsdp [\w-]+) was fastest \(([\d.]+) tok\/s\), (\d+) % more than (fsdp [\w-]+) \(([\d.]+) tok/,
          )!
          .slice(1),
      ),
    ).toEqual([
      ["300mbit", "fsdp grad-op", "182.3", "26", "fsdp full", "144.9"],
      ["1gbit", "fsdp grad-op", "346.0", "17", "fsdp full", "295.0"],
      ["unlimited", "fsdp grad-op", "482.8", "7", "fsdp full", "453.1"],
    ]);
  });

  it("trained on the byte-level text corpus (loss 5.65 to 3.63 in 11 steps) and on synthetic tokens", () => {
    const losses = (kind: string) =>
      new Set(
        latest.flatMap((record) => {
          const metrics =
            record.result?.job === "train"
              ? (record.result.metrics as { data?: { kind?: string }; losses?: number[] })
              : {};
          return metrics.data?.kind === kind
            ? [
                `${metrics.losses![0]!.toFixed(2)} to ${metrics.losses!.at(-1)!.toFixed(2)} in ${metrics.losses!.length} steps`,
              ]
            : [];
        }),
      );
    expect(losses("corpus")).toEqual(new Set(["5.65 to 3.63 in 11 steps"]));
    expect(latest.filter((record) => record.params.knobs?.["data"] === "synthetic")).toHaveLength(12);
  });

  it("ran 07:43-08:20 UTC, its predictions saved at 07:56:30, and trained as fast on text as on synthetic tokens on the shaped links", () => {
    const times = [...baselines, ...links, ...attempts].flatMap((record) => [
      Date.parse(record.startedAt),
      Date.parse(record.endedAt),
    ]);
    expect([
      new Date(Math.min(...times)).toISOString().slice(11, 16),
      new Date(Math.max(...times)).toISOString().slice(11, 16),
    ]).toEqual(["07:43", "08:20"]);
    expect(predictions.madeAt.slice(11, 19)).toBe("07:56:30");
    const verdicts = layoutComparisons(data.training).map(layoutVerdict);
    const rates = (kind: string) =>
      verdicts
        .filter((verdict) => verdict.includes(`data=${kind}`) && !verdict.includes("unlimited"))
        .flatMap((verdict) => [...verdict.matchAll(/\(([\d.]+) tok\/s\)/g)].map((match) => Number(match[1])));
    const [text, synthetic] = [rates("dataset"), rates("synthetic")];
    expect(text).toHaveLength(4);
    for (const [index, rate] of text.entries()) expect(Math.abs(rate / synthetic[index]! - 1)).toBeLessThan(0.02);
    // Synthetic tokens' margins of grad-op over full shard, and every verdict's peaks (the README's table).
    expect(
      verdicts
        .filter((verdict) => verdict.includes("data=synthetic"))
        .map((verdict) => Number(verdict.match(/, (\d+) % more than/)![1])),
    ).toEqual([26, 17, 6]);
    expect(
      verdicts
        .filter((verdict) => verdict.includes("data=dataset"))
        .map((verdict) => verdict.match(/Peak memory per rank: (.*) GiB\.$/)![1]),
    ).toEqual([
      "fsdp grad-op 0.26 (predicted 0.27), fsdp full 0.25 (predicted 0.24)",
      "fsdp grad-op 0.27 (predicted 0.27), fsdp full 0.25 (predicted 0.24)",
      "fsdp grad-op 0.27 (predicted 0.27), fsdp full 0.25 (predicted 0.24)",
    ]);
  });
});

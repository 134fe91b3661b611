import { describe, expect, it } from "vitest";
import { reportData, reportMeta } from "../../src/analysis/data.ts";
import { renderHtml, renderMarkdown } from "../../src/report/render.ts";
import { raceVerdict, strategyRaces } from "../../src/report/time-to-accuracy.ts";
import type { RunRecord } from "../../src/results/record.ts";
import { trainRecord } from "./fixtures/records.ts";

interface RealRun {
  readonly knobs: RunRecord["params"]["knobs"];
  readonly repeat?: number;
  readonly bandwidth?: string;
  readonly throughput: number;
  /** Held-out accuracy after each epoch. */
  readonly accuracy: readonly number[];
  readonly seconds: number;
  readonly target?: number | null;
  readonly divergence?: number;
  /** Local SGD's drift at each averaging. */
  readonly averagingDrift?: readonly number[];
  /** The asynchronous server's staleness count (mean, max). */
  readonly staleness?: readonly [number, number];
}

/** A time-to-train record on 3 nodes: 10 steps an epoch, stopped at the first epoch reaching the target. */
function realRun(run: RealRun): RunRecord {
  const target = run.target === undefined ? 0.9 : run.target;
  const record = trainRecord({
    model: "small",
    batchSize: 32,
    nodes: 3,
    bandwidth: run.bandwidth ?? "300mbit",
    repeat: run.repeat ?? 1,
    throughput: run.throughput,
    knobs: { data: "dataset", ...run.knobs },
  });
  const reachedAt = target === null ? -1 : run.accuracy.findIndex((accuracy) => accuracy >= target);
  const metrics = {
    ...record.result!.metrics,
    data: { kind: "folder", path: "/s/datasets/shapes" },
    timeToTrainSeconds: run.seconds,
    targetAccuracy: target,
    reachedTargetAtEpoch: reachedAt === -1 ? null : reachedAt + 1,
    epochs: run.accuracy.map((heldOutAccuracy, i) => ({
      epoch: i + 1,
      seconds: run.seconds / run.accuracy.length,
      heldOutAccuracy,
      steps: 10 * (i + 1),
    })),
    ...(run.divergence === undefined ? {} : { replicaDivergence: run.divergence }),
    ...(run.averagingDrift === undefined ? {} : { averagingDrift: run.averagingDrift }),
    ...(run.staleness === undefined
      ? {}
      : { staleness: { bound: 1, updates: 60, mean: run.staleness[0], max: run.staleness[1], histogram: {} } }),
  };
  return { ...record, result: { ...record.result!, metrics } } as RunRecord;
}

const POWERSGD = { reduction: "powersgd", powersgdRank: 1 };
const LOCAL_SGD = { reduction: "local-sgd", localSgdPeriod: 4 };

/** 300 Mbit/s: ring reaches 90 % at epoch 3 in 80 s; PowerSGD at epoch 4 in 40 s; local SGD never (85 % at best). */
function study(): RunRecord[] {
  return [
    ...[1, 2].map((repeat) =>
      realRun({
        knobs: { reduction: "ring" },
        repeat,
        throughput: 105,
        accuracy: [0.5, 0.8, 0.92],
        seconds: repeat === 1 ? 78 : 82,
        divergence: 0,
      }),
    ),
    ...[1, 2].map((repeat) =>
      realRun({
        knobs: POWERSGD,
        repeat,
        throughput: 260,
        accuracy: [0.4, 0.7, 0.85, 0.91],
        seconds: repeat === 1 ? 39 : 41,
        divergence: 0,
      }),
    ),
    ...[1, 2].map((repeat) =>
      realRun({
        knobs: LOCAL_SGD,
        repeat,
        throughput: 200,
        accuracy: [0.3, 0.6, 0.8, 0.85, 0.84, 0.83],
        seconds: 60,
        divergence: 0.02,
        averagingDrift: repeat === 1 ? [0.01, 0.03] : [0.05, 0.02],
      }),
    ),
  ];
}

describe("time to accuracy per strategy", () => {
  it("puts each strategy's throughput, steps, epochs and time to the target side by side, ring first", () => {
    const [race, ...others] = strategyRaces(reportData(study()).realData);
    expect(others).toEqual([]);
    expect(race!.context).toBe("small · batch 32 · 3 nodes × 1 · 300mbit");
    expect(race!.targetAccuracy).toBe(0.9);
    expect(race!.outcomes).toEqual([
      {
        strategy: "ring",
        repeats: 2,
        reached: 2,
        throughput: 105,
        stepsToTarget: 30,
        epochsToTarget: 3,
        timeToTargetSeconds: 80,
        finalAccuracy: 0.92,
        bestAccuracy: 0.92,
        replicaDivergence: 0,
        averagingDrift: null,
        staleness: null,
      },
      // The worker's defaults fill in the knobs the campaign left unset (PowerSGD's start iteration, local SGD's
      // warm-up).
      {
        strategy: "powersgd (powersgdRank 1, powersgdStartIter 2)",
        repeats: 2,
        reached: 2,
        throughput: 260,
        stepsToTarget: 40,
        epochsToTarget: 4,
        timeToTargetSeconds: 40,
        finalAccuracy: 0.91,
        bestAccuracy: 0.91,
        replicaDivergence: 0,
        averagingDrift: null,
        staleness: null,
      },
      {
        strategy: expect.stringMatching(/^local-sgd \(localSgdPeriod 4, localSgdWarmup \d+\)$/),
        repeats: 2,
        reached: 0,
        throughput: 200,
        stepsToTarget: null,
        epochsToTarget: null,
        timeToTargetSeconds: null,
        finalAccuracy: 0.83,
        bestAccuracy: 0.85,
        replicaDivergence: 0.02,
        averagingDrift: 0.05,
        staleness: null,
      },
    ]);
  });

  it("says which strategy reached the target first, by how much against ring, and which never did with its best accuracy", () => {
    const [race] = strategyRaces(reportData(study()).realData);
    expect(raceVerdict(race!)).toMatch(
      /^small · batch 32 · 3 nodes × 1 · 300mbit: powersgd \(powersgdRank 1, powersgdStartIter 2\) reached 90\.0% first, in 40\.0 s \(4 epochs\), 2\.00× sooner than ring \(80\.0 s\); local-sgd \(.*\) never reached it \(best 85\.0%\)\.$/,
    );
  });

  it("names a strategy that reached the target in some repeats only, and leaves it out of the race", () => {
    const records = [
      realRun({ knobs: { reduction: "ring" }, throughput: 105, accuracy: [0.5, 0.92], seconds: 50 }),
      realRun({ knobs: LOCAL_SGD, repeat: 1, throughput: 200, accuracy: [0.91], seconds: 20 }),
      realRun({ knobs: LOCAL_SGD, repeat: 2, throughput: 200, accuracy: [0.6, 0.7], seconds: 40 }),
    ];
    const [race] = strategyRaces(reportData(records).realData);
    expect(raceVerdict(race!)).toMatch(
      /: ring reached 90\.0% first, in 50\.0 s \(2 epochs\), the only one to reach it in every repeat; local-sgd \(.*\) reached it in 1 of 2 repeats only \(best 91\.0%\)\.$/,
    );
  });

  it("says so when no strategy reached the target, and compares final accuracy when no target was set", () => {
    const never = [
      realRun({ knobs: { reduction: "ring" }, throughput: 105, accuracy: [0.5], seconds: 10 }),
      realRun({ knobs: POWERSGD, throughput: 200, accuracy: [0.6], seconds: 5 }),
    ];
    expect(raceVerdict(strategyRaces(reportData(never).realData)[0]!)).toMatch(
      /: no strategy reached 90\.0% in every repeat; ring never reached it \(best 50\.0%\); powersgd .* never reached it \(best 60\.0%\)\.$/,
    );
    const untargeted = never.map((record, i) =>
      realRun({ knobs: record.params.knobs, throughput: 100, accuracy: [0.5 + 0.1 * i], seconds: 10, target: null }),
    );
    expect(raceVerdict(strategyRaces(reportData(untargeted).realData)[0]!)).toMatch(
      /: no target accuracy set \(train\.targetAccuracy\); powersgd .* ended with the highest held-out accuracy, 60\.0%\.$/,
    );
  });

  it("races only runs that differ in their strategy: not across link rates, other knobs, or runs of one strategy", () => {
    const records = [
      realRun({ knobs: { reduction: "ring" }, throughput: 105, accuracy: [0.95], seconds: 10 }),
      realRun({ knobs: POWERSGD, bandwidth: "1gbit", throughput: 200, accuracy: [0.95], seconds: 10 }),
      realRun({ knobs: { reduction: "ring", learningRate: 0.1 }, throughput: 105, accuracy: [0.95], seconds: 10 }),
      realRun({ knobs: { reduction: "ring" }, repeat: 2, throughput: 105, accuracy: [0.95], seconds: 10 }),
    ];
    expect(strategyRaces(reportData(records).realData)).toEqual([]);
    // fp16 on the wire is a strategy of its own.
    const fp16 = [
      ...records,
      realRun({ knobs: { reduction: "ring", fp16Allreduce: true }, throughput: 150, accuracy: [0.95], seconds: 8 }),
    ];
    expect(strategyRaces(reportData(fp16).realData).map((race) => race.outcomes.map((o) => o.strategy))).toEqual([
      ["ring", "ring + fp16"],
    ]);
  });

  it("shows the asynchronous server's update staleness, mean over repeats and the largest of any", () => {
    const asyncKnobs = { reduction: "async-parameter-server", asyncStaleness: 1 };
    const records = [
      realRun({ knobs: { reduction: "ring" }, throughput: 105, accuracy: [0.95], seconds: 10 }),
      realRun({ knobs: asyncKnobs, repeat: 1, throughput: 150, accuracy: [0.93], seconds: 8, staleness: [1.5, 3] }),
      realRun({ knobs: asyncKnobs, repeat: 2, throughput: 150, accuracy: [0.91], seconds: 8, staleness: [2.5, 4] }),
    ];
    const [race] = strategyRaces(reportData(records).realData);
    expect(race!.outcomes.map((o) => [o.strategy, o.staleness])).toEqual([
      ["ring", null],
      ["async-parameter-server (asyncStaleness 1)", { mean: 2, max: 4 }],
    ]);
    expect(renderMarkdown(reportData(records), reportMeta(records, new Date()), [])).toContain(
      "| async-parameter-server (asyncStaleness 1) | 2 | 150.0 | 2 of 2 | 10 | 1 | 8.0 s | 92.0% | 93.0% | n/a | 2.00 / 4 |",
    );
  });

  it("draws the section on the page and in the markdown, per link rate, slowest first", () => {
    const records = [
      ...study(),
      ...study().map((record) =>
        realRun({
          knobs: record.params.knobs,
          repeat: record.params.repeat,
          bandwidth: "1gbit",
          throughput: 300,
          accuracy: [0.95],
          seconds: 12,
        }),
      ),
    ];
    const data = reportData(records);
    expect(strategyRaces(data.realData).map((race) => race.context)).toEqual([
      "small · batch 32 · 3 nodes × 1 · 300mbit",
      "small · batch 32 · 3 nodes × 1 · 1gbit",
    ]);
    const meta = reportMeta(records, new Date("2025-05-01T11:00:00Z"));
    const html = renderHtml(data, {}, meta, []);
    expect(html).toContain(`<section id="time-to-accuracy">`);
    expect(html).toContain("<h3>small · batch 32 · 3 nodes × 1 · 300mbit · target 90.0%</h3>");
    expect(html).toMatch(
      /<td>local-sgd \(localSgdPeriod 4, localSgdWarmup \d+\)<\/td><td>2<\/td><td>200\.0<\/td><td>0 of 2<\/td><td>not reached<\/td>/,
    );
    // Local SGD's replicas: 2.0e-2 apart at the end, 5.0e-2 at the worst averaging.
    expect(html).toMatch(/<td>83\.0%<\/td><td>85\.0%<\/td><td>2\.0e-2 \(5\.0e-2\)<\/td><td>n\/a<\/td>/);
    const markdown = renderMarkdown(data, meta, []);
    expect(markdown).toContain("## Strategies: time to accuracy");
    expect(markdown).toContain("| ring | 2 | 105.0 | 2 of 2 | 30 | 3 | 80.0 s | 92.0% | 92.0% | 0 | n/a |");
  });
});

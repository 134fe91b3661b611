/**
 * The predictions scored against the measurements in the report: every attempt of a run shown, the first counted, and
 * "predicted before the run" said only where nothing was measured first and the calibration held none of the runs.
 */
import { describe, expect, it } from "vitest";
import { reportData, reportMeta } from "../../src/analysis/data.ts";
import type { Flag } from "../../src/report/suspect-figures.ts";
import {
  flaggedMisses,
  machineCaveat,
  predictedBefore,
  predictionsTitle,
  scorePredictions,
  scoreSummary,
  seenSummary,
  type PredictionScore,
} from "../../src/report/predictions.ts";
import { renderHtml, renderMarkdown } from "../../src/report/render.ts";
import {
  PREDICTIONS_SCHEMA,
  PREDICTIONS_SCHEMA_V1,
  type PredictionsFile,
  type PredictionsFileV1,
} from "../../src/results/predictions.ts";
import type { HostLoad, RunRecord } from "../../src/results/record.ts";
import { scalingCampaign, trainRecord } from "./fixtures/records.ts";

const records = scalingCampaign();
const data = reportData(records);
const prediction = (runId: string, throughput: number, efficiency: number) => ({
  runId,
  stepSeconds: 1,
  throughput,
  unit: "images" as const,
  scalingEfficiency: { value: efficiency, low: efficiency - 0.01, high: efficiency + 0.01 },
  fullOverlapEfficiency: 1,
  sources: {
    compute: "measured in results/a on 2026-11-25",
    link: "measured in results/a on 2026-11-25 (2-node probe)",
  },
});
// An hour before the fixture's runs started (2025-05-01T10:00), from a calibration of another campaign.
const file: PredictionsFile = {
  schema: PREDICTIONS_SCHEMA,
  calibration: "/state/calibration.json",
  madeAt: "2025-05-01T09:00:00.000Z",
  runsDoneBefore: [],
  calibrationInputs: [
    {
      entry: "compute resnet50 batch 64 fp32 on test CPU",
      source: "measured in results/a on 2026-11-25",
      resultsDir: "results/a",
      folder: "/work/results/a",
      runIds: ["train-resnet50-b64-n1-r1"],
      fingerprints: ["fedcba9876543210"],
      sha256: "ab".repeat(32),
    },
  ],
  sample: { kind: "out-of-sample" },
  predictions: [
    // Baseline 105 img/s per worker: 2 nodes at 1gbit measured 150 → 71.4 %; predicted 75 %.
    prediction("train-resnet50-b64-n2-1gbit-r1", 160, 0.75),
    // 4 nodes at 1gbit measured 200 → 47.6 %; predicted 60 %.
    prediction("train-resnet50-b64-n4-1gbit-r1", 250, 0.6),
    prediction("train-resnet50-b64-n1-r1", 105, 1),
    // Failed (its latest attempt): not measured.
    prediction("train-resnet50-b64-n4-10gbit-r3", 400, 0.95),
  ],
  missing: [
    { runId: "train-resnet152-b32-n2-1gbit-r1", missing: "no measured compute for resnet152 at batch 32 (fp32): ..." },
  ],
};

describe("the prediction made before the run, scored", () => {
  const score = scorePredictions(file, data, records);

  it("puts every predicted run's measured throughput and efficiency beside the prediction, with the errors", () => {
    const [two, four, one] = score.scored;
    expect(two).toMatchObject({
      label: "resnet50 · batch 64 · 1gbit · 2 nodes · repeat 1",
      nodes: 2,
      predictedThroughput: 160,
      measuredThroughput: 150,
    });
    expect(two!.throughputError).toBeCloseTo(150 / 160 - 1, 12);
    expect(two!.measuredEfficiency).toBeCloseTo(150 / (2 * 105), 12);
    expect(two!.errorPoints).toBeCloseTo((150 / 210 - 0.75) * 100, 9);
    expect(four!.errorPoints).toBeCloseTo((200 / 420 - 0.6) * 100, 9);
    expect(one!.label).toBe("resnet50 · batch 64 · 1 node · repeat 1");
    expect(score.notMeasured).toBe(1);
  });

  it("sums it up: multi-node runs within 5 points, runs within 10 % of the predicted throughput", () => {
    // 2 nodes: −3.6 points, 6.3 % slow; 4 nodes: −12.4 points, 20 % slow; 1 node: 100 against 105, 4.8 % slow.
    expect(scoreSummary(score)).toBe(
      "1 of 2 multi-node runs within 5 points of the predicted scaling efficiency (mean |error| 8.0 points), " +
        "2 of 3 runs within 10 % of the predicted throughput",
    );
  });

  it("scores the runs whose configuration the calibration never measured apart from those it had, where the file says which", () => {
    // The file before ringlab recorded it: nothing said, and the page says so.
    expect(seenSummary(score)).toBeUndefined();
    expect(renderMarkdown(data, reportMeta(records, new Date("2026-11-25T15:00:00Z")), [], score)).toContain(
      "Which of these runs' configurations the calibration had measured is not recorded",
    );
    const seen = { kind: "seen" as const, measuredIn: ["compute resnet50 batch 64 fp32 on test CPU"], replayed: true };
    const unseen = { kind: "unseen" as const, measuredIn: [], replayed: false };
    const partly = { kind: "partly" as const, measuredIn: ["memory on test CPU"], replayed: false };
    const said = scorePredictions(
      {
        ...file,
        predictions: file.predictions.map((entry) => ({
          ...entry,
          seen: entry.runId.includes("-n1-") ? seen : entry.runId.includes("-n4-") ? partly : unseen,
        })),
      },
      data,
      records,
    );
    // The one unseen run (2 nodes, 1gbit): 160 predicted, 150 measured, its step 6.7 % longer than predicted.
    expect(seenSummary(said)).toBe(
      "The calibration had measured the configuration of 1 of these 3 runs (1 of them replayed: their prediction is its " +
        "measurement of the same configuration), 1 partly (only the memory model's fit had their runs); 1 unseen, the test " +
        "of the model: 1 of 1 steps within 15 % of the predicted (+6.7 % to +6.7 %, mean |error| 6.7 %)",
    );
    // A test recomputes it for a file that does not say it.
    const recomputed = scorePredictions(file, data, records, new Map(said.scored.map((row) => [row.runId, row.seen!])));
    expect(seenSummary(recomputed)).toBe(seenSummary(said));
  });

  it("puts the peak memory per rank predicted before the run beside the measured, where predictions.json saved it, in the predictions' unit", () => {
    const MIB = 2 ** 20;
    const runId = "train-resnet50-b64-n2-1gbit-r1";
    // Rank 1 peaks highest: 320 MiB over its baseline, against 300 predicted (+6.7 %).
    const withMemory = records.map((record) =>
      record.runId !== runId || record.result?.job !== "train"
        ? record
        : ({
            ...record,
            result: {
              ...record.result,
              metrics: {
                ...record.result.metrics,
                memory: {
                  method: "resident-set",
                  peakSince: "model",
                  perRank: [
                    { rank: 0, baselineBytes: 200 * MIB, peakBytes: 450 * MIB },
                    { rank: 1, baselineBytes: 200 * MIB, peakBytes: 520 * MIB },
                  ],
                },
              },
            },
          } as RunRecord),
    );
    const saved: PredictionsFile = {
      ...file,
      predictions: file.predictions.map((entry) =>
        entry.runId === runId
          ? {
              ...entry,
              unit: "tokens" as const,
              memory: { rankBytes: 300 * MIB, nodeBytes: 900 * MIB, source: "assumed: test" },
            }
          : { ...entry, unit: "tokens" as const },
      ),
    };
    const scored = scorePredictions(saved, reportData(withMemory), withMemory);
    const row = scored.scored.find((candidate) => candidate.runId === runId)!;
    expect([row.predictedMemoryBytes, row.measuredMemoryBytes]).toEqual([300 * MIB, 320 * MIB]);
    expect(row.memoryError).toBeCloseTo(20 / 300, 12);
    expect(
      scored.scored.filter((candidate) => candidate.runId !== runId).map((candidate) => candidate.memoryError),
    ).toEqual([null, null]);
    expect(scoreSummary(scored)).toMatch(
      /, 2 of 3 runs within 10 % of the predicted throughput, 1 of 1 runs' peak memory per rank within 10 % of the predicted$/,
    );
    const markdown = renderMarkdown(data, reportMeta(withMemory, new Date("2026-11-25T15:00:00Z")), [], scored);
    expect(markdown).toContain(
      "| Run | Predicted (tok/s) | Measured (tok/s) | Error | Predicted efficiency (95%) | Measured efficiency | Error (points) | Peak per rank, predicted (GiB) | Measured (GiB) | Error |",
    );
    expect(markdown).toContain(
      "| resnet50 · batch 64 · 1gbit · 2 nodes · repeat 1 | 160.0 | 150.0 | −6.3% | 75.0% (74.0% – 76.0%) | 71.4% | −3.6 pt | 0.29 | 0.31 | +6.7% |",
    );
    // Without saved memory (files before it) no memory column, and the unit the file says.
    expect(renderMarkdown(data, reportMeta(records, new Date("2026-11-25T15:00:00Z")), [], score)).toContain(
      "| Run | Predicted (img/s) | Measured (img/s) | Error | Predicted efficiency (95%) | Measured efficiency | Error (points) |\n",
    );
  });

  it("says nothing of the efficiency where no run measured one (a campaign without single-node runs)", () => {
    const withoutBaseline = {
      ...score,
      scored: score.scored.map((row) => ({ ...row, measuredEfficiency: null, errorPoints: null })),
    };
    expect(scoreSummary(withoutBaseline)).toBe("2 of 3 runs within 10 % of the predicted throughput");
  });

  it("scores the mean of a configuration's repeats too, where a configuration has repeats: the model predicts the expected run", () => {
    const row = (configuration: string, repeat: number, errorPoints: number) => ({
      runId: `${configuration}-r${repeat}`,
      label: `${configuration} · repeat ${repeat}`,
      configuration,
      nodes: 2,
      attempt: 1,
      counted: true,
      latest: true,
      disturbance: null,
      predictedThroughput: 100,
      measuredThroughput: 100,
      throughputError: 0,
      predictedEfficiency: { value: 0.6, low: 0.55, high: 0.65 },
      measuredEfficiency: 0.6 + errorPoints / 100,
      errorPoints,
      predictedMemoryBytes: null,
      measuredMemoryBytes: null,
      memoryError: null,
      cpuCheckShift: null,
      seen: null,
    });
    // 1gbit: +8, −4, +1 points (one run within 5 of 3; their mean +1.7); 600mbit: −7 (its mean −7).
    const repeats = {
      ...score,
      scored: [row("1gbit", 1, 8), row("1gbit", 2, -4), row("1gbit", 3, 1), row("600mbit", 1, -7)],
    };
    expect(scoreSummary(repeats)).toBe(
      "2 of 4 multi-node runs within 5 points of the predicted scaling efficiency (mean |error| 5.0 points), " +
        "the mean of each configuration's repeats within 5 points for 1 of 2 configurations, 4 of 4 runs within 10 % of the predicted throughput",
    );
  });

  it("is a section of both pages, with what could not be predicted and why", () => {
    const meta = reportMeta(records, new Date("2026-11-25T15:00:00Z"));
    const markdown = renderMarkdown(data, meta, [], score);
    expect(markdown).toContain("## Predicted before the run\n\nMade before the first run, with ringlab plan's model");
    expect(markdown).toContain(
      "| resnet50 · batch 64 · 1gbit · 2 nodes · repeat 1 | 160.0 | 150.0 | −6.3% | 75.0% (74.0% – 76.0%) | 71.4% | −3.6 pt |",
    );
    expect(markdown).toContain("train-resnet152-b32-n2-1gbit-r1: not predicted: no measured compute for resnet152");
    expect(markdown).toContain("\n1 predicted run has no successful measurement (");
    // Each input's source once, below the table, a paragraph each.
    expect(markdown).toContain(
      "\n\nSource: measured in results/a on 2026-11-25\n\nSource: measured in results/a on 2026-11-25 (2-node probe)\n\n",
    );
    expect(renderHtml(data, {}, meta, [], score)).toContain('<section id="predictions">');
    // Without predictions.json, no section.
    expect(renderMarkdown(data, meta, [])).not.toContain("Predicted before the run");
  });

  it("says where runs' CPU checks read far from the calibration runs': they ran on another machine than the one calibrated", () => {
    // The worker's CPU check before each run (GFLOP/s per rank); the calibration runs that measured the compute read
    // 60.
    const checked = (gflops: Readonly<Record<string, readonly number[]>>) =>
      records.map((record) =>
        gflops[record.runId] === undefined || record.result === undefined
          ? record
          : ({
              ...record,
              result: { ...record.result, cpuCheck: { seconds: 0.6, computeGflops: [...gflops[record.runId]!] } },
            } as RunRecord),
      );
    const onTurin = checked({
      "train-resnet50-b64-n2-1gbit-r1": [109, 110],
      "train-resnet50-b64-n4-1gbit-r1": [108, 109, 107, 108],
      "train-resnet50-b64-n1-r1": [61],
    });
    const saved: PredictionsFile = {
      ...file,
      predictions: file.predictions.map((entry) => ({ ...entry, cpuCheckGflops: 60 })),
    };
    const score = scorePredictions(saved, reportData(onTurin), onTurin);
    expect(score.scored.map((row) => Math.round(100 * row.cpuCheckShift!))).toEqual([83, 80, 2]);
    expect(machineCaveat(score)).toBe(
      "2 of 3 runs' CPU check (the worker's timed matrix products before each run) read 80 % to 83 % faster than the " +
        "calibration runs' that measured their compute: they ran on another machine, or a differently loaded one, than the one calibrated, and their " +
        "predictions carry that difference. Calibrate from a campaign run on this machine to predict it.",
    );
    const meta = reportMeta(onTurin, new Date("2026-11-25T15:00:00Z"));
    expect(renderMarkdown(reportData(onTurin), meta, [], score)).toContain(
      "\n\n2 of 3 runs' CPU check (the worker's timed matrix products before each run) read 80 % to 83 % faster",
    );
    // Within 15 % (one machine's drift between batches of runs): nothing said.
    const drifted = checked({
      "train-resnet50-b64-n2-1gbit-r1": [55, 56],
      "train-resnet50-b64-n4-1gbit-r1": [66, 68, 67, 68],
      "train-resnet50-b64-n1-r1": [61],
    });
    expect(machineCaveat(scorePredictions(saved, reportData(drifted), drifted))).toBeUndefined();
    // Slower and faster at once.
    const both = checked({
      "train-resnet50-b64-n2-1gbit-r1": [30, 30],
      "train-resnet50-b64-n4-1gbit-r1": [80, 80, 80, 80],
    });
    expect(machineCaveat(scorePredictions(saved, reportData(both), both))).toMatch(
      /^2 of 2 runs' CPU check \(.*\) read from 50 % slower to 33 % faster than the calibration/,
    );
    // A predictions file before ringlab saved the calibration's check: no shift, nothing said.
    expect(scorePredictions(file, reportData(onTurin), onTurin).scored.map((row) => row.cpuCheckShift)).toEqual([
      null,
      null,
      null,
    ]);
    expect(machineCaveat(scorePredictions(file, reportData(onTurin), onTurin))).toBeUndefined();
  });

  it("marks a flagged run in the table and says which misses a flag questions, in both pages", () => {
    const meta = reportMeta(records, new Date("2026-11-25T15:00:00Z"));
    const unsteady: Flag = {
      kind: "unsteady-run",
      subject: "resnet50 · batch 64 · 1gbit · 4 nodes",
      runIds: ["train-resnet50-b64-n4-1gbit-r1"],
      reason: "changed speed",
    };
    const markdown = renderMarkdown(data, meta, [unsteady], score);
    expect(markdown).toContain("| resnet50 · batch 64 · 1gbit · 4 nodes · repeat 1 ⚑ unsteady run | 250.0 |");
    expect(markdown).toContain(
      "2 of 3 runs within 10 % of the predicted throughput; the one multi-node run outside 5 points is flagged (see Flags): " +
        "the measurement, not only the model, may be off there.",
    );
    expect(renderHtml(data, {}, meta, [unsteady], score)).toContain(
      '<td>resnet50 · batch 64 · 1gbit · 4 nodes · repeat 1<br><span class="flag">⚑ unsteady run</span></td>',
    );
    // A configuration's flag (a wide interval over its repeats) is not a flag of the run: neither marked nor counted.
    const wide: Flag = {
      kind: "wide-interval",
      subject: "resnet50 · batch 64 · 1gbit · 4 nodes",
      runIds: ["train-resnet50-b64-n4-1gbit-r1"],
      reason: "wide",
    };
    expect(renderMarkdown(data, meta, [wide], score)).toContain(
      "| resnet50 · batch 64 · 1gbit · 4 nodes · repeat 1 | 250.0 |",
    );
    expect(renderMarkdown(data, meta, [wide], score)).not.toContain("is flagged (see Flags)");
    // A flag on a run within 5 points says nothing of the misses.
    expect(flaggedMisses(score, new Set(["train-resnet50-b64-n2-1gbit-r1"]))).toBeUndefined();
    expect(renderMarkdown(data, meta, [], score)).not.toContain("is flagged (see Flags)");
  });
});

/** The predictions section of report.md, from its title to the next section. */
function markdownSection(markdown: string): string {
  const start = markdown.indexOf("\n## Predict");
  const end = markdown.indexOf("\n## ", start + 1);
  return markdown.slice(start, end === -1 ? undefined : end);
}

/** The predictions section of report.html. */
function htmlSection(html: string): string {
  return html.slice(
    html.indexOf('<section id="predictions">'),
    html.indexOf("</section>", html.indexOf('<section id="predictions">')),
  );
}

describe("what the scored predictions claim", () => {
  const meta = reportMeta(records, new Date("2026-11-25T15:00:00Z"));
  const pages = (score: PredictionScore) => ({
    markdown: markdownSection(renderMarkdown(data, meta, [], score)),
    html: htmlSection(renderHtml(data, {}, meta, [], score)),
  });

  it("is predicted before the run where nothing was measured first and the calibration holds none of the campaign's runs", () => {
    const score = scorePredictions(file, data, records);
    expect(score.claim).toEqual({ measuredBefore: [], sample: { kind: "out-of-sample" } });
    expect(predictedBefore(score)).toBe(true);
    expect(pages(score).html).toContain("<h2>Predicted before the run</h2>");
  });

  it("says in-sample, never before, where the calibration holds runs of this campaign: in the title, the text and the summary", () => {
    const inSample: PredictionsFile = {
      ...file,
      sample: {
        kind: "in-sample",
        reasons: [
          "it measured the configuration of 1 of this campaign's 9 runs (same fingerprint: train-resnet50-b64-n1-r1)",
        ],
      },
    };
    const score = scorePredictions(inSample, data, records);
    expect(predictedBefore(score)).toBe(false);
    expect(predictionsTitle(score)).toBe("Predictions, in-sample");
    expect(scoreSummary(score)).toMatch(/^In-sample, no test of the model: 1 of 2 multi-node runs within 5 points/);
    const { markdown, html } = pages(score);
    expect(markdown).toMatch(/^\n## Predictions, in-sample\n\nMade with ringlab plan's model/);
    expect(markdown).toContain(
      "\nIn-sample: the calibration holds runs of this campaign (it measured the configuration of 1 of this campaign's 9 runs " +
        "(same fingerprint: train-resnet50-b64-n1-r1)), so the errors say how well the model fits its own measurements, not how well it predicts.\n",
    );
    expect(html).toContain("<h2>Predictions, in-sample</h2>");
    for (const section of [markdown, html]) expect(section).not.toMatch(/before/i);
  });

  it("says which runs were measured before the predictions were made, as the file says or as the records' start times show", () => {
    // A v2 file saying a run was done (written by hand or by another tool: ringlab does not save such a one).
    const said = scorePredictions({ ...file, runsDoneBefore: ["train-resnet50-b64-n1-r1"] }, data, records);
    expect(said.claim!.measuredBefore).toEqual(["train-resnet50-b64-n1-r1"]);
    // Made after the runs started: every measured predicted run was first.
    const late = scorePredictions({ ...file, madeAt: "2025-05-01T10:30:00.000Z" }, data, records);
    expect(late.claim!.measuredBefore).toEqual([
      "train-resnet50-b64-n1-r1",
      "train-resnet50-b64-n2-1gbit-r1",
      "train-resnet50-b64-n4-1gbit-r1",
    ]);
    expect(predictionsTitle(late)).toBe("Predictions made after runs were measured");
    const { markdown, html } = pages(late);
    expect(markdown).toContain(
      "Made after 3 of the predicted runs were measured (train-resnet50-b64-n1-r1, train-resnet50-b64-n2-1gbit-r1, train-resnet50-b64-n4-1gbit-r1): no prediction of them.",
    );
    expect(markdown).toContain("\nMade after runs were measured: 1 of 2 multi-node runs");
    for (const section of [markdown, html]) expect(section).not.toMatch(/before/i);
  });

  it("claims nothing of a v1 file's calibration, which it did not record, and checks its time against the records", () => {
    const v1: PredictionsFileV1 = {
      schema: PREDICTIONS_SCHEMA_V1,
      calibration: file.calibration,
      madeAt: file.madeAt,
      predictions: file.predictions,
      missing: file.missing,
    };
    const early = scorePredictions(v1, data, records);
    expect(early.claim).toEqual({ measuredBefore: [], sample: { kind: "unknown" } });
    expect(predictionsTitle(early)).toBe("Predictions, calibration not recorded");
    expect(pages(early).markdown).toContain(
      "This predictions.json (ringlab.predictions/v1) does not record which runs its calibration came from: it may hold runs of this campaign (in-sample).",
    );
    // The e2e's old case: predictions.json written when every run was done.
    const late = scorePredictions({ ...v1, madeAt: "2026-11-25T14:00:00.000Z" }, data, records);
    expect(predictionsTitle(late)).toBe("Predictions made after runs were measured");
    for (const score of [early, late]) expect(Object.values(pages(score)).join("")).not.toMatch(/before/i);
  });

  it("claims nothing where predictions.json could not be read", () => {
    const unreadable: PredictionScore = {
      calibration: "(predictions.json could not be read: ...)",
      madeAt: new Date(0).toISOString(),
      unit: "images",
      scored: [],
      notMeasured: 0,
      missing: [],
      sources: [],
    };
    expect(predictionsTitle(unreadable)).toBe("Predictions");
    expect(pages(unreadable).markdown).not.toMatch(/before/i);
  });
});

describe("every measurement of a predicted run, scored", () => {
  const busy: HostLoad = {
    seconds: 50,
    cores: 2,
    machineCpuSeconds: 90,
    testbedCpuSeconds: 40,
    outsideShare: 0.5,
    busy: true,
    busyThreshold: 0.25,
  };
  // The 4-node run at 1gbit: its first attempt (200 img/s) ran on a busy machine, the campaign ran it again at its end
  // (230 img/s).
  const withRerun: RunRecord[] = [
    ...records.map((record) =>
      record.runId === "train-resnet50-b64-n4-1gbit-r1" ? { ...record, attempt: 1, hostLoad: busy } : record,
    ),
    {
      ...trainRecord({ nodes: 4, bandwidth: "1gbit", throughput: 230, startedAt: "2025-05-01T11:00:00.000Z" }),
      attempt: 2,
    },
  ];
  const rerunData = reportData(withRerun);
  const score = scorePredictions(file, rerunData, withRerun);
  const meta = reportMeta(withRerun, new Date("2026-11-25T15:00:00Z"));

  it("shows a run done again beside its first measurement, not instead of it", () => {
    const rows = score.scored.filter((row) => row.runId === "train-resnet50-b64-n4-1gbit-r1");
    expect(
      rows.map((row) => [row.label, row.attempt, row.counted, row.latest, row.disturbance, row.measuredThroughput]),
    ).toEqual([
      ["resnet50 · batch 64 · 1gbit · 4 nodes · repeat 1 · attempt 1", 1, true, false, "machine busy", 200],
      ["resnet50 · batch 64 · 1gbit · 4 nodes · repeat 1 · attempt 2 (run again)", 2, false, true, null, 230],
    ]);
    expect(rows[1]!.errorPoints).toBeCloseTo((230 / 420 - 0.6) * 100, 9);
    // A run measured once keeps its plain label.
    expect(score.scored[0]!.label).toBe("resnet50 · batch 64 · 1gbit · 2 nodes · repeat 1");
  });

  it("counts each run's first measurement in the summary, and says the reruns are beside it", () => {
    // As without the rerun: the 4-node run's 200 img/s (−12.4 points) is the one counted.
    expect(scoreSummary(score)).toBe(
      "1 of 2 multi-node runs within 5 points of the predicted scaling efficiency (mean |error| 8.0 points), " +
        "2 of 3 runs within 10 % of the predicted throughput",
    );
    const markdown = renderMarkdown(rerunData, meta, [], score);
    expect(markdown).toContain(
      "\n1 run was measured again (the rows marked run again): the summary counts each run's first measurement, the later ones are shown beside it.\n",
    );
    // The first attempt marked with its own disturbance (the report's flags speak of the latest attempt).
    expect(markdown).toContain(
      "| resnet50 · batch 64 · 1gbit · 4 nodes · repeat 1 · attempt 1 ⚑ machine busy | 250.0 | 200.0 |",
    );
    expect(markdown).toContain(
      "| resnet50 · batch 64 · 1gbit · 4 nodes · repeat 1 · attempt 2 (run again) | 250.0 | 230.0 |",
    );
    // The counted miss is flagged by its own disturbance.
    expect(flaggedMisses(score, new Set())).toBe(
      "the one multi-node run outside 5 points is flagged (see Flags): the measurement, not only the model, may be off there",
    );
  });
});

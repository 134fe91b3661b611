import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { csvCell, SUMMARY_COLUMNS, summaryCsv, writeDerivedFiles } from "../../src/results/derived.ts";
import { resultsPaths } from "../../src/results/paths.ts";
import { latestAttempts, RUN_RECORD_SCHEMA, type RunRecord } from "../../src/results/record.ts";
import { failedTrainRecord, probeRecord, trainRecord } from "../report/fixtures/records.ts";

function record(
  runId: string,
  status: "ok" | "failed",
  options: { error?: string; attempt?: number; model?: string } = {},
): RunRecord {
  const { error, attempt = 1, model = "tiny" } = options;
  return {
    schema: RUN_RECORD_SCHEMA,
    campaign: "c",
    runId,
    attempt,
    fingerprint: "f",
    params: {
      job: "train",
      nodes: 2,
      bandwidth: "1gbit",
      linkGbps: 1,
      repeat: 1,
      model,
      batchSize: 32,
      knobs: {},
      workerArgs: [],
    },
    status,
    ...(error === undefined ? {} : { error }),
    startedAt: "2026-01-01T00:00:00.000Z",
    endedAt: "2026-01-01T00:00:10.000Z",
    wallSeconds: 10,
    testbed: { name: "t", target: "local" },
    logsDir: `logs/${runId}/attempt-${attempt}`,
  };
}

describe("derived files", () => {
  it("runs.jsonl holds each run's latest attempt in plan order; summary.csv counts attempts and quotes errors", () => {
    const paths = resultsPaths(mkdtempSync(join(tmpdir(), "ringlab-derived-")));
    const records = [
      record("a", "failed", { error: "first try", attempt: 1 }),
      record("b", "ok"),
      record("a", "failed", { error: 'exit 3, "peer gone"', attempt: 2 }),
    ];
    writeDerivedFiles(paths, records, ["b", "a"]);
    const lines = readFileSync(paths.runsJsonl, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines.map((r) => [r.runId, r.attempt])).toEqual([
      ["b", 1],
      ["a", 2],
    ]);
    const csv = readFileSync(paths.summaryCsv, "utf8").trim().split("\n");
    expect(csv[0]).toMatch(/^run_id,status,attempts,job,nodes,bandwidth,/);
    // No successful repeat of its configuration: 0 repeats, and no statistics.
    expect(csv[2]).toBe('a,failed,2,train,2,1gbit,tiny,32,1,,,,,,,,,10,,"exit 3, ""peer gone""",0,,,,,,,,,');
  });

  it("summary.csv neutralizes text a spreadsheet would run as a formula, and leaves numbers alone", () => {
    const csv = summaryCsv([
      { record: record("a", "failed", { error: '=HYPERLINK("http://x")', model: "@SUM(A1)" }), attempts: 1 },
    ]);
    expect(csv.split("\n")[1]).toBe(
      `a,failed,1,train,2,1gbit,'@SUM(A1),32,1,,,,,,,,,10,,"'=HYPERLINK(""http://x"")",0,,,,,,,,,`,
    );
    expect(["+1", "-1+2", "\tx", "\rx"].map(csvCell)).toEqual(["'+1", "'-1+2", "'\tx", `"'\rx"`]);
    expect([-1.5, -3, 0].map(csvCell)).toEqual(["-1.50000", "-3", "0"]);
    expect(csvCell("a=b")).toBe("a=b");
  });
});

describe("summary.csv: each configuration over its repeats", () => {
  /** summary.csv's rows by run id, each as column name → cell. */
  function summaryRows(records: readonly RunRecord[]): Map<string, Record<string, string>> {
    const [header, ...lines] = summaryCsv(latestAttempts(records)).trim().split("\n");
    const columns = header!.split(",");
    return new Map(
      lines.map((line) => {
        const cells = line.split(",");
        return [cells[0]!, Object.fromEntries(columns.map((column, i) => [column, cells[i] ?? ""]))];
      }),
    );
  }

  // 2 nodes at 1gbit: (150, 160, 170) and a failed fourth repeat; 2 nodes × 2 processes once; the probe twice.
  const records = [
    ...[150, 160, 170].map((throughput, i) => trainRecord({ nodes: 2, repeat: i + 1, throughput, ci95: 4 })),
    failedTrainRecord({ nodes: 2, bandwidth: "1gbit", repeat: 4, error: "peer gone" }),
    trainRecord({ nodes: 2, processesPerNode: 2, throughput: 280, ci95: 6 }),
    probeRecord({
      nodes: 2,
      bandwidth: "1gbit",
      repeat: 1,
      busbw: [
        [4096, 0.2],
        [67_108_864, 0.9],
      ],
    }),
    probeRecord({
      nodes: 2,
      bandwidth: "1gbit",
      repeat: 2,
      busbw: [
        [4096, 0.3],
        [67_108_864, 0.94],
      ],
    }),
  ];
  const rows = summaryRows(records);

  it("adds the configuration's columns after the run's own, in this order", () => {
    expect(SUMMARY_COLUMNS.slice(SUMMARY_COLUMNS.indexOf("error"))).toEqual([
      "error",
      "repeats",
      "throughput_total_mean",
      "throughput_total_median",
      "throughput_total_ci95_low",
      "throughput_total_ci95_high",
      "peak_busbw_gbps_mean",
      "peak_busbw_gbps_median",
      "peak_busbw_gbps_ci95_low",
      "peak_busbw_gbps_ci95_high",
      "cv",
    ]);
  });

  it("gives every row of a training configuration its repeats' mean, median, Student-t interval and CV, the failed repeat's row too", () => {
    // mean 160, sample sd 10: ± 4.303 · 10 / √3 = 24.84, CV 10 / 160.
    for (const repeat of [1, 2, 3, 4]) {
      const row = rows.get(`train-resnet50-b64-n2-1gbit-r${repeat}`)!;
      expect(row["repeats"]).toBe("3");
      expect(Number(row["throughput_total_mean"])).toBe(160);
      expect(Number(row["throughput_total_median"])).toBe(160);
      expect(Number(row["throughput_total_ci95_low"])).toBeCloseTo(160 - (4.303 * 10) / Math.sqrt(3), 3);
      expect(Number(row["throughput_total_ci95_high"])).toBeCloseTo(160 + (4.303 * 10) / Math.sqrt(3), 3);
      expect(Number(row["cv"])).toBeCloseTo(0.0625, 6);
      expect(row["peak_busbw_gbps_mean"]).toBe("");
    }
    // The run's own columns stay the run's.
    expect(rows.get("train-resnet50-b64-n2-1gbit-r3")!["throughput_total"]).toBe("170");
    expect(rows.get("train-resnet50-b64-n2-1gbit-r4")!["status"]).toBe("failed");
  });

  it("keeps other placements apart, and leaves the interval and CV of a single repeat empty", () => {
    const row = rows.get("train-resnet50-b64-n2-p2-1gbit-r1")!;
    expect(row["repeats"]).toBe("1");
    expect(row["throughput_total_mean"]).toBe("280");
    expect(row["throughput_total_median"]).toBe("280");
    expect([row["throughput_total_ci95_low"], row["throughput_total_ci95_high"], row["cv"]]).toEqual(["", "", ""]);
  });

  it("puts the probe's statistics under the peak bus bandwidth", () => {
    // (0.9, 0.94): mean 0.92, sample sd 0.02·√2, ± 12.706 · 0.02.
    const row = rows.get("allreduce-n2-1gbit-r2")!;
    expect(row["repeats"]).toBe("2");
    expect(Number(row["peak_busbw_gbps_mean"])).toBeCloseTo(0.92, 6);
    expect(Number(row["peak_busbw_gbps_median"])).toBeCloseTo(0.92, 6);
    expect(Number(row["peak_busbw_gbps_ci95_low"])).toBeCloseTo(0.92 - 12.706 * 0.02, 4);
    expect(Number(row["peak_busbw_gbps_ci95_high"])).toBeCloseTo(0.92 + 12.706 * 0.02, 4);
    expect(Number(row["cv"])).toBeCloseTo((0.02 * Math.SQRT2) / 0.92, 5);
    expect(row["throughput_total_mean"]).toBe("");
  });

  it("counts a run done again once, with its latest attempt", () => {
    const first = { ...failedTrainRecord({ nodes: 2, bandwidth: "1gbit", repeat: 5, error: "x" }), attempt: 1 };
    const again = { ...trainRecord({ nodes: 2, repeat: 5, throughput: 180 }), attempt: 2 };
    const withRetry = summaryRows([...records, first, again]);
    // (150, 160, 170, 180): mean 165, median 165.
    expect(withRetry.get("train-resnet50-b64-n2-1gbit-r1")!["repeats"]).toBe("4");
    expect(Number(withRetry.get("train-resnet50-b64-n2-1gbit-r1")!["throughput_total_mean"])).toBe(165);
  });
});

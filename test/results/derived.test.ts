import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { csvCell, summaryCsv, writeDerivedFiles } from "../../src/results/derived.ts";
import { resultsLayout } from "../../src/results/layout.ts";
import { RUN_RECORD_SCHEMA, type RunRecord } from "../../src/results/record.ts";

function record(runId: string, status: "ok" | "failed", options: { error?: string; attempt?: number; model?: string } = {}): RunRecord {
  const { error, attempt = 1, model = "tiny" } = options;
  return {
    schema: RUN_RECORD_SCHEMA, campaign: "c", runId, attempt, fingerprint: "f",
    params: { job: "train", nodes: 2, bandwidth: "1gbit", linkGbps: 1, repeat: 1, model, batchSize: 32, knobs: {}, workerArgs: [] },
    status, ...(error === undefined ? {} : { error }),
    startedAt: "2026-01-01T00:00:00.000Z", endedAt: "2026-01-01T00:00:10.000Z", wallSeconds: 10,
    testbed: { name: "t", target: "local" }, logsDir: `logs/${runId}/attempt-${attempt}`,
  };
}

describe("derived files", () => {
  it("runs.jsonl holds each run's latest attempt in plan order; summary.csv counts attempts and quotes errors", () => {
    const layout = resultsLayout(mkdtempSync(join(tmpdir(), "ringlab-derived-")));
    const records = [
      record("a", "failed", { error: "first try", attempt: 1 }),
      record("b", "ok"),
      record("a", "failed", { error: 'exit 3, "peer gone"', attempt: 2 }),
    ];
    writeDerivedFiles(layout, records, ["b", "a"]);
    const lines = readFileSync(layout.runsJsonl, "utf8").trim().split("\n").map((line) => JSON.parse(line));
    expect(lines.map((r) => [r.runId, r.attempt])).toEqual([["b", 1], ["a", 2]]);
    const csv = readFileSync(layout.summaryCsv, "utf8").trim().split("\n");
    expect(csv[0]).toMatch(/^run_id,status,attempts,job,nodes,bandwidth,/);
    expect(csv[2]).toBe('a,failed,2,train,2,1gbit,tiny,32,1,,,,,,10,,"exit 3, ""peer gone"""');
  });

  it("summary.csv neutralizes text a spreadsheet would run as a formula, and leaves numbers alone", () => {
    const csv = summaryCsv([{ record: record("a", "failed", { error: '=HYPERLINK("http://x")', model: "@SUM(A1)" }), attempts: 1 }]);
    expect(csv.split("\n")[1]).toBe(`a,failed,1,train,2,1gbit,'@SUM(A1),32,1,,,,,,10,,"'=HYPERLINK(""http://x"")"`);
    expect(["+1", "-1+2", "\tx", "\rx"].map(csvCell)).toEqual(["'+1", "'-1+2", "'\tx", `"'\rx"`]);
    expect([-1.5, -3, 0].map(csvCell)).toEqual(["-1.50000", "-3", "0"]);
    expect(csvCell("a=b")).toBe("a=b");
  });
});

import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readRecords, resultsLayout, RUN_RECORD_SCHEMA, summaryCsv, writeDerivedFiles, writeRecord, type RunRecord } from "../../src/campaign/records.ts";

function record(runId: string, status: "ok" | "failed", error?: string): RunRecord {
  return {
    schema: RUN_RECORD_SCHEMA, campaign: "c", runId, fingerprint: "f",
    params: { job: "train", nodes: 2, bandwidth: "1gbit", linkGbps: 1, repeat: 1, model: "tiny", batchSize: 32, knobs: {}, workerArgs: [] },
    status, ...(error === undefined ? {} : { error }),
    startedAt: "2026-01-01T00:00:00.000Z", endedAt: "2026-01-01T00:00:10.000Z", wallSeconds: 10,
    testbed: { name: "t", target: "local" }, logsDir: `logs/${runId}`,
  };
}

describe("run records", () => {
  it("are written one file per run, leave no temporary files, and read back in order", () => {
    const layout = resultsLayout(mkdtempSync(join(tmpdir(), "ringlab-records-")));
    writeRecord(layout, record("b", "ok"));
    writeRecord(layout, record("a", "failed", "boom"));
    expect(readdirSync(layout.runsDir)).toEqual(["a.json", "b.json"]);
    expect(readRecords(layout).map((r) => [r.runId, r.status])).toEqual([["a", "failed"], ["b", "ok"]]);
  });

  it("name a record that is not ringlab.run/v1 instead of skipping it", () => {
    const layout = resultsLayout(mkdtempSync(join(tmpdir(), "ringlab-records-")));
    writeRecord(layout, record("a", "ok"));
    writeFileSync(join(layout.runsDir, "b.json"), JSON.stringify({ schema: "something/v9" }));
    expect(() => readRecords(layout)).toThrowError(/b\.json: schema something\/v9, expected ringlab\.run\/v1/);
  });

  it("derive runs.jsonl in plan order and a summary.csv that quotes errors", () => {
    const layout = resultsLayout(mkdtempSync(join(tmpdir(), "ringlab-records-")));
    writeDerivedFiles(layout, [record("b", "ok"), record("a", "failed", 'exit 3, "peer gone"')], ["b", "a"]);
    expect(readFileSync(layout.runsJsonl, "utf8").trim().split("\n").map((line) => JSON.parse(line).runId)).toEqual(["b", "a"]);
    const csv = summaryCsv([record("a", "failed", 'exit 3, "peer gone"')]).trim().split("\n");
    expect(csv[0]).toMatch(/^run_id,status,job,nodes,bandwidth,/);
    expect(csv[1]).toBe('a,failed,train,2,1gbit,tiny,32,1,,,,,,10,,"exit 3, ""peer gone"""');
  });
});

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { planCampaign, remainingRuns } from "../../src/campaign/plan.ts";
import { parseCampaign } from "../../src/config/load.ts";
import { RUN_RECORD_SCHEMA, type RunRecord } from "../../src/results/record.ts";
import { ResultsStore } from "../../src/results/store.ts";

function record(runId: string, status: "ok" | "failed", attempt: number, fingerprint = "f"): RunRecord {
  return {
    schema: RUN_RECORD_SCHEMA,
    campaign: "c",
    runId,
    attempt,
    fingerprint,
    params: {
      job: "train",
      nodes: 2,
      bandwidth: "1gbit",
      linkGbps: 1,
      repeat: 1,
      model: "tiny",
      batchSize: 32,
      knobs: {},
      workerArgs: [],
    },
    status,
    ...(status === "failed" ? { error: `attempt ${attempt} failed` } : {}),
    startedAt: "2026-01-01T00:00:00.000Z",
    endedAt: "2026-01-01T00:00:10.000Z",
    wallSeconds: 10,
    testbed: { name: "t", target: "local" },
    logsDir: `logs/${runId}/attempt-${attempt}`,
  };
}

const scratch = () => mkdtempSync(join(tmpdir(), "ringlab-store-"));
const noWarnings = (message: string) => expect.fail(`unexpected warning: ${message}`);

describe("ResultsStore", () => {
  it("writes one file per attempt, leaves no temporary files, and reads them back by run and attempt", () => {
    const dir = scratch();
    const store = ResultsStore.open(dir, noWarnings);
    store.save(record("b", "ok", 1));
    store.save(record("a", "failed", 1));
    expect(readdirSync(join(dir, "runs"))).toEqual(["a.attempt-1.json", "b.attempt-1.json"]);
    expect(
      ResultsStore.open(dir, noWarnings)
        .records()
        .map((r) => [r.runId, r.status]),
    ).toEqual([
      ["a", "failed"],
      ["b", "ok"],
    ]);
  });

  it("keeps every attempt of a run done again: records, logs folders, the latest attempt and the count", () => {
    const dir = scratch();
    const first = ResultsStore.open(dir, noWarnings);
    expect(first.nextAttempt("a")).toBe(1);
    mkdirSync(first.logsDirOf("a", 1), { recursive: true });
    writeFileSync(join(first.logsDirOf("a", 1), "worker-0.log"), "peer gone\n");
    first.save(record("a", "failed", 1));

    const again = ResultsStore.open(dir, noWarnings);
    expect(again.nextAttempt("a")).toBe(2);
    expect(again.logsDirOf("a", 2)).toBe(join(dir, "logs", "a", "attempt-2"));
    again.save(record("a", "ok", 2));

    const reread = ResultsStore.open(dir, noWarnings);
    expect(reread.records().map((r) => [r.attempt, r.status])).toEqual([
      [1, "failed"],
      [2, "ok"],
    ]);
    expect(reread.latestRecords().map(({ record: r, attempts }) => [r.runId, r.attempt, r.status, attempts])).toEqual([
      ["a", 2, "ok", 2],
    ]);
    expect(readFileSync(join(dir, "logs", "a", "attempt-1", "worker-0.log"), "utf8")).toBe("peer gone\n");
    expect(reread.nextAttempt("a")).toBe(3);
  });

  it("lets a resumed campaign see each run's latest attempt", () => {
    const plan = planCampaign(
      parseCampaign(
        "testbed: {target: local, name: t, nodes: 2}\ncampaign: {matrix: {nodes: [1], model: tiny, batchSize: 8, bandwidth: 1gbit}}",
        "c.yaml",
      ),
      "c",
    );
    const [run] = plan.runs;
    const dir = scratch();
    const store = ResultsStore.open(dir, noWarnings);
    store.save(record(run!.id, "failed", 1, run!.fingerprint));
    const latest = () =>
      new Map(
        ResultsStore.open(dir, noWarnings)
          .latestRecords()
          .map(({ record: r }) => [r.runId, r]),
      );
    expect(remainingRuns(plan, latest()).map((r) => r.id)).toEqual([run!.id]);
    store.save(record(run!.id, "ok", 2, run!.fingerprint));
    expect(remainingRuns(plan, latest())).toEqual([]);
  });

  it("names a truncated record and one of another schema through warn, leaves them out, and never reuses their numbers", () => {
    const dir = scratch();
    const store = ResultsStore.open(dir, noWarnings);
    store.save(record("a", "ok", 1));
    store.save(record("b", "failed", 1));
    const truncated = join(dir, "runs", "b.attempt-1.json");
    writeFileSync(truncated, readFileSync(truncated, "utf8").slice(0, 40));
    writeFileSync(join(dir, "runs", "c.attempt-1.json"), JSON.stringify({ schema: "something/v9" }));

    const warnings: string[] = [];
    const reread = ResultsStore.open(dir, (message) => warnings.push(message));
    expect(reread.records().map((r) => r.runId)).toEqual(["a"]);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(new RegExp(`^run record ${truncated} is unreadable \\(`));
    expect(warnings[1]).toContain(
      `run record ${join(dir, "runs", "c.attempt-1.json")} is not a ringlab.run/v1 record at schema`,
    );
    expect(reread.nextAttempt("b")).toBe(2);
  });

  it("reads a record of the layout before attempts (runs/<run id>.json) as attempt 1", () => {
    const dir = scratch();
    const { attempt: _, ...old } = record("a", "failed", 1);
    mkdirSync(join(dir, "runs"));
    writeFileSync(join(dir, "runs", "a.json"), JSON.stringify({ ...old, logsDir: "logs/a" }));
    const store = ResultsStore.open(dir, noWarnings);
    expect(store.records().map((r) => [r.runId, r.attempt, r.logsDir])).toEqual([["a", 1, "logs/a"]]);
    expect(store.nextAttempt("a")).toBe(2);
    store.save(record("a", "ok", 2));
    expect(store.latestRecords().map(({ record: r, attempts }) => [r.status, attempts])).toEqual([["ok", 2]]);
  });

  it("never overwrites an attempt already on disk", () => {
    const dir = scratch();
    ResultsStore.open(dir, noWarnings).save(record("a", "failed", 1));
    expect(() => ResultsStore.open(dir, noWarnings).save(record("a", "ok", 1))).toThrow(
      /attempt 1 of a is recorded already/,
    );
    expect(existsSync(join(dir, "runs", "a.attempt-1.json"))).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, "runs", "a.attempt-1.json"), "utf8")).status).toBe("failed");
  });
});

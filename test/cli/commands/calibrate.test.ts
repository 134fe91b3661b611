/** `ringlab calibrate` and `ringlab plan --calibration` as a user runs them: the real CLI on results written to disk. */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { recordFileName } from "../../../src/results/layout.ts";
import { trainRecord, probeRecord } from "../../report/fixtures/records.ts";

const BIN = resolve("src/bin/ringlab.mjs");

/** A results folder as a campaign leaves it: the smoke's configuration measured at 0.5 cores per worker. */
function resultsOf(dir: string): string {
  const results = join(dir, "results", "earlier");
  mkdirSync(join(results, "runs"), { recursive: true });
  const atQuota = <T extends { params: object }>(record: T): T => ({ ...record, params: { ...record.params, cpusPerNode: 0.5 } });
  const records = [
    trainRecord({ model: "small", batchSize: 32, nodes: 1, repeat: 1, imagesPerSecond: 100 }),
    trainRecord({ model: "small", batchSize: 32, nodes: 1, repeat: 2, imagesPerSecond: 104 }),
    probeRecord({ nodes: 2, bandwidth: "1gbit", busbw: [[1048576, 0.9], [16777216, 0.95]] }),
  ].map(atQuota);
  for (const record of records) writeFileSync(join(results, "runs", recordFileName(record.runId, 1)), JSON.stringify(record));
  return results;
}

function cli(state: string, args: string[]) {
  return spawnSync(process.execPath, [BIN, "--state-dir", state, ...args], { encoding: "utf8" });
}

describe("ringlab calibrate, then plan", () => {
  it("keeps what a campaign measured in the state folder, and plan predicts every training run it can from it, naming its sources", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-calibrate-"));
    const state = join(dir, "state");
    const made = cli(state, ["calibrate", resultsOf(dir)]);
    expect(made.status, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/^compute small batch 32 fp32 at 0.5 cores: t_c 0.314 ± [\d.]+ s \(measured in .*results\/earlier on 2025-05-01\)$/m);
    expect(made.stdout).toMatch(/^link 1gbit, 2 nodes × 1, ring: α [\d.]+ ms, β as [\d.]+ Gbit\/s/m);
    expect(JSON.parse(readFileSync(join(state, "calibration.json"), "utf8")).schema).toBe("ringlab.calibration/v1");

    // The smoke campaign at 0.5 cores: 1gbit probed for 2 nodes (3 derived from it); 3gbit never.
    const plan = cli(state, ["plan", "campaigns/local-smoke.yaml", "--format", "json"]);
    expect(plan.status, plan.stderr).toBe(0);
    const json = JSON.parse(plan.stdout) as { predictions: { runId: string; scalingEfficiency?: { value: number }; sources?: { link: string }; missing?: string }[] };
    const byRun = new Map(json.predictions.map((prediction) => [prediction.runId, prediction]));
    expect(byRun.get("train-small-b32-n2-1gbit-r1")!.scalingEfficiency!.value).toBeGreaterThan(0);
    expect(byRun.get("train-small-b32-n3-1gbit-r1")!.sources!.link).toMatch(/^derived: α and β of the 2-node probe at 1gbit/);
    expect(byRun.get("train-small-b32-n2-3gbit-r1")!.missing).toMatch(/^no probe of the link 3gbit/);
    const text = cli(state, ["plan", "campaigns/local-smoke.yaml"]);
    expect(text.stdout).toMatch(/^predicted from .*calibration.json \(no overlap/m);
    expect(text.stdout).toMatch(/^train-small-b32-n2-3gbit-r1: no prediction: no probe of the link 3gbit/m);
  });

  it("refuses a calibration that is not one, or a results folder without records, before anything (exit 2)", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-calibrate-"));
    const corrupt = join(dir, "calibration.json");
    writeFileSync(corrupt, "{\"schema\": \"ringlab.calibration/v1\", \"compute\": 3}");
    const plan = cli(join(dir, "state"), ["plan", "campaigns/local-smoke.yaml", "--calibration", corrupt]);
    expect(plan.status).toBe(2);
    expect(plan.stderr).toContain(`calibration ${corrupt}: not a ringlab.calibration/v1 file at compute:`);
    expect(plan.stderr).toContain("make one with `ringlab calibrate <results dir>...`");
    mkdirSync(join(dir, "empty"));
    const empty = cli(join(dir, "state"), ["calibrate", join(dir, "empty")]);
    expect(empty.status).toBe(2);
    expect(empty.stderr).toMatch(/no run records in .*empty\/runs: results directory .* calibrates nothing/);
    expect(cli(join(dir, "state"), ["plan", "campaigns/local-smoke.yaml", "--format", "yaml"]).stderr).toMatch(/--format "yaml": expected text or json/);
  });
});

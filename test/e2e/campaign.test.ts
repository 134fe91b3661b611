/**
 * The main job end to end: `ringlab campaign campaigns/local-smoke.yaml`, interrupted twice (Ctrl-C-like
 * SIGTERM, then a SIGKILL that allows no cleanup) and rerun to completion. Nothing measured may be lost,
 * nothing finished may run twice, and nothing may be left running. The other campaign scenarios run on the
 * testbed of local-testbed.test.ts.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { everythingLabeled, exited, labeled, ringlab, scratch, sleep, startRingLab } from "./cli.ts";

const TESTBED = "smoke";
const dir = scratch("campaign");
const state = join(dir, "state");
const results = join(dir, "results");
const args = ["campaign", "campaigns/local-smoke.yaml", "--results", results];

function records(): Map<string, { status: string; startedAt: string }> {
  const runs = join(results, "runs");
  if (!existsSync(runs)) return new Map();
  return new Map(
    readdirSync(runs)
      .filter((f) => f.endsWith(".json") && !f.startsWith("."))
      .map((file) => {
        const record = JSON.parse(readFileSync(join(runs, file), "utf8"));
        return [record.runId, { status: record.status, startedAt: record.startedAt }];
      }),
  );
}

async function waitForRecords(count: number, child: { output: () => string }): Promise<void> {
  const deadline = Date.now() + 8 * 60_000;
  while (records().size < count) {
    if (Date.now() > deadline) throw new Error(`fewer than ${count} records after 8 min; output:\n${child.output()}`);
    await sleep(500);
  }
}

describe("a campaign on the local testbed", { timeout: 25 * 60_000 }, () => {
  let afterTerm = new Map<string, { status: string; startedAt: string }>();
  let afterKill = new Map<string, { status: string; startedAt: string }>();

  it("stops on SIGTERM: keeps every finished run, tears the testbed down, exits 130", async () => {
    expect(everythingLabeled(TESTBED)).toEqual([]);
    const child = startRingLab(state, args);
    await waitForRecords(2, child);
    process.kill(-child.pid!, "SIGTERM");
    const { code } = await exited(child);
    expect(code, child.output()).toBe(130);
    expect(child.output()).toMatch(/interrupted: \d+ runs recorded this time; rerun the same command to resume/);
    expect(everythingLabeled(TESTBED)).toEqual([]);
    afterTerm = records();
    expect(afterTerm.size).toBeGreaterThanOrEqual(2);
  });

  it("loses nothing when killed outright (SIGKILL: no cleanup possible)", async () => {
    const child = startRingLab(state, args);
    await waitForRecords(afterTerm.size + 2, child);
    process.kill(-child.pid!, "SIGKILL");
    await exited(child);
    afterKill = records();
    for (const [runId, record] of afterTerm) expect(afterKill.get(runId), runId).toEqual(record);
    // Nothing could tear down: the testbed is still there for the next invocation to reuse.
    expect(labeled("container", TESTBED).length).toBeGreaterThanOrEqual(3);
  });

  it("resumes to completion without repeating finished runs, writes results and report, and leaves nothing behind", async () => {
    const run = await ringlab(state, args);
    expect(run.code, run.stderr).toBe(0);
    const finished = [...afterKill.values()].filter((r) => r.status === "ok").length;
    expect(run.stderr).toMatch(new RegExp(`10 runs planned, ${finished} already done, ${10 - finished} to run`));
    expect(run.stderr).toMatch(/testbed smoke already exists with 3 nodes: reusing it/);
    // Configured by the killed invocation from the same playbooks and image: not converged again, but the workers
    // the kill left behind are removed.
    expect(run.stderr).toMatch(
      /testbed smoke: configured at \S+ from the same playbooks, inventory and worker image; not configuring again/,
    );
    expect(run.stderr).toMatch(/remove workers an interrupted run left/);
    expect(run.stderr).toMatch(/testbed: torn down/);

    const final = records();
    expect(final.size).toBe(10);
    expect([...final.values()].every((r) => r.status === "ok")).toBe(true);
    for (const [runId, record] of afterKill) {
      if (record.status === "ok") expect(final.get(runId), `${runId} ran again`).toEqual(record);
    }

    const jsonl = readFileSync(join(results, "runs.jsonl"), "utf8").trim().split("\n");
    expect(jsonl).toHaveLength(10);
    expect(readFileSync(join(results, "summary.csv"), "utf8").trim().split("\n")).toHaveLength(11);
    expect(readFileSync(join(results, "campaign.yaml"), "utf8")).toBe(
      readFileSync("campaigns/local-smoke.yaml", "utf8"),
    );
    const html = readFileSync(join(results, "report.html"), "utf8");
    // Throughput, efficiency, bus bandwidth, and the probe's fitted model against the training measurements.
    expect(html.match(/<svg/g)?.length).toBe(4);
    expect(html).toMatch(/Ideal/);
    expect(html).toContain("<b>Fitted model against measurement.</b>");
    expect(readFileSync(join(results, "report.md"), "utf8")).toMatch(/small · batch 32 \| 1gbit \| 3 \|/);
    for (const { runId, logsDir, params, result, hostLoad } of jsonl.map((line) => JSON.parse(line))) {
      // Runs of 1, 2 and 3 nodes share a playbook at each link rate: each ran on its own nodes.
      expect(result.world.nodes, runId).toBe(params.nodes);
      // The machine's load over the run, sampled from the real counters: the testbed's containers did work in it.
      expect(hostLoad.testbedCpuSeconds, runId).toBeGreaterThan(0);
      expect(hostLoad.machineCpuSeconds, runId).toBeGreaterThanOrEqual(hostLoad.testbedCpuSeconds * 0.9);
      expect(hostLoad.outsideShare, runId).toBeLessThan(1);
      expect(result.cpuCheck.computeGflops, runId).toHaveLength(result.world.size);
      expect(logsDir, runId).toMatch(new RegExp(`^logs/${runId}/attempt-\\d+$`));
      expect(existsSync(join(results, logsDir, "worker-0.log")), runId).toBe(true);
    }
    expect(everythingLabeled(TESTBED)).toEqual([]);
  });
});

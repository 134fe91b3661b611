import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Context } from "../../src/context/context.ts";
import { NodeKeeper, runnableWith, unreachableNodes } from "../../src/testbed/health.ts";
import type { TestbedRecord } from "../../src/testbed/record.ts";

const node = (rank: number, address: string) => ({
  name: `tb-node-${rank}`,
  rank,
  sshAddress: address,
  privateIp: address,
});
/** Loopback addresses no server listens on: asking them sends nothing off this machine and gets no answer. */
const record: TestbedRecord = {
  schema: "ringlab.testbed/v2",
  name: "tb",
  target: "aws",
  inventory: "/x/inventory.yml",
  sharedDir: "/shared",
  nodes: [node(0, "127.255.255.10"), node(1, "127.255.255.11")],
  createdAt: "2026-11-23T08:00:00.000Z",
};

describe("node health between runs", () => {
  it("lets a run go ahead only when none of the first N nodes is lost", () => {
    expect(runnableWith(2, [])).toBe(true);
    expect(runnableWith(2, [node(2, "x")])).toBe(true);
    expect(runnableWith(3, [node(2, "x")])).toBe(false);
    expect(runnableWith(1, [node(0, "x")])).toBe(false);
  });

  it("finds nodes whose SSH does not answer", async () => {
    expect((await unreachableNodes(record)).map((n) => n.name)).toEqual(["tb-node-0", "tb-node-1"]);
  });

  it("does not try to bring back nodes of a testbed it cannot recreate: they are reported lost, with a warning", async () => {
    const warnings: string[] = [];
    const ctx: Context = {
      repoDir: ".",
      stateDir: mkdtempSync(join(tmpdir(), "ringlab-health-")),
      logFile: "/dev/null",
      signal: new AbortController().signal,
      reporter: {
        step: (_t, work) => work(() => {}),
        info: () => {},
        warn: (m) => warnings.push(m),
        toolLine: () => {},
      },
    };
    const check = await new NodeKeeper(ctx, record).check();
    expect(check.lost.map((n) => n.name)).toEqual(["tb-node-0", "tb-node-1"]);
    expect(check.recovery).toBeUndefined();
    expect(warnings).toEqual(["nodes tb-node-0, tb-node-1 do not answer over SSH: runs that need them are skipped"]);
  });
});

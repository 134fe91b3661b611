/** `ringlab compare` end to end on fixture records: the files it writes, and a side with nothing to compare. */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ResultsStore } from "../../../src/results/store.ts";
import { scalingCampaign, trainRecord } from "../../report/fixtures/records.ts";

const BIN = resolve("src/bin/ringlab.mjs");

describe("ringlab compare", () => {
  let dir: string;
  const ringlab = (...args: string[]) =>
    spawnSync(process.execPath, [BIN, "--state-dir", join(dir, "state"), "compare", ...args], { encoding: "utf8" });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ringlab-compare-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function saveCampaign(name: string, records: ReturnType<typeof scalingCampaign>): string {
    const path = join(dir, name);
    const store = ResultsStore.open(path, (message) => expect.fail(message));
    for (const record of records) store.save(record);
    return path;
  }

  it("writes the page and its markdown into B by default, named after A", () => {
    const before = saveCampaign("before", scalingCampaign());
    const after = saveCampaign("after", [
      trainRecord({ nodes: 1, throughput: 150 }),
      trainRecord({ nodes: 1, repeat: 2, throughput: 160 }),
    ]);

    const result = ringlab(before, after);

    expect(result.stderr).not.toMatch(/error/);
    expect(result.status).toBe(0);
    const html = readFileSync(join(after, "compare-before.html"), "utf8");
    expect(html).toContain("<h1>after against before</h1>");
    expect(html).toContain("1 configurations on both sides");
    expect(readFileSync(join(after, "compare-before.md"), "utf8")).toContain("## Only in A");
  });

  it("writes where --out says", () => {
    const before = saveCampaign("before", scalingCampaign());
    const out = join(dir, "pages", "diff.html");
    expect(ringlab(before, before, "--out", out).status).toBe(0);
    expect(existsSync(out)).toBe(true);
    expect(existsSync(join(dir, "pages", "diff.md"))).toBe(true);
  });

  it("refuses a side without records with exit 2, naming the folder, and writes nothing", () => {
    const before = saveCampaign("before", scalingCampaign());
    const empty = join(dir, "empty");
    mkdirSync(join(empty, "runs"), { recursive: true });

    const result = ringlab(before, empty);

    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      `no run records in ${join(empty, "runs")}: nothing to compare in results directory ${empty}`,
    );
    expect(existsSync(join(empty, "compare-before.html"))).toBe(false);
  });
});

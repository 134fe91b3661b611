import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resultsLayout, writeRecord } from "../../src/campaign/records.ts";
import { UsageError } from "../../src/errors.ts";
import { writeReport } from "../../src/report/index.ts";
import { scalingCampaign } from "./fixtures/records.ts";

describe("writeReport", () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ringlab-report-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("writes report.html and report.md beside the run records", async () => {
    const layout = resultsLayout(dir);
    for (const record of scalingCampaign()) writeRecord(layout, record);

    const written = await writeReport(dir);

    expect(written).toEqual({ html: join(dir, "report.html"), markdown: join(dir, "report.md") });
    const html = readFileSync(written.html, "utf8");
    expect(html).toContain("<h1>Campaign scaling-test</h1>");
    expect(html.match(/<svg /g)).toHaveLength(3);
    expect(readFileSync(written.markdown, "utf8")).toContain("| resnet50 · batch 64 | 10gbit | 4 | 402.0 ± 25.4 |");
    // Written through a temp file and a rename: nothing half-written is left behind.
    expect(readdirSync(dir).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("refuses a results directory without records, naming it", async () => {
    const missing = join(dir, "no-such-campaign");
    await expect(writeReport(missing)).rejects.toThrow(UsageError);
    await expect(writeReport(missing)).rejects.toThrow(missing);

    mkdirSync(join(dir, "runs"));
    await expect(writeReport(dir)).rejects.toThrow(`results directory ${dir}`);
    expect(existsSync(join(dir, "report.html"))).toBe(false);
  });
});

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UsageError } from "../../src/util/errors.ts";
import { writeReport } from "../../src/report/index.ts";
import { ResultsStore } from "../../src/results/store.ts";
import { scalingCampaign } from "./fixtures/records.ts";

describe("writeReport", () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ringlab-report-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("writes report.html and report.md beside the run records", async () => {
    const store = ResultsStore.open(dir, (message) => expect.fail(message));
    for (const record of scalingCampaign()) store.save(record);

    const written = await writeReport(dir, ResultsStore.open(dir, (message) => expect.fail(message)).records());

    expect(written).toEqual({ html: join(dir, "report.html"), markdown: join(dir, "report.md") });
    const html = readFileSync(written.html, "utf8");
    expect(html).toContain("<h1>Campaign scaling-test</h1>");
    expect(html.match(/<svg /g)).toHaveLength(4);
    expect(readFileSync(written.markdown, "utf8")).toContain(
      "| resnet50 · batch 64 (img/s) | 10gbit | 4 | 402.0 ± 25.4 |",
    );
    // Written through a temp file and a rename: nothing half-written is left behind.
    expect(readdirSync(dir).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("refuses a results directory without records, naming it", async () => {
    const missing = join(dir, "no-such-campaign");
    const none = ResultsStore.open(missing, (message) => expect.fail(message)).records();
    await expect(writeReport(missing, none)).rejects.toThrow(UsageError);
    await expect(writeReport(missing, none)).rejects.toThrow(missing);

    mkdirSync(join(dir, "runs"));
    await expect(writeReport(dir, ResultsStore.open(dir, (message) => expect.fail(message)).records())).rejects.toThrow(
      `results directory ${dir}`,
    );
    expect(existsSync(join(dir, "report.html"))).toBe(false);
  });

  it("is still written when a record file is truncated, and names the file it left out", async () => {
    const store = ResultsStore.open(dir, (message) => expect.fail(message));
    for (const record of scalingCampaign()) store.save(record);
    const truncated = join(dir, "runs", "train-resnet50-b64-n1-r1.attempt-1.json");
    writeFileSync(truncated, readFileSync(truncated, "utf8").slice(0, 200));

    const warnings: string[] = [];
    const records = ResultsStore.open(dir, (message) => warnings.push(message)).records();
    const written = await writeReport(dir, records, { leftOut: warnings });

    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(truncated);
    expect(records).toHaveLength(scalingCampaign().length - 1);
    const markdown = readFileSync(written.markdown, "utf8");
    expect(markdown).toContain("13 runs: 12 ok, 1 failed");
    expect(markdown).toContain("train-resnet50-b64-n1-r1.attempt-1.json is unreadable");
  });
});

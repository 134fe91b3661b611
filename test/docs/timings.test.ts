/**
 * Every duration README.md and docs/ quote in minutes or hours comes from a committed record (issue #66): a timing of
 * test/bench/data/timings/ (scripts/record-timing.ts) whose command succeeded, or a span a bench test recomputes from
 * committed data (RECOMPUTED). Seconds are left out: the docs' seconds are mostly limits and settings (a 30 s timeout),
 * not measurements. The generated references (cli.md, campaign-file.md) hold no measurements.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const TIMINGS = "test/bench/data/timings";
const GENERATED = new Set(["cli.md", "campaign-file.md"]);
/** Spans the docs quote that are no command's time, each with the test that recomputes it from committed data. */
const RECOMPUTED: Readonly<Record<string, string>> = {
  "23 minutes": "test/bench/predictions-day2.test.ts (the calibration's last run to the predictions)",
  "8.8 hours": "this file: `ringlab plan campaigns/aws-seed.yaml`'s estimate, which docs/aws.md quotes",
};

interface Timing {
  readonly schema: string;
  readonly name: string;
  readonly command: string;
  readonly exitCode: number;
  readonly seconds: number;
  readonly startedAt: string;
  readonly cpuModel: string;
  readonly commit: string;
}

const timings: Timing[] = readdirSync(TIMINGS)
  .filter((file) => file.endsWith(".json"))
  .map((file) => JSON.parse(readFileSync(join(TIMINGS, file), "utf8")) as Timing);
const documents = [
  "README.md",
  ...readdirSync("docs")
    .filter((file) => file.endsWith(".md") && !GENERATED.has(file))
    .map((file) => join("docs", file)),
];
const DURATION = /\b(\d+(?:\.\d+)?)(?:[-–](\d+(?:\.\d+)?))? ?(min|minutes?|hours?)\b/g;

/** Whether a successful record took `value` (minutes or hours), to the quote's own precision. */
function recorded(value: string, unit: string): boolean {
  const decimals = value.split(".")[1]?.length ?? 0;
  const perUnit = unit.startsWith("h") ? 3600 : 60;
  return timings.some(
    (timing) =>
      timing.exitCode === 0 && (timing.seconds / perUnit).toFixed(decimals) === Number(value).toFixed(decimals),
  );
}

describe("the times the docs quote", () => {
  it("are records: each names its command, its seconds, when, on which CPU and at which commit", () => {
    for (const timing of timings) {
      expect(timing.schema, timing.name).toBe("ringlab.timing/v1");
      expect(timing.seconds, timing.name).toBeGreaterThan(0);
      expect(timing.command.length, timing.name).toBeGreaterThan(0);
      expect(Number.isNaN(Date.parse(timing.startedAt)), timing.name).toBe(false);
      expect(timing.commit, timing.name).toMatch(/^[0-9a-f]{40}$/);
      expect(timing.cpuModel, timing.name).not.toBe("");
    }
  });

  it("in minutes or hours, in README.md and docs/, each has a record or a test that recomputes it", () => {
    const unrecorded = documents.flatMap((file) => {
      const text = readFileSync(file, "utf8").replace(/\s+/g, " ");
      return [...text.matchAll(DURATION)]
        .filter(([quote, low, high, unit]) => {
          if (Object.keys(RECOMPUTED).some((span) => quote === span)) return false;
          return !(recorded(low!, unit!) && (high === undefined || recorded(high, unit!)));
        })
        .map(([quote]) => `${file}: "${quote}"`);
    });
    expect(unrecorded).toEqual([]);
  });

  it("quotes plan's estimate of the AWS seed campaign as plan makes it today (docs/aws.md)", () => {
    const plan = spawnSync(process.execPath, ["src/bin/ringlab.mjs", "plan", "campaigns/aws-seed.yaml"], {
      encoding: "utf8",
    });
    expect(plan.stdout).toMatch(/^estimated duration: 8\.8 h /m);
    expect(plan.stdout).toMatch(/^estimated cost: \$105\.\d\d /m);
    expect(readFileSync("docs/aws.md", "utf8").replace(/\s+/g, " ")).toContain("about 8.8 hours on 10 g4dn.4xlarge");
    expect(readFileSync("docs/aws.md", "utf8").replace(/\s+/g, " ")).toContain("about $105 on demand");
  });

  it("would catch a quote without a record", () => {
    expect("the main job: about 4 minutes".match(DURATION)).toEqual(["4 minutes"]);
    expect(recorded("4000", "minutes")).toBe(false);
  });
});

/** What the benchmark tests read from test/bench/data/: a campaign's runs.jsonl, one checked record a line. */
import { readFileSync } from "node:fs";
import { parseRunRecord, type RunRecord } from "../../src/results/record.ts";

/** Every record of a JSONL file, each through the record schema (a file that does not parse fails the test file). */
export function recordsOf(file: string): RunRecord[] {
  return readFileSync(file, "utf8").trim().split("\n").map((line) => {
    const parsed = parseRunRecord(JSON.parse(line));
    if ("problem" in parsed) throw new Error(`${file}: ${parsed.problem}`);
    return parsed.record;
  });
}

/** Every number to 12 significant digits: the same sums added in another order compare equal. */
export function rounded(value: unknown): unknown {
  if (typeof value === "number") return Number(value.toPrecision(12));
  if (Array.isArray(value)) return value.map(rounded);
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, rounded(field)]));
  return value;
}

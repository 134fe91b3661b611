/** The worker's result as ringlab reads it: records written under older field names read as today's. */
import { describe, expect, it } from "vitest";
import { parseWorkerResult } from "../../src/results/worker-result.ts";
import { parseRunRecord } from "../../src/results/record.ts";
import { trainRecord } from "../report/fixtures/records.ts";

const CHECK = { seconds: 0.6, clock: "cpu", computeGflops: [7.1, 7.3] };

/** A train result as the worker writes it, with the CPU check under `field`. */
function resultWith(field: "cpuCheck" | "calibration"): Record<string, unknown> {
  const { cpuCheck: _, ...result } = JSON.parse(JSON.stringify(trainRecord({ nodes: 2, throughput: 100 }).result));
  return { ...result, [field]: CHECK };
}

describe("the worker result's CPU check", () => {
  it("reads a record written before 2026-12-06, whose CPU check is `calibration`, as cpuCheck", () => {
    const parsed = parseWorkerResult(resultWith("calibration"));
    expect(parsed.cpuCheck).toEqual(CHECK);
    expect("calibration" in parsed).toBe(false);
  });

  it("reads today's cpuCheck as it is", () => {
    expect(parseWorkerResult(resultWith("cpuCheck")).cpuCheck).toEqual(CHECK);
  });

  it("reads the old name inside a stored run record too", () => {
    const record = JSON.parse(JSON.stringify(trainRecord({ nodes: 2, throughput: 100 })));
    record.result = resultWith("calibration");
    const parsed = parseRunRecord(record);
    expect("record" in parsed && parsed.record.result?.cpuCheck).toEqual(CHECK);
  });
});

import { describe, expect, it } from "vitest";
import {
  describeUnsteadiness,
  disturbance,
  judged,
  medianOfThirds,
  STEADINESS_MIN_STEPS,
  unsteadiness,
} from "../../src/results/steadiness.ts";
import type { HostLoad, RunRecord } from "../../src/results/record.ts";
import { probeRecord, trainRecord } from "../report/fixtures/records.ts";

// Two runs of the same configuration on the local testbed, 2026-11-26 (campaigns/local-predict.yaml, 2 nodes at
// 1 Gbit/s): the first was slowed for its first 8 steps and missed the prediction by 6.2 points; the second did not.
const SLOWED_AT_START = [
  0.399, 0.5, 0.502, 0.495, 0.509, 0.505, 0.505, 0.45, 0.385, 0.387, 0.39, 0.389, 0.395, 0.376, 0.385, 0.39, 0.38,
  0.378, 0.379, 0.38,
];
const STEADY = [
  0.373, 0.375, 0.373, 0.426, 0.379, 0.426, 0.374, 0.38, 0.367, 0.364, 0.365, 0.372, 0.378, 0.405, 0.36, 0.387, 0.363,
  0.379, 0.388, 0.359,
];

function run(stepSeconds: readonly number[], knobs: RunRecord["params"]["knobs"] = {}): RunRecord {
  return trainRecord({ nodes: 2, throughput: 128, stepSeconds, knobs });
}

/** n steps of `seconds` each. */
function steps(n: number, seconds: number): number[] {
  return Array.from({ length: n }, () => seconds);
}

describe("unsteadiness", () => {
  it("finds the run that changed speed, says which thirds and by how much, and leaves the steady one alone", () => {
    const shift = unsteadiness(run(SLOWED_AT_START));
    expect(shift).toMatchObject({ steps: 20, slowest: 0, fastest: 2 });
    expect(shift!.shift).toBeCloseTo(0.502 / 0.38 - 1, 3);
    expect(describeUnsteadiness(shift!)).toBe(
      "the first third's median step took 0.502 s, the last third's 0.380 s (20 timed steps)",
    );
    expect(unsteadiness(run(STEADY))).toBeUndefined();
  });

  it("cuts the steps in thirds of rounded bounds and takes each one's median", () => {
    // 20 steps: 7, 6 and 7; an even third's median is the mean of its middle two.
    expect(medianOfThirds([...steps(7, 1), 2, 2, 2, 3, 3, 3, ...steps(7, 4)])).toEqual([1, 2.5, 4]);
  });

  it("judges a shift in any third, and only one above 20 %", () => {
    expect(unsteadiness(run([...steps(7, 0.3), ...steps(6, 0.37), ...steps(7, 0.3)]))).toMatchObject({
      slowest: 1,
      fastest: 0,
    });
    expect(unsteadiness(run([...steps(7, 0.3), ...steps(6, 0.3), ...steps(7, 0.35)]))).toBeUndefined();
    // A few slow steps inside a third move its median little: one outlier step is not a change of speed.
    expect(unsteadiness(run([0.9, 0.9, ...steps(18, 0.3)]))).toBeUndefined();
  });

  it("does not judge what changes speed by design or has too few steps", () => {
    const slowFirst = [...steps(7, 0.5), ...steps(13, 0.3)];
    // The first third's median 0.5 s against 0.3 s: the slowest third first, 67 % slower than the fastest.
    expect(unsteadiness(run(slowFirst))).toMatchObject({
      steps: 20,
      thirdMedians: [0.5, 0.3, 0.3],
      slowest: 0,
      fastest: 1,
    });
    expect(unsteadiness(run(slowFirst))!.shift).toBeCloseTo(0.5 / 0.3 - 1, 12);
    // PowerSGD and local SGD start with plain all-reduce; the asynchronous server has no step barrier.
    for (const reduction of ["powersgd", "local-sgd", "async-parameter-server"])
      expect(unsteadiness(run(slowFirst, { reduction })), reduction).toBeUndefined();
    expect(unsteadiness(run(slowFirst, { reduction: "parameter-server" }))).toEqual(unsteadiness(run(slowFirst)));
    // Time to train: evaluation, checkpoints and restarts sit between its steps.
    expect(unsteadiness(run(slowFirst, { epochs: 3 }))).toBeUndefined();
    expect(unsteadiness(run([...steps(3, 0.5), ...steps(STEADINESS_MIN_STEPS - 4, 0.3)]))).toBeUndefined();
    expect(unsteadiness(run([...steps(3, 0.5), ...steps(STEADINESS_MIN_STEPS - 3, 0.3)]))).toMatchObject({
      steps: 9,
      slowest: 0,
    });
    expect(judged(run(steps(20, 0.3), { reduction: "powersgd" }))).toBe(false);
    expect(judged(run(steps(20, 0.3)))).toBe(true);
    expect(unsteadiness({ ...run(slowFirst), status: "failed" })).toBeUndefined();
    expect(unsteadiness(probeRecord({ nodes: 2, bandwidth: "1gbit", busbw: [[4096, 0.2]] }))).toBeUndefined();
  });
});

describe("disturbance", () => {
  const busy = { busy: true } as HostLoad;

  it("names a busy machine first, then a change of speed; a steady run on a quiet machine has none", () => {
    expect(disturbance({ ...run(STEADY), hostLoad: busy })).toBe("machine busy");
    expect(disturbance({ ...run(SLOWED_AT_START), hostLoad: busy })).toBe("machine busy");
    expect(disturbance(run(SLOWED_AT_START))).toBe("unsteady run");
    expect(disturbance(run(STEADY))).toBeUndefined();
    expect(disturbance({ ...run(STEADY), hostLoad: busy, status: "failed" })).toBeUndefined();
  });
});

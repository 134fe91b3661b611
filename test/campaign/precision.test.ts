import { describe, expect, it } from "vitest";
import { planCampaign } from "../../src/campaign/plan.ts";
import {
  isPrecise,
  runsStillNeeded,
  throughputsByConfiguration,
  withoutRoundsNotNeeded,
} from "../../src/campaign/precision.ts";
import type { RunRecord } from "../../src/results/record.ts";
import { parseCampaign } from "../../src/config/load.ts";
import { trainRecord } from "../report/fixtures/records.ts";

const plan = planCampaign(
  parseCampaign(
    `testbed: {target: local, name: t, nodes: 3}
campaign:
  matrix: {nodes: [1, 2, 3], model: resnet50, batchSize: 64, bandwidth: 1gbit}
  repeatUntil: {halfWidth: 0.05, minRepeats: 2, maxRepeats: 4}
  probe: {enabled: false}
`,
    "c.yaml",
  ),
  "c",
);
const round3 = plan.runs.filter((run) => run.round === 3);

/** A record as the campaign writes it for the planned run of the same id (its fingerprint). */
function planned(record: RunRecord): RunRecord {
  return { ...record, fingerprint: plan.runs.find((run) => run.id === record.runId)!.fingerprint };
}

describe("repeating until the interval is narrow", () => {
  it("judges an interval by Student's t over the repeats: two repeats 1 % apart are not ±5 %, three within 1 % are", () => {
    // Two repeats: half-width = 12.706 × |a − b| / 2.
    expect(isPrecise([100, 101], 0.05)).toBe(false);
    expect(isPrecise([100, 100.7], 0.05)).toBe(true);
    expect(isPrecise([100, 101, 99.5], 0.05)).toBe(true);
    expect(isPrecise([100, 110, 90], 0.05)).toBe(false);
    expect(isPrecise([100], 0.5)).toBe(false);
  });

  it("reads each configuration's throughput from the latest ok attempt of each of its repeats, made with the settings planned now", () => {
    const records = [
      planned(trainRecord({ nodes: 2, repeat: 1, throughput: 150 })),
      planned(trainRecord({ nodes: 2, repeat: 2, throughput: 160 })),
      { ...planned(trainRecord({ nodes: 1, repeat: 1, throughput: 90 })), status: "failed" as const },
      // Another numIters since: not a repeat of what the plan runs now.
      trainRecord({ nodes: 2, repeat: 3, throughput: 400 }),
    ];
    expect(throughputsByConfiguration(plan.runs, records)).toEqual(
      new Map([["train-resnet50-b64-n2-1gbit", [150, 160]]]),
    );
  });

  it("leaves out the conditional rounds at the head of the runs to do that the records show are not needed, and no more", () => {
    const precise = new Map([
      ["train-resnet50-b64-n1", [100, 100.2]],
      ["train-resnet50-b64-n2-1gbit", [150, 150.1]],
      ["train-resnet50-b64-n3-1gbit", [200, 200.3]],
    ]);
    const conditional = plan.runs.filter((run) => run.conditional);
    // A campaign run again after it finished: nothing left to do.
    expect(withoutRoundsNotNeeded(conditional, precise, plan.repeatUntil!)).toEqual([]);
    // A round still needed stops the pruning: what it measures decides the rounds after it.
    const wide = new Map([...precise, ["train-resnet50-b64-n3-1gbit", [200, 260]]]);
    expect(withoutRoundsNotNeeded(conditional, wide, plan.repeatUntil!)).toEqual(conditional);
    // An unconditional run still to do may change every decision after it.
    const unconditional = plan.runs.filter((run) => run.round === 2);
    expect(withoutRoundsNotNeeded([...unconditional, ...conditional], precise, plan.repeatUntil!)).toEqual([
      ...unconditional,
      ...conditional,
    ]);
  });

  it("runs a conditional round's points that are still too wide, and their baseline with them", () => {
    const measured = new Map([
      ["train-resnet50-b64-n1", [100, 100.2]],
      ["train-resnet50-b64-n2-1gbit", [150, 151]],
      ["train-resnet50-b64-n3-1gbit", [200, 260]],
    ]);
    expect(round3.map((run) => run.id)).toEqual([
      "train-resnet50-b64-n1-r3",
      "train-resnet50-b64-n2-1gbit-r3",
      "train-resnet50-b64-n3-1gbit-r3",
    ]);
    expect(runsStillNeeded(round3, measured, plan.repeatUntil!).map((run) => run.id)).toEqual([
      "train-resnet50-b64-n1-r3",
      "train-resnet50-b64-n3-1gbit-r3",
    ]);
  });

  it("leaves out a round whose configurations are all within the target, and runs a wide baseline alone", () => {
    const precise = new Map([
      ["train-resnet50-b64-n1", [100, 100.2]],
      ["train-resnet50-b64-n2-1gbit", [150, 150.1]],
      ["train-resnet50-b64-n3-1gbit", [200, 200.3]],
    ]);
    expect(runsStillNeeded(round3, precise, plan.repeatUntil!)).toEqual([]);
    const wideBaseline = new Map([...precise, ["train-resnet50-b64-n1", [100, 120]]]);
    expect(runsStillNeeded(round3, wideBaseline, plan.repeatUntil!).map((run) => run.id)).toEqual([
      "train-resnet50-b64-n1-r3",
    ]);
  });
});

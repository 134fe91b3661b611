/** `ringlab campaign`'s closing lines, and the reruns its options choose. */
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import type { CampaignOutcome } from "../../../src/campaign/execute.ts";
import {
  exitCodeOf,
  formatOutcome,
  registerCampaign,
  rerunChoices,
  type CampaignCliOptions,
} from "../../../src/cli/commands/campaign.ts";
import type { CommandHost } from "../../../src/cli/host.ts";

const outcome: CampaignOutcome = {
  resultsDir: "/results/local-smoke",
  planned: 9,
  alreadyDone: 0,
  ok: 9,
  failed: 0,
  notRun: 0,
  wallSeconds: 320,
  benchmarkSeconds: 172,
  upSeconds: 108,
  rerun: { runs: 0, failed: 0, stillDisturbed: 0 },
  teardown: "done",
};

describe("the campaign's closing lines", () => {
  it("split the time into benchmark jobs, bringing the testbed up (a first campaign's image builds) and the rest", () => {
    const lines = formatOutcome(outcome, []).split("\n");
    expect(lines).toContain("time: 320 s");
    expect(lines).toContain("  172 s inside benchmark jobs (54 %)");
    expect(lines).toContain("  108 s bringing the testbed up (34 %; image builds or the cloud deploy included)");
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}40 s the rest of the orchestration \(13 %: configure/));
    expect(lines).toContain("results: /results/local-smoke (report.html, report.md, runs.jsonl, summary.csv)");
  });

  it("show nothing below zero when a campaign had nothing to run", () => {
    const text = formatOutcome(
      {
        ...outcome,
        ok: 0,
        alreadyDone: 9,
        wallSeconds: 0.4,
        benchmarkSeconds: 0,
        upSeconds: 0,
        teardown: "not needed",
      },
      [],
    );
    expect(text).toMatch(/^ {2}0 s the rest of the orchestration \(100 %/m);
    expect(text).toContain("testbed: not needed");
  });

  it("say how many runs were done again because their measurement was disturbed, and how many were disturbed again", () => {
    expect(formatOutcome({ ...outcome, rerun: { runs: 2, failed: 0, stillDisturbed: 1 } }, []).split("\n")[1]).toBe(
      "2 runs done again because their measurement was disturbed (machine busy or unsteady run; 1 disturbed again: find what else runs on this machine, see report.md's Flags)",
    );
    expect(formatOutcome({ ...outcome, rerun: { runs: 1, failed: 1, stillDisturbed: 0 } }, []).split("\n")[1]).toBe(
      "1 run done again because its measurement was disturbed (machine busy or unsteady run); 1 of them failed or could not run this time, and that record is now the run's: rerun the campaign to do it",
    );
    expect(formatOutcome(outcome, [])).not.toMatch(/done again/);
  });

  it("count the report's flags by kind right under the runs, and say nothing of flags when there are none", () => {
    const flagged = formatOutcome(outcome, [
      { kind: "machine-busy" },
      { kind: "efficiency-above-ideal" },
      { kind: "wide-interval" },
      { kind: "wide-interval" },
    ]).split("\n");
    expect(flagged[1]).toBe(
      "4 flagged: 1 efficiency above ideal, 2 wide intervals, 1 machine busy (see report.md, Flags)",
    );
    expect(formatOutcome(outcome, [])).not.toMatch(/flagged/);
  });

  it("exit 5 when a disturbed run's rerun failed, since that record is now the run's, as for any failed run", () => {
    expect(exitCodeOf(outcome)).toBe(0);
    expect(exitCodeOf({ ...outcome, rerun: { runs: 1, failed: 1, stillDisturbed: 0 } })).toBe(5);
    expect(exitCodeOf({ ...outcome, failed: 1 })).toBe(5);
    expect(exitCodeOf({ ...outcome, failed: 1, teardown: "failed" })).toBe(4);
  });
});

describe("the campaign command's reruns", () => {
  /** The options commander hands the real campaign command's action for these arguments. */
  function choices(...args: string[]): ReturnType<typeof rerunChoices> {
    let options: CampaignCliOptions | undefined;
    const host = {
      contextFor: () => {
        throw new Error("not reached");
      },
      action: () => (_file: string, parsed: CampaignCliOptions) => {
        options = parsed;
        return Promise.resolve();
      },
    };
    const program = new Command().exitOverride();
    registerCampaign(program, host as unknown as CommandHost);
    program.parse(["campaign", "campaigns/local-smoke.yaml", ...args], { from: "user" });
    return rerunChoices(options!);
  }

  it("reruns this invocation's disturbed runs by default, not with --no-rerun-disturbed or its old name --no-rerun-busy", () => {
    expect(choices()).toEqual({ rerunDisturbed: true, redoDisturbed: false });
    expect(choices("--no-rerun-disturbed")).toEqual({ rerunDisturbed: false, redoDisturbed: false });
    expect(choices("--no-rerun-busy")).toEqual({ rerunDisturbed: false, redoDisturbed: false });
  });

  it("redoes earlier invocations' disturbed runs with --rerun-flagged", () => {
    expect(choices("--rerun-flagged")).toEqual({ rerunDisturbed: true, redoDisturbed: true });
  });
});

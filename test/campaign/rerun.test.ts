/** Which disturbed runs a campaign does once more at its end, and what it says (src/campaign/execute.ts). */
import { describe, expect, it } from "vitest";
import { toRunAgain, type DisturbedRun } from "../../src/campaign/execute.ts";
import type { PlannedRun } from "../../src/campaign/plan.ts";

const disturbed = (id: string, why: DisturbedRun["why"]): DisturbedRun => ({ run: { id } as PlannedRun, why });

/** What toRunAgain picks of these disturbed runs, among `judgedRuns` ok runs that steadiness judged. */
function decide(runs: readonly DisturbedRun[], judgedRuns: number): { again: string[]; warnings: string[] } {
  const warnings: string[] = [];
  return {
    again: toRunAgain(runs, judgedRuns, (message) => warnings.push(message)).map(({ run }) => run.id),
    warnings,
  };
}

describe("running disturbed runs once more", () => {
  it("does every busy and unsteady run again, saying how many of each and why", () => {
    expect(
      decide([disturbed("a", "machine busy"), disturbed("b", "unsteady run"), disturbed("c", "unsteady run")], 24),
    ).toEqual({
      again: ["a", "b", "c"],
      warnings: [
        "3 runs were disturbed: 1 ran while other work took more than 25 % of the machine (machine busy; see each record's hostLoad); " +
          "2 changed speed by more than 20 % while they ran (unsteady run): running them once more",
      ],
    });
    expect(decide([disturbed("b", "unsteady run")], 1).warnings).toEqual([
      "1 run was disturbed: 1 changed speed by more than 20 % while it ran (unsteady run): running it once more",
    ]);
    expect(decide([], 24)).toEqual({ again: [], warnings: [] });
  });

  it("leaves unsteady runs alone when more than a quarter of the runs changed speed: a warm-up too short, not a disturbance", () => {
    const many = [disturbed("a", "machine busy"), ...["b", "c", "d"].map((id) => disturbed(id, "unsteady run"))];
    expect(decide(many, 8)).toEqual({
      again: ["a"],
      warnings: [
        "3 of 8 runs changed speed by more than 20 % while they ran (unsteady run): too many to be disturbances; " +
          "the warm-up is likely shorter than the runs need (raise numWarmupBatches). Not running them again",
        "1 run was disturbed: 1 ran while other work took more than 25 % of the machine (machine busy; see each record's hostLoad): running it once more",
      ],
    });
    // Three of twelve is a quarter, not more: still disturbances. Two are never too many, even of four.
    expect(decide(many, 12).again).toEqual(["a", "b", "c", "d"]);
    expect(decide(many.slice(0, 3), 4).again).toEqual(["a", "b", "c"]);
  });
});

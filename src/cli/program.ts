/**
 * The `ringlab` command line: global options, help text, and one registration per command. A command lives in
 * commands/<verb>.ts; adding one is a line in COMMANDS.
 */
import { Command } from "commander";
import type { CommandHost, ContextFactory, RegisterCommand } from "./host.ts";
import { registerCampaign } from "./commands/campaign.ts";
import { registerCalibrate } from "./commands/calibrate.ts";
import { registerPredict } from "./commands/predict.ts";
import { registerCompare } from "./commands/compare.ts";
import { registerConfigure } from "./commands/configure.ts";
import { registerDataset } from "./commands/dataset.ts";
import { registerDown } from "./commands/down.ts";
import { registerInventory } from "./commands/inventory.ts";
import { registerManifests } from "./commands/manifests.ts";
import { registerPlan } from "./commands/plan.ts";
import { registerReport } from "./commands/report.ts";
import { registerRun } from "./commands/run.ts";
import { registerSchema } from "./commands/schema.ts";
import { registerStatus } from "./commands/status.ts";
import { registerSweep } from "./commands/sweep.ts";
import { registerSynth } from "./commands/synth.ts";
import { registerUp } from "./commands/up.ts";

/** In the order `--help` lists them. */
const COMMANDS: readonly RegisterCommand[] = [
  registerCampaign,
  registerPlan,
  registerReport,
  registerCompare,
  registerCalibrate,
  registerPredict,
  registerUp,
  registerSynth,
  registerManifests,
  registerSchema,
  registerConfigure,
  registerDataset,
  registerRun,
  registerInventory,
  registerStatus,
  registerDown,
  registerSweep,
];

const HELP_AFTER = `
Exit codes: 0 ok; 1 an unexpected error (a bug: please report it with the log); 2 bad input (nothing was
started); 3 a missing prerequisite (Docker, Ansible, terraform); 4 a tool failed, a node does not answer
(status) or teardown failed; 5 a run failed (run) or some runs failed (campaign); 130 interrupted.

Typical session:
  ringlab up campaigns/local-smoke.yaml
  ringlab configure
  ringlab run --nodes 2 --bandwidth 1gbit --job allreduce
  ringlab down`;

export interface Program {
  readonly command: Command;
  /** The exit code the command that ran returned, once parsing has finished; undefined when it returned none. */
  exitCode(): number | undefined;
}

export function buildProgram(contextFor: ContextFactory): Program {
  let exitCode: number | undefined;
  const host: CommandHost = {
    contextFor,
    action:
      (handler) =>
      async (...args) => {
        const result = await handler(...args);
        if (typeof result === "number") exitCode = result;
      },
  };
  const command = new Command("ringlab")
    .description("Measure how distributed training scales across nodes and networks: up, configure, run, report, down.")
    .option(
      "--state-dir <dir>",
      "where testbed state and logs are kept",
      process.env["RINGLAB_STATE_DIR"] ?? ".ringlab",
    )
    .option(
      "-v, --verbose",
      "show the output of docker, ansible and terraform as it happens (always kept in the log file)",
      false,
    )
    .exitOverride()
    .showHelpAfterError("(run with --help for usage)")
    .addHelpText("after", HELP_AFTER);
  for (const register of COMMANDS) register(command, host);
  return { command, exitCode: () => exitCode };
}

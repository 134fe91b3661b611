/** `ringlab down [testbed]`: remove a testbed and everything it created; safe to repeat. */
import type { Command } from "commander";
import { loadCampaignFile } from "../../config/load.ts";
import type { Context } from "../../context.ts";
import { UsageError } from "../../errors.ts";
import { currentTestbedName, loadRecord } from "../../testbed/record.ts";
import { down, downAllLocal } from "../../testbed/testbed.ts";
import type { CommandHost } from "../program.ts";

export function registerDown(program: Command, host: CommandHost): void {
  program.command("down")
    .description("remove a testbed and everything it created; safe to repeat; also removes leftovers of crashed runs")
    .argument("[testbed]", "testbed name or its campaign file (default: the last one brought up)")
    .option("--all", "local target: remove every ringlab container, network and volume on this machine", false)
    .action(host.action(async (which: string | undefined, options: { all: boolean }, command: Command) => {
      const ctx = host.contextFor(command, "down");
      if (options.all) await downEverythingLocal(ctx);
      else await downOne(ctx, which);
    }));
}

async function downEverythingLocal(ctx: Context): Promise<void> {
  const removed = await downAllLocal(ctx);
  ctx.reporter.info(`removed ${removed.containers.length} containers, ${removed.networks.length} networks, ${removed.volumes.length} volumes`);
}

async function downOne(ctx: Context, which: string | undefined): Promise<void> {
  const { name, target, campaignFile, known } = resolveDownTarget(ctx.stateDir, which);
  const result = await down(ctx, name, target, campaignFile);
  if (result.removed === undefined) {
    ctx.reporter.info(`destroyed AWS testbed ${name}`);
    return;
  }
  const { containers, networks, volumes } = result.removed;
  ctx.reporter.info(containers.length + networks.length + volumes.length === 0
    ? `nothing left of testbed ${name}${known ? "" : " here (for an AWS testbed, pass its campaign file: ringlab down <campaign.yaml>)"}`
    : `removed testbed ${name}: ${containers.length} containers, ${networks.length} networks, ${volumes.length} volumes`);
}

interface DownTarget {
  readonly name: string;
  readonly target: "local" | "aws";
  readonly campaignFile?: string;
  /** False when no record of the testbed exists here: only local leftovers can be looked for. */
  readonly known: boolean;
}

/** `down` accepts a name, a campaign file, or nothing (the current testbed). */
function resolveDownTarget(stateDir: string, which: string | undefined): DownTarget {
  if (which !== undefined && /\.ya?ml$/.test(which)) {
    const campaign = loadCampaignFile(which, { readKeys: false });
    return { name: campaign.testbed.name, target: campaign.testbed.target, campaignFile: campaign.sourceFile, known: true };
  }
  const name = which ?? currentTestbedName(stateDir);
  if (name === undefined) {
    throw new UsageError("no testbed is up here", { hint: "name one (ringlab down NAME), pass its campaign file, or use --all" });
  }
  const record = loadRecord(stateDir, name);
  // Without a record the testbed may still have local leftovers: remove them by label.
  return record === undefined
    ? { name, target: "local", known: false }
    : { name, target: record.target, campaignFile: record.campaignFile, known: true };
}

/** `ringlab down [testbed]`: remove a testbed and everything it created, from its stored spec; safe to repeat. */
import type { Command } from "commander";
import { loadAnyCampaignFile } from "../../config/load.ts";
import type { Context } from "../../context/context.ts";
import { UsageError } from "../../util/errors.ts";
import { targetOf, TARGETS } from "../../targets/index.ts";
import { checkedTestbedName, currentTestbedName } from "../../testbed/record.ts";
import { down, downAllLocal } from "../../testbed/testbed.ts";
import type { CommandHost } from "../host.ts";

interface DownOptions {
  readonly all: boolean;
  readonly everyStateDir: boolean;
}

export function registerDown(program: Command, host: CommandHost): void {
  program
    .command("down")
    .description(
      "remove a testbed and everything it created (from what `up` stored: the campaign file is not needed); safe to repeat",
    )
    .argument(
      "[testbed]",
      "testbed name, or the campaign file naming it (default: the last one brought up); a Kubernetes campaign's file: delete what it left in its namespace",
    )
    .option(
      "--all",
      "remove every local testbed of this state folder (AWS testbeds are removed one by one, by name)",
      false,
    )
    .option(
      "--every-state-dir",
      "with --all: every ringlab testbed on this Docker engine, whoever brought it up",
      false,
    )
    .action(
      host.action(async (which: string | undefined, options: DownOptions, command: Command) => {
        const ctx = host.contextFor(command, "down");
        if (options.all) await downEverythingLocal(ctx, options.everyStateDir);
        else await downOne(ctx, which);
      }),
    );
}

async function downEverythingLocal(ctx: Context, everyStateDir: boolean): Promise<void> {
  const { testbeds, removed } = await downAllLocal(ctx, everyStateDir ? "every state folder" : "this state folder");
  ctx.reporter.info(
    `removed ${testbeds.length} local testbeds${testbeds.length > 0 ? ` (${testbeds.join(", ")})` : ""}: ` +
      `${removed.containers.length} containers, ${removed.networks.length} networks, ${removed.volumes.length} volumes`,
  );
}

async function downOne(ctx: Context, which: string | undefined): Promise<void> {
  const file =
    which !== undefined && /\.ya?ml$/.test(which)
      ? loadAnyCampaignFile(which, { readKeys: false, checkFolders: false })
      : undefined;
  // A testbed ringlab does not bring up has no spec here: its target removes what its campaigns left from the file (a
  // Kubernetes namespace's objects).
  const fromSection = file === undefined ? undefined : targetOf(file.testbed).downFromSection;
  if (file !== undefined && fromSection !== undefined) {
    ctx.reporter.info(await fromSection(ctx, file.testbed));
    return;
  }
  const name = file?.testbed.name ?? testbedToRemove(ctx.stateDir, which);
  const result = await down(ctx, name);
  if (result.removed === undefined) {
    ctx.reporter.info(`destroyed ${TARGETS[result.target].title} testbed ${name}`);
    return;
  }
  const { containers, networks, volumes } = result.removed;
  ctx.reporter.info(
    result.removedEarlierAt !== undefined
      ? `nothing left of testbed ${name} (removed ${result.removedEarlierAt})`
      : `removed testbed ${name}: ${containers.length} containers, ${networks.length} networks, ${volumes.length} volumes`,
  );
}

/** `down` takes a testbed name, a campaign file (only its testbed.name is read), or nothing (the current testbed). */
function testbedToRemove(stateDir: string, which: string | undefined): string {
  const name = which ?? currentTestbedName(stateDir);
  if (name === undefined) {
    throw new UsageError("no testbed is up here", {
      hint: "name one (ringlab down NAME), pass its campaign file, or use --all",
    });
  }
  return checkedTestbedName(name);
}

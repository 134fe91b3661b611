/** `ringlab configure`: converge every node of a testbed (ansible/site.yml). */
import type { Command } from "commander";
import { launchersWithSetup } from "../../launchers/index.ts";
import { requireRecord } from "../../testbed/record.ts";
import { configure } from "../../testbed/testbed.ts";
import type { CommandHost } from "../host.ts";

export function registerConfigure(program: Command, host: CommandHost): void {
  const command = program
    .command("configure")
    .description(
      "make every node ready (ansible/site.yml): hosts, SSH trust, GPU driver, shared storage, Docker, worker image, no leftover workers",
    )
    .option("--testbed <name>", "testbed to act on (default: the last one brought up)");
  // A launcher that needs more than every testbed has (src/launchers/) is asked for by its option, e.g. --slurm.
  for (const launcher of launchersWithSetup())
    command.option(`--${launcher.setup!.option}`, launcher.setup!.description);
  command.action(
    host.action(async (options: Record<string, unknown> & { testbed?: string }, command: Command) => {
      const ctx = host.contextFor(command, "configure");
      const record = requireRecord(ctx.stateDir, options.testbed);
      const launchers = launchersWithSetup()
        .filter((launcher) => options[launcher.setup!.option] === true)
        .map((launcher) => launcher.name);
      const result = await configure(ctx, record, { launchers });
      ctx.reporter.info(
        result.changed === 0
          ? `configured ${record.nodes.length} nodes: no changes (already configured)`
          : `configured ${record.nodes.length} nodes: ${result.changed} changes`,
      );
    }),
  );
}

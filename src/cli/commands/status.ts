/** `ringlab status`: a testbed's nodes and whether they answer over SSH. */
import type { Command } from "commander";
import { EXIT } from "../../util/errors.ts";
import { requireRecord } from "../../testbed/record.ts";
import { launcherStatus, status } from "../../testbed/testbed.ts";
import { formatTable } from "../format.ts";
import type { CommandHost } from "../host.ts";
import { out } from "../../util/output.ts";

export function registerStatus(program: Command, host: CommandHost): void {
  program
    .command("status")
    .description(
      "show the current testbed's nodes and whether they answer over SSH (and Slurm's nodes and queue on a testbed configured as a Slurm cluster)",
    )
    .option("--testbed <name>", "testbed to show (default: the last one brought up)")
    .action(
      host.action(async (options: { testbed?: string }, command: Command) => {
        const ctx = host.contextFor(command, "status");
        const record = requireRecord(ctx.stateDir, options.testbed);
        const nodes = await status(ctx, record);
        out(`testbed ${record.name} (${record.target}), created ${record.createdAt}, inventory ${record.inventory}\n`);
        // A container column where the target's nodes are containers here (local).
        out(
          formatTable(
            ["node", "rank", "address", ...(nodes.some((n) => n.running !== undefined) ? ["container"] : []), "ssh"],
            nodes.map((n) => [
              n.name,
              String(n.rank),
              n.address,
              ...(n.running === undefined ? [] : [n.running ? "running" : "stopped"]),
              n.sshAnswers ? "ok" : "NO ANSWER",
            ]),
          ),
        );
        if (nodes.some((n) => !n.sshAnswers)) return EXIT.toolFailed;
        for (const section of await launcherStatus(ctx, record)) out(`\n${section}`);
      }),
    );
}

/** `ringlab configure`: converge every node of a testbed (ansible/site.yml). */
import type { Command } from "commander";
import { requireRecord } from "../../testbed/record.ts";
import { configure } from "../../testbed/testbed.ts";
import type { CommandHost } from "../program.ts";

export function registerConfigure(program: Command, host: CommandHost): void {
  program.command("configure")
    .description("make every node ready (ansible/site.yml): hosts, SSH trust, GPU driver, shared storage, Docker, worker image, no leftover workers")
    .option("--testbed <name>", "testbed to act on (default: the last one brought up)")
    .option("--slurm", "also make it a Slurm cluster (munge, slurmctld on the head, slurmd everywhere), for `ringlab run --launcher slurm`")
    .action(host.action(async (options: { testbed?: string; slurm?: boolean }, command: Command) => {
      const ctx = host.contextFor(command, "configure");
      const record = requireRecord(ctx.stateDir, options.testbed);
      const result = await configure(ctx, record, { slurm: options.slurm === true });
      ctx.reporter.info(result.changed === 0
        ? `configured ${record.nodes.length} nodes: no changes (already configured)`
        : `configured ${record.nodes.length} nodes: ${result.changed} changes`);
    }));
}

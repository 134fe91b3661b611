/** `ringlab up <file>`: create the testbed a campaign file describes and record it. */
import type { Command } from "commander";
import { loadCampaignFile } from "../../config/load.ts";
import { up } from "../../testbed/testbed.ts";
import type { CommandHost } from "../host.ts";

export function registerUp(program: Command, host: CommandHost): void {
  program
    .command("up")
    .description(
      "create the testbed a campaign file describes (local: node containers; aws: terraform apply of its synthesized stack) and remember it",
    )
    .argument("<campaign>", "campaign YAML file")
    .action(
      host.action(async (file: string, _options: unknown, command: Command) => {
        const campaign = loadCampaignFile(file);
        const ctx = host.contextFor(command, "up");
        const record = await up(ctx, campaign);
        ctx.reporter.info(
          `testbed ${record.name} is up: ${record.nodes.length} ${record.target} nodes; inventory ${record.inventory}`,
        );
        ctx.reporter.info("next: ringlab configure");
      }),
    );
}

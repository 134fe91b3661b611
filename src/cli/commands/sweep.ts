/**
 * `ringlab sweep`: destroy expired ringlab resources in a region, found by their tags, whatever the local state says.
 */
import type { Command } from "commander";
import { DEFAULTS } from "../../config/schema.ts";
import { TARGETS } from "../../targets/index.ts";
import { InternalError } from "../../util/errors.ts";
import type { CommandHost } from "../host.ts";
import { out } from "../../util/output.ts";

interface SweepCliOptions {
  readonly region?: string;
  readonly dryRun: boolean;
}

export function registerSweep(program: Command, host: CommandHost): void {
  program
    .command("sweep")
    .description(
      "find resources tagged ringlab:testbed in a region (whatever the local state says) and destroy those past their ringlab:expires-at",
    )
    .option("--region <region>", `AWS region (default: $AWS_REGION, $AWS_DEFAULT_REGION or ${DEFAULTS.aws.region})`)
    .option("--dry-run", "only list what is found and what would be destroyed", false)
    .action(
      host.action(async (options: SweepCliOptions, command: Command) => {
        const ctx = host.contextFor(command, "sweep");
        const region =
          options.region ?? process.env["AWS_REGION"] ?? process.env["AWS_DEFAULT_REGION"] ?? DEFAULTS.aws.region;
        const print = (line: string) => out(`${line}\n`);
        const aws = TARGETS.aws;
        if (aws.sweep === undefined) throw new InternalError("the AWS target has no sweep");
        print(await aws.sweep(ctx, region, options.dryRun, print));
      }),
    );
}

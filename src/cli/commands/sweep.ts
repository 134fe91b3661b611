/**
 * `ringlab sweep`: destroy expired ringlab resources in a region, found by their tags, whatever the local state says.
 */
import type { Command } from "commander";
import { DEFAULTS } from "../../config/schema.ts";
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
        // The AWS SDK is loaded only by the commands that talk to AWS.
        const { sweep, sweepClients } = await import("../../targets/aws/sweep.ts");
        const plan = await ctx.reporter.step(`sweep ${region}${options.dryRun ? " (dry run)" : ""}`, () =>
          sweep(sweepClients(region), { dryRun: options.dryRun, now: new Date() }, print),
        );
        const found = plan.expired.length + plan.current.length + plan.undated.length;
        print(
          `${region}: ${found} ringlab resources found, ${plan.expired.length} expired` +
            `${plan.expired.length === 0 ? "" : options.dryRun ? " (dry run: nothing deleted)" : ", all deleted"}`,
        );
      }),
    );
}

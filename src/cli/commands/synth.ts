/** `ringlab synth <file> [--out DIR]`: the resolved testbed spec and, for AWS, the Terraform JSON; deploys nothing. */
import { dirname, resolve } from "node:path";
import type { Command } from "commander";
import { loadCampaignFile } from "../../config/load.ts";
import { synth } from "../../testbed/testbed.ts";
import { shellWord } from "../format.ts";
import { parseSafePath } from "../options.ts";
import type { CommandHost } from "../host.ts";
import { out } from "../../util/output.ts";

export function registerSynth(program: Command, host: CommandHost): void {
  program
    .command("synth")
    .description(
      "write the testbed spec a campaign file resolves to and, for AWS, the synthesized cdk.tf.json; no cloud access",
    )
    .argument("<campaign>", "campaign YAML file")
    .option("--out <dir>", "where to write spec.json and stacks/<stack>/cdk.tf.json", parseSafePath, "cdktf.out")
    .action(
      host.action(async (file: string, options: { out: string }, command: Command) => {
        const campaign = loadCampaignFile(file);
        const ctx = host.contextFor(command, "synth");
        const result = await synth(ctx, campaign, resolve(options.out));
        out(`${result.specFile}\n${result.stackFile === undefined ? "" : `${result.stackFile}\n`}`);
        if (result.stackFile !== undefined) {
          const terraform = result.deployer ?? "terraform";
          const chdir = `-chdir=${shellWord(dirname(result.stackFile))}`;
          ctx.reporter.info(`deploy it by hand with: ${terraform} ${chdir} init && ${terraform} ${chdir} apply`);
        }
      }),
    );
}

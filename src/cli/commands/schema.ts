/**
 * `ringlab schema [--out FILE]`: the campaign file's JSON Schema, for editors (yaml-language-server) and other tools.
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import { campaignJsonSchemaText } from "../../config/json-schema.ts";
import { writeFileAtomic } from "../../util/fs.ts";
import { out } from "../../util/output.ts";
import { parseSafePath } from "../options.ts";
import type { CommandHost } from "../host.ts";

const HELP_AFTER = `
The schema is generated from the one ringlab validates campaign files with: each field's type, default, range,
choices and description. It is looser than ringlab itself: the rules across fields (matrix.nodes within
testbed.nodes, the worker's knob combinations, what a target cannot do) and some fields' own rules (names, CIDRs,
paths, rates) are checked only by ringlab (\`ringlab plan <file>\`); its description lists them.

An editor with yaml-language-server (VS Code's YAML extension and others) checks and completes a campaign file
whose first line names the schema, as every file in campaigns/ does:
  # yaml-language-server: $schema=../docs/campaign.schema.json
docs/campaign.schema.json is this command's output; docs/campaign-file.md is its reference, by section.`;

export function registerSchema(program: Command, host: CommandHost): void {
  program
    .command("schema")
    .description(
      "write the campaign file's JSON Schema (draft 2020-12) to standard output or a file; no testbed, no state folder",
    )
    .option("--out <file>", "write it to this file (and print its path) instead of to standard output", parseSafePath)
    .addHelpText("after", HELP_AFTER)
    .action(
      host.action((options: { out?: string }) => {
        const text = campaignJsonSchemaText();
        if (options.out === undefined) return out(text);
        const file = resolve(options.out);
        writeFileAtomic(file, text);
        out(`${file}\n`);
      }),
    );
}

/**
 * `ringlab inventory <spec> --outputs <json>`: the Ansible inventory of an AWS testbed deployed by hand (terraform or
 * cdktf).
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { UsageError } from "../../util/errors.ts";
import { pinnedKnownHosts, renderInventory } from "../../testbed/inventory.ts";
import { readHostKeys } from "../../testbed/host-keys.ts";
import { gapOf, targetOf } from "../../targets/index.ts";
import { readSpec } from "../../testbed/spec.ts";
import { writeFileAtomic, writePrivateFile } from "../../util/fs.ts";
import { parseSafePath } from "../options.ts";
import type { CommandHost } from "../host.ts";
import { err } from "../../util/output.ts";

export function registerInventory(program: Command, host: CommandHost): void {
  program
    .command("inventory")
    .description(
      "write the Ansible inventory of an AWS testbed deployed by hand, from its outputs: `terraform output -json` or `cdktf output --outputs-file` JSON",
    )
    .argument("<spec>", "the spec.json the stack was deployed from (written by `ringlab synth`)")
    .requiredOption(
      "--outputs <file>",
      "the JSON of `terraform output -json > <file>` in the stack's folder, or of `npx cdktf output --outputs-file <file>`",
    )
    .option("-o, --out <file>", "where to write the inventory", parseSafePath, "inventory.yml")
    .action(
      host.action(async (specFile: string, options: { outputs: string; out: string }) => {
        const spec = readSpec(specFile);
        const target = targetOf(spec);
        // Only a target with a stack to deploy by hand (AWS) has outputs to read.
        if (target.stack === undefined)
          throw new UsageError(`${specFile} describes a ${spec.target} testbed; ${gapOf(target, "stack")}`);
        const outputs = readOutputsFile(options.outputs);
        const knownHosts = join(dirname(resolve(options.out)), "known_hosts");
        // `ringlab synth` made them beside the spec, and the synthesized stack gave them to the nodes.
        const hostKeys = readHostKeys(dirname(resolve(specFile)), spec.nodes);
        let inventory: Awaited<ReturnType<typeof target.stack.inventory>>;
        try {
          inventory = await target.stack.inventory(outputs, spec, knownHosts, hostKeys);
        } catch (error) {
          throw new UsageError(`${options.outputs}: ${(error as Error).message}`);
        }
        if (hostKeys !== undefined) writePrivateFile(knownHosts, pinnedKnownHosts(inventory, hostKeys));
        writeFileAtomic(resolve(options.out), renderInventory(inventory));
        err(
          `wrote ${options.out}: ${Object.keys(inventory.all.children.workers.hosts).length + 1} nodes; next: ANSIBLE_CONFIG=ansible/ansible.cfg ansible-playbook -i ${options.out} ansible/site.yml\n`,
        );
      }),
    );
}

function readOutputsFile(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as Error).message}`, {
      hint: "write it with: terraform output -json > <file> (in the stack's folder), or npx cdktf output --outputs-file <file>",
    });
  }
}

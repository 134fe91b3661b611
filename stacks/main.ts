/**
 * The cdktf app (cdktf.json: "npx tsx stacks/main.ts"): synthesizes the stack `ringlab-<testbed name>` from the
 * testbed spec named by RINGLAB_SPEC (written by `ringlab up` or `ringlab synth`). It reads that one file and
 * nothing else: no campaign file, no key file, so deploy and destroy work whatever happened to those since.
 */
import { EXIT, RinglabError, UsageError } from "../src/util/errors.ts";
import { dirname, resolve } from "node:path";
import { targetOf, TARGETS } from "../src/targets/index.ts";
import { readHostKeys } from "../src/testbed/host-keys.ts";
import { readSpec } from "../src/testbed/spec.ts";

async function main(): Promise<void> {
  const specFile = process.env.RINGLAB_SPEC;
  if (specFile === undefined || specFile.trim() === "") {
    throw new UsageError(
      "RINGLAB_SPEC is not set; expected the path of a testbed spec, " +
        "e.g. npx ringlab synth campaigns/aws-example.yaml --out spec-dir && RINGLAB_SPEC=spec-dir/spec.json npx cdktf synth",
    );
  }
  const spec = readSpec(specFile);
  const stack = targetOf(spec).stack;
  if (stack === undefined) {
    const withStacks = Object.values(TARGETS).filter((target) => target.stack !== undefined);
    throw new UsageError(
      `${specFile}: target is "${spec.target}", expected ${withStacks.map((target) => `"${target.name}"`).join(" or ")}: ` +
        `only ${withStacks.map((target) => target.title).join(" and ")} testbeds have a cdktf stack`,
    );
  }
  // The host keys `ringlab synth` made beside the spec, if any: without them the nodes keep the AMI's own.
  await stack.synthesize(spec, undefined, readHostKeys(dirname(resolve(specFile)), spec.nodes));
}

try {
  await main();
} catch (error) {
  // Errors about the input are the user's to fix: their message is enough, a stack trace would bury it.
  const message = error instanceof Error ? error.message : String(error);
  console.error(`ringlab: cannot synthesize the testbed stack:\n${message}`);
  if (error instanceof RinglabError && error.hint) console.error(error.hint);
  process.exit(error instanceof RinglabError ? error.exitCode : EXIT.unexpected);
}

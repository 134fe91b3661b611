/**
 * The testbed spec: everything the stack, the inventory and teardown need, resolved once by `ringlab up` (or
 * `ringlab synth`) from the campaign file's testbed section and stored beside the testbed's record. After that,
 * nothing reads the user's files again: `down`, `status`, `configure`, `run` and the stack (stacks/synth.ts)
 * read this spec only, so editing the campaign file or deleting the SSH key file cannot strand a paid testbed.
 *
 * Flat, versioned, validated when read: one schema per target that ringlab brings up, each in its target's module
 * (src/targets/), which also resolves a campaign file's section into it. `resolveTestbedSpec` reads the file system
 * only to check a local testbed's shared directory (checkLocalSharedDir); `readSpec`/`writeSpec` touch one file.
 */
import { readFileSync } from "node:fs";
import type { z } from "zod";
import type { Testbed } from "../config/schema.ts";
import { InternalError, UsageError } from "../util/errors.ts";
import { targetOf, testbedSpecSchema } from "../targets/index.ts";
import { TESTBED_SPEC_SCHEMA } from "../targets/spec-fields.ts";
import { writePrivateFile } from "../util/fs.ts";

export { testbedSpecSchema, TESTBED_SPEC_SCHEMA };
/** Each target's own rules, under the names their callers know. */
export { expiresAt } from "../targets/aws/target.ts";
export { checkLocalSharedDir } from "../targets/local/target.ts";

export type TestbedSpec = z.output<typeof testbedSpecSchema>;
export type LocalTestbedSpec = Extract<TestbedSpec, { target: "local" }>;
export type AwsTestbedSpec = Extract<TestbedSpec, { target: "aws" }>;

export interface SpecInputs {
  /** The campaign file's name without extension. */
  readonly campaign: string;
  /** The testbed's own state folder (`<state-dir>/testbeds/<name>`), absolute. */
  readonly testbedDir: string;
  /** When the testbed was created: now for a new one, the stored time for one that exists. */
  readonly createdAt: Date;
}

/**
 * The spec of a campaign file's testbed section, as loaded (paths absolute, the AWS public key read), resolved by its
 * target. Throws a UsageError when an AWS testbed's key was not read (load the file with readKeys).
 */
export function resolveTestbedSpec(testbed: Testbed, inputs: SpecInputs): TestbedSpec {
  const target = targetOf(testbed);
  if (target.resolveSpec === undefined)
    throw new InternalError(`a ${target.name} testbed has no spec: ringlab does not bring it up`);
  return target.resolveSpec(testbed, inputs);
}

export function writeSpec(file: string, spec: TestbedSpec): void {
  writePrivateFile(file, `${JSON.stringify(spec, null, 2)}\n`);
}

/** Reads and validates a stored spec; a UsageError naming the file and the first field that does not fit. */
export function readSpec(file: string): TestbedSpec {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
    throw new UsageError(`cannot read the testbed spec ${file}: ${reason}`, {
      hint: "write one with `ringlab synth <campaign.yaml> --out DIR` or `ringlab up <campaign.yaml>`",
    });
  }
  const parsed = testbedSpecSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(
      `${file}: ${issue.path.join(".") || "(top)"}: ${issue.message}; expected a ${TESTBED_SPEC_SCHEMA} spec`,
    );
  }
  return parsed.data;
}

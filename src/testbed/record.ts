/**
 * What `ringlab up` remembers about a testbed (its record: nodes, inventory, shared directory), so later verbs
 * need no arguments, and the one place that removes a testbed's state folder. The spec (spec.ts) sits beside it.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { resolve, sep } from "node:path";
import { z } from "zod";
import { InternalError, UsageError } from "../util/errors.ts";
import { DEFAULT_LAUNCHER, LAUNCHER_NAMES, type LauncherName } from "../launchers/names.ts";
import { checkResourceName } from "../rules/names.ts";
import { SPEC_TARGET_NAMES } from "../targets/index.ts";
import { writePrivateFile } from "../util/fs.ts";
import { currentTestbedFile, testbedPaths, testbedsDir } from "./paths.ts";
import { readSpec, type TestbedSpec } from "./spec.ts";

export const TESTBED_RECORD_SCHEMA = "ringlab.testbed/v2";

const nodeRecordSchema = z.object({
  name: z.string(),
  rank: z.int(),
  sshAddress: z.string(),
  privateIp: z.string(),
});

const testbedRecordSchema = z.preprocess(
  fromSlurmFlag,
  z.object({
    schema: z.literal(TESTBED_RECORD_SCHEMA),
    name: z.string(),
    target: z.enum(SPEC_TARGET_NAMES),
    inventory: z.string(),
    sharedDir: z.string(),
    nodes: z.array(nodeRecordSchema),
    createdAt: z.string(),
    /**
     * The launchers site.yml configured it for (src/launchers/), the default's included; absent: the default alone.
     * `ringlab status` shows each one's view (Slurm's nodes and queue).
     */
    launchers: z.array(z.enum(LAUNCHER_NAMES)).optional(),
    /**
     * What site.yml last converged every node from (configured.ts), and when; a campaign reusing the testbed with the
     * same fingerprint skips configure. Dropped when a node container had to be started again.
     */
    configured: z.object({ fingerprint: z.string(), at: z.string() }).optional(),
  }),
);

/** A record written before the launcher table said `slurm: true` for a testbed made a Slurm cluster. */
function fromSlurmFlag(record: unknown): unknown {
  if (typeof record !== "object" || record === null || !("slurm" in record)) return record;
  const { slurm, ...rest } = record as Record<string, unknown>;
  return slurm === true ? { ...rest, launchers: [DEFAULT_LAUNCHER, "slurm"] } : rest;
}

/** The launchers a testbed is configured for, the default's first. */
export function configuredLaunchers(record: TestbedRecord): LauncherName[] {
  return record.launchers ?? [DEFAULT_LAUNCHER];
}

/** Whether site.yml configured the testbed for this launcher (the default serves every configured testbed). */
export function isConfiguredFor(record: TestbedRecord, launcher: LauncherName): boolean {
  return launcher === DEFAULT_LAUNCHER || configuredLaunchers(record).includes(launcher);
}

export type NodeRecord = z.output<typeof nodeRecordSchema>;
export type TestbedRecord = z.output<typeof testbedRecordSchema>;

/** A testbed name from the command line or the `current` file: the schema's rule, or exit 2 with the rule. */
export function checkedTestbedName(name: string, where = "testbed name"): string {
  const problem = checkResourceName(name);
  if (problem !== undefined) throw new UsageError(`${where} ${JSON.stringify(name)}: ${problem}`);
  return name;
}

export function saveRecord(stateDir: string, record: TestbedRecord): void {
  writePrivateFile(
    testbedPaths(stateDir, checkedTestbedName(record.name)).record,
    `${JSON.stringify(record, null, 2)}\n`,
  );
  writePrivateFile(currentTestbedFile(stateDir), `${record.name}\n`);
}

export function loadRecord(stateDir: string, name: string): TestbedRecord | undefined {
  const file = testbedPaths(stateDir, checkedTestbedName(name)).record;
  if (!existsSync(file)) return undefined;
  const parsed = testbedRecordSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
  if (!parsed.success) {
    throw new UsageError(
      `${file} is not a ${TESTBED_RECORD_SCHEMA} testbed record (written by another ringlab version?)`,
      {
        hint: `remove the testbed with \`ringlab down ${name}\` and bring it up again`,
      },
    );
  }
  return parsed.data;
}

/** The stored spec of a testbed, or undefined when `up` never got as far as writing one. */
export function loadSpec(stateDir: string, name: string): TestbedSpec | undefined {
  const file = testbedPaths(stateDir, checkedTestbedName(name)).spec;
  return existsSync(file) ? readSpec(file) : undefined;
}

/** The testbed named, or the current one; a UsageError saying what to do when there is none. */
export function requireRecord(stateDir: string, name?: string): TestbedRecord {
  const chosen = name ?? currentTestbedName(stateDir);
  if (chosen === undefined) {
    throw new UsageError("no testbed is up here", {
      hint: "create one with `ringlab up <campaign.yaml>` (or pass --testbed NAME)",
    });
  }
  const record = loadRecord(stateDir, chosen);
  if (record === undefined) {
    throw new UsageError(`testbed ${chosen} is not known in ${stateDir}`, { hint: knownHint(stateDir) });
  }
  return record;
}

export function currentTestbedName(stateDir: string): string | undefined {
  const file = currentTestbedFile(stateDir);
  if (!existsSync(file)) return undefined;
  const name = readFileSync(file, "utf8").trim();
  return name === "" ? undefined : checkedTestbedName(name, `the current testbed in ${file}`);
}

/**
 * Forgets a testbed: its folder (record, spec, key, inventory, Terraform state, default shared dir); clears
 * `current` if it was it. Refuses, as a bug, any folder that is not directly inside `<state-dir>/testbeds/`.
 */
export function forgetTestbed(stateDir: string, name: string): void {
  const dir = testbedDirInside(stateDir, name);
  if (currentTestbedName(stateDir) === name) rmSync(currentTestbedFile(stateDir), { force: true });
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch (error) {
    throw new UsageError(
      `testbed ${name} is gone, but ${dir} could not be removed (${(error as NodeJS.ErrnoException).code})`,
      {
        hint: `workers write the shared directory as root: remove it with sudo rm -rf ${dir}`,
      },
    );
  }
}

function testbedDirInside(stateDir: string, name: string): string {
  const parent = resolve(testbedsDir(stateDir));
  const dir = resolve(testbedPaths(stateDir, name).dir);
  if (
    checkResourceName(name) !== undefined ||
    !dir.startsWith(parent + sep) ||
    dir.slice(parent.length + 1).includes(sep)
  ) {
    throw new InternalError(
      `refusing to remove ${dir}: not a testbed folder directly inside ${parent} (testbed name ${JSON.stringify(name)})`,
    );
  }
  return dir;
}

/** Names of the testbeds this state directory has a record or a spec of. */
export function knownTestbeds(stateDir: string): string[] {
  const dir = testbedsDir(stateDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter(
      (name) =>
        checkResourceName(name) === undefined &&
        (existsSync(testbedPaths(stateDir, name).record) || existsSync(testbedPaths(stateDir, name).spec)),
    )
    .sort();
}

export function knownHint(stateDir: string): string {
  const known = knownTestbeds(stateDir);
  return known.length === 0
    ? `no testbed is known in ${stateDir}; create one with \`ringlab up <campaign.yaml>\``
    : `testbeds known in ${stateDir}: ${known.join(", ")}`;
}

/** What `ringlab up` remembers about a testbed, so later verbs need no arguments. */
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { UsageError } from "../errors.ts";
import { writeFileAtomic } from "../util/fs.ts";
import { currentTestbedFile, testbedPaths } from "./paths.ts";

export interface NodeRecord {
  readonly name: string;
  readonly rank: number;
  readonly sshAddress: string;
  readonly privateIp: string;
}

export interface TestbedRecord {
  readonly schema: "ringlab.testbed/v1";
  readonly name: string;
  readonly target: "local" | "aws";
  /** The campaign file it was created from (AWS destroy needs it to synthesize the same stack). */
  readonly campaignFile: string;
  readonly inventory: string;
  readonly sharedDir: string;
  readonly nodes: readonly NodeRecord[];
  readonly createdAt: string;
}

export function saveRecord(stateDir: string, record: TestbedRecord): void {
  writeFileAtomic(testbedPaths(stateDir, record.name).record, `${JSON.stringify(record, null, 2)}\n`);
  writeFileAtomic(currentTestbedFile(stateDir), `${record.name}\n`);
}

export function loadRecord(stateDir: string, name: string): TestbedRecord | undefined {
  const file = testbedPaths(stateDir, name).record;
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, "utf8")) as TestbedRecord;
}

/** The testbed named, or the current one; a UsageError saying what to do when there is none. */
export function requireRecord(stateDir: string, name?: string): TestbedRecord {
  const chosen = name ?? currentTestbedName(stateDir);
  if (chosen === undefined) {
    throw new UsageError("no testbed is up here", { hint: "create one with `ringlab up <campaign.yaml>` (or pass --testbed NAME)" });
  }
  const record = loadRecord(stateDir, chosen);
  if (record === undefined) {
    throw new UsageError(`testbed ${chosen} is not known in ${stateDir}`, { hint: "run `ringlab up <campaign.yaml>` first" });
  }
  return record;
}

export function currentTestbedName(stateDir: string): string | undefined {
  const file = currentTestbedFile(stateDir);
  if (!existsSync(file)) return undefined;
  return readFileSync(file, "utf8").trim() || undefined;
}

/** Forgets a testbed: its record, key, inventory and (if default) shared dir; clears `current` if it was it. */
export function forgetTestbed(stateDir: string, name: string): void {
  if (currentTestbedName(stateDir) === name) rmSync(currentTestbedFile(stateDir), { force: true });
  const dir = testbedPaths(stateDir, name).dir;
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch (error) {
    throw new UsageError(`testbed ${name} is gone, but ${dir} could not be removed (${(error as NodeJS.ErrnoException).code})`, {
      hint: `workers write the shared directory as root: remove it with sudo rm -rf ${dir}`,
    });
  }
}

/** Names of the testbeds this state directory has records of. */
export function knownTestbeds(stateDir: string): string[] {
  const dir = join(stateDir, "testbeds");
  return existsSync(dir) ? readdirSync(dir).filter((name) => existsSync(testbedPaths(stateDir, name).record)) : [];
}

/** Where ringlab keeps a testbed's files on the controller. Pure: paths only, nothing is created here. */
import { join } from "node:path";

export interface TestbedPaths {
  readonly dir: string;
  /** The resolved testbed spec (spec.ts): what the stack, teardown and every later verb read. */
  readonly spec: string;
  /** The controller's SSH key for the nodes of a local testbed. */
  readonly privateKey: string;
  /** Host keys of this testbed's nodes only, so a rebuilt testbed never trips over stale entries elsewhere. */
  readonly knownHosts: string;
  readonly inventory: string;
  /** What `ringlab up` recorded about the running testbed (record.ts). */
  readonly record: string;
  /** Default shared directory of a local testbed. */
  readonly sharedDir: string;
  /** The outputs of an AWS testbed's stack, in the form `cdktf output --outputs-file` writes. */
  readonly stackOutputs: string;
  /** The synthesized stack of an AWS testbed (cdktf.out/stacks/<stack>/cdk.tf.json), where terraform runs. */
  readonly cdktfOut: string;
}

/** Every testbed's folder lives here; nothing outside it is ever removed by ringlab. */
export function testbedsDir(stateDir: string): string {
  return join(stateDir, "testbeds");
}

export function testbedPaths(stateDir: string, name: string): TestbedPaths {
  const dir = join(testbedsDir(stateDir), name);
  return {
    dir,
    spec: join(dir, "spec.json"),
    privateKey: join(dir, "id_ed25519"),
    knownHosts: join(dir, "known_hosts"),
    inventory: join(dir, "inventory.yml"),
    record: join(dir, "testbed.json"),
    sharedDir: join(dir, "shared"),
    stackOutputs: join(dir, "stack-outputs.json"),
    cdktfOut: join(dir, "cdktf.out"),
  };
}

/** The file naming the testbed later verbs act on when none is named. */
export function currentTestbedFile(stateDir: string): string {
  return join(stateDir, "current");
}

/** Locks of testbeds (lock.ts): outside the testbed folders, which `down` removes. */
export function locksDir(stateDir: string): string {
  return join(stateDir, "locks");
}

export function logsDir(stateDir: string): string {
  return join(stateDir, "logs");
}

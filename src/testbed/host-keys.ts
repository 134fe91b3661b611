/**
 * SSH host keys of an AWS testbed's nodes, made on the controller before the nodes exist: each node is given its own
 * key in its user data (cloud-init's ssh_keys, the AMI's own keys deleted), and the testbed's known_hosts pins it
 * before the first connection. Nobody on the subnet can then stand in for a node on first contact, which trusting
 * whatever key answers first (`StrictHostKeyChecking=accept-new`) would allow.
 *
 * The keys live in `host-keys/` beside the spec they were made for (`node-<rank>`, `node-<rank>.pub`), in a folder of
 * the user's alone: the testbed's own state folder for `ringlab up`, the output folder of `ringlab synth`.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ensureKeyPair } from "../adapters/ssh.ts";
import { ToolError } from "../util/errors.ts";
import { ensurePrivateFolder } from "../util/fs.ts";
import type { NodeHostKey } from "../rules/ssh-key.ts";

export function hostKeysDir(specDir: string): string {
  return join(specDir, "host-keys");
}

function keyFile(specDir: string, rank: number): string {
  return join(hostKeysDir(specDir), `node-${rank}`);
}

/** Makes the host key of every node that has none yet (ssh-keygen, ed25519); returns them all in rank order. */
export async function ensureHostKeys(specDir: string, nodes: number, testbed: string): Promise<NodeHostKey[]> {
  const problem = ensurePrivateFolder(hostKeysDir(specDir));
  if (problem !== undefined) {
    throw new ToolError("ssh-keygen", `cannot keep the nodes' host keys: ${problem}`, {
      hint: `remove ${hostKeysDir(specDir)} and run the command again`,
    });
  }
  for (let rank = 0; rank < nodes; rank++)
    await ensureKeyPair(keyFile(specDir, rank), `${testbed}-node-${rank} host key (ringlab)`);
  return readHostKeys(specDir, nodes)!;
}

/** Whether host keys were ever made beside this spec (some may be missing: a stopped run, a testbed grown since). */
export function hostKeysStarted(specDir: string): boolean {
  return existsSync(hostKeysDir(specDir));
}

/**
 * Every node's host key beside a spec, or undefined unless all of them are there: teardown and a synthesis by hand
 * then go without (the user data of instances being destroyed does not matter), never fail on a missing file.
 */
export function readHostKeys(specDir: string, nodes: number): NodeHostKey[] | undefined {
  const files = Array.from({ length: nodes }, (_, rank) => keyFile(specDir, rank));
  if (!files.every((file) => existsSync(file) && existsSync(`${file}.pub`))) return undefined;
  return files.map((file) => ({
    privateKey: readFileSync(file, "utf8"),
    publicKey: readFileSync(`${file}.pub`, "utf8").trim(),
  }));
}

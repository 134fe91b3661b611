/**
 * A node's cloud-init user data: its own SSH host key (when ringlab made one, src/testbed/host-keys.ts) and the
 * expiry service (stacks/expiry.ts).
 */
import type { NodeHostKey } from "../src/rules/ssh-key.ts";
import { expiryCloudConfig } from "./expiry.ts";

/**
 * cloud-init's ssh module installs the given key instead of generating any (ssh_keys), after deleting the AMI's
 * (ssh_deletekeys): the node then answers with the key whose public half the testbed's known_hosts pins.
 */
export function hostKeyCloudConfig(hostKey: NodeHostKey): string[] {
  return [
    "ssh_deletekeys: true",
    "ssh_genkeytypes: []",
    "ssh_keys:",
    "  ed25519_private: |",
    ...hostKey.privateKey
      .trimEnd()
      .split("\n")
      .map((line) => `    ${line}`),
    // JSON strings are YAML strings: the comment is quoted whatever it holds.
    `  ed25519_public: ${JSON.stringify(hostKey.publicKey.trim())}`,
  ];
}

/** `#cloud-config` user data of one node. */
export function nodeUserData(expiresAt: string, hostKey?: NodeHostKey): string {
  return [
    "#cloud-config",
    ...(hostKey === undefined ? [] : hostKeyCloudConfig(hostKey)),
    ...expiryCloudConfig(expiresAt),
  ].join("\n");
}

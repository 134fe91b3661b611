/** The only module that runs OpenSSH tools: key generation for testbeds, host keys of recreated nodes. */
import { existsSync, writeFileSync } from "node:fs";
import { runProgram } from "./process.ts";

const INSTALL_HINT = "install OpenSSH's client with `npm run setup` (Debian/Ubuntu: apt-get install openssh-client)";

/**
 * Creates an ed25519 key pair at `path` and `path`.pub unless it exists; returns the public key file. A private key
 * whose .pub is missing (a run stopped between the two) gets its public half again from it, never a new pair.
 */
export async function ensureKeyPair(path: string, comment: string): Promise<string> {
  if (!existsSync(path)) {
    await runProgram("ssh-keygen", "ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path], {
      installHint: INSTALL_HINT,
    });
  } else if (!existsSync(`${path}.pub`)) {
    const derived = await runProgram("ssh-keygen", "ssh-keygen", ["-y", "-f", path], { installHint: INSTALL_HINT });
    writeFileSync(`${path}.pub`, `${derived.stdout.trim()} ${comment}\n`, { mode: 0o644 });
  }
  return `${path}.pub`;
}

/** Removes every key of `host` from a known_hosts file (a node recreated on the same address has a new one). */
export async function forgetHostKey(knownHostsFile: string, host: string): Promise<void> {
  if (!existsSync(knownHostsFile)) return;
  await runProgram("ssh-keygen", "ssh-keygen", ["-q", "-R", host, "-f", knownHostsFile], { allowFailure: true });
}

/** The only module that runs OpenSSH tools: key generation for testbeds. */
import { existsSync } from "node:fs";
import { runProgram } from "./process.ts";

/** Creates an ed25519 key pair at `path` and `path`.pub unless it exists; returns the public key file. */
export async function ensureKeyPair(path: string, comment: string): Promise<string> {
  if (!existsSync(path)) {
    await runProgram("ssh-keygen", "ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path], {
      installHint: "install OpenSSH's client with `npm run setup` (Debian/Ubuntu: apt-get install openssh-client)",
    });
  }
  return `${path}.pub`;
}

import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { Ansible } from "../../src/adapters/ansible.ts";
import { ToolError } from "../../src/util/errors.ts";

/** Makes `count` signing keys in a throw-away keyring; returns their fingerprints and an export of all of them. */
function makeKeys(dir: string, count: number): { fingerprints: string[]; armored: string } {
  const env = { ...process.env, GNUPGHOME: mkdtempSync(join(dir, "gnupg-")) };
  const gpg = (...args: string[]) =>
    execFileSync("gpg", ["--batch", "--passphrase", "", ...args], {
      env,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
  for (let index = 0; index < count; index++)
    gpg("--quick-gen-key", `key${index} <k${index}@example.org>`, "ed25519", "sign", "never");
  const fingerprints = gpg("--with-colons", "--list-keys")
    .split("\n")
    .filter((line) => line.startsWith("fpr:"))
    .map((line) => line.split(":")[9]!);
  const armored = gpg("--armor", "--export");
  // Generating keys started a gpg-agent for this keyring; it would outlive the test (and the suite).
  execFileSync("gpgconf", ["--kill", "gpg-agent"], { env, stdio: "ignore" });
  return { fingerprints, armored };
}

async function installKey(dir: string, armored: string, allowed: readonly string[]): Promise<string> {
  const keyUrlFile = join(dir, "gpgkey");
  writeFileSync(keyUrlFile, armored);
  const inventory = join(dir, "inventory.yml");
  writeFileSync(inventory, "all:\n  hosts:\n    localhost: {ansible_connection: local}\n");
  const keyFile = join(dir, "keyrings", "nvidia-container-toolkit.asc");
  await new Ansible(resolve("ansible")).playbook("../test/fixtures/nvidia-key.yml", {
    inventory,
    factCacheDir: join(dir, "facts"),
    extraVars: {
      docker_nvidia_toolkit_key_url: `file://${keyUrlFile}`,
      docker_nvidia_toolkit_key_file: keyFile,
      docker_nvidia_toolkit_key_fingerprints: allowed,
    },
  });
  return keyFile;
}

describe("docker role: NVIDIA's repository key", () => {
  it("is installed when its fingerprint is the expected one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-key-"));
    const { fingerprints, armored } = makeKeys(dir, 1);
    const keyFile = await installKey(dir, armored, fingerprints);
    expect(readFileSync(keyFile, "utf8")).toBe(armored);
  });

  it("is refused, and not installed, when the download holds any other key", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-key-"));
    const { fingerprints, armored } = makeKeys(dir, 2);
    const error = await installKey(dir, armored, [fingerprints[0]!]).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(error.message).toContain(fingerprints[1]);
    expect(existsSync(join(dir, "keyrings", "nvidia-container-toolkit.asc"))).toBe(false);
  });
});

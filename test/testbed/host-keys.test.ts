import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolError } from "../../src/util/errors.ts";
import { checkNodeHostKey } from "../../src/rules/ssh-key.ts";
import { ensureHostKeys, hostKeysDir, readHostKeys } from "../../src/testbed/host-keys.ts";

const scratch = () => mkdtempSync(join(tmpdir(), "ringlab-host-keys-"));

describe("the nodes' SSH host keys", () => {
  it("are made once per node with the real ssh-keygen, the user's alone, and read back the same by teardown", async () => {
    const dir = scratch();
    expect(readHostKeys(dir, 2)).toBeUndefined();
    const made = await ensureHostKeys(dir, 2, "tb");
    expect(made.map(checkNodeHostKey)).toEqual([undefined, undefined]);
    expect(made[0]!.publicKey).toMatch(/^ssh-ed25519 AAAA\S+ tb-node-0 host key \(ringlab\)$/);
    expect(made[0]!.publicKey).not.toBe(made[1]!.publicKey);
    expect([statSync(hostKeysDir(dir)).mode & 0o777, statSync(join(hostKeysDir(dir), "node-1")).mode & 0o777]).toEqual([
      0o700, 0o600,
    ]);
    // A redeploy of the same testbed keeps them: the synthesized user data must not change under running nodes.
    expect(await ensureHostKeys(dir, 2, "tb")).toEqual(made);
    expect(readHostKeys(dir, 2)).toEqual(made);
    expect(readFileSync(join(hostKeysDir(dir), "node-0"), "utf8")).toBe(made[0]!.privateKey);
  });

  it("that are missing (a run stopped half-way, a testbed grown since) leave teardown without keys, and the next up makes only those", async () => {
    const dir = scratch();
    const [first] = await ensureHostKeys(dir, 1, "tb");
    // Grown to 3 nodes; node 0's .pub lost as by a stop between its two files.
    rmSync(join(hostKeysDir(dir), "node-0.pub"));
    expect(readHostKeys(dir, 3)).toBeUndefined();
    const all = await ensureHostKeys(dir, 3, "tb");
    expect(all[0]!.privateKey).toBe(first!.privateKey);
    expect(all[0]!.publicKey.split(" ").slice(0, 2)).toEqual(first!.publicKey.split(" ").slice(0, 2));
    expect(new Set(all.map((key) => key.publicKey)).size).toBe(3);
    expect(readHostKeys(dir, 3)).toEqual(all);
  });

  it("are not kept in a folder others can write to, or one that is a link", async () => {
    const open = scratch();
    mkdirSync(hostKeysDir(open));
    chmodSync(hostKeysDir(open), 0o777);
    const linked = scratch();
    symlinkSync(scratch(), hostKeysDir(linked));
    for (const dir of [open, linked]) {
      const error = await ensureHostKeys(dir, 1, "tb").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as Error).message).toMatch(/^cannot keep the nodes' host keys: /);
    }
  });
});

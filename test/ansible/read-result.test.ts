/**
 * The worker role's read of the head's result (ansible/roles/worker/tasks/read-result.yml) through the real
 * ansible-playbook on this machine: a result on the shared storage is read only when it is a regular file of its own,
 * never through a link planted in its place (issue #67: a stat, then slurp, which follows links, read a link swapped in
 * between them, copying a head-node file into outcome.json).
 */
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { Ansible } from "../../src/adapters/ansible.ts";

/** What the role's task read of `resultFile`: {content: base64} or {error}. */
async function readResult(dir: string, resultFile: string): Promise<{ content?: string; error?: string }> {
  const inventory = join(dir, "inventory.yml");
  writeFileSync(inventory, "all:\n  hosts:\n    localhost: {ansible_connection: local}\n");
  const out = join(dir, "read.json");
  await new Ansible(resolve("ansible")).playbook("../test/fixtures/read-result.yml", {
    inventory,
    factCacheDir: join(dir, "facts"),
    extraVars: { _worker_result_file: resultFile, result_read_out: out },
  });
  return JSON.parse(readFileSync(out, "utf8"));
}

describe("worker role: the head's result", () => {
  it("is read when it is a regular file, byte for byte", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-result-"));
    const result = join(dir, "result.json");
    writeFileSync(result, '{"throughput": 1.5, "ü": true}\n');
    expect(await readResult(dir, result)).toEqual({ content: readFileSync(result).toString("base64") });
  });

  it("is not read through a link planted in its place, nor when it is missing or not a regular file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-result-"));
    const secret = join(dir, "head-only");
    writeFileSync(secret, "root's own file on the head\n", { mode: 0o600 });
    symlinkSync(secret, join(dir, "link.json"));
    mkdirSync(join(dir, "folder.json"));
    execFileSync("mkfifo", [join(dir, "fifo.json")]);
    expect(await readResult(dir, join(dir, "link.json"))).toEqual({
      error: `${join(dir, "link.json")} is a link: not read`,
    });
    expect(await readResult(dir, join(dir, "none.json"))).toEqual({
      error: `file not found: ${join(dir, "none.json")}`,
    });
    for (const name of ["folder.json", "fifo.json"]) {
      const path = join(dir, name);
      expect(await readResult(dir, path)).toEqual({ error: `${path} is not a regular file: not read` });
    }
  });

  it("is read by one task that checks and reads the same open file: no check in a task before it", () => {
    const job = readFileSync(resolve("ansible/roles/worker/tasks/job.yml"), "utf8");
    expect(job).not.toMatch(/ansible\.builtin\.(stat|slurp):/);
    expect(job).toMatch(/ansible\.builtin\.import_tasks: read-result\.yml/);
  });
});

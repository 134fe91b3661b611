/**
 * The CLI on every Node.js ringlab supports: this one (the system's, 20 on the build machines) and the official 22 and
 * 24 binaries that `npm run setup:test` puts in .node-versions/. Each runs the commands that load most of the
 * dependencies (commander, zod, js-yaml, the cdktf library and the AWS provider bindings, the AWS SDK) and must
 * print no warning of theirs between ringlab's own lines.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const REPO = resolve(import.meta.dirname, "..");
const BIN = join(REPO, "src/bin/ringlab.mjs");
const NODES = [
  { label: `this Node.js (${process.version})`, binary: process.execPath, major: Number(process.versions.node.split(".")[0]) },
  { label: "Node.js 22", binary: join(REPO, ".node-versions/22/bin/node"), major: 22 },
  { label: "Node.js 24", binary: join(REPO, ".node-versions/24/bin/node"), major: 24 },
];
/** What a dependency (or Node itself) prints when it warns: `(node:123) ...Warning: ...` or a bare `...Warning:`. */
const WARNING = /^\(node:\d+\)|Warning:/m;

describe.each(NODES)("the CLI on $label", ({ binary, major }) => {
  const run = (args: string[], dir: string) =>
    spawnSync(binary, [BIN, "--state-dir", join(dir, "state"), ...args], { cwd: REPO, encoding: "utf8", timeout: 60_000 });

  it("is the Node.js it claims, installed by npm run setup:test", () => {
    expect(existsSync(binary), `${binary} is missing: run npm run setup:test`).toBe(true);
    expect(spawnSync(binary, ["--version"], { encoding: "utf8" }).stdout).toMatch(new RegExp(`^v${major}\\.`));
  });

  it("explains itself, plans, synthesizes an AWS stack and reaches the AWS SDK, with no dependency's warning in its output", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-node-"));
    writeFileSync(join(dir, "aws.yaml"), "testbed: {target: aws, name: scale, nodes: 2, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub}\n");
    writeFileSync(join(dir, "id.pub"), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2 me@host\n");
    const help = run(["--help"], dir);
    const plan = run(["plan", "campaigns/local-smoke.yaml"], dir);
    const synth = run(["synth", join(dir, "aws.yaml"), "--out", join(dir, "out")], dir);
    // The tests' AWS endpoint is 127.0.0.1:9, where nothing listens: the SDK is loaded and asked, and fails.
    const sweep = run(["sweep", "--dry-run", "--region", "eu-west-1"], dir);
    expect([help.status, plan.status, synth.status, sweep.status], [help, plan, synth, sweep].map((r) => r.stderr).join("\n")).toEqual([0, 0, 0, 4]);
    expect(plan.stdout).toMatch(/10 runs/);
    expect(existsSync(join(dir, "out", "stacks", "ringlab-scale", "cdk.tf.json"))).toBe(true);
    for (const result of [help, plan, synth, sweep]) expect(result.stderr + result.stdout).not.toMatch(WARNING);
  });
});

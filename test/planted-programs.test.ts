/**
 * Issue #67, rows 1 and 2: a checkout below a folder others can write. npm puts the `node_modules/.bin` of every folder
 * above the checkout on the PATH of `npx ringlab` (@npmcli/run-script's set-path.js), and Node's module lookup climbs
 * into every parent folder's node_modules: a `docker`, a `node` or a tsx planted there must never run (ringlab often
 * runs as root). Each planted program writes a line to a marker file when it runs.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { findProgram, trustedSearchPath } from "../src/adapters/tool-path.ts";

const REPO = resolve(import.meta.dirname, "..");
const BIN = join(REPO, "src/bin/ringlab.mjs");
/** Older than the floor (22.19): the launcher looks for a Node.js in node_modules (`npm run setup:test` puts it). */
const OLD_NODE = join(REPO, ".node-versions/20/bin/node");
const NODE_PACKAGE = `node-${process.platform}-${process.arch}`;

/** An executable shell script at `path` that appends `name` to `marker` and exits 1. */
function plant(path: string, marker: string, name: string, mode = 0o755): void {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, `#!/bin/sh\necho '${name}' >> '${marker}'\nexit 1\n`);
  chmodSync(path, mode);
}

/** A folder others can write (0777, no sticky bit) holding a planted node_modules, and ringlab's checkout below it. */
function writableParent() {
  const root = mkdtempSync(join(tmpdir(), "ringlab-planted-"));
  const parent = join(root, "shared");
  mkdirSync(parent);
  chmodSync(parent, 0o777);
  const marker = join(root, "ran");
  const modules = join(parent, "node_modules");
  for (const name of ["docker", "node", "ansible-playbook", "ssh-keygen", "bash"])
    plant(join(modules, ".bin", name), marker, `planted ${name}`);
  plant(join(modules, NODE_PACKAGE, "bin", "node"), marker, "planted bundled node");
  mkdirSync(join(modules, "tsx", "esm"), { recursive: true });
  writeFileSync(
    join(modules, "tsx", "package.json"),
    JSON.stringify({ name: "tsx", type: "module", exports: { "./esm/api": "./esm/api.mjs" } }),
  );
  writeFileSync(
    join(modules, "tsx", "esm", "api.mjs"),
    `import { appendFileSync } from "node:fs";\nappendFileSync(${JSON.stringify(marker)}, "planted tsx\\n");\nexport const register = () => {};\n`,
  );
  return { root, parent, marker, checkout: join(parent, "ringlab") };
}

/** The launcher and package.json alone in `checkout`: no node_modules of its own (npm ci not run, or not for here). */
function bareCheckout(checkout: string): string {
  mkdirSync(join(checkout, "src", "bin"), { recursive: true });
  copyFileSync(BIN, join(checkout, "src", "bin", "ringlab.mjs"));
  copyFileSync(join(REPO, "package.json"), join(checkout, "package.json"));
  return join(checkout, "src", "bin", "ringlab.mjs");
}

const ran = (marker: string) => (existsSync(marker) ? readFileSync(marker, "utf8").split("\n").filter(Boolean) : []);

describe("a checkout below a folder others can write", () => {
  it("runs the docker of a folder only root can write, never the one npm's PATH puts in a parent's node_modules/.bin or in a folder others can write", () => {
    const { root, parent, marker } = writableParent();
    const open = join(root, "open-bin");
    mkdirSync(open);
    chmodSync(open, 0o777);
    plant(join(open, "docker"), marker, "docker of a folder others can write");
    const trusted = mkdtempSync(join(tmpdir(), "ringlab-trusted-bin-"));
    plant(join(trusted, "docker"), marker, "trusted docker");
    // As npm builds it for a checkout at parent/ringlab: the checkout's .bin, each parent's, then the user's PATH.
    const npmPath = [
      join(REPO, "node_modules", ".bin"),
      join(parent, "node_modules", ".bin"),
      open,
      trusted,
      process.env["PATH"],
    ].join(delimiter);
    const up = spawnSync(
      process.execPath,
      [BIN, "--state-dir", join(root, "state"), "up", join(REPO, "campaigns", "local-smoke.yaml")],
      { cwd: root, encoding: "utf8", timeout: 60_000, env: { ...process.env, PATH: npmPath } },
    );
    expect(ran(marker), up.stderr).toEqual(["trusted docker"]);
    // The fake docker answers no version: Docker's engine "is not running".
    expect(up.status).toBe(3);
  });

  it("on an older Node.js, never runs a node from a parent folder's node_modules, and says what it needs (exit 2)", () => {
    const { checkout, marker } = writableParent();
    const result = spawnSync(OLD_NODE, [bareCheckout(checkout), "--help"], { encoding: "utf8", timeout: 60_000 });
    expect(ran(marker)).toEqual([]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^error: ringlab needs Node.js 22\.19 or newer/);
  });

  it("never loads a tsx from a parent folder's node_modules: exit 2, naming the fix", () => {
    const { checkout, marker } = writableParent();
    const result = spawnSync(process.execPath, [bareCheckout(checkout), "--help"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(ran(marker)).toEqual([]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(`error: ringlab's dependencies are not installed in its folder: `);
    expect(result.stderr).toContain(`hint: run \`npm ci\` in ${checkout}\n`);
  });

  it("runs the checkout's own Node.js only while nobody else can write it", () => {
    const { checkout, marker } = writableParent();
    const launcher = bareCheckout(checkout);
    const bundled = join(checkout, "node_modules", NODE_PACKAGE, "bin", "node");
    plant(bundled, marker, "checkout node", 0o777);
    const refused = spawnSync(OLD_NODE, [launcher, "--help"], { encoding: "utf8", timeout: 60_000 });
    expect(ran(marker)).toEqual([]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(
      `, and the Node.js in node_modules it is not used: ${bundled} can be written by other users (mode 777)`,
    );
    chmodSync(bundled, 0o755);
    // Trusted, it is run (the planted script exits 1): the check refuses what others can write, not every Node.js.
    const run = spawnSync(OLD_NODE, [launcher, "--help"], { encoding: "utf8", timeout: 60_000 });
    expect([ran(marker), run.status], run.stderr).toEqual([["checkout node"], 1]);
  });
});

describe("trustedSearchPath and findProgram", () => {
  it("keep the checkout's node_modules/.bin and the folders only root or the caller can write, in order", () => {
    const { root, parent } = writableParent();
    const mine = mkdtempSync(join(tmpdir(), "ringlab-mine-"));
    const open = join(root, "open");
    mkdirSync(open);
    chmodSync(open, 0o777);
    const checkoutBin = join(REPO, "node_modules", ".bin");
    const path = [checkoutBin, join(parent, "node_modules", ".bin"), "relative/bin", open, mine, "/usr/bin"].join(
      delimiter,
    );
    const search = trustedSearchPath(path, REPO);
    expect(search.entries).toEqual([checkoutBin, mine, "/usr/bin"]);
    expect(search.leftOut.map(({ entry }) => entry)).toEqual([
      join(parent, "node_modules", ".bin"),
      "relative/bin",
      open,
    ]);
    expect(search.leftOut[2]!.why).toMatch(/can be written by other users/);
  });

  it("pass over a program that others can write, in a folder that is the caller's, and say why", () => {
    const mine = mkdtempSync(join(tmpdir(), "ringlab-mine-"));
    const marker = join(mine, "ran");
    plant(join(mine, "docker"), marker, "docker", 0o777);
    const found = findProgram("docker", mine, REPO);
    expect(found.path).toBeUndefined();
    expect(found.passedOver).toEqual([
      { entry: join(mine, "docker"), why: expect.stringMatching(/can be written by other users/) },
    ]);
    chmodSync(join(mine, "docker"), 0o755);
    expect(findProgram("docker", mine, REPO).path).toBe(join(mine, "docker"));
  });
});

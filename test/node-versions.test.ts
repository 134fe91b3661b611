/**
 * The CLI on every Node.js ringlab supports: 22, the oldest (the official binary that `npm run setup:test` puts in
 * .node-versions/22), and 24, the one `npm ci` puts in node_modules (package.json's optionalDependencies) and the tests
 * run on. Each runs the commands that load most of the dependencies (commander, zod, js-yaml, the cdktf library and
 * the AWS provider bindings, the AWS SDK) and must print no warning of theirs between ringlab's own lines.
 *
 * A system Node.js older than 22.19 (20 on the build machines) runs src/bin/ringlab.mjs too: it runs itself again on
 * node_modules' Node.js 24, passing on arguments, exit code and signals, and without one says what it needs.
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const REPO = resolve(import.meta.dirname, "..");
const BIN = join(REPO, "src/bin/ringlab.mjs");
const NODE_22 = join(REPO, ".node-versions/22/bin/node");
const NODE_24 = join(REPO, "node_modules", `node-${process.platform}-${process.arch}`, "bin", "node");

const versionOf = (binary: string) => spawnSync(binary, ["--version"], { encoding: "utf8" }).stdout?.trim() ?? "";
const olderThanFloor = (version: string) => {
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number);
  return major < 22 || (major === 22 && minor < 19);
};
const same = (a: string, b: string) => existsSync(a) && existsSync(b) && realpathSync(a) === realpathSync(b);

/** A Node.js older than the floor (20, as on the build machines): `npm run setup:test` puts it in .node-versions/20. */
const OLD_NODE = join(REPO, ".node-versions/20/bin/node");
const OLD_VERSION = versionOf(OLD_NODE);

const NODES = [
  {
    label: `Node.js 22${same(NODE_22, process.execPath) ? ", this one" : ""}`,
    binary: NODE_22,
    version: /^v22\./,
    install: "npm run setup:test",
  },
  {
    label: `Node.js 24 from node_modules${same(NODE_24, process.execPath) ? ", this one" : ""}`,
    binary: NODE_24,
    version: /^v24\./,
    install: "npm ci",
  },
  ...(same(NODE_22, process.execPath) || same(NODE_24, process.execPath)
    ? []
    : [
        {
          label: `this Node.js (${process.version})`,
          binary: process.execPath,
          version: new RegExp(`^${process.version.replace(/\./g, "\\.")}$`),
          install: "",
        },
      ]),
  {
    label: "Node.js 20, which runs it on node_modules' 24",
    binary: OLD_NODE,
    version: /^v20\./,
    install: "npm run setup:test",
  },
];
/** The PATH without node_modules' folders, as a shell outside `npm run` has it. */
const systemPath = () =>
  (process.env["PATH"] ?? "").split(":").filter((dir) => dir !== "" && !dir.includes("node_modules"));

/** The npx script a shell finds on that PATH (the system's npm), which npm runs on whichever `node` it is given. */
function npxOnSystemPath(): string {
  const found = spawnSync("sh", ["-c", "command -v npx"], {
    encoding: "utf8",
    env: { ...process.env, PATH: systemPath().join(":") },
  }).stdout.trim();
  if (found === "") throw new Error("no npx on the PATH outside node_modules: install npm (README, Quick start)");
  return realpathSync(found);
}

/** What a dependency (or Node itself) prints when it warns: `(node:123) ...Warning: ...` or a bare `...Warning:`. */
const WARNING = /^\(node:\d+\)|Warning:/m;

it("runs on a Node.js ringlab supports (npm run puts node_modules' Node.js 24 first on the PATH)", () => {
  expect(
    olderThanFloor(process.version),
    `the tests run on Node.js ${process.version} (${process.execPath}): run them with npm test, after npm ci`,
  ).toBe(false);
});

describe.each(NODES)("the CLI on $label", ({ binary, version, install }) => {
  const run = (args: string[], dir: string) =>
    spawnSync(binary, [BIN, "--state-dir", join(dir, "state"), ...args], {
      cwd: REPO,
      encoding: "utf8",
      timeout: 60_000,
    });

  it("is the Node.js it claims", () => {
    expect(existsSync(binary), `${binary} is missing: run ${install}`).toBe(true);
    expect(versionOf(binary)).toMatch(version);
  });

  it("explains itself, plans, synthesizes an AWS stack and reaches the AWS SDK, with no dependency's warning in its output", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-node-"));
    writeFileSync(
      join(dir, "aws.yaml"),
      "testbed: {target: aws, name: scale, nodes: 2, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub}\n",
    );
    writeFileSync(join(dir, "id.pub"), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2 me@host\n");
    const help = run(["--help"], dir);
    const plan = run(["plan", "campaigns/local-smoke.yaml"], dir);
    const synth = run(["synth", join(dir, "aws.yaml"), "--out", join(dir, "out")], dir);
    // The tests' AWS endpoint is 127.0.0.1:9, where nothing listens: the SDK is loaded and asked, and fails.
    const sweep = run(["sweep", "--dry-run", "--region", "eu-west-1"], dir);
    expect(
      [help.status, plan.status, synth.status, sweep.status],
      [help, plan, synth, sweep].map((r) => r.stderr).join("\n"),
    ).toEqual([0, 0, 0, 4]);
    expect(plan.stdout).toMatch(/10 runs/);
    expect(existsSync(join(dir, "out", "stacks", "ringlab-scale", "cdk.tf.json"))).toBe(true);
    for (const result of [help, plan, synth, sweep]) expect(result.stderr + result.stdout).not.toMatch(WARNING);
  });
});

describe("the CLI on a Node.js older than 22.19 (Node.js 20)", () => {
  const old = OLD_NODE;

  /** A module for --import that appends a line to $RINGLAB_TEST_LOG in each process it is loaded in. */
  function preload(dir: string, body: string): string {
    const file = join(dir, "preload.mjs");
    writeFileSync(
      file,
      `import { appendFileSync } from "node:fs";\nconst log = (line) => appendFileSync(process.env.RINGLAB_TEST_LOG, line + "\\n");\n${body}\n`,
    );
    return pathToFileURL(file).href;
  }
  const lines = (file: string) =>
    existsSync(file)
      ? readFileSync(file, "utf8")
          .split("\n")
          .filter((line) => line !== "")
      : [];

  it("runs it again on node_modules' Node.js 24, with the same options and arguments", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-relaunch-"));
    const log = join(dir, "versions");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the preloaded module's own template
    const module = preload(dir, 'log(`${process.version} ${process.env.RINGLAB_RELAUNCHED_FROM ?? "first"}`);');
    const plan = spawnSync(
      old,
      ["--import", module, BIN, "--state-dir", join(dir, "state"), "plan", "campaigns/local-smoke.yaml"],
      {
        cwd: REPO,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, RINGLAB_TEST_LOG: log },
      },
    );
    expect(plan.status, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/10 runs/);
    expect(lines(log)).toEqual([`${OLD_VERSION} first`, `${versionOf(NODE_24)} ${OLD_VERSION}`]);
  });

  /**
   * npm's npx run by the old Node.js, as a newcomer types it: npm checks package.json's engines against the Node.js
   * it runs on, so they name what the bootstrap (src/bin/ringlab.mjs) runs on, and the bootstrap checks what the code
   * needs.
   */
  it("`npx ringlab --help` and `npx ringlab campaign <file>` print nothing of npm's (no EBADENGINE) before ringlab's own", () => {
    const npx = npxOnSystemPath();
    const path = [dirname(old), ...systemPath()].join(":");
    // npx installs the folder into its cache the first time, which is when npm checks the engines: a cache of its own.
    const cache = mkdtempSync(join(tmpdir(), "ringlab-npx-cache-"));
    const npxRun = (args: string[]) =>
      spawnSync(old, [npx, "ringlab", ...args], {
        cwd: REPO,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, PATH: path, npm_config_cache: cache },
      });
    const help = npxRun(["--help"]);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stderr).not.toMatch(/EBADENGINE|npm warn/i);
    expect(help.stdout).toMatch(/^Usage: ringlab /);
    const campaign = npxRun(["campaign", "no-such-campaign.yaml"]);
    expect(campaign.status, campaign.stderr).toBe(2);
    expect(campaign.stderr).toMatch(/^error: /);
    expect(campaign.stderr).not.toMatch(/EBADENGINE|npm warn/i);
  });

  it("without a Node.js in node_modules, says which it needs and how to get one, exit 2, before anything else", () => {
    // The script alone, with no node_modules above it.
    const dir = mkdtempSync(join(tmpdir(), "ringlab-no-node-"));
    mkdirSync(join(dir, "src", "bin"), { recursive: true });
    copyFileSync(BIN, join(dir, "src", "bin", "ringlab.mjs"));
    const result = spawnSync(old, [join(dir, "src", "bin", "ringlab.mjs"), "plan", "campaigns/local-smoke.yaml"], {
      cwd: REPO,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(result.status).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      `error: ringlab needs Node.js 22.19 or newer (22 or 24 LTS); this is Node.js ${OLD_VERSION} (${realpathSync(old)})\n` +
        "hint: on Linux x64 or arm64, `npm ci` in ringlab's folder installs Node.js 24 into node_modules, and ringlab uses it; " +
        "otherwise install Node.js 22 or 24 (https://nodejs.org, or your package manager)\n",
    );
  });

  /**
   * Starts the CLI (in a process group of its own) on the old Node.js with a preload that, in the relaunched CLI only,
   * keeps it running, logs each signal it gets, and exits 7 a while after the first; sends `signal` to the launcher
   * alone or to the whole group, as a Ctrl-C does; returns the CLI's log and the launcher's exit.
   */
  async function signalled(
    signal: NodeJS.Signals,
    to: "launcher" | "group",
  ): Promise<{ log: string[]; code: number | null; signal: string | null }> {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-signal-"));
    const log = join(dir, "log");
    const module = preload(
      dir,
      `if (process.env.RINGLAB_RELAUNCHED_FROM) {
  setInterval(() => {}, 1000);
  for (const name of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(name, () => { log(name); setTimeout(() => process.exit(7), 1500); });
  setTimeout(() => log("ready"), 300);
}`,
    );
    const child = spawn(old, ["--import", module, BIN, "--help"], {
      cwd: REPO,
      detached: true,
      stdio: "ignore",
      env: { ...process.env, RINGLAB_TEST_LOG: log },
    });
    const exited = new Promise<{ code: number | null; signal: string | null }>((done) =>
      child.on("exit", (code, exitSignal) => done({ code, signal: exitSignal })),
    );
    try {
      for (const until = Date.now() + 30_000; !lines(log).includes("ready"); await sleep(50)) {
        if (Date.now() > until)
          throw new Error(`the relaunched CLI did not start within 30 s (its log: ${JSON.stringify(lines(log))})`);
      }
      process.kill(to === "group" ? -child.pid! : child.pid!, signal);
      const exit = await exited;
      return { log: lines(log), ...exit };
    } finally {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // all gone
      }
    }
  }

  it("passes on a signal sent to it alone, and exits as the CLI does", async () => {
    expect(await signalled("SIGTERM", "launcher")).toEqual({ log: ["ready", "SIGTERM"], code: 7, signal: null });
  });

  it("does not pass on again a signal the whole process group got (Ctrl-C): the CLI takes a second one as 'exit at once'", async () => {
    expect(await signalled("SIGINT", "group")).toEqual({ log: ["ready", "SIGINT"], code: 7, signal: null });
  });
});

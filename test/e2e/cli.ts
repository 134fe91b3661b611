/** Helpers for end-to-end tests: run the real `ringlab` CLI as a user does, and look at Docker directly. */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { firewallChain } from "../../src/targets/local/host-firewall.ts";
import { NODE_IMAGE } from "../../src/targets/local/plan.ts";

export const REPO = resolve(import.meta.dirname, "../..");
const BIN = join(REPO, "src/bin/ringlab.mjs");

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A scratch folder for one test file: state dir, campaign files, results. */
export function scratch(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `ringlab-e2e-${prefix}-`));
}

export function writeFile(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/**
 * Runs `ringlab --state-dir <stateDir> ...args` to completion. Asynchronous: a blocked event loop would
 * starve the test runner's own messages during minutes-long commands.
 */
export function ringlab(
  stateDir: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, "--state-dir", stateDir, ...args], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.on("data", (chunk) => (stderr += chunk));
  return new Promise((done) => child.once("close", (code) => done({ code, stdout, stderr })));
}

/**
 * Runs a script of the repository with bash to completion, its stdout and stderr as one text. One that runs past
 * `timeoutMs` is stopped (SIGTERM to its process group: the script's own trap cleans up) and ends with code null.
 */
export function runScript(
  script: string,
  env: Record<string, string> = {},
  timeoutMs = 12 * 60_000,
): Promise<{ code: number | null; output: string }> {
  const child = spawn("bash", [join(REPO, script)], {
    cwd: REPO,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const timer = setTimeout(() => {
    output += `\n(runScript: ${script} still running after ${timeoutMs / 1000} s: stopped)\n`;
    process.kill(-child.pid!, "SIGTERM");
  }, timeoutMs);
  return new Promise((done) =>
    child.once("close", (code) => {
      clearTimeout(timer);
      done({ code, output });
    }),
  );
}

/** Starts `ringlab` in its own process group, so a test can kill it as a terminal or machine would. */
export function startRingLab(stateDir: string, args: readonly string[]): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, [BIN, "--state-dir", stateDir, ...args], {
    cwd: REPO,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  return Object.assign(child, { output: () => output });
}

export function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((done) => child.once("exit", (code, signal) => done({ code, signal })));
}

/** Ids of Docker resources labeled as belonging to a testbed. */
export function labeled(kind: "container" | "network" | "volume", testbed: string): string[] {
  const args = kind === "container" ? ["ps", "-aq"] : [kind, "ls", "-q"];
  return execFileSync("docker", [...args, "--filter", `label=ringlab.testbed=${testbed}`], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.trim() !== "");
}

export function everythingLabeled(testbed: string): string[] {
  return (["container", "network", "volume"] as const).flatMap((kind) =>
    labeled(kind, testbed).map((id) => `${kind} ${id}`),
  );
}

/**
 * A /24 for a test's testbed that no Docker network on this machine overlaps (another suite's testbed, or one a
 * killed run left): Docker refuses a second network on an address range in use ("Pool overlaps").
 */
export function freeSubnet(): string {
  const used = docker(["network", "ls", "-q"])
    .split("\n")
    .filter(Boolean)
    .flatMap((id) =>
      docker(["network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", id])
        .trim()
        .split(/\s+/)
        .filter(Boolean),
    );
  const overlaps = (second: number) =>
    used.some((cidr) => {
      const [a, b] = cidr.split(/[./]/).map(Number);
      const prefix = Number(cidr.split("/")[1]);
      // A /8 or /12 (Docker's defaults are 172.17-31.x.x/16) covers 10.x only when it starts at 10.
      return a === 10 && (prefix <= 8 || b === second);
    });
  const second = [79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89].find((candidate) => !overlaps(candidate));
  if (second === undefined)
    throw new Error(
      "no free 10.79-89.0.0/24 for the test testbed: remove the Docker networks left on them (docker network ls)",
    );
  return `10.${second}.0.0/24`;
}

export function docker(args: readonly string[]): string {
  return execFileSync("docker", args, { encoding: "utf8" });
}

/** The records a campaign wrote to <resultsDir>/runs.jsonl, in order. */
export function runsJsonl(resultsDir: string): any[] {
  return readFileSync(join(resultsDir, "runs.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

/** Runs `args` in a throw-away node-image container on the host's network namespace (NET_ADMIN for iptables). */
function onHostNetwork(
  args: readonly string[],
  options: { user?: string; entrypoint: string },
): { code: number; output: string } {
  const result = spawnSync(
    "docker",
    [
      "run",
      "--rm",
      "--pull",
      "never",
      "--network",
      "host",
      "--cap-add",
      "NET_ADMIN",
      ...(options.user === undefined ? [] : ["--user", options.user]),
      "--entrypoint",
      options.entrypoint,
      NODE_IMAGE,
      ...args,
    ],
    { encoding: "utf8", timeout: 30_000 },
  );
  return { code: result.status ?? -1, output: `${result.stdout}${result.stderr}` };
}

/**
 * Whether a process of this machine running as `uid` (not in the Docker group) opens a TCP connection to
 * address:port. A container on the host's network namespace without a user namespace is such a process to the
 * kernel: its socket belongs to `uid`, as another user's would.
 */
export function connectsAs(uid: number, address: string, port: number): boolean {
  return (
    onHostNetwork(["-c", `exec 3<>/dev/tcp/${address}/${port}`], { user: `${uid}:${uid}`, entrypoint: "bash" }).code ===
    0
  );
}

/** The host's iptables rules of a testbed: its chain, the chain's rules and OUTPUT's jump to it. */
export function firewallRules(testbed: string): string[] {
  const listed = onHostNetwork(["-w", "10", "-S"], { entrypoint: "iptables" });
  if (listed.code !== 0) throw new Error(`iptables -S failed: ${listed.output}`);
  return listed.output.split("\n").filter((line) => line.includes(firewallChain(testbed)));
}

/**
 * The link-local IPv6 address Docker's kernel would give `container` on `network` (EUI-64 from its MAC address), with
 * the host-side bridge as its scope: what another user of this machine would connect to over IPv6.
 */
export function linkLocalAddress(container: string, network: string): string {
  const inspect = (args: string[]) => spawnSync("docker", args, { encoding: "utf8", timeout: 30_000 }).stdout.trim();
  const mac = inspect([
    "container",
    "inspect",
    "--format",
    `{{(index .NetworkSettings.Networks "${network}").MacAddress}}`,
    container,
  ]);
  const bridge = `br-${inspect(["network", "inspect", "--format", "{{.Id}}", network]).slice(0, 12)}`;
  const bytes = mac.split(":").map((part) => Number.parseInt(part, 16));
  bytes[0]! ^= 0x02;
  const eui = [...bytes.slice(0, 3), 0xff, 0xfe, ...bytes.slice(3)];
  const groups = [0, 2, 4, 6].map((at) => ((eui[at]! << 8) | eui[at + 1]!).toString(16));
  return `fe80::${groups.join(":")}%${bridge}`;
}

export interface CommandLinesSeen {
  /** The rendezvous secrets seen in the environment of any process of this machine (the nodes' are among them). */
  readonly secrets: ReadonlySet<string>;
  /** Every command line seen that held one of them. */
  readonly leaks: readonly string[];
}

/**
 * Looks at every process of this machine (a local testbed's nodes are among them) every 200 ms until stopped: what any
 * user could read with `ps` (/proc/<pid>/cmdline), and, as root, the rendezvous secrets in the processes' environment.
 */
export function watchCommandLines(): { stop(): CommandLinesSeen } {
  const secrets = new Set<string>();
  const commandLines = new Set<string>();
  const read = (pid: string, file: string) => {
    try {
      return readFileSync(`/proc/${pid}/${file}`, "latin1");
    } catch {
      return ""; // gone meanwhile
    }
  };
  const look = () => {
    for (const pid of readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
      const commandLine = read(pid, "cmdline").replace(/\0/g, " ");
      if (/[0-9a-f]{32}/.test(commandLine)) commandLines.add(commandLine);
      for (const match of read(pid, "environ").matchAll(/(?:^|\0)RINGLAB_RDZV_SECRET=([0-9a-f]{32,128})/g))
        secrets.add(match[1]!);
    }
  };
  const timer = setInterval(look, 200);
  return {
    stop() {
      clearInterval(timer);
      look();
      const leaks = [...commandLines].filter((line) => [...secrets].some((secret) => line.includes(secret)));
      return { secrets, leaks };
    },
  };
}

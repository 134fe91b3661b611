/**
 * Times a command and writes one record of it into test/bench/data/timings/<name>.json (issue #66): what README.md and
 * docs/ may quote of how long something takes, with when, on which machine and at which commit it was measured.
 *
 *   npx tsx scripts/record-timing.ts NAME -- COMMAND [ARG...]
 *   e.g. npx tsx scripts/record-timing.ts test-suite -- npm test
 *        npx tsx scripts/record-timing.ts first-campaign -- npx ringlab campaign campaigns/local-smoke.yaml
 *
 * The record: the command, its exit code and seconds, the start (UTC), the CPU model and core count (/proc/cpuinfo),
 * the worker's CPU check on this machine just before the command (GFLOP/s per CPU-second of its fp32 matrix products,
 * docker/worker/ringlab_worker/compute_speed.py, through .venv-worker's Python; null where that is missing), the
 * one-minute load average before and after (others' work on a shared machine lengthens the time), the git commit
 * (and whether the tree had changes) and Node.js's version. A failed command is recorded too, with its exit code: the
 * docs quote only records of exit code 0 (test/docs/timings.test.ts).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";

export const TIMINGS_FOLDER = "test/bench/data/timings";
const NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;

const [name, separator, ...command] = process.argv.slice(2);
if (name === undefined || !NAME.test(name) || separator !== "--" || command.length === 0) {
  process.stderr.write(
    "usage: npx tsx scripts/record-timing.ts NAME -- COMMAND [ARG...]  (NAME: lower-case letters, digits and dashes)\n",
  );
  process.exit(2);
}

// The machine's state before the command: the command itself (a campaign, the tests) loads it.
const cpuCheckGflops = cpuCheck();
// What else the machine ran: a build machine shared with others takes longer than an idle one.
const loadAverageBefore = Math.round(loadavg()[0]! * 100) / 100;
const startedAt = new Date();
const started = performance.now();
const run = spawnSync(command[0]!, command.slice(1), { stdio: "inherit" });
const seconds = (performance.now() - started) / 1000;
const exitCode = run.status ?? (run.error === undefined ? 128 : 127);

const record = {
  schema: "ringlab.timing/v1",
  name,
  command: command.join(" "),
  exitCode,
  seconds: Math.round(seconds * 10) / 10,
  startedAt: startedAt.toISOString(),
  cpuModel: cpuModel(),
  cores: cpus().length,
  cpuCheckGflops,
  loadAverageBefore,
  loadAverageAfter: Math.round(loadavg()[0]! * 100) / 100,
  commit: git(["rev-parse", "HEAD"]),
  treeChanged: git(["status", "--porcelain", "--untracked-files=no"]) !== "",
  node: process.version,
};
mkdirSync(TIMINGS_FOLDER, { recursive: true });
const file = join(TIMINGS_FOLDER, `${name}.json`);
writeFileSync(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
renameSync(`${file}.tmp`, file);
process.stdout.write(`${name}: ${record.seconds} s, exit ${exitCode} (${file})\n`);
process.exit(exitCode);

function cpuModel(): string {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8")
      .split("\n")
      .find((entry) => entry.startsWith("model name"));
    return line?.split(":")[1]?.trim() ?? "unknown";
  } catch {
    return cpus()[0]?.model ?? "unknown";
  }
}

/**
 * The worker's CPU check, as a rank times it before its job: one thread (a local worker runs under a fraction of a
 * core), 2 s, no quota.
 */
function cpuCheck(): number | null {
  const python = ".venv-worker/bin/python";
  const check = spawnSync(
    python,
    [
      "-c",
      "import torch\ntorch.set_num_threads(1)\nfrom ringlab_worker.compute_speed import compute_gflops\n" +
        "print(round(compute_gflops(torch.device('cpu'), 2.0), 1))",
    ],
    { encoding: "utf8", env: { ...process.env, PYTHONPATH: "docker/worker" } },
  );
  const value = Number(check.stdout?.trim());
  return check.status === 0 && Number.isFinite(value) ? value : null;
}

function git(args: readonly string[]): string {
  return spawnSync("git", args, { encoding: "utf8" }).stdout?.trim() ?? "";
}

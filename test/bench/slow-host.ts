/**
 * A host that runs slower for a few seconds without other work on the machine, as a slower host looks on these VMs
 * (no steal time): while one training run's timed steps go on, every worker of that run gets a third of its CPU quota
 * (`docker update --cpu-quota`) for SLOW_SECONDS, then its quota back. The CPU counters see nothing outside the
 * testbed, so the run must not read as "machine busy"; its steps change speed, so it must read as "unsteady run",
 * and the campaign must run it once more at its end, the new attempt steady.
 *
 *   npx tsx test/bench/slow-host.ts [campaigns/local-smoke.yaml] [--run train-small-b32-n2-1gbit-r1] [--slow-seconds 8]
 *
 * Prints the run's attempts (the thirds' median steps, outsideShare, busy or not) and the report's flags; exits 1
 * when the slowed attempt was not found unsteady, was marked busy, or was not run again.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { reportData } from "../../src/analysis/data.ts";
import { reportFlags } from "../../src/report/suspect-figures.ts";
import { latestAttempts, type RunRecord } from "../../src/results/record.ts";
import { medianOfThirds, unsteadiness } from "../../src/results/steadiness.ts";
import { REPO } from "./bench-cli.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    run: { type: "string", default: "train-small-b32-n2-1gbit-r1" },
    "slow-seconds": { type: "string", default: "8" },
  },
});
const campaign = resolve(REPO, positionals[0] ?? "campaigns/local-smoke.yaml");
const target = values.run;
const slowSeconds = Number(values["slow-seconds"]);
const dir = mkdtempSync(join(tmpdir(), "ringlab-slow-host-"));
const results = join(dir, "results");

function docker(...args: string[]): string {
  const result = spawnSync("docker", args, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`docker ${args.join(" ")}: ${result.stderr}`);
  return result.stdout.trim();
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Waits for the target run's rank 0 to start its timed steps, then slows every worker of the run for slowSeconds. */
async function slowTheRun(campaignRunning: () => boolean): Promise<string> {
  while (campaignRunning()) {
    const rank0 = docker("ps", "-q", "--filter", `label=ringlab.run_id=${target}`, "--filter", "label=ringlab.rank=0");
    if (
      rank0 !== "" &&
      spawnSync("docker", ["logs", rank0], { encoding: "utf8" }).stdout.includes("Running benchmark")
    ) {
      const workers = docker("ps", "-q", "--filter", `label=ringlab.run_id=${target}`).split("\n");
      const quotas = workers.map((id) => Number(docker("inspect", "-f", "{{.HostConfig.CpuQuota}}", id)));
      for (const [i, id] of workers.entries()) docker("update", "--cpu-quota", String(Math.round(quotas[i]! / 3)), id);
      await sleep(slowSeconds * 1000);
      for (const [i, id] of workers.entries()) spawnSync("docker", ["update", "--cpu-quota", String(quotas[i]), id]);
      return `slowed ${workers.length} workers of ${target} from quota ${quotas.join(", ")} µs to a third for ${slowSeconds} s`;
    }
    await sleep(200);
  }
  return `${target} never started its timed steps`;
}

console.log(
  `campaign ${campaign}, results ${results}; slowing ${target} for ${slowSeconds} s once its timed steps begin`,
);
const child = spawn(
  process.execPath,
  [resolve(REPO, "src/bin/ringlab.mjs"), "--state-dir", join(dir, "state"), "campaign", campaign, "--results", results],
  { cwd: REPO, stdio: ["ignore", "ignore", "pipe"] },
);
let stderr = "";
child.stderr.on("data", (chunk: Buffer) => {
  stderr += chunk.toString();
});
let running = true;
const exited = new Promise<number | null>((done) =>
  child.on("exit", (code) => {
    running = false;
    done(code);
  }),
);
console.log(await slowTheRun(() => running));
const code = await exited;
console.log(
  stderr
    .split("\n")
    .filter((line) => /disturbed|^(campaign finished|\d+ runs? done again|\d+ flagged|time:)/.test(line))
    .join("\n"),
);
if (code !== 0 && code !== 5) throw new Error(`the campaign exited ${code}:\n${stderr}`);

const records: RunRecord[] = readdirSync(join(results, "runs"))
  .filter((file) => file.endsWith(".json"))
  .map((file) => JSON.parse(readFileSync(join(results, "runs", file), "utf8")) as RunRecord);
const attempts = records
  .filter((record) => record.runId === target)
  .sort((a, b) => (a.attempt ?? 1) - (b.attempt ?? 1));
console.log("\nattempt                                  thirds' median step (s)    outside  busy  unsteady");
for (const record of attempts) {
  const steps = record.result?.job === "train" ? record.result.metrics.stepSeconds : [];
  const medians = medianOfThirds(steps).map((seconds) => seconds.toFixed(3));
  const shift = unsteadiness(record);
  console.log(
    `${`${record.runId}#${record.attempt ?? 1}`.padEnd(40)} ${medians.join(" ").padEnd(26)} ${((record.hostLoad?.outsideShare ?? 0) * 100).toFixed(1).padStart(5)} %  ` +
      `${record.hostLoad?.busy === true ? "yes " : "no  "}  ${shift === undefined ? "no" : `yes, ${(shift.shift * 100).toFixed(0)} %`}`,
  );
}
const latest = latestAttempts(records).map(({ record }) => record);
const flags = reportFlags(reportData(latest), latest);
console.log(
  `\nflags on the latest attempts: ${flags.length === 0 ? "none" : flags.map((flag) => `${flag.kind} (${flag.subject})`).join("; ")}`,
);
const [first, second] = attempts;
const problems = [
  ...(first === undefined || unsteadiness(first) === undefined
    ? [`${target}'s slowed attempt was not found unsteady`]
    : []),
  ...(first?.hostLoad?.busy === true
    ? [`${target}'s slowed attempt was marked machine busy, though nothing else ran`]
    : []),
  ...(second === undefined ? [`${target} was not run again`] : []),
  ...(second !== undefined && unsteadiness(second) !== undefined
    ? [`${target}'s second attempt changed speed too`]
    : []),
];
if (problems.length > 0) {
  console.log(problems.join("\n"));
  process.exit(1);
}

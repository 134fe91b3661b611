/**
 * A campaign on a machine that is busy with other work for part of the time: `stress-ng --cpu N` (Debian's
 * stress-ng; installed with apt-get when missing) runs beside the campaign for its first BUSY_SECONDS, then stops.
 * Checks what issue #34 asks: the disturbed runs are marked "machine busy" (their record's hostLoad), the campaign runs
 * them once more at its end, and the final shaped points are compared with the model fitted from the probe.
 *
 *   npx tsx test/bench/busy-machine.ts [campaigns/local-smoke.yaml] [--cpu 1] [--busy-seconds 100]
 *
 * Prints every attempt with its hostLoad, then each shaped point's error against the model (no overlap), and the
 * report's flags. Exits 1 when a run during the disturbance was not marked busy.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { reportData } from "../../src/analysis/data.ts";
import { reportFlags } from "../../src/report/suspect-figures.ts";
import { latestAttempts, type RunRecord } from "../../src/results/record.ts";
import { REPO } from "./bench-cli.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { cpu: { type: "string", default: "1" }, "busy-seconds": { type: "string", default: "100" } },
});
const campaign = resolve(REPO, positionals[0] ?? "campaigns/local-smoke.yaml");
const busySeconds = Number(values["busy-seconds"]);
const dir = mkdtempSync(join(tmpdir(), "ringlab-busy-"));
const results = join(dir, "results");

if (spawnSync("stress-ng", ["--version"]).status !== 0) {
  console.log("stress-ng is missing: installing Debian's (sudo apt-get install stress-ng)");
  const sudo = process.getuid?.() === 0 ? [] : ["sudo"];
  const install = spawnSync(
    sudo[0] ?? "apt-get",
    [...sudo.slice(1), ...(sudo.length > 0 ? ["apt-get"] : []), "install", "-y", "-q", "stress-ng"],
    { stdio: "inherit" },
  );
  if (install.status !== 0) throw new Error("could not install stress-ng");
}

const started = Date.now();
const stress = spawn("stress-ng", ["--cpu", String(values.cpu), "--timeout", `${busySeconds}s`, "--quiet"], {
  stdio: "ignore",
});
const busyUntil = started + busySeconds * 1000;
console.log(
  `stress-ng --cpu ${values.cpu} for the campaign's first ${busySeconds} s; campaign ${campaign}, results ${results}`,
);
const run = spawnSync(
  process.execPath,
  [resolve(REPO, "src/bin/ringlab.mjs"), "--state-dir", join(dir, "state"), "campaign", campaign, "--results", results],
  { cwd: REPO, encoding: "utf8" },
);
stress.kill();
console.log(
  run.stderr
    .split("\n")
    .filter((line) => /^(campaign finished|\d+ runs? done again|\d+ flagged|time:)/.test(line))
    .join("\n"),
);
if (run.status !== 0 && run.status !== 5) throw new Error(`the campaign exited ${run.status}:\n${run.stderr}`);

const records: RunRecord[] = readdirSync(join(results, "runs"))
  .filter((file) => file.endsWith(".json"))
  .map((file) => JSON.parse(readFileSync(join(results, "runs", file), "utf8")) as RunRecord)
  .sort((a, b) => a.startedAt.localeCompare(b.startedAt));
let missed = 0;
console.log("\nattempt                                   during stress  outside  pressure  busy");
for (const record of records) {
  const provenance = record.result?.provenance;
  const during = provenance !== undefined && Date.parse(provenance.startedAt) < busyUntil;
  const load = record.hostLoad;
  if (during && load !== undefined && !load.busy) missed++;
  console.log(
    `${`${record.runId}#${record.attempt ?? 1}`.padEnd(42)} ${(during ? "yes" : "no").padEnd(14)} ` +
      `${load === undefined ? "   -   " : `${(load.outsideShare * 100).toFixed(1).padStart(5)} %`}  ${load?.cpuPressureShare === undefined ? "   -  " : `${(load.cpuPressureShare * 100).toFixed(0).padStart(4)} %`}   ${load?.busy ? "busy" : ""}`,
  );
}

const latest = latestAttempts(records).map(({ record }) => record);
const data = reportData(latest);
console.log("\nshaped point (latest attempt)              measured  model (no overlap)  error");
for (const config of data.training) {
  for (const series of config.series) {
    for (const point of series.points) {
      if (point.prediction === null || series.linkGbps === null) continue;
      console.log(
        `${`${config.label} · ${series.bandwidth} · ${point.nodes} nodes`.padEnd(42)} ${((point.scalingEfficiency ?? 0) * 100).toFixed(1).padStart(6)} %  ` +
          `${(point.prediction.efficiency.noOverlap * 100).toFixed(1).padStart(10)} %  ${point.prediction.errorPoints.noOverlap >= 0 ? "+" : ""}${point.prediction.errorPoints.noOverlap.toFixed(1)} pt`,
      );
    }
  }
}
const flags = reportFlags(data, latest);
console.log(
  `\nflags on the latest attempts: ${flags.length === 0 ? "none" : flags.map((flag) => `${flag.kind} (${flag.subject})`).join("; ")}`,
);
if (missed > 0) {
  console.log(`${missed} attempt(s) ran during the disturbance without being marked busy`);
  process.exit(1);
}

/**
 * Campaign overhead: wall time of a campaign minus the time inside benchmark jobs (each worker's launch to
 * end), for a campaign whose images are already built. Also splits the overhead into what every run costs
 * (before the workers launch, after they end) and what the campaign costs once (up, configure, shaping, down).
 *
 *   npx tsx test/bench/campaign-overhead.ts [campaigns/local-smoke.yaml]
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { REPO, timedWithProgress } from "./bench-cli.ts";

const campaign = resolve(REPO, process.argv[2] ?? "campaigns/local-smoke.yaml");
const dir = mkdtempSync(join(tmpdir(), "ringlab-overhead-"));
const results = join(dir, "results");

const { seconds: wall, progress } = timedWithProgress(join(dir, "state"), ["campaign", campaign, "--results", results]);
const records = readFileSync(join(results, "runs.jsonl"), "utf8")
  .trim()
  .split("\n")
  .map((line) => JSON.parse(line));
const seconds = (from: string, to: string) => (Date.parse(to) - Date.parse(from)) / 1000;

let jobs = 0;
let before = 0;
let after = 0;
let runWall = 0;
for (const record of records) {
  const p = record.result.provenance;
  jobs += seconds(p.launchedAt, p.endedAt);
  before += seconds(record.startedAt, p.launchedAt);
  after += seconds(p.endedAt, record.endedAt);
  runWall += record.wallSeconds;
}
const overhead = wall - jobs;
const pct = (x: number) => `${((100 * x) / wall).toFixed(0)} %`;
console.log(`campaign ${campaign}: ${records.length} runs`);
console.log(`wall time                         ${wall.toFixed(1)} s`);
console.log(`inside benchmark jobs             ${jobs.toFixed(1)} s`);
console.log(`overhead                          ${overhead.toFixed(1)} s (${pct(overhead)} of wall time)`);
console.log(
  `  per run, before workers launch  ${(before / records.length).toFixed(1)} s x ${records.length} = ${before.toFixed(1)} s (${pct(before)})`,
);
console.log(
  `  per run, after workers end      ${(after / records.length).toFixed(1)} s x ${records.length} = ${after.toFixed(1)} s (${pct(after)})`,
);
console.log(
  `  once: up, configure, shape, down, report, CLI start  ${(wall - runWall).toFixed(1)} s (${pct(wall - runWall)})`,
);
// The steps the CLI reported done ("✓ configure 3 nodes (ansible/site.yml) (14.2 s)"), other than the runs.
for (const [, title, seconds] of progress.matchAll(/^✓ (.+) \((\d+\.\d) s\)$/gm)) {
  if (!/^run /.test(title!)) console.log(`    ${title}`.padEnd(60) + ` ${seconds} s`);
}
// Kept for `ringlab compare` (e.g. the same campaign with another launcher).
console.log(`results: ${results}`);

/**
 * Time of `ringlab up`, a first `configure` and a second `configure` for local testbeds of several sizes,
 * with the images already built (the first `up` on a machine builds them; this does one untimed `up` first).
 *
 *   npx tsx test/bench/testbed.ts [--nodes 3,10] [--repetitions 1]
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { timed } from "./bench-cli.ts";

const { values } = parseArgs({
  options: { nodes: { type: "string", default: "3,10" }, repetitions: { type: "string", default: "1" } },
});
const sizes = values.nodes.split(",").map(Number);
const repetitions = Number(values.repetitions);
const dir = mkdtempSync(join(tmpdir(), "ringlab-bench-"));
const state = join(dir, "state");

function campaignFile(nodes: number): string {
  const file = join(dir, `bench${nodes}.yaml`);
  writeFileSync(
    file,
    `testbed: {target: local, name: bench${nodes}, nodes: ${nodes}, subnet: 10.81.${nodes}.0/24, maxNodes: ${nodes}}\n`,
  );
  return file;
}

// Warm-up: builds missing images, so the timed runs measure the testbed, not the image builds.
timed(state, ["up", campaignFile(1)]);
timed(state, ["down", "bench1"]);

console.log("| nodes | up (s) | configure, first (s) | configure, second (s) | down (s) |");
console.log("|------:|-------:|---------------------:|----------------------:|---------:|");
for (const nodes of sizes) {
  for (let i = 0; i < repetitions; i++) {
    const up = timed(state, ["up", campaignFile(nodes)]);
    const first = timed(state, ["configure", "--testbed", `bench${nodes}`]);
    const second = timed(state, ["configure", "--testbed", `bench${nodes}`]);
    const down = timed(state, ["down", `bench${nodes}`]);
    console.log(`| ${nodes} | ${up.toFixed(1)} | ${first.toFixed(1)} | ${second.toFixed(1)} | ${down.toFixed(1)} |`);
  }
}

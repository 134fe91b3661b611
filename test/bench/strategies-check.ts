/**
 * The strategies issue's two targets, read from a finished campaign's results folder (no runs of its own):
 *   1. parameter server against ring at the most nodes: measured step-time ratio within 15 % of the model's;
 *   2. placement at the same link: one node's processes against as many nodes of one process, the faster one
 *      as the model predicts, the ratio within 15 %.
 * Every comparison the report makes is printed with its sentence; the two targets are marked.
 *
 *   npx ringlab campaign campaigns/local-strategies.yaml --results /tmp/strategies
 *   npx tsx test/bench/strategies-check.ts /tmp/strategies
 */
import { join, resolve } from "node:path";
import { AGREEMENT_TOLERANCE, comparisons, ratios, verdict, type Comparison } from "../../src/report/comparisons.ts";
import { reportData } from "../../src/analysis/data.ts";
import { ResultsStore } from "../../src/results/store.ts";

const dir = resolve(process.argv[2] ?? "results/local-strategies");
const store = ResultsStore.open(dir, (message) => console.error(`warning: ${message}`));
const data = reportData(store.latestRecords().map(({ record }) => record));
console.log(`results: ${join(dir)} (${data.runCounts.ok} runs ok, ${data.runCounts.failed} failed)\n`);

const found = comparisons(data.training);
for (const comparison of found) {
  console.log(`${comparison.kind}: ${comparison.context}`);
  for (const [i, row] of ratios(comparison).entries()) {
    const e = comparison.entries[i]!;
    console.log(
      `   ${e.name.padEnd(26)} ${e.throughput.mean.toFixed(1).padStart(7)} img/s  step ${e.stepSeconds.toFixed(3)} s` +
        `  predicted ${e.predictedStepSeconds?.toFixed(3) ?? "n/a"} s (${e.predictedFrom ?? "-"})  ratio ${row.measured.toFixed(2)} vs ${row.predicted?.toFixed(2) ?? "n/a"}`,
    );
  }
  console.log(`   ${verdict(comparison)}\n`);
}

/** Whether an entry's measured step-time ratio to the reference is within the tolerance of the model's. */
function agrees(comparison: Comparison, name: string): boolean | null {
  const row = ratios(comparison).find((r) => r.name === name);
  if (row === undefined || row.predicted === null) return null;
  return Math.abs(row.measured / row.predicted - 1) <= AGREEMENT_TOLERANCE;
}
const mark = (ok: boolean | null) => (ok === null ? "no data" : ok ? "meets" : "MISSES");

const mostNodes = Math.max(
  0,
  ...found.filter((c) => c.kind === "reduction").map((c) => Number(/(\d+) nodes ×/.exec(c.context)?.[1] ?? 0)),
);
console.log(
  `target 1: parameter server against ring at ${mostNodes} nodes (step-time ratio within ${AGREEMENT_TOLERANCE * 100} % of the model's)`,
);
for (const comparison of found.filter((c) => c.kind === "reduction" && c.context.includes(`${mostNodes} nodes ×`))) {
  console.log(`   ${comparison.context}: ${mark(agrees(comparison, "parameter-server"))}`);
}
console.log(
  `target 2: one node × P against P nodes × 1 (the faster one as predicted, ratio within ${AGREEMENT_TOLERANCE * 100} %)`,
);
for (const comparison of found.filter((c) => c.kind === "placement")) {
  const inOne = comparison.entries.find((e) => e.name.startsWith("1 node ×"));
  if (inOne === undefined || comparison.entries[0]!.name.endsWith("× 1") === false) continue;
  const row = ratios(comparison).find((r) => r.name === inOne.name)!;
  const sameWinner = row.predicted === null ? null : row.measured < 1 === row.predicted < 1;
  const ok = sameWinner === null ? null : sameWinner && agrees(comparison, inOne.name) === true;
  console.log(
    `   ${comparison.context}: ${inOne.name} against ${comparison.entries[0]!.name}, ratio ${row.measured.toFixed(2)} measured, ${row.predicted?.toFixed(2) ?? "n/a"} predicted: ${mark(ok)}`,
  );
}

/**
 * The miniature cluster's three targets, read from a finished campaign's results folder (no runs of its own):
 *   1. unshaped links: scaling efficiency at the largest node count (>= 90 %: compute is fixed per node);
 *   2. shaped links: measured scaling efficiency against the alpha-beta model's prediction (<= 5 points);
 *   3. the probe's alpha-beta fit at every link rate and node count (R^2 >= 0.98).
 *
 *   npx ringlab campaign campaigns/local-seed.yaml --results /tmp/seed
 *   npx tsx test/bench/model-check.ts /tmp/seed
 */
import { join, resolve } from "node:path";
import { reportData } from "../../src/analysis/data.ts";
import { ResultsStore } from "../../src/results/store.ts";

const dir = resolve(process.argv[2] ?? "results/local-seed");
const store = ResultsStore.open(dir, (message) => console.error(`warning: ${message}`));
const data = reportData(store.latestRecords().map(({ record }) => record));
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const verdict = (ok: boolean) => (ok ? "meets" : "MISSES");

console.log(`results: ${join(dir)} (${data.runCounts.ok} runs ok, ${data.runCounts.failed} failed)\n`);

console.log("1. unshaped links: scaling efficiency at the largest node count (target >= 90 %)");
for (const config of data.training) {
  for (const series of config.series.filter((s) => s.linkGbps === null)) {
    const largest = series.points.at(-1);
    if (largest?.scalingEfficiency == null) continue;
    console.log(
      `   ${config.label}, ${largest.nodes} nodes: ${pct(largest.scalingEfficiency)}  ${verdict(largest.scalingEfficiency >= 0.9)}`,
    );
  }
}

console.log("\n2. shaped links: measured against predicted scaling efficiency (target |error| <= 5 points)");
console.log("   configuration                     link      nodes  measured  no-overlap  error   full-overlap  error");
for (const config of data.training) {
  for (const series of config.series.filter((s) => s.linkGbps !== null)) {
    for (const point of series.points) {
      const p = point.prediction;
      if (p === null || point.scalingEfficiency === null) continue;
      const best = Math.min(Math.abs(p.errorPoints.noOverlap), Math.abs(p.errorPoints.perfectOverlap));
      console.log(
        `   ${config.label.padEnd(33)} ${series.bandwidth.padEnd(9)} ${String(point.nodes).padStart(5)}  ` +
          `${pct(point.scalingEfficiency).padStart(8)}  ${pct(p.efficiency.noOverlap).padStart(10)}  ${p.errorPoints.noOverlap.toFixed(1).padStart(5)}  ` +
          `${pct(p.efficiency.perfectOverlap).padStart(12)}  ${p.errorPoints.perfectOverlap.toFixed(1).padStart(5)}  ${verdict(best <= 5)}`,
      );
    }
  }
}

console.log("\n3. probe alpha-beta fits (target R^2 >= 0.98)");
for (const probe of data.probes) {
  if (probe.fit === null) continue;
  const { alphaSeconds, effectiveGbps, rSquared, samples } = probe.fit;
  console.log(
    `   ${probe.bandwidth.padEnd(9)} ${probe.nodes} nodes: alpha ${(alphaSeconds * 1e3).toFixed(2)} ms, ` +
      `beta as ${effectiveGbps.toFixed(3)} Gbit/s, R^2 ${rSquared.toFixed(4)} over ${samples} sizes  ${verdict(rSquared >= 0.98)}`,
  );
}

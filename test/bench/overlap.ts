/**
 * How much of the all-reduce DDP hid behind compute at every shaped training point of finished campaigns (no runs
 * of its own): φ = (t_c + t_ar − measured step) / min(t_c, t_ar), with t_c from the single-node baseline and t_ar
 * from the probe's alpha-beta fit (the report's model); 0 is no overlap, 1 full overlap, below 0 a step slower than
 * the no-overlap model. Then the mean per node count, which `ringlab calibrate` keeps (src/predict/calibration.ts).
 *
 *   npx tsx test/bench/overlap.ts /tmp/seed2 [/tmp/predict1 ...]
 */
import { resolve } from "node:path";
import { reportData } from "../../src/analysis/data.ts";
import { overlapShare } from "../../src/results/comm-model.ts";
import { ResultsStore } from "../../src/results/store.ts";

const byNodes = new Map<number, number[]>();
for (const dir of process.argv.slice(2).map((arg) => resolve(arg))) {
  const data = reportData(ResultsStore.open(dir, (message) => console.error(`warning: ${message}`)).records());
  for (const config of data.training) {
    for (const series of config.series) {
      if (series.linkGbps === null) continue;
      for (const point of series.points) {
        if (point.prediction === null || point.computeSecondsPerStep === null || point.scalingEfficiency === null)
          continue;
        const computeSeconds = point.computeSecondsPerStep;
        const allReduceSeconds = point.prediction.allReduceSeconds;
        const stepSeconds = computeSeconds / point.scalingEfficiency;
        const phi = overlapShare(computeSeconds, allReduceSeconds, stepSeconds);
        byNodes.set(point.nodes, [...(byNodes.get(point.nodes) ?? []), phi]);
        console.log(
          `${dir}: ${config.label} · ${series.bandwidth} · ${point.nodes} nodes: measured ${(point.scalingEfficiency * 100).toFixed(1)} %, ` +
            `no overlap ${(point.prediction.efficiency.noOverlap * 100).toFixed(1)} %, t_c ${computeSeconds.toFixed(3)} s, t_ar ${allReduceSeconds.toFixed(3)} s, φ ${phi.toFixed(2)}`,
        );
      }
    }
  }
}
for (const [nodes, phis] of [...byNodes].sort(([a], [b]) => a - b)) {
  console.log(
    `${nodes} nodes: mean φ ${(phis.reduce((sum, phi) => sum + phi, 0) / phis.length).toFixed(3)} over ${phis.length} points`,
  );
}

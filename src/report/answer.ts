/**
 * The report's first lines (issue #54, point 5): the campaign's question answered in three sentences before any table.
 * How well training scaled at the largest node count on each link; what the model fitted to the campaign's probe says
 * limits it there; and what the flags say of the numbers. The tables below hold every figure these sentences quote.
 * Pure.
 */
import type { ReportData, ScalingPoint, TrainingConfig } from "../analysis/data.ts";
import { flagTally, type Flag } from "./suspect-figures.ts";
import { percent } from "./text.ts";
import { rateUnit } from "../results/worker-result.ts";

interface AtLargest {
  readonly name: string;
  readonly point: ScalingPoint;
}

/** Three sentences (two without a multi-node training run): what a reader should take away before any table. */
export function answerSentences(data: ReportData, flags: readonly Flag[]): string[] {
  const byLink = largestPoints(data.training);
  const flagged =
    flags.length === 0
      ? "No flags: every point's repeats agree and no run was disturbed."
      : `${flags.length} flag${flags.length === 1 ? "" : "s"} (${flagTally(flags)}): read the points marked ⚑ with care (see Flags).`;
  if (byLink.size === 0) return [withoutScaling(data.training), flagged];
  const links = [...byLink.entries()];
  const nodes = links[0]![1][0]!.point.nodes;
  const sameNodes = links.every(([, points]) => points.every((entry) => entry.point.nodes === nodes));
  const at = (entry: AtLargest) => (sameNodes ? "" : ` on ${entry.point.nodes} nodes`);
  const scaling = links.map(([link, points]) => {
    const [best, ...others] = points;
    const worst = others.at(-1);
    const name = points.length === 1 && data.training.length === 1 ? "" : ` ${best!.name}`;
    return `${link}${name} at ${percent(best!.point.scalingEfficiency!)}${at(best!)}${worst === undefined ? "" : ` (lowest: ${worst.name}, ${percent(worst.point.scalingEfficiency!)})`}`;
  });
  const opening = data.training.length === 1 ? `${data.training[0]!.label} scaled` : "The best scaling";
  const first = `${opening}${sameNodes ? ` at ${nodes} nodes` : " at the largest node count"}, as a share of ${sameNodes ? `${nodes} ×` : "n ×"} one node's throughput: ${scaling.join("; ")}.`;
  const limits = links.map(([link, points]) => limitText(link, points[0]!));
  const second = `The model fitted to the campaign's probe predicts${data.training.length === 1 ? "" : ", for the best on each link,"} ${limits.join("; ")}.`;
  return [first, second, flagged];
}

/**
 * No point has a scaling efficiency: no multi-node run succeeded, or (a campaign of multi-node runs alone, as one whose
 * nodes hold the model only sharded) none had a single-node baseline; then the fastest configuration on each link.
 */
function withoutScaling(training: readonly TrainingConfig[]): string {
  const names = distinctNames(training);
  const fastest = new Map<string, { name: string; point: ScalingPoint; unit: string }>();
  training.forEach((config, index) => {
    for (const series of config.series) {
      for (const point of series.points.filter((candidate) => candidate.nodes > 1)) {
        const best = fastest.get(series.bandwidth);
        if (best === undefined || point.throughput.mean > best.point.throughput.mean)
          fastest.set(series.bandwidth, { name: names[index]!, point, unit: rateUnit(config.unit) });
      }
    }
  });
  if (fastest.size === 0) return "No training run on more than one node succeeded, so there is no scaling to report.";
  const each = [...fastest.entries()].map(
    ([link, best]) =>
      `${link}: ${best.name} on ${best.point.nodes} nodes, ${best.point.throughput.mean.toFixed(1)} ${best.unit}`,
  );
  return `No single-node baseline ran, so there is no scaling efficiency to report; the fastest on each link: ${each.join("; ")}.`;
}

/**
 * Per link (in the order the training series have them), every configuration's point at its largest node count above
 * one, best scaling first, each named by what sets its configuration apart from the others.
 */
function largestPoints(training: readonly TrainingConfig[]): Map<string, AtLargest[]> {
  const names = distinctNames(training);
  const byLink = new Map<string, AtLargest[]>();
  training.forEach((config, index) => {
    for (const series of config.series) {
      const points = series.points.filter((point) => point.nodes > 1 && point.scalingEfficiency !== null);
      const point = points.reduce<ScalingPoint | undefined>(
        (largest, candidate) => (largest === undefined || candidate.nodes > largest.nodes ? candidate : largest),
        undefined,
      );
      if (point === undefined) continue;
      byLink.set(series.bandwidth, [...(byLink.get(series.bandwidth) ?? []), { name: names[index]!, point }]);
    }
  });
  for (const points of byLink.values()) points.sort((a, b) => b.point.scalingEfficiency! - a.point.scalingEfficiency!);
  return byLink;
}

/**
 * Each configuration's label without the parts every label shares ("gpt-mini · batch 4 · parallelism=ddp" ->
 * "parallelism=ddp").
 */
function distinctNames(training: readonly TrainingConfig[]): string[] {
  const parts = training.map((config) => config.label.split(" · "));
  if (parts.length === 0) return [];
  const shared = new Set(parts[0]!.filter((part) => parts.every((other) => other.includes(part))));
  return parts.map((own, index) => {
    const left = own.filter((part) => !shared.has(part));
    return left.length === 0 ? training[index]!.label : left.join(" · ");
  });
}

/**
 * What the model fitted to the campaign's probe predicts for the best configuration on one link, and whether that
 * explains the loss.
 */
function limitText(link: string, best: AtLargest): string {
  const { prediction, computeSecondsPerStep, scalingEfficiency } = best.point;
  if (prediction === null || computeSecondsPerStep === null) return `${link}: no probe of the link to fit`;
  const measured = scalingEfficiency!;
  const { noOverlap, perfectOverlap } = prediction.efficiency;
  const against =
    measured < noOverlap - 0.05
      ? `; measured ${percent(measured)}, below it: not all of what is lost is the link`
      : measured > perfectOverlap + 0.05
        ? `; measured ${percent(measured)}, above it`
        : "";
  const range =
    percent(noOverlap) === percent(perfectOverlap)
      ? percent(noOverlap)
      : `${percent(noOverlap)} – ${percent(perfectOverlap)} (no overlap – perfect overlap)`;
  return (
    `${link}: ${range}, ${prediction.allReduceSeconds.toFixed(3)} s of ` +
    `communication a step against ${computeSecondsPerStep.toFixed(3)} s of compute${against}`
  );
}

/**
 * The seed documents' two comparisons, read from the report's training points: the same workers summing
 * gradients another way (ring, parameter server, sharded parameter server), and the same number of workers
 * placed differently (1 node × 4 processes, 2 × 2, 4 × 1). For each: what was measured, what the cost model
 * predicted, and one sentence saying whether they agree. Pure.
 */
import { REDUCTIONS } from "../config/registry.ts";
import type { Reduction } from "../config/registry.ts";
import { rateUnit } from "../results/worker-result.ts";
import { IN_ONE_NODE, type Interval, type ScalingPoint, type TrainingConfig } from "../analysis/data.ts";

export interface ComparisonEntry {
  /** "ring", "parameter-server", ... or "1×4", "2×2", ... */
  readonly name: string;
  readonly throughput: Interval;
  /** One step of every worker: workers × batch size / throughput. */
  readonly stepSeconds: number;
  /**
   * Compute (the single-node step) plus communication, one after the other: the all-reduce time the probe's
   * fitted model gives for this placement and reduction, or the lower bound where there is no fit. Null without
   * a baseline.
   */
  readonly predictedStepSeconds: number | null;
  readonly predictedFrom: "probe fit" | "lower bound" | null;
}

export interface Comparison {
  readonly kind: "reduction" | "placement";
  /** The entries' throughput unit: img/s, tok/s. */
  readonly unit: string;
  /** What the entries share: "small · batch 32 · 250mbit · 4 nodes × 1". */
  readonly context: string;
  /** The reference the ratios are taken against: ring, or the placement with the most nodes. */
  readonly entries: readonly ComparisonEntry[];
}

/** Agreement between measured and predicted step-time ratios within this is "as predicted". */
export const AGREEMENT_TOLERANCE = 0.15;

export function comparisons(training: readonly TrainingConfig[]): Comparison[] {
  return [...reductionComparisons(training), ...placementComparisons(training)];
}

interface Located {
  readonly config: TrainingConfig;
  readonly link: string;
  readonly point: ScalingPoint;
}

function locatedPoints(config: TrainingConfig): Located[] {
  return config.series.flatMap((series) => series.points.map((point) => ({ config, link: series.link, point })));
}

/** Points that differ only in their reduction: same model, batch, other knobs, link and placement. */
function reductionComparisons(training: readonly TrainingConfig[]): Comparison[] {
  const groups = new Map<string, Located[]>();
  for (const located of training.flatMap(locatedPoints)) {
    const { config, link, point } = located;
    const others = Object.entries(config.knobs)
      .filter(([knob]) => knob !== "reduction")
      .sort(([a], [b]) => a.localeCompare(b));
    const key = JSON.stringify([config.model, config.batchSize, others, link, point.nodes, point.processesPerNode]);
    groups.set(key, [...(groups.get(key) ?? []), located]);
  }
  return [...groups.values()]
    .filter((group) => new Set(group.map(({ point }) => point.reduction)).size > 1)
    .map((group) => {
      const { config, link, point } = group[0]!;
      const ordered = [...group].sort(
        (a, b) => REDUCTION_ORDER.indexOf(a.point.reduction) - REDUCTION_ORDER.indexOf(b.point.reduction),
      );
      return {
        kind: "reduction" as const,
        unit: rateUnit(config.unit),
        // The configuration's label names every knob that varies; the reduction is what the entries differ in.
        context: [
          ...config.label.split(" · ").filter((part) => !part.startsWith("reduction=")),
          link,
          placementName(point),
        ].join(" · "),
        entries: ordered.map(({ config: c, point: p }) => entry(p.reduction, c, p)),
      };
    });
}

/**
 * Entries of a reduction comparison in the worker registry's order: ring, the sharded parameter server, the parameter
 * server.
 */
const REDUCTION_ORDER: readonly Reduction[] = REDUCTIONS;

/**
 * Points of one configuration with the same number of workers on different placements, per link; one node's
 * processes cross no link, so they join every link's comparison.
 */
function placementComparisons(training: readonly TrainingConfig[]): Comparison[] {
  return training.flatMap((config) => {
    const located = locatedPoints(config);
    const links = [...new Set(located.map(({ link }) => link))].filter((link) => link !== IN_ONE_NODE);
    return links.flatMap((link) => {
      const here = located.filter((l) => l.link === link || l.link === IN_ONE_NODE);
      const byWorkers = new Map<number, Located[]>();
      for (const l of here) byWorkers.set(l.point.workers, [...(byWorkers.get(l.point.workers) ?? []), l]);
      return [...byWorkers.entries()]
        .filter(([, group]) => group.length > 1)
        .sort(([a], [b]) => a - b)
        .map(([workers, group]) => ({
          kind: "placement" as const,
          unit: rateUnit(config.unit),
          context: [config.label, link, `${workers} workers`].join(" · "),
          // The most nodes first: the reference, the placement that sends the most over the links.
          entries: [...group]
            .sort((a, b) => b.point.nodes - a.point.nodes)
            .map(({ point }) => entry(placementName(point), config, point)),
        }));
    });
  });
}

function placementName(point: ScalingPoint): string {
  return `${point.nodes} node${point.nodes === 1 ? "" : "s"} × ${point.processesPerNode}`;
}

function entry(name: string, config: TrainingConfig, point: ScalingPoint): ComparisonEntry {
  const stepSeconds = (point.workers * config.batchSize) / point.throughput.mean;
  const compute = point.computeSecondsPerStep;
  const communication = point.prediction?.allReduceSeconds ?? point.allReduceLowerBoundSeconds;
  const predictedFrom =
    compute === null || communication === null ? null : point.prediction !== null ? "probe fit" : "lower bound";
  return {
    name,
    throughput: point.throughput,
    stepSeconds,
    predictedStepSeconds: predictedFrom === null ? null : compute! + communication!,
    predictedFrom,
  };
}

/** Measured and predicted step time of each entry against the first; null where the model has no figure. */
export function ratios(comparison: Comparison): { name: string; measured: number; predicted: number | null }[] {
  const [reference] = comparison.entries;
  return comparison.entries.map((e) => ({
    name: e.name,
    measured: e.stepSeconds / reference!.stepSeconds,
    predicted:
      e.predictedStepSeconds === null || reference!.predictedStepSeconds === null
        ? null
        : e.predictedStepSeconds / reference!.predictedStepSeconds,
  }));
}

/** One sentence: which was fastest, whether the model said so, and how far the ratios are apart. */
export function verdict(comparison: Comparison): string {
  const fastest = (pick: (e: ComparisonEntry) => number | null) =>
    comparison.entries
      .filter((e) => pick(e) !== null)
      .reduce<ComparisonEntry | undefined>(
        (best, e) => (best === undefined || pick(e)! < pick(best)! ? e : best),
        undefined,
      );
  const measuredBest = fastest((e) => e.stepSeconds)!;
  const modelBest = fastest((e) => e.predictedStepSeconds);
  const rows = ratios(comparison).slice(1);
  const measuredText = `${measuredBest.name} was fastest (${measuredBest.throughput.mean.toFixed(1)} ${comparison.unit})`;
  if (modelBest === undefined || rows.some((row) => row.predicted === null)) {
    return `${measuredText}; the model has no prediction here (it needs a single-node baseline, and a probe or a shaped link for the communication).`;
  }
  const worst = Math.max(...rows.map((row) => Math.abs(row.measured / row.predicted! - 1)));
  const agreement = worst <= AGREEMENT_TOLERANCE ? "as the model predicted" : "not as the model predicted";
  const ranking =
    modelBest.name === measuredBest.name
      ? `the model predicted ${modelBest.name} fastest too`
      : `the model predicted ${modelBest.name} fastest`;
  const against = comparison.entries[0]!.name;
  const detail = rows
    .map((row) => `${row.name} ${row.measured.toFixed(2)} measured, ${row.predicted!.toFixed(2)} predicted`)
    .join("; ");
  return `${measuredText}; ${ranking}. Step time against ${against}: ${detail}, ${agreement} (within ${Math.round(AGREEMENT_TOLERANCE * 100)}%: ${worst <= AGREEMENT_TOLERANCE ? "yes" : "no"}, largest difference ${Math.round(worst * 100)}%).`;
}

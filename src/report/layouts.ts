/**
 * The layouts of one workload side by side (issue #52, #53): the same model, batch and other knobs on the same link and
 * node count, laid out differently (DDP, FSDP's shardings, tensor parallelism, a pipeline's schedules and
 * micro-batches). For each: the throughput measured, the peak memory per rank, the model's prediction from the
 * campaign's own probe, and the prediction saved before the run (predictions.json) where the campaign has one; and one
 * sentence per link and node count naming the fastest layout, by how much it beat the next and whether their 95 %
 * intervals over repeats overlap, and which layout the prediction ranked first. Every layout here ran, so every one
 * fitted its nodes (a campaign's plan refuses one the memory model says will not). Pure.
 */
import { ASSUMED_MEMORY, isMemoryPrediction, predictMemory } from "../predict/memory.ts";
import { rateUnit } from "../results/worker-result.ts";
import type { Interval, TrainingConfig } from "../analysis/data.ts";
import type { PredictionScore } from "./predictions.ts";

/** The knobs that say how a model is laid out: what the entries of a comparison differ in. */
const LAYOUT_KNOBS = new Set([
  "parallelism",
  "fsdpSharding",
  "fsdpPrefetch",
  "fsdpCpuOffload",
  "tensorDegree",
  "pipelineStages",
  "microBatches",
  "pipelineSchedule",
]);

export interface LayoutEntry {
  readonly layout: string;
  readonly throughput: Interval;
  readonly scalingEfficiency: number | null;
  readonly peakMemoryBytes: Interval | null;
  /**
   * The memory model's peak per rank (src/predict/memory.ts) with ringlab's assumed constants for the device, as
   * `ringlab plan` predicts it without a calibration; null where it has none (an image model's layout it cannot split).
   */
  readonly predictedMemoryBytes: number | null;
  /**
   * The model's throughput from the campaign's own probe, no overlap to perfect overlap; null without a probe fit or a
   * baseline.
   */
  readonly predicted: { readonly noOverlap: number; readonly perfectOverlap: number } | null;
  /**
   * The prediction saved before the run (predictions.json, from a calibration) of the point's runs: the mean over its
   * repeats' first attempts, and their peak memory per rank where the file saved it; null where a run has none.
   */
  readonly predictedBefore: { readonly throughput: number; readonly memoryBytes: number | null } | null;
  readonly runIds: readonly string[];
}

export interface LayoutComparison {
  /** What the entries share: "gpt-micro · batch 8 · 1gbit · 3 nodes". */
  readonly context: string;
  readonly unit: string;
  /** Fastest first. */
  readonly entries: readonly LayoutEntry[];
}

/**
 * `saved`: the campaign's saved predictions, scored against its runs (src/report/predictions.ts), where it has them.
 */
export function layoutComparisons(training: readonly TrainingConfig[], saved?: PredictionScore): LayoutComparison[] {
  const savedOf = savedPredictions(saved);
  const groups = new Map<string, { context: string; unit: string; entries: LayoutEntry[] }>();
  for (const config of training) {
    const others = Object.entries(config.knobs)
      .filter(([knob]) => !LAYOUT_KNOBS.has(knob))
      .sort(([a], [b]) => a.localeCompare(b));
    for (const series of config.series) {
      for (const point of series.points) {
        const key = JSON.stringify([
          config.model,
          config.batchSize,
          others,
          series.link,
          point.nodes,
          point.processesPerNode,
        ]);
        const context = [
          config.model,
          `batch ${config.batchSize}`,
          ...others.map(([knob, value]) => `${knob}=${String(value)}`),
          series.bandwidth,
          `${point.nodes} node${point.nodes === 1 ? "" : "s"}`,
        ].join(" · ");
        const group = groups.get(key) ?? { context, unit: rateUnit(config.unit), entries: [] };
        group.entries.push({
          layout: config.layout,
          throughput: point.throughput,
          scalingEfficiency: point.scalingEfficiency,
          peakMemoryBytes: point.peakMemoryBytes,
          predictedMemoryBytes: predictedMemory(config, point.nodes, point.processesPerNode),
          predicted: point.prediction?.throughput ?? null,
          predictedBefore: savedOf(point.runIds),
          runIds: point.runIds,
        });
        groups.set(key, group);
      }
    }
  }
  return [...groups.values()]
    .filter((group) => new Set(group.entries.map((entry) => entry.layout)).size > 1)
    .map((group) => ({ ...group, entries: [...group.entries].sort((a, b) => b.throughput.mean - a.throughput.mean) }));
}

/**
 * One sentence: the fastest layout, by how much it beat the next (and, measured over repeats, whether their 95 %
 * intervals overlap: then the runs do not tell the two apart), whether the prediction saved before the run (else the
 * model on the campaign's probe) ranked it first, and the memory.
 */
export function layoutVerdict(comparison: LayoutComparison): string {
  const [best, next] = comparison.entries;
  const rate = (entry: LayoutEntry) => `${entry.throughput.mean.toFixed(1)} ${comparison.unit}`;
  const margin =
    next === undefined
      ? ""
      : `, ${percentMore(best!.throughput.mean, next.throughput.mean)} more than ${next.layout} (${rate(next)})` +
        (overlap(best!.throughput, next.throughput)
          ? `, but their 95 % intervals over ${Math.min(best!.throughput.n, next.throughput.n)} repeats overlap: the runs do not tell them apart`
          : "");
  const peak = peakPrediction(comparison);
  const memory = comparison.entries
    .filter((entry) => entry.peakMemoryBytes !== null)
    .map((entry) => {
      const predicted = peak.of(entry);
      return `${entry.layout} ${gib(entry.peakMemoryBytes!.mean)}${predicted === null ? "" : ` (predicted ${gib(predicted)})`}`;
    });
  return (
    `${comparison.context}: ${best!.layout} was fastest (${rate(best!)})${margin}; ${rankedFirst(comparison)}.` +
    (memory.length === 0 ? "" : ` Peak memory per rank: ${memory.join(", ")} GiB.`)
  );
}

/**
 * Whether the comparison's entries all have the prediction saved before the run: then the table and verdict quote it.
 */
function savedForEvery(comparison: LayoutComparison): boolean {
  return comparison.entries.every((entry) => entry.predictedBefore !== null);
}

/**
 * The peak per rank the comparison predicts: saved before the run where every entry's prediction saved it, else the
 * memory model's with ringlab's assumed constants (as `plan` gives it without a calibration).
 */
export function peakPrediction(comparison: LayoutComparison): {
  readonly source: "before the run" | "assumed constants";
  readonly of: (entry: LayoutEntry) => number | null;
} {
  return savedForEvery(comparison) && comparison.entries.every((entry) => entry.predictedBefore!.memoryBytes !== null)
    ? { source: "before the run", of: (entry) => entry.predictedBefore!.memoryBytes }
    : { source: "assumed constants", of: (entry) => entry.predictedMemoryBytes };
}

function rankedFirst(comparison: LayoutComparison): string {
  const best = comparison.entries[0]!;
  if (savedForEvery(comparison)) {
    const first = comparison.entries.reduce((a, b) =>
      b.predictedBefore!.throughput > a.predictedBefore!.throughput ? b : a,
    );
    return first.layout === best.layout
      ? "the prediction saved before the run ranked it first too"
      : `the prediction saved before the run ranked ${first.layout} first`;
  }
  if (comparison.entries.some((entry) => entry.predicted === null))
    return "the model has no prediction for every layout here";
  const first = comparison.entries.reduce((a, b) => (midpoint(b) > midpoint(a) ? b : a));
  return first.layout === best.layout ? "the model ranked it first too" : `the model ranked ${first.layout} first`;
}

/** "9 %", or "0.4 %" where the whole percent would read 0. */
function percentMore(faster: number, slower: number): string {
  const share = 100 * (faster / slower - 1);
  return `${share.toFixed(share < 0.5 ? 1 : 0)} %`;
}

/** Two means over repeats (n > 1 each) whose 95 % intervals overlap: the runs cannot tell them apart. */
function overlap(a: Interval, b: Interval): boolean {
  return (
    a.n > 1 &&
    b.n > 1 &&
    a.mean - a.halfWidth95 <= b.mean + b.halfWidth95 &&
    b.mean - b.halfWidth95 <= a.mean + a.halfWidth95
  );
}

/** A point's runs' saved predictions (first attempts), averaged; null where one of its runs has none. */
function savedPredictions(
  saved: PredictionScore | undefined,
): (runIds: readonly string[]) => LayoutEntry["predictedBefore"] {
  const byRun = new Map((saved?.scored ?? []).filter((row) => row.counted).map((row) => [row.runId, row]));
  return (runIds) => {
    const rows = runIds.map((runId) => byRun.get(runId));
    if (rows.length === 0 || rows.some((row) => row === undefined)) return null;
    const average = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
    const memory = rows.map((row) => row!.predictedMemoryBytes);
    return {
      throughput: average(rows.map((row) => row!.predictedThroughput)),
      memoryBytes: memory.some((bytes) => bytes === null) ? null : average(memory as number[]),
    };
  };
}

function predictedMemory(config: TrainingConfig, nodes: number, processesPerNode: number): number | null {
  const constants = config.device === "cuda" ? ASSUMED_MEMORY.cuda : ASSUMED_MEMORY.cpu;
  const predicted = predictMemory(
    { model: config.model, batchSize: config.batchSize, nodes, processesPerNode, knobs: config.knobs },
    constants,
  );
  return isMemoryPrediction(predicted) ? predicted.rankBytes : null;
}

function midpoint(entry: LayoutEntry): number {
  return (entry.predicted!.noOverlap + entry.predicted!.perfectOverlap) / 2;
}

function gib(bytes: number): string {
  return (bytes / 2 ** 30).toFixed(2);
}

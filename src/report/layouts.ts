/**
 * The layouts of one workload side by side (issue #52, #53): the same model, batch and other knobs on the same link and
 * node count, laid out differently (DDP, FSDP's shardings, tensor parallelism, a pipeline's schedules and micro-batches).
 * For each: the throughput measured, the peak memory per rank, and the model's prediction from the campaign's own
 * probe; and one sentence per link and node count naming the fastest layout and by how much it beat the next. Every
 * layout here ran, so every one fitted its nodes (a campaign's plan refuses one the memory model says will not). Pure.
 */
import { ASSUMED_MEMORY, isMemoryPrediction, predictMemory } from "../predict/memory.ts";
import { rateUnit } from "../results/worker-result.ts";
import type { Interval, TrainingConfig } from "./data.ts";

/** The knobs that say how a model is laid out: what the entries of a comparison differ in. */
const LAYOUT_KNOBS = new Set(["parallelism", "fsdpSharding", "fsdpPrefetch", "fsdpCpuOffload", "tensorDegree", "pipelineStages", "microBatches", "pipelineSchedule"]);

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
  /** The model's throughput from the campaign's own probe, no overlap to perfect overlap; null without a probe fit or a baseline. */
  readonly predicted: { readonly noOverlap: number; readonly perfectOverlap: number } | null;
  readonly runIds: readonly string[];
}

export interface LayoutComparison {
  /** What the entries share: "gpt-micro · batch 8 · 1gbit · 3 nodes". */
  readonly context: string;
  readonly unit: string;
  /** Fastest first. */
  readonly entries: readonly LayoutEntry[];
}

export function layoutComparisons(training: readonly TrainingConfig[]): LayoutComparison[] {
  const groups = new Map<string, { context: string; unit: string; entries: LayoutEntry[] }>();
  for (const config of training) {
    const others = Object.entries(config.knobs).filter(([knob]) => !LAYOUT_KNOBS.has(knob)).sort(([a], [b]) => a.localeCompare(b));
    for (const series of config.series) {
      for (const point of series.points) {
        const key = JSON.stringify([config.model, config.batchSize, others, series.link, point.nodes, point.processesPerNode]);
        const context = [config.model, `batch ${config.batchSize}`, ...others.map(([knob, value]) => `${knob}=${String(value)}`), series.bandwidth,
          `${point.nodes} node${point.nodes === 1 ? "" : "s"}`].join(" · ");
        const group = groups.get(key) ?? { context, unit: rateUnit(config.unit), entries: [] };
        group.entries.push({
          layout: config.layout, throughput: point.throughput, scalingEfficiency: point.scalingEfficiency, peakMemoryBytes: point.peakMemoryBytes,
          predictedMemoryBytes: predictedMemory(config, point.nodes, point.processesPerNode),
          predicted: point.prediction?.throughput ?? null, runIds: point.runIds,
        });
        groups.set(key, group);
      }
    }
  }
  return [...groups.values()].filter((group) => new Set(group.entries.map((entry) => entry.layout)).size > 1)
    .map((group) => ({ ...group, entries: [...group.entries].sort((a, b) => b.throughput.mean - a.throughput.mean) }));
}

/** One sentence: the fastest layout, by how much it beat the next, whether the model ranked it first, and the memory. */
export function layoutVerdict(comparison: LayoutComparison): string {
  const [best, next] = comparison.entries;
  const rate = (entry: LayoutEntry) => `${entry.throughput.mean.toFixed(1)} ${comparison.unit}`;
  const margin = next === undefined ? "" : `, ${(100 * (best!.throughput.mean / next.throughput.mean - 1)).toFixed(0)} % more than ${next.layout} (${rate(next)})`;
  const predicted = comparison.entries.filter((entry) => entry.predicted !== null);
  const modelBest = predicted.length < comparison.entries.length ? undefined
    : predicted.reduce((a, b) => (midpoint(b) > midpoint(a) ? b : a));
  const model = modelBest === undefined ? "the model has no prediction for every layout here"
    : modelBest.layout === best!.layout ? `the model ranked it first too` : `the model ranked ${modelBest.layout} first`;
  const memory = comparison.entries.filter((entry) => entry.peakMemoryBytes !== null)
    .map((entry) => `${entry.layout} ${gib(entry.peakMemoryBytes!.mean)}${entry.predictedMemoryBytes === null ? "" : ` (predicted ${gib(entry.predictedMemoryBytes)})`}`);
  return `${comparison.context}: ${best!.layout} was fastest (${rate(best!)})${margin}; ${model}.` +
    (memory.length === 0 ? "" : ` Peak memory per rank: ${memory.join(", ")} GiB.`);
}

function predictedMemory(config: TrainingConfig, nodes: number, processesPerNode: number): number | null {
  const constants = config.device === "cuda" ? ASSUMED_MEMORY.cuda : ASSUMED_MEMORY.cpu;
  const predicted = predictMemory({ model: config.model, batchSize: config.batchSize, nodes, processesPerNode,
    knobs: config.knobs }, constants);
  return isMemoryPrediction(predicted) ? predicted.rankBytes : null;
}

function midpoint(entry: LayoutEntry): number {
  return (entry.predicted!.noOverlap + entry.predicted!.perfectOverlap) / 2;
}

function gib(bytes: number): string {
  return (bytes / 2 ** 30).toFixed(2);
}

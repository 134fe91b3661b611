/**
 * Peak memory per rank and per node before a run (issue #52): the analytic model of src/workload/memory.ts with what
 * the process adds on top, fitted from the user's single-node runs (the calibration's memory entry: peak over
 * baseline = overhead + scale × the model's bytes, and the baseline and launcher that every node holds besides) or
 * assumed where none was measured, said so. Pure.
 */
import type { RunRecord } from "../results/record.ts";
import { dimsOf, isBaseLayout, layoutName, memoryTermsOf } from "../layouts/index.ts";
import { rankMemory, type RankMemory } from "../workload/memory.ts";
import type { Source } from "./calibration.ts";

/**
 * A calibration's memory entry: the affine fit of what single-node runs measured (each rank's peak over its baseline)
 * on what the analytic model says of them, per device (and CPU quota), with the baseline and launcher it measured.
 */
export interface MemoryEntry {
  readonly device: string;
  readonly deviceModel: string;
  readonly cpusPerNode: number | null;
  /**
   * The layout its runs had, where it is not DDP's (absent: DDP's, from single-node runs). A sharded layout's entry is
   * fitted from its runs at every node count (one node shards nothing), and predicts that layout's runs alone.
   */
  readonly parallelism?: string;
  readonly overheadBytes: number;
  readonly scale: number;
  /** The fit's largest error on its own runs, as a share of the measured peak. */
  readonly worstError: number;
  readonly runs: number;
  readonly baselineBytes: number;
  /** The launcher's peak (torchrun's agent), where a multi-node or multi-process run measured it. */
  readonly launcherBytes: number | null;
  readonly source: Source;
}

export interface MemoryConstants {
  /** What the process adds to the model's bytes: peak over baseline = overheadBytes + scale × the model's. */
  readonly overheadBytes: number;
  readonly scale: number;
  /**
   * A worker process's memory before its model (on a CPU: torch, Python and the process group; on a GPU: none of the
   * allocator's).
   */
  readonly baselineBytes: number;
  /** The node's launcher process (torchrun's agent); 0 on a GPU, whose memory it does not use. */
  readonly launcherBytes: number;
  readonly source: string;
  /** A layout's own overhead and scale, where they were measured apart (FSDP on a CPU: what glibc's heap keeps). */
  readonly layouts?: Readonly<Record<string, Pick<MemoryConstants, "overheadBytes" | "scale" | "source">>>;
}

const MIB = 2 ** 20;
/**
 * Without a calibration, on a CPU: the fit of ringlab's own runs of gpt-mini under tcmalloc, as the CPU image runs
 * them (test/bench/cpu-memory.sh on 2026-11-28; test/bench/data/cpu-memory/, recomputed by
 * test/bench/cpu-memory.test.ts): single workers give the overhead and scale, the baseline and the launcher; FSDP's
 * runs on 3 ranks its own overhead at the same scale (its gathered units and collective buffers). On a GPU: the tensors
 * alone (the caching allocator's peak allocated is the tensors', and its reserved memory and the CUDA context are
 * apart).
 */
export const ASSUMED_MEMORY: Readonly<Record<"cpu" | "cuda", MemoryConstants>> = {
  cpu: {
    overheadBytes: 94 * MIB,
    scale: 1.04,
    baselineBytes: 231 * MIB,
    launcherBytes: 226 * MIB,
    source:
      "assumed: ringlab's fit of its own single CPU workers on 2026-11-28 (94 MiB + 1.04 × the model's bytes; test/bench/README.md, \"CPU memory\")",
    layouts: {
      fsdp: {
        overheadBytes: 140 * MIB,
        scale: 1.04,
        source:
          "assumed: ringlab's fit of its own FSDP runs on 3 CPU ranks on 2026-11-28 (140 MiB + 1.04 × the model's bytes; test/bench/README.md, \"CPU memory\")",
      },
    },
  },
  cuda: {
    overheadBytes: 0,
    scale: 1,
    baselineBytes: 0,
    launcherBytes: 0,
    source: "assumed: the tensors alone (no calibration of this GPU)",
  },
};

/**
 * What a GPU's caching allocator reserves over the tensors it holds at their peak: the affine fit of peak reserved
 * over peak allocated (each over the run's baseline) of ringlab's 16 language-model runs on one H200 on 2026-11-27
 * (test/bench/gpu/nvidia-h200/transformer-records/; test/bench/gpu-reserved.test.ts recomputes it), worst fit 7.3 %.
 * What torchtitan and nvidia-smi-like readings report (torch.cuda's reserved_bytes.all.peak) is this, not the tensors.
 */
export const CUDA_RESERVED: Pick<MemoryConstants, "overheadBytes" | "scale" | "source"> = {
  overheadBytes: 0.81 * 2 ** 30,
  scale: 1.033,
  source:
    "fitted: peak reserved = 0.81 GiB + 1.033 × peak allocated over ringlab's 16 H200 runs of 2026-11-27 (worst 7.3 %; test/bench/README.md)",
};

/**
 * The constants of a machine's memory entries: DDP's (the entry without a layout) for every run, and each other
 * layout's own where the calibration measured it; a layout it did not measure keeps the assumption's own, if any.
 * Undefined without DDP's entry.
 */
export function constantsOf(entries: readonly MemoryEntry[], assumed?: MemoryConstants): MemoryConstants | undefined {
  const base = entries.find((entry) => entry.parallelism === undefined);
  if (base === undefined) return undefined;
  const layouts = {
    ...assumed?.layouts,
    ...Object.fromEntries(
      entries
        .filter((entry) => entry.parallelism !== undefined)
        .map((entry) => [
          entry.parallelism!,
          { overheadBytes: entry.overheadBytes, scale: entry.scale, source: describeMemoryEntry(entry) },
        ]),
    ),
  };
  return {
    overheadBytes: base.overheadBytes,
    scale: base.scale,
    baselineBytes: base.baselineBytes,
    launcherBytes: base.launcherBytes ?? 0,
    source: describeMemoryEntry(base),
    ...(Object.keys(layouts).length === 0 ? {} : { layouts }),
  };
}

/** "measured: 5 single-node runs in <folder> (146 MiB + 1.00 × the model's bytes, worst fit 3.2 %)". */
export function describeMemoryEntry(entry: MemoryEntry): string {
  const runs =
    entry.parallelism === undefined ? `${entry.runs} single-node runs` : `${entry.runs} ${entry.parallelism} runs`;
  return (
    `measured: ${runs} in ${entry.source.kind === "measured" ? entry.source.resultsDir : "a calibration"} ` +
    `(${(entry.overheadBytes / MIB).toFixed(0)} MiB + ${entry.scale.toFixed(2)} × the model's bytes, worst fit ${(100 * entry.worstError).toFixed(1)} %)`
  );
}

export interface MemoryRun {
  readonly model: string;
  readonly batchSize: number;
  readonly nodes: number;
  readonly processesPerNode?: number;
  readonly knobs: Readonly<Record<string, unknown>>;
}

export interface MemoryPrediction {
  /**
   * Each pipeline stage's rank (one entry without a pipeline): predicted peak over its baseline, and the model's parts.
   */
  readonly perRank: readonly { readonly stage: number; readonly bytes: number; readonly parts: RankMemory }[];
  /** The largest rank's. */
  readonly rankBytes: number;
  /**
   * What one node holds at the peak: its launcher, and each of its processes' baseline and the largest rank's peak over
   * it.
   */
  readonly nodeBytes: number;
  readonly source: string;
}

/** The prediction, or why the run's layout cannot be (its degrees do not divide its workers). */
export function predictMemory(
  run: MemoryRun,
  constants: MemoryConstants,
): MemoryPrediction | { readonly problem: string } {
  const processes = run.processesPerNode ?? 1;
  const layout = dimsOf(run.knobs, run.nodes * processes, run.nodes);
  if (!layout.ok) return { problem: layout.problem };
  // A sharded layout on one worker shards nothing: DDP's constants; across workers its own, where there are some.
  const own = run.nodes * processes > 1 ? constants.layouts?.[layoutName(run.knobs)] : undefined;
  const { overheadBytes, scale, source } = own ?? constants;
  const perRank = rankMemory(
    { model: run.model, batchSize: run.batchSize, knobs: run.knobs, dims: layout.dims },
    memoryTermsOf(run.knobs, layout.dims),
  ).map((parts) => ({ stage: parts.stage, bytes: overheadBytes + scale * parts.peak, parts }));
  const rankBytes = Math.max(...perRank.map((rank) => rank.bytes));
  return {
    perRank,
    rankBytes,
    nodeBytes: constants.launcherBytes + processes * (constants.baselineBytes + rankBytes),
    source,
  };
}

export function isMemoryPrediction(value: MemoryPrediction | { readonly problem: string }): value is MemoryPrediction {
  return "rankBytes" in value;
}

/** A run's measured memory per rank beside what the analytic model says of it. */
export interface MemoryPoint {
  readonly runId: string;
  readonly analyticBytes: number;
  readonly measuredBytes: number;
}

/** Each rank of a finished training run: its measured peak over baseline, and the model's bytes for its stage. */
export function memoryPoints(record: RunRecord): MemoryPoint[] {
  const result = record.result;
  if (
    record.status !== "ok" ||
    result?.job !== "train" ||
    result.metrics.memory === undefined ||
    record.params.model === undefined
  )
    return [];
  const knobs = result.knobs;
  const layout = dimsOf(knobs, result.world.size, result.world.nodes);
  if (!layout.ok) return [];
  const stages = rankMemory(
    { model: record.params.model, batchSize: record.params.batchSize ?? 0, knobs, dims: layout.dims },
    memoryTermsOf(knobs, layout.dims),
  );
  const perStage = result.world.size / layout.dims.pp;
  return result.metrics.memory.perRank.map((rank, index) => ({
    runId: record.runId,
    analyticBytes: stages[Math.floor(index / perStage)]!.peak,
    measuredBytes: rank.peakBytes - rank.baselineBytes,
  }));
}

/**
 * The calibration's memory entries: per device (and CPU quota), the least-squares line of measured over analytic bytes
 * through every rank of the single-node training runs (one configuration alone: its mean offset, scale 1), with the
 * baselines and launchers they measured.
 */
export function memoryEntriesFromRecords(
  records: readonly RunRecord[],
  measured: (runIds: readonly string[]) => Source,
): MemoryEntry[] {
  const groups = new Map<
    string,
    { key: Pick<MemoryEntry, "device" | "deviceModel" | "cpusPerNode" | "parallelism">; records: RunRecord[] }
  >();
  for (const record of records) {
    if (memoryPoints(record).length === 0) continue;
    // DDP's entry from single workers; another layout's from its runs across workers (one worker shards nothing).
    const knobs = record.result!.knobs;
    const workers = record.result!.world.size;
    if (isBaseLayout(knobs) ? record.params.nodes !== 1 : workers < 2) continue;
    const provenance = record.result!.provenance;
    const key = {
      device: provenance.device,
      deviceModel: provenance.deviceModel,
      cpusPerNode: record.params.cpusPerNode ?? null,
      ...(isBaseLayout(knobs) ? {} : { parallelism: layoutName(knobs) }),
    };
    const id = JSON.stringify(key);
    groups.set(id, { key, records: [...(groups.get(id)?.records ?? []), record] });
  }
  return [...groups.values()].map(({ key, records: group }) => {
    const points = group.flatMap(memoryPoints);
    const { overhead, scale } = affineFit(
      points.map((point) => point.analyticBytes),
      points.map((point) => point.measuredBytes),
    );
    const worstError = Math.max(
      ...points.map(
        (point) => Math.abs(overhead + scale * point.analyticBytes - point.measuredBytes) / point.measuredBytes,
      ),
    );
    const ranks = group.flatMap((record) =>
      record.result?.job === "train" ? (record.result.metrics.memory?.perRank ?? []) : [],
    );
    const launchers = ranks.flatMap((rank) =>
      typeof rank["launcherPeakBytes"] === "number" ? [rank["launcherPeakBytes"]] : [],
    );
    return {
      ...key,
      overheadBytes: overhead,
      scale,
      worstError,
      runs: group.length,
      baselineBytes: mean(ranks.map((rank) => rank.baselineBytes)),
      launcherBytes: launchers.length === 0 ? null : mean(launchers),
      source: measured(group.map((record) => record.runId)),
    };
  });
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** y = overhead + scale × x by least squares; with one distinct x, scale 1 and the mean offset. */
export function affineFit(x: readonly number[], y: readonly number[]): { overhead: number; scale: number } {
  const mx = mean(x);
  const my = mean(y);
  const sxx = x.reduce((sum, value) => sum + (value - mx) ** 2, 0);
  if (sxx <= 1e-9 * Math.max(1, mx * mx)) return { overhead: my - mx, scale: 1 };
  const scale = x.reduce((sum, value, index) => sum + (value - mx) * (y[index]! - my), 0) / sxx;
  return { overhead: my - scale * mx, scale };
}

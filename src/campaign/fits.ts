/**
 * What `ringlab plan` and `ringlab campaign` check of a plan before anything starts (issue #52): every training run's
 * layout divides its workers (src/layouts/) and its model's heads (src/config/shape-problems.ts), and its memory
 * fits, as the memory model predicts it
 * (src/predict/memory.ts): a local testbed's node within testbed.memoryPerNodeGiB, a GPU's rank within the GPU's
 * memory. A run that does not fit is named with what would: the same run sharded (FSDP full shard), on more nodes,
 * with activation checkpointing. Pure.
 */
import type { CampaignFile } from "../config/schema.ts";
import type { Calibration } from "../predict/calibration.ts";
import {
  ASSUMED_MEMORY,
  constantsOf,
  isMemoryPrediction,
  predictMemory,
  type MemoryConstants,
  type MemoryRun,
} from "../predict/memory.ts";
import { targetOf } from "../targets/index.ts";
import type { TargetMemory } from "../targets/target.ts";
import { dimsOf, layoutProblem } from "../layouts/index.ts";
import { shapeProblems } from "../config/shape-problems.ts";
import { usableGpuMemoryGiB } from "./gpu-memory.ts";
import type { CampaignPlan, PlannedRun } from "./plan.ts";

const GIB = 2 ** 30;

/** How much memory a run may use: a local node's (all its processes and launcher), or one GPU's (one rank). */
export interface MemoryLimit {
  readonly bytes: number;
  readonly per: "node" | "rank";
  /** Where it comes from, for messages: "testbed.memoryPerNodeGiB", "one NVIDIA T4 of g4dn.xlarge". */
  readonly what: string;
}

/** The limit a campaign's runs are held to, as its target says; undefined where there is none to check. */
export function memoryLimitOf(file: CampaignFile): MemoryLimit | undefined {
  const memory = targetMemory(file);
  if (memory.perNode !== undefined) return { bytes: memory.perNode.gib * GIB, per: "node", what: memory.perNode.what };
  if (memory.perGpu !== undefined)
    return { bytes: usableGpuMemoryGiB(memory.perGpu.gib) * GIB, per: "rank", what: memory.perGpu.what };
  return undefined;
}

function targetMemory(file: CampaignFile): TargetMemory {
  return targetOf(file.testbed).memoryOf?.(file.testbed) ?? { device: "cuda" };
}

/** The memory model's constants for a campaign's machines: its calibration's entry, else ringlab's assumption. */
export function memoryConstantsFor(
  file: CampaignFile,
  cpusPerNode: number | undefined,
  calibration?: Calibration,
): MemoryConstants {
  const device = targetMemory(file).device;
  const entries =
    calibration?.memory.filter(
      (candidate) =>
        candidate.device === device && (device === "cuda" || candidate.cpusPerNode === (cpusPerNode ?? null)),
    ) ?? [];
  return constantsOf(entries, ASSUMED_MEMORY[device]) ?? ASSUMED_MEMORY[device];
}

const gib = (bytes: number) => `${(bytes / GIB).toFixed(2)} GiB`;

/** A planned training run as the memory model asks about it (another layout or node count where given). */
export function memoryRun(run: PlannedRun, knobs: PlannedRun["knobs"] = run.knobs, nodes = run.nodes): MemoryRun {
  return {
    model: run.model!,
    batchSize: run.batchSize!,
    nodes,
    knobs,
    ...(run.processesPerNode === undefined ? {} : { processesPerNode: run.processesPerNode }),
  };
}

/** The predicted use a limit holds the run to. */
function used(run: MemoryRun, constants: MemoryConstants, limit: MemoryLimit): number | undefined {
  const prediction = predictMemory(run, constants);
  if (!isMemoryPrediction(prediction)) return undefined;
  return limit.per === "node" ? prediction.nodeBytes : prediction.rankBytes;
}

/** Layouts that hold less, in the order a user would try them, each with how a message names it. */
function alternatives(run: PlannedRun, testbedNodes: number): { readonly name: string; readonly run: MemoryRun }[] {
  const sharded = { ...run.knobs, parallelism: "fsdp", fsdpSharding: "full" } as PlannedRun["knobs"];
  const nodeCounts = [...new Set([run.nodes, testbedNodes])].filter((nodes) => nodes >= run.nodes);
  const options = nodeCounts.map((nodes) => ({
    name: `fsdp full shard on ${nodes} node${nodes === 1 ? "" : "s"}`,
    run: memoryRun(run, sharded, nodes),
  }));
  if (run.knobs["activationCheckpointing"] !== true && run.model?.startsWith("gpt")) {
    options.push(
      ...nodeCounts.map((nodes) => ({
        name: `fsdp full shard with activationCheckpointing on ${nodes} node${nodes === 1 ? "" : "s"}`,
        run: memoryRun(run, { ...sharded, activationCheckpointing: true }, nodes),
      })),
    );
  }
  return options;
}

/**
 * Why nothing fits: the node's processes before any model are over the limit already, or the model is too big for every
 * layout.
 */
function noLayoutFits(run: PlannedRun, constants: MemoryConstants, limit: MemoryLimit): string {
  const before = constants.launcherBytes + (run.processesPerNode ?? 1) * constants.baselineBytes;
  if (limit.per === "node" && before > limit.bytes) {
    return `no layout fits: a node holds ${gib(before)} before any model (its launcher and each worker process's baseline), more than the limit; raise it`;
  }
  return "no layout ringlab knows fits it there: use a smaller batch or model, or more memory";
}

/** Every problem of the plan, one line each (a configuration is named once, by its first run). */
export function planProblems(plan: CampaignPlan, file: CampaignFile, constants: MemoryConstants): string[] {
  const limit = memoryLimitOf(file);
  const problems = new Map<string, string>();
  for (const run of plan.runs) {
    if (run.job !== "train" || run.model === undefined || problems.has(run.configuration)) continue;
    const layout = dimsOf(run.knobs, run.nodes * (run.processesPerNode ?? 1), run.nodes);
    const problem = layout.ok
      ? (shapeProblems(run.model, run.knobs, layout.dims.tp)[0]?.message ??
        layoutProblem(run.knobs, run.batchSize!, layout.dims))
      : layout.problem;
    if (problem !== undefined) {
      problems.set(run.configuration, `${run.configuration}: ${problem}`);
      continue;
    }
    if (limit === undefined) continue;
    const needed = used(memoryRun(run), constants, limit);
    if (needed === undefined || needed <= limit.bytes) continue;
    const fitting = alternatives(run, file.testbed.nodes)
      .map((option) => ({ ...option, bytes: used(option.run, constants, limit) }))
      .find((option) => option.bytes !== undefined && option.bytes <= limit.bytes);
    const prediction = predictMemory(memoryRun(run), constants);
    const perRank = isMemoryPrediction(prediction) ? `${gib(prediction.rankBytes)} predicted per rank` : "";
    problems.set(
      run.configuration,
      `${run.configuration} does not fit: ${perRank}${limit.per === "node" ? `, ${gib(needed)} per node` : ""}, ` +
        `${gib(limit.bytes)} per ${limit.per} (${limit.what}); ` +
        (fitting !== undefined
          ? `fits with ${fitting.name}: ${gib(fitting.bytes!)}`
          : noLayoutFits(run, constants, limit)) +
        ` (${prediction && isMemoryPrediction(prediction) ? prediction.source : constants.source})`,
    );
  }
  return [...problems.values()];
}

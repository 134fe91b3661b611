/**
 * A campaign's runs, planned from the file alone. Pure: the same file always gives the same runs, ids and
 * order, which is what makes resuming safe.
 */
import { createHash } from "node:crypto";
import { TRAIN_KNOBS, type Reduction } from "../config/registry.ts";
import type { CampaignFile, CampaignSection, DatasetSection, Model, TrainKnobName } from "../config/schema.ts";
import { TRAIN_KNOB_NAMES } from "../config/schema.ts";
import { UsageError } from "../errors.ts";
import type { LauncherName } from "../launchers/names.ts";
import type { Job } from "../results/record.ts";

export interface PlannedRun {
  /** Stable across invocations: names the run's record, logs and rendezvous. */
  readonly id: string;
  readonly job: Job;
  readonly nodes: number;
  /**
   * Worker processes on each node, when the matrix has processesPerNode; absent: the worker's default, one
   * process per GPU on GPU nodes and one on CPU nodes.
   */
  readonly processesPerNode?: number;
  /** Link rate, or null for single-node runs, which send nothing over the network. */
  readonly bandwidth: string | null;
  /** 1-based. */
  readonly repeat: number;
  readonly model?: Model;
  readonly batchSize?: number;
  /** Train knobs set by the campaign (matrix axes and fixed ones), by campaign name. */
  readonly knobs: Readonly<Partial<Record<TrainKnobName, string | number | boolean>>>;
  readonly workerArgs: readonly string[];
  /** Changes whenever anything that shapes the measurement changes; a resumed campaign reruns such runs. */
  readonly fingerprint: string;
}

export interface CampaignPlan {
  /** The campaign's name: its file name without extension. */
  readonly name: string;
  readonly runs: readonly PlannedRun[];
  /** Nodes the testbed is provisioned with, once for the whole campaign: testbed.nodes. */
  readonly nodesToProvision: number;
  /** The most nodes any run uses; provisioning more leaves nodes idle. */
  readonly largestRunNodes: number;
  /** The most worker processes any run starts at once (nodes × processes per node). */
  readonly largestRunWorkers: number;
  /** A run still going after this is stopped and recorded as failed. */
  readonly runTimeoutSeconds: number;
  /** Keep the testbed after the campaign (the file's `keep`). */
  readonly keep: boolean;
  /** How runs start (the file's `launcher`). */
  readonly launcher: LauncherName;
  /** The dataset some train runs read; written to the shared storage before the runs when `generate`. */
  readonly dataset?: DatasetSection;
}

/** Bounds a silent peer inside the worker, well inside the run's own limit. */
const WORKER_TIMEOUT_SECONDS = 120;

/** The campaign's name from its file: the one rule in src/rules/names.ts, under the name callers here use. */
export { campaignNameOf as campaignName } from "../rules/names.ts";

export function planCampaign(file: CampaignFile, name: string): CampaignPlan {
  const section = file.campaign;
  if (section === undefined) {
    throw new UsageError("the file has no campaign section, so there is nothing to run", {
      hint: "add campaign.matrix (see campaigns/local-smoke.yaml), or use `ringlab up` for a testbed alone",
    });
  }
  const runs = orderRuns(section, runMakers(section));
  return {
    name, runs, nodesToProvision: file.testbed.nodes, largestRunNodes: Math.max(0, ...runs.map((run) => run.nodes)),
    largestRunWorkers: Math.max(...runs.map((run) => run.nodes * (run.processesPerNode ?? 1)), 0),
    runTimeoutSeconds: section.runTimeoutSeconds, keep: section.keep, launcher: section.launcher,
    ...(section.dataset !== undefined && runs.some((run) => run.knobs.data === "dataset") ? { dataset: section.dataset } : {}),
  };
}

/** Where a run goes: its nodes, its processes per node (undefined: the worker's default) and its link rate (null: one node). */
interface Slot {
  readonly nodes: number;
  readonly processesPerNode: number | undefined;
  readonly bandwidth: string | null;
}

/** One training configuration of the matrix: model, batch size and the knob values varied by the matrix. */
interface TrainConfig {
  readonly model: Model;
  readonly batchSize: number;
  readonly varied: readonly (readonly [TrainKnobName, string | number | boolean])[];
}

interface RunMakers {
  readonly train: (slot: Slot, config: TrainConfig, repeat: number) => PlannedRun;
  readonly probe: (slot: Slot, reduction: Reduction, repeat: number) => PlannedRun;
}

/** The train and probe runs of one campaign section: their ids, knobs and worker arguments. */
function runMakers(section: CampaignSection): RunMakers {
  const workerTimeout = Math.min(WORKER_TIMEOUT_SECONDS, section.runTimeoutSeconds);
  const slotParts = ({ nodes, processesPerNode, bandwidth }: Slot) => [`n${nodes}`, ...placementPart(processesPerNode), ...(bandwidth === null ? [] : [bandwidth])];
  const slotFields = ({ nodes, processesPerNode, bandwidth }: Slot) => ({ nodes, ...placementField(processesPerNode), bandwidth });
  const train = (slot: Slot, { model, batchSize, varied }: TrainConfig, repeat: number): PlannedRun => {
    const knobs = { ...section.train, ...Object.fromEntries(varied) } as PlannedRun["knobs"];
    const idParts = ["train", model, `b${batchSize}`, ...slotParts(slot), ...varied.map(([knob, value]) => `${knob.toLowerCase()}-${String(value)}`), `r${repeat}`];
    const workerArgs = ["--model", model, "--batch-size", String(batchSize), ...knobArgs(knobs, section.dataset?.name), "--timeout-seconds", String(workerTimeout)];
    return withFingerprint({ id: idParts.join("-"), job: "train", ...slotFields(slot), repeat, model, batchSize, knobs, workerArgs });
  };
  // The probe measures each reduction the training runs use (ring: the ids and arguments it always had).
  const probe = (slot: Slot, reduction: Reduction, repeat: number): PlannedRun => {
    const { minBytes, maxBytes, stepFactor, warmupIters, iters } = section.probe;
    const ring = reduction === "ring";
    const workerArgs = ["--min-bytes", String(minBytes), "--max-bytes", String(maxBytes), "--step-factor", String(stepFactor),
      "--warmup-iters", String(warmupIters), "--iters", String(iters), ...(ring ? [] : ["--reduction", reduction]),
      "--timeout-seconds", String(workerTimeout)];
    const id = ["allreduce", ...slotParts(slot), ...(ring ? [] : [reduction]), `r${repeat}`].join("-");
    return withFingerprint({ id, job: "allreduce", ...slotFields(slot), repeat, knobs: ring ? {} : { reduction }, workerArgs });
  };
  return { train, probe };
}

/**
 * The order the runs execute in. Single-node runs first: they do not depend on the link, so they run once,
 * whatever the bandwidths (with several processes per node, the probe measures their exchange inside the node).
 * Then one group per bandwidth, so links are reshaped once per group; repeats outermost within a group, so slow
 * drift of the machine spreads over all configurations instead of biasing one. Placements of more workers than
 * maxWorkers are left out.
 */
function orderRuns(section: CampaignSection, make: RunMakers): PlannedRun[] {
  const matrix = section.matrix;
  const nodeCounts = unique(matrix.nodes).sort((a, b) => a - b);
  const repeats = Array.from({ length: section.repeats }, (_, i) => i + 1);
  const trainConfigs = trainConfigsOf(section);
  const probeReductions = unique(matrix.reduction ?? [section.train.reduction ?? "ring"]);
  const allPlacements: (number | undefined)[] = matrix.processesPerNode === undefined ? [undefined] : unique(matrix.processesPerNode).sort((a, b) => a - b);
  const withinMaxWorkers = (nodes: number, processes: number | undefined) => section.maxWorkers === undefined || nodes * (processes ?? 1) <= section.maxWorkers;
  const placementsOn = (nodes: number) => allPlacements.filter((processes) => withinMaxWorkers(nodes, processes));
  const runs: PlannedRun[] = [];
  for (const repeat of nodeCounts.includes(1) ? repeats : []) {
    for (const processesPerNode of placementsOn(1)) {
      const slot = { nodes: 1, processesPerNode, bandwidth: null };
      if ((processesPerNode ?? 1) > 1 && section.probe.enabled) for (const reduction of probeReductions) runs.push(make.probe(slot, reduction, repeat));
      for (const config of trainConfigs) runs.push(make.train(slot, config, repeat));
    }
  }
  const multiNode = nodeCounts.filter((nodes) => nodes > 1);
  for (const bandwidth of unique(matrix.bandwidth)) {
    for (const repeat of repeats) {
      const slots = multiNode.flatMap((nodes) => placementsOn(nodes).map((processesPerNode) => ({ nodes, processesPerNode, bandwidth })));
      if (section.probe.enabled) for (const slot of slots) for (const reduction of probeReductions) runs.push(make.probe(slot, reduction, repeat));
      for (const slot of slots) for (const config of trainConfigs) runs.push(make.train(slot, config, repeat));
    }
  }
  return runs;
}

/** Every model × batch size × combination of the knob axes, in the matrix's order. */
function trainConfigsOf(section: CampaignSection): TrainConfig[] {
  const matrix = section.matrix;
  const knobAxes = TRAIN_KNOB_NAMES.filter((knob) => matrix[knob] !== undefined);
  const knobCombinations = cartesian(knobAxes.map((knob) => (matrix[knob] as (string | number | boolean)[]).map((value) => [knob, value] as const)));
  return unique(matrix.model).flatMap((model) => unique(matrix.batchSize).flatMap((batchSize) =>
    knobCombinations.map((varied) => ({ model, batchSize, varied }))));
}

/** Runs still to do: those without an "ok" record of the same fingerprint. */
export function remainingRuns(plan: CampaignPlan, finished: ReadonlyMap<string, { status: string; fingerprint: string }>): PlannedRun[] {
  return plan.runs.filter((run) => {
    const record = finished.get(run.id);
    return record === undefined || record.status !== "ok" || record.fingerprint !== run.fingerprint;
  });
}

/** How often the links must be reshaped when the runs execute in this order. */
export function reshapeCount(runs: readonly PlannedRun[]): number {
  let current: string | null = null;
  let count = 0;
  for (const run of runs) {
    if (run.bandwidth !== null && run.bandwidth !== current) {
      current = run.bandwidth;
      count++;
    }
  }
  return count;
}

function knobArgs(knobs: PlannedRun["knobs"], datasetName: string | undefined): string[] {
  return TRAIN_KNOB_NAMES.flatMap((knob) => {
    const value = knobs[knob];
    if (value === undefined || value === false) return [];
    // The worker finds the dataset under the testbed's shared storage (RINGLAB_SHARED_DIR) by its name.
    if (knob === "data") return value === "dataset" ? ["--data", `dataset:${datasetName}`] : ["--data", "synthetic"];
    const flag = TRAIN_KNOBS[knob].flag;
    return value === true ? [flag] : [flag, String(value)];
  });
}

/** "p4" in a run's id for 4 processes per node; nothing for 1 or the default, so ids of campaigns without the axis stay as they were. */
function placementPart(processesPerNode: number | undefined): string[] {
  return processesPerNode === undefined || processesPerNode === 1 ? [] : [`p${processesPerNode}`];
}

function placementField(processesPerNode: number | undefined): { processesPerNode?: number } {
  return processesPerNode === undefined ? {} : { processesPerNode };
}

function withFingerprint(run: Omit<PlannedRun, "fingerprint">): PlannedRun {
  // Processes per node only when the matrix sets them (on GPU nodes an explicit 1 differs from the default), so
  // records made before the axis existed keep their fingerprints.
  const placement = run.processesPerNode === undefined ? [] : [run.processesPerNode];
  const essence = JSON.stringify([run.job, run.nodes, ...placement, run.bandwidth, run.workerArgs]);
  return { ...run, fingerprint: createHash("sha256").update(essence).digest("hex").slice(0, 16) };
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

function cartesian<T>(axes: readonly (readonly T[])[]): T[][] {
  return axes.reduce<T[][]>((combos, axis) => combos.flatMap((combo) => axis.map((value) => [...combo, value])), [[]]);
}

/**
 * A campaign's runs, planned from the file alone. Pure: the same file always gives the same runs, ids and
 * order, which is what makes resuming safe.
 */
import { createHash } from "node:crypto";
import type { CampaignFile, DatasetSection, Launcher, Model, TrainKnobName } from "../config/schema.ts";
import { TRAIN_KNOB_NAMES } from "../config/schema.ts";
import { UsageError } from "../errors.ts";
import type { Reduction } from "../results/cost-model.ts";
import type { Job } from "../runner.ts";

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
  readonly launcher: Launcher;
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
  const matrix = section.matrix;
  const knobAxes = TRAIN_KNOB_NAMES.filter((knob) => matrix[knob] !== undefined);
  const knobCombinations = cartesian(knobAxes.map((knob) => (matrix[knob] as (string | number | boolean)[]).map((value) => [knob, value] as const)));
  const workerTimeout = Math.min(WORKER_TIMEOUT_SECONDS, section.runTimeoutSeconds);

  const trainRun = (nodes: number, processesPerNode: number | undefined, bandwidth: string | null, model: Model, batchSize: number, varied: readonly (readonly [TrainKnobName, unknown])[], repeat: number): PlannedRun => {
    const knobs = { ...section.train, ...Object.fromEntries(varied) } as PlannedRun["knobs"];
    const idParts = ["train", model, `b${batchSize}`, `n${nodes}`, ...placementPart(processesPerNode), ...(bandwidth === null ? [] : [bandwidth]),
      ...varied.map(([knob, value]) => `${knob.toLowerCase()}-${String(value)}`), `r${repeat}`];
    const workerArgs = ["--model", model, "--batch-size", String(batchSize), ...knobArgs(knobs, section.dataset?.name), "--timeout-seconds", String(workerTimeout)];
    return withFingerprint({ id: idParts.join("-"), job: "train", nodes, ...placementField(processesPerNode), bandwidth, repeat, model, batchSize, knobs, workerArgs });
  };
  // The probe measures each reduction the training runs use (ring: the ids and arguments it always had).
  const probeRun = (nodes: number, processesPerNode: number | undefined, bandwidth: string | null, reduction: Reduction, repeat: number): PlannedRun => {
    const probe = section.probe;
    const ring = reduction === "ring";
    const workerArgs = ["--min-bytes", String(probe.minBytes), "--max-bytes", String(probe.maxBytes), "--step-factor", String(probe.stepFactor),
      "--warmup-iters", String(probe.warmupIters), "--iters", String(probe.iters), ...(ring ? [] : ["--reduction", reduction]),
      "--timeout-seconds", String(workerTimeout)];
    const id = ["allreduce", `n${nodes}`, ...placementPart(processesPerNode), ...(bandwidth === null ? [] : [bandwidth]), ...(ring ? [] : [reduction]), `r${repeat}`].join("-");
    return withFingerprint({ id, job: "allreduce", nodes, ...placementField(processesPerNode), bandwidth, repeat, knobs: ring ? {} : { reduction }, workerArgs });
  };
  const probeReductions = unique(matrix.reduction ?? [section.train.reduction ?? "ring"]);

  const nodeCounts = unique(matrix.nodes).sort((a, b) => a - b);
  const bandwidths = unique(matrix.bandwidth);
  const repeats = Array.from({ length: section.repeats }, (_, i) => i + 1);
  const trainConfigs = unique(matrix.model).flatMap((model) => unique(matrix.batchSize).flatMap((batchSize) =>
    knobCombinations.map((varied) => ({ model, batchSize, varied }))));

  const fits = (nodes: number, processes: number | undefined) => section.maxWorkers === undefined || nodes * (processes ?? 1) <= section.maxWorkers;
  const placements: (number | undefined)[] = matrix.processesPerNode === undefined ? [undefined] : unique(matrix.processesPerNode).sort((a, b) => a - b);
  const runs: PlannedRun[] = [];
  // Single-node runs first: they do not depend on the link, so they run once, whatever the bandwidths (with
  // several processes per node, the probe measures their exchange inside the node).
  for (const repeat of repeats) {
    if (!nodeCounts.includes(1)) break;
    for (const processes of placements.filter((p) => fits(1, p))) {
      if ((processes ?? 1) > 1 && section.probe.enabled) for (const reduction of probeReductions) runs.push(probeRun(1, processes, null, reduction, repeat));
      for (const { model, batchSize, varied } of trainConfigs) runs.push(trainRun(1, processes, null, model, batchSize, varied, repeat));
    }
  }
  // Then one group per bandwidth, so links are reshaped once per group; repeats outermost within a group,
  // so slow drift of the machine spreads over all configurations instead of biasing one.
  for (const bandwidth of bandwidths) {
    for (const repeat of repeats) {
      for (const nodes of nodeCounts.filter((n) => n > 1)) {
        for (const processes of placements.filter((p) => fits(nodes, p))) {
          if (section.probe.enabled) for (const reduction of probeReductions) runs.push(probeRun(nodes, processes, bandwidth, reduction, repeat));
        }
      }
      for (const nodes of nodeCounts.filter((n) => n > 1)) {
        for (const processes of placements.filter((p) => fits(nodes, p))) {
          for (const { model, batchSize, varied } of trainConfigs) runs.push(trainRun(nodes, processes, bandwidth, model, batchSize, varied, repeat));
        }
      }
    }
  }
  return {
    name, runs, nodesToProvision: file.testbed.nodes, largestRunNodes: Math.max(0, ...runs.map((run) => run.nodes)),
    largestRunWorkers: Math.max(...runs.map((run) => run.nodes * (run.processesPerNode ?? 1)), 0),
    runTimeoutSeconds: section.runTimeoutSeconds, keep: section.keep, launcher: section.launcher,
    ...(section.dataset !== undefined && runs.some((run) => run.knobs.data === "dataset") ? { dataset: section.dataset } : {}),
  };
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
    const flag = `--${knob.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
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

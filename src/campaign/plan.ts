/**
 * A campaign's runs, planned from the file alone. Pure: the same file always gives the same runs, ids and
 * order, which is what makes resuming safe.
 */
import { createHash } from "node:crypto";
import {
  KNOB_OWNERS,
  ownerAxisValue,
  probedAs,
  TRAIN_KNOBS,
  type Collective,
  type ProbeLibrary,
  type Reduction,
} from "../config/registry.ts";
import type { AnyCampaignFile, CampaignSection, DatasetSection, Model, TrainKnobName } from "../config/schema.ts";
import { TRAIN_KNOB_NAMES } from "../config/schema.ts";
import { UsageError } from "../util/errors.ts";
import { gapOfTestbed, type TestbedSection } from "../targets/index.ts";
import type { LauncherName } from "../launchers/names.ts";
import type { Job } from "../results/record.ts";
import { configurationKey } from "../results/configuration.ts";
import type { RunToPredict } from "../results/predictions.ts";

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
  /**
   * 1-based, counted per configuration. A single-node baseline runs in every bandwidth group (next to the points it
   * normalizes), so its repeats go on counting from one group to the next.
   */
  readonly repeat: number;
  /** The run's configuration: its id without the repeat; every repeat of it has the same. */
  readonly configuration: string;
  /**
   * The round of its bandwidth group it belongs to (1-based): one run of every configuration of the group per round.
   */
  readonly round: number;
  /**
   * With repeatUntil, a round past minRepeats: the run takes place only if its configuration's interval is still
   * wider than the target when the round starts (src/campaign/precision.ts).
   */
  readonly conditional: boolean;
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
  /** The file's repeatUntil: rounds past minRepeats are conditional. */
  readonly repeatUntil?: RepeatUntil;
}

export type RepeatUntil = NonNullable<CampaignSection["repeatUntil"]>;

/**
 * Bounds a silent peer inside the worker (the rendezvous' join and every collective), well inside the run's own
 * limit. Where a run's workers do not start together (its target lacks "simultaneous-start": a Kubernetes run's pods
 * start when the cluster schedules them and their nodes have pulled the image, which can be minutes apart), the
 * worker waits as long as the run may take (a Job's activeDeadlineSeconds).
 */
const WORKER_TIMEOUT_SECONDS = 120;

function workerTimeoutSeconds(testbed: TestbedSection, runTimeoutSeconds: number): number {
  return gapOfTestbed(testbed, "simultaneous-start") !== undefined
    ? runTimeoutSeconds
    : Math.min(WORKER_TIMEOUT_SECONDS, runTimeoutSeconds);
}

/** The campaign's name from its file: the one rule in src/rules/names.ts, under the name callers here use. */
export { campaignNameOf as campaignName } from "../rules/names.ts";

export function planCampaign(file: Pick<AnyCampaignFile, "testbed" | "campaign">, name: string): CampaignPlan {
  const section = file.campaign;
  if (section === undefined) {
    throw new UsageError("the file has no campaign section, so there is nothing to run", {
      hint: "add campaign.matrix (see campaigns/local-smoke.yaml), or use `ringlab up` for a testbed alone",
    });
  }
  const runs = orderRuns(section, runMakers(section, workerTimeoutSeconds(file.testbed, section.runTimeoutSeconds)));
  return {
    name,
    runs,
    nodesToProvision: file.testbed.nodes,
    largestRunNodes: Math.max(0, ...runs.map((run) => run.nodes)),
    largestRunWorkers: Math.max(...runs.map((run) => run.nodes * (run.processesPerNode ?? 1)), 0),
    runTimeoutSeconds: section.runTimeoutSeconds,
    keep: section.keep,
    launcher: section.launcher,
    ...(section.dataset !== undefined && runs.some((run) => run.knobs.data === "dataset")
      ? { dataset: section.dataset }
      : {}),
    ...(section.repeatUntil === undefined ? {} : { repeatUntil: section.repeatUntil }),
  };
}

/**
 * Where a run goes: its nodes, its processes per node (undefined: the worker's default) and its link rate (null: one
 * node).
 */
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

/** Where a run falls in the order: its repeat and round (PlannedRun), and whether its round is conditional. */
interface Turn {
  readonly repeat: number;
  readonly round: number;
  readonly conditional: boolean;
}

interface RunMakers {
  readonly train: (slot: Slot, config: TrainConfig, turn: Turn) => PlannedRun;
  readonly probe: (slot: Slot, kind: ProbeKind, turn: Turn) => PlannedRun;
}

/** One kind of probe run: how it sums (reduction, library) and which collective it times. */
interface ProbeKind {
  readonly reduction: Reduction;
  readonly library: ProbeLibrary;
  readonly collective: Collective;
}

/** The train and probe runs of one campaign section: their ids, knobs and worker arguments. */
function runMakers(section: CampaignSection, workerTimeout: number): RunMakers {
  const slotParts = ({ nodes, processesPerNode, bandwidth }: Slot) => [
    `n${nodes}`,
    ...placementPart(processesPerNode),
    ...(bandwidth === null ? [] : [bandwidth]),
  ];
  const slotFields = ({ nodes, processesPerNode, bandwidth }: Slot) => ({
    nodes,
    ...placementField(processesPerNode),
    bandwidth,
  });
  const train = (slot: Slot, { model, batchSize, varied }: TrainConfig, turn: Turn): PlannedRun => {
    const knobs = Object.fromEntries(
      withoutOthersKnobs(Object.entries({ ...section.train, ...Object.fromEntries(varied) }), model, section),
    ) as PlannedRun["knobs"];
    const configuration = [
      "train",
      model,
      `b${batchSize}`,
      ...slotParts(slot),
      ...varied.map(([knob, value]) => `${knob.toLowerCase()}-${String(value)}`),
    ].join("-");
    const workerArgs = [
      "--model",
      model,
      "--batch-size",
      String(batchSize),
      ...knobArgs(knobs, section.dataset?.name),
      "--timeout-seconds",
      String(workerTimeout),
    ];
    return withFingerprint({
      id: `${configuration}-r${turn.repeat}`,
      configuration,
      ...turn,
      job: "train",
      ...slotFields(slot),
      model,
      batchSize,
      knobs,
      workerArgs,
    });
  };
  // The probe measures each reduction the training runs use (ring: the ids and arguments it always had), each
  // library of probe.library (torch: the ids and arguments it always had), and each collective of probe.collective
  // (all-reduce: the ids and arguments it always had).
  const firstReduction = probedReductions(section)[0]!;
  const firstCollective = probedCollectives(section)[0]!;
  const probe = (slot: Slot, { reduction, library, collective }: ProbeKind, turn: Turn): PlannedRun => {
    const { minBytes, maxBytes, stepFactor, warmupIters, iters } = section.probe;
    const ring = reduction === "ring";
    const mpi = library === "mpi";
    const allReduce = collective === "all-reduce";
    // The reference once per link, node count and repeat: with the first kind of probe (torch.distributed's).
    const reference =
      section.probe.reference !== undefined &&
      slot.nodes > 1 &&
      library === "torch" &&
      reduction === firstReduction &&
      collective === firstCollective;
    const workerArgs = [
      "--min-bytes",
      String(minBytes),
      "--max-bytes",
      String(maxBytes),
      "--step-factor",
      String(stepFactor),
      "--warmup-iters",
      String(warmupIters),
      "--iters",
      String(iters),
      ...(ring ? [] : ["--reduction", reduction]),
      ...(mpi ? ["--library", "mpi"] : []),
      ...(allReduce ? [] : ["--collective", collective]),
      ...(reference ? ["--reference", section.probe.reference!] : []),
      "--timeout-seconds",
      String(workerTimeout),
    ];
    const configuration = [
      "allreduce",
      ...slotParts(slot),
      ...(ring ? [] : [reduction]),
      ...(mpi ? ["mpi"] : []),
      ...(allReduce ? [] : [collective]),
    ].join("-");
    const knobs = { ...(ring ? {} : { reduction }), ...(mpi ? { library } : {}), ...(allReduce ? {} : { collective }) };
    return withFingerprint({
      id: `${configuration}-r${turn.repeat}`,
      configuration,
      ...turn,
      job: "allreduce",
      ...slotFields(slot),
      knobs,
      workerArgs,
    });
  };
  return { train, probe };
}

/**
 * The order the runs execute in: one group per bandwidth, so links are reshaped once per group. Within a group,
 * rounds: each round runs the probes, then the single-node baselines, then every multi-node point once, so that a slow
 * minute of the machine falls on all configurations of a round instead of biasing one, and the baseline is measured
 * next to the points it normalizes (in every group, so at least as often as any point). The single-node probes of
 * several processes per node (their exchange inside the node) run in the first group only. With repeatUntil, the
 * rounds past minRepeats are conditional (PlannedRun.conditional) and hold no probes. Placements of more workers than
 * maxWorkers are left out.
 */
function orderRuns(section: CampaignSection, make: RunMakers): PlannedRun[] {
  const matrix = section.matrix;
  const nodeCounts = unique(matrix.nodes).sort((a, b) => a - b);
  const rounds = section.repeatUntil?.maxRepeats ?? section.repeats ?? 1;
  const unconditionalRounds = section.repeatUntil?.minRepeats ?? rounds;
  const trainConfigs = trainConfigsOf(section);
  const reductions = probedReductions(section);
  // Open MPI sums with its own algorithm: it has no reductions of ringlab's, only its all-reduce. A collective other
  // than the all-reduce is torch.distributed's own (its reductions are ways to all-reduce).
  const collectives = probedCollectives(section);
  const probeKinds = unique<ProbeLibrary>(section.probe.library ?? ["torch"]).flatMap((library): ProbeKind[] =>
    library === "mpi"
      ? collectives.includes("all-reduce")
        ? [{ reduction: "ring", library, collective: "all-reduce" }]
        : []
      : collectives.flatMap((collective): ProbeKind[] =>
          collective === "all-reduce"
            ? reductions.map((reduction) => ({ reduction, library, collective }))
            : [{ reduction: "ring", library, collective }],
        ),
  );
  const allPlacements: (number | undefined)[] =
    matrix.processesPerNode === undefined ? [undefined] : unique(matrix.processesPerNode).sort((a, b) => a - b);
  const withinMaxWorkers = (nodes: number, processes: number | undefined) =>
    section.maxWorkers === undefined || nodes * (processes ?? 1) <= section.maxWorkers;
  const placementsOn = (nodes: number) => allPlacements.filter((processes) => withinMaxWorkers(nodes, processes));
  const singleNodeSlots = nodeCounts.includes(1)
    ? placementsOn(1).map((processesPerNode) => ({ nodes: 1, processesPerNode, bandwidth: null }))
    : [];
  const multiNode = nodeCounts.filter((nodes) => nodes > 1);
  // A campaign of single-node runs alone has one group, with no link to shape.
  const groups: (string | null)[] = multiNode.length === 0 ? [null] : unique(matrix.bandwidth);
  const exclude = excludedBy(matrix.exclude ?? []);
  const runs: PlannedRun[] = [];
  groups.forEach((bandwidth, group) => {
    const slots =
      bandwidth === null
        ? []
        : multiNode.flatMap((nodes) =>
            placementsOn(nodes).map((processesPerNode) => ({ nodes, processesPerNode, bandwidth })),
          );
    for (let round = 1; round <= rounds; round++) {
      const turn = { repeat: round, round, conditional: round > unconditionalRounds };
      const baselineTurn = { ...turn, repeat: group * rounds + round };
      // Probes repeat in the unconditional rounds only: each run's many iterations already give every size's rate.
      if (section.probe.enabled && !turn.conditional) {
        if (group === 0)
          for (const slot of singleNodeSlots.filter((s) => (s.processesPerNode ?? 1) > 1))
            for (const kind of probeKinds) runs.push(make.probe(slot, kind, turn));
        for (const slot of slots) for (const kind of probeKinds) runs.push(make.probe(slot, kind, turn));
      }
      for (const slot of singleNodeSlots)
        for (const config of trainConfigs)
          if (!exclude.excludes(slot, config)) runs.push(make.train(slot, config, baselineTurn));
      for (const slot of slots)
        for (const config of trainConfigs)
          if (!exclude.excludes(slot, config)) runs.push(make.train(slot, config, turn));
    }
  });
  const unused = exclude.unused();
  if (unused.length > 0) {
    throw new UsageError(
      `campaign.matrix.exclude ${unused.map((index) => `entry ${index + 1} (${JSON.stringify(matrix.exclude![index])})`).join(", ")} ` +
        "leaves out no training run: no run of the matrix has all of its values",
      {
        hint: "a single-node run has no bandwidth, and a knob that belongs to other runs (microBatches of a pipeline) is not one of theirs; fix or drop the entry",
      },
    );
  }
  return runs;
}

type ExcludeEntry = NonNullable<CampaignSection["matrix"]["exclude"]>[number];

/**
 * Whether matrix.exclude leaves a train run out: it matches every field of one entry (a knob the run does not have,
 * such as microBatches for ddp, matches nothing). An entry that leaves out no run at all is refused: it is a typo or
 * a leftover, and the runs it meant to leave out would run.
 */
function excludedBy(entries: readonly ExcludeEntry[]): {
  readonly excludes: (slot: Slot, config: TrainConfig) => boolean;
  readonly unused: () => number[];
} {
  const used = new Set<number>();
  const axisValue = (slot: Slot, config: TrainConfig, axis: string): unknown => {
    if (axis === "nodes" || axis === "processesPerNode" || axis === "bandwidth") return slot[axis];
    if (axis === "model" || axis === "batchSize") return config[axis];
    return config.varied.find(([knob]) => knob === axis)?.[1];
  };
  const excludes = (slot: Slot, config: TrainConfig) => {
    const index = entries.findIndex((entry) =>
      Object.entries(entry).every(([axis, value]) => axisValue(slot, config, axis) === value),
    );
    if (index >= 0) used.add(index);
    return index >= 0;
  };
  return { excludes, unused: () => entries.map((_, index) => index).filter((index) => !used.has(index)) };
}

/** Every model × batch size × combination of the knob axes, in the matrix's order. */
function trainConfigsOf(section: CampaignSection): TrainConfig[] {
  const matrix = section.matrix;
  const knobAxes = TRAIN_KNOB_NAMES.filter((knob) => matrix[knob] !== undefined);
  // A knob that belongs to some runs (a strategy's powersgdRank, a layout's microBatches, a language model's
  // sequenceLength) varies only those: the others would repeat themselves.
  const combinations = cartesian(
    knobAxes.map((knob) => (matrix[knob] as (string | number | boolean)[]).map((value) => [knob, value] as const)),
  );
  return unique(matrix.model).flatMap((model) => {
    const byConfiguration = new Map(
      combinations
        .map((combination) => withoutOthersKnobs(combination, model, section))
        .map((varied) => [JSON.stringify(varied), varied] as const),
    );
    return unique(matrix.batchSize).flatMap((batchSize) =>
      [...byConfiguration.values()].map((varied) => ({ model, batchSize, varied })),
    );
  });
}

/**
 * The reductions the probes measure: the training runs' (PowerSGD and local SGD train over the ring's link, so the
 * ring's).
 */
function probedReductions(section: CampaignSection): Reduction[] {
  return unique((section.matrix.reduction ?? [section.train.reduction ?? "ring"]).map(probedAs));
}

/** probe.collective, in the file's order; the all-reduce alone when absent. */
function probedCollectives(section: CampaignSection): Collective[] {
  return unique<Collective>(section.probe.collective ?? ["all-reduce"]);
}

/**
 * The knobs without those that belong to models, layouts or reductions the run does not have (registry.json's
 * belongsTo: its model's kind; its parallelism and reduction, varied, fixed in train, or the default).
 */
function withoutOthersKnobs<E extends readonly [string, unknown]>(
  knobs: readonly E[],
  model: Model,
  section: CampaignSection,
): E[] {
  const own = Object.fromEntries([...Object.entries(section.train), ...knobs]);
  return knobs.filter(([knob]) => {
    const owner = KNOB_OWNERS[knob as TrainKnobName];
    return owner === undefined || owner.values.includes(ownerAxisValue(owner.axis, model, own));
  });
}

/** What remainingRuns needs to know of a run's latest record. */
export interface FinishedRun {
  readonly status: string;
  readonly fingerprint: string;
}

/**
 * Runs still to do: those without an "ok" record of the same fingerprint, and those whose latest record `redo` picks
 * (`--rerun-flagged`: a disturbed measurement, results/steadiness.ts).
 */
export function remainingRuns<R extends FinishedRun>(
  plan: CampaignPlan,
  finished: ReadonlyMap<string, R>,
  options: { redo?: (record: R) => boolean } = {},
): PlannedRun[] {
  return plan.runs.filter((run) => {
    const record = finished.get(run.id);
    return (
      record === undefined ||
      record.status !== "ok" ||
      record.fingerprint !== run.fingerprint ||
      options.redo?.(record) === true
    );
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

/**
 * "p4" in a run's id for 4 processes per node; nothing for 1 or the default, so ids of campaigns without the axis stay
 * as they were.
 */
function placementPart(processesPerNode: number | undefined): string[] {
  return processesPerNode === undefined || processesPerNode === 1 ? [] : [`p${processesPerNode}`];
}

function placementField(processesPerNode: number | undefined): { processesPerNode?: number } {
  return processesPerNode === undefined ? {} : { processesPerNode };
}

/** The campaign's runs as decidePredictions asks them: each with its configuration on the campaign's testbed. */
export function runsToPredict(plan: CampaignPlan, cpusPerNode: number | undefined): RunToPredict[] {
  return plan.runs.map((run) => ({
    id: run.id,
    fingerprint: run.fingerprint,
    configuration: configurationKey({ ...run, ...(cpusPerNode === undefined ? {} : { cpusPerNode }) }),
  }));
}

function withFingerprint(run: Omit<PlannedRun, "fingerprint">): PlannedRun {
  // Neither where the run falls in the order (round, conditional) nor its configuration's name changes what it
  // measures. Processes per node only when the matrix sets them (on GPU nodes an explicit 1 differs from the default),
  // so records made before the axis existed keep their fingerprints.
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

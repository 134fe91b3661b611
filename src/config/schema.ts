/**
 * The campaign file schema: every field, its type and its default, in one place.
 *
 * Pure: takes the plain object that YAML parsing produced and returns typed, defaulted values or a list of
 * problems (field path + message). The rules themselves live in src/rules/ (shared with the constructs and
 * the CLI), each testbed target's section and rules in src/targets/, problem wording in ./problems.ts, reading files
 * in ./load.ts.
 */
import { z } from "zod";
import { BANDWIDTH_HELP, bandwidthGbps } from "../rules/bandwidth.ts";
import { DEFAULT_LAUNCHER, LAUNCHER_NAMES, type LauncherName } from "../launchers/names.ts";
import { AWS_DEFAULTS } from "../targets/aws/target.ts";
import { gapOfTestbed, targetOf, targetsThatCan, TESTBED_SECTIONS, type TestbedSection } from "../targets/index.ts";
import { KUBERNETES_DEFAULTS } from "../targets/kubernetes/target.ts";
import { LOCAL_DEFAULTS } from "../targets/local/target.ts";
import { DEFAULT_MAX_NODES, safePath, type IssueAt } from "./fields.ts";
import { combinationProblems, knobRuleProblems } from "./knob-rules.ts";
import { describeIssues, type ConfigProblem } from "./problems.ts";
import {
  COLLECTIVES,
  MODEL_KIND,
  MODELS,
  PLAIN_STEPS_KNOB,
  PROBE_LIBRARIES,
  STRATEGIES,
  TRAIN_KNOB_NAMES as KNOB_NAMES,
  TRAIN_KNOBS,
  type Model,
  type Reduction,
  type TrainKnob,
  type TrainKnobName,
  type TrainKnobValue,
} from "./registry.ts";

export { describeValue, type ConfigProblem } from "./problems.ts";
/** The testbed sections' own pieces live with their targets (src/targets/); these names stay for their callers. */
export { availabilityZoneOf, TERRAFORM_BINARIES } from "../targets/aws/target.ts";

/**
 * Defaults, documented once (each target's own in its module, src/targets/); docs/campaign-file.md is generated from
 * the schema.
 */
export const DEFAULTS = {
  maxNodes: DEFAULT_MAX_NODES,
  local: LOCAL_DEFAULTS,
  aws: AWS_DEFAULTS,
  kubernetes: KUBERNETES_DEFAULTS,
} as const;

type RefinementContext = z.core.$RefinementCtx;
/**
 * Cross-field rules run only once every field passed its own rules: zod keeps going after most issues, and
 * a rule over the whole testbed must not see a matrix axis that is still a bare 0 or a malformed CIDR.
 */
const FIELDS_VALID = { when: (payload: z.core.ParsePayload) => payload.issues.length === 0 };

const testbed = z.discriminatedUnion("target", TESTBED_SECTIONS).superRefine((tb, ctx) => {
  if (tb.nodes > tb.maxNodes) {
    ctx.addIssue({
      code: "custom",
      path: ["nodes"],
      message: `found ${tb.nodes}, expected at most maxNodes (${tb.maxNodes}); raise maxNodes deliberately to go higher`,
    });
  }
  targetOf(tb).checkTestbed?.(tb, issueAt(ctx));
}, FIELDS_VALID);

/** A target's rules report their problems through this. */
function issueAt(ctx: RefinementContext): IssueAt {
  return (path, message) => ctx.addIssue({ code: "custom", path: [...path], message });
}

/** Models the worker can train, from its registry (docker/worker/ringlab_worker/registry.json, ./registry.ts). */
export { MODELS, type Model, type TrainKnobName };

/** Where a train run's batches come from (the `data` knob). */
export const DATA_SOURCES = TRAIN_KNOBS.data.choices!;

/**
 * The worker's train knobs by campaign name (its registry's trainKnobs); each becomes its `flag` on the worker's
 * command line.
 */
export const TRAIN_KNOB_NAMES: TrainKnobName[] = [...KNOB_NAMES];

type TrainKnobSchemas = { readonly [K in TrainKnobName]: z.ZodType<TrainKnobValue<K>> };

/**
 * A knob's own rule, from its registry entry: an integer or a number within its range, one of its choices, or a switch.
 */
function knobSchema(knob: TrainKnob): z.ZodType {
  switch (knob.type) {
    case "int":
      return withinRange(z.int(), knob);
    case "number":
      return withinRange(z.number(), knob);
    case "enum":
      return z.enum(knob.choices!);
    case "switch":
      return z.boolean();
  }
}

function withinRange(schema: z.ZodNumber | z.ZodInt, knob: TrainKnob): z.ZodType {
  const checks = [
    knob.min === undefined ? [] : [z.gte(knob.min)],
    knob.gt === undefined ? [] : [z.gt(knob.gt)],
    knob.max === undefined ? [] : [z.lte(knob.max)],
    knob.lt === undefined ? [] : [z.lt(knob.lt)],
  ].flat();
  return checks.length === 0 ? schema : schema.check(...checks);
}

const trainKnobs = Object.fromEntries(
  TRAIN_KNOB_NAMES.map((name) => [name, knobSchema(TRAIN_KNOBS[name])]),
) as TrainKnobSchemas;

/**
 * Each knob's field with its registry line (`about`) as its description and the worker's default as its default, in
 * train and in the matrix alike; at the field, not on the knob's own schema, so that a matrix axis (a value or a list
 * of them) says it once. The default is what JSON Schema's is, a note for readers: the knob stays unset, and the worker
 * uses its own.
 */
function describedKnobs<S extends Readonly<Record<TrainKnobName, z.ZodType>>>(fields: S): S {
  return Object.fromEntries(
    TRAIN_KNOB_NAMES.map((name) => {
      const { about, default: workerDefault } = TRAIN_KNOBS[name];
      return [
        name,
        fields[name].meta({
          ...(about === undefined ? {} : { description: about }),
          ...(workerDefault === null ? {} : { default: workerDefault }),
        }),
      ];
    }),
  ) as unknown as S;
}

const bandwidth = z
  .string()
  .refine((rate) => bandwidthGbps(rate) !== undefined, { error: `expected ${BANDWIDTH_HELP}` });

/** A matrix axis: a list of values, or one value. */
function axis<T extends z.ZodType>(value: T) {
  return z.union([value, z.array(value).min(1)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.output<T>[]);
}

/** Most worker processes per node: a GPU node runs one per GPU, and 8 GPUs is the largest node sold. */
export const MOST_PROCESSES_PER_NODE = 16;

/** Every train knob is also a matrix axis: a list of values, or one value. */
type KnobAxes = { readonly [K in TrainKnobName]: z.ZodOptional<z.ZodType<TrainKnobValue<K>[]>> };
const knobAxis = (name: TrainKnobName): z.ZodOptional<z.ZodType<unknown[]>> =>
  axis<z.ZodType>(trainKnobs[name]).optional();
const knobAxes = Object.fromEntries(TRAIN_KNOB_NAMES.map((name) => [name, knobAxis(name)])) as KnobAxes;

/** One combination of matrix values left out (matrix.exclude): each field a single value of one axis. */
const excludeEntry = z
  .strictObject({
    nodes: z.int().min(1).optional(),
    processesPerNode: z.int().min(1).max(MOST_PROCESSES_PER_NODE).optional(),
    model: z.enum(MODELS).optional(),
    batchSize: z.int().min(1).optional(),
    bandwidth: bandwidth.optional(),
    ...(Object.fromEntries(TRAIN_KNOB_NAMES.map((name) => [name, trainKnobs[name].optional()])) as {
      [K in TrainKnobName]: z.ZodOptional<z.ZodType<TrainKnobValue<K>>>;
    }),
  })
  .refine((entry) => Object.keys(entry).length > 0, {
    error: "an empty entry would leave out every run: name at least one axis and its value",
  });

const matrix = z
  .strictObject({
    nodes: axis(z.int().min(1)).describe(
      "Node counts; 1 is every bandwidth's single-node baseline, which sends nothing over the network.",
    ),
    processesPerNode: axis(z.int().min(1).max(MOST_PROCESSES_PER_NODE))
      .optional()
      .describe(
        "Worker processes per node (torchrun's nproc_per_node): N nodes × P processes; absent, one per GPU on GPU nodes and one on CPU nodes. " +
          "On GPU nodes the GPUs used per node; on the local testbed each process gets testbed.cpusPerNode cores, as each GPU brings its own compute.",
      ),
    model: axis(z.enum(MODELS)).describe("Models the worker trains (docker/worker/ringlab_worker/registry.json)."),
    batchSize: axis(z.int().min(1)).describe("Samples per worker process and step."),
    bandwidth: axis(bandwidth).describe(
      `Rates the nodes' links are shaped to with tc, one after another: ${BANDWIDTH_HELP} (not shaped).`,
    ),
    ...describedKnobs(knobAxes),
    exclude: z
      .array(excludeEntry)
      .min(1)
      .optional()
      .describe(
        "Combinations left out of the training runs, as in a CI matrix: a train run matching every field of one entry does not run. " +
          "Each field is one of the matrix's own axes and one of its values: `{ nodes: 3, pipelineSchedule: 1f1b, microBatches: 2 }` " +
          "keeps 2 micro-batches for GPipe and for 2-node 1F1B. The probes are not excluded.",
      ),
  })
  .describe(
    "Every combination of these axes runs; each axis is one value or a list of them, and every train knob is an axis too.",
  );

const dataset = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, {
        error: "expected lower-case letters, digits and '-', at most 63 characters",
      })
      .describe("Its folder under <sharedDir>/datasets/."),
    kind: z
      .enum(["images", "text"])
      .default("images")
      .describe(
        "images (for the image models): the ImageNet layout above; text (for the language models): train.bin and val.bin, the bytes of the " +
          "worker's Python standard library source, a byte-level corpus (classes, imagesPerClass and imageSize do not apply; heldOut does).",
      ),
    generate: z
      .boolean()
      .default(true)
      .describe("Write it before the runs; false: it must already be there (a real dataset)."),
    classes: z.int().min(2).max(1000).default(10).describe("Class folders written."),
    imagesPerClass: z.int().min(2).max(100_000).default(100).describe("Both splits together."),
    imageSize: z.int().min(8).max(512).default(32).describe("Width and height of the images written, in pixels."),
    heldOut: z.number().gt(0).lt(1).default(0.2).describe("The fraction of each class in the held-out split (val/)."),
    seed: z.int().min(0).default(0).describe("The generator's seed: the same seed writes the same images."),
  })
  .refine((d) => d.kind === "text" || Math.round(d.imagesPerClass * d.heldOut) >= 1, {
    path: ["heldOut"],
    error:
      "holds out no image per class at this imagesPerClass (time to train measures accuracy on them); raise heldOut or imagesPerClass",
  })
  .describe(
    "The dataset that train runs with `data: dataset` read: on the testbed's shared storage, at <sharedDir>/datasets/<name>, in ImageNet's layout (train/ and val/ folders of class folders). " +
      "The campaign writes it once before its runs (the worker's `dataset` job: deterministic, learnable JPEG images) unless `generate` is false, " +
      "in which case it must already be there (a real dataset).",
  );

export const PROBE_DEFAULTS = {
  enabled: true,
  minBytes: 4096,
  maxBytes: 64 * 1024 * 1024,
  stepFactor: 4,
  warmupIters: 2,
  iters: 5,
} as const;

const campaignSection = z
  .strictObject({
    matrix,
    maxWorkers: z
      .int()
      .min(1)
      .optional()
      .describe(
        "Combinations of more workers (nodes × processesPerNode) than this are left out of the plan: with `nodes: [1, 2, 4], " +
          "processesPerNode: [1, 2, 4], maxWorkers: 4` the placements of 4 workers are 1×4, 2×2 and 4×1.",
      ),
    repeats: z
      .int()
      .min(1)
      .max(100)
      .optional()
      .describe(
        "Each combination runs this many times; the report shows mean and 95% interval. Default 1 (without repeatUntil).",
      ),
    repeatUntil: z
      .strictObject({
        halfWidth: z.number().gt(0).max(0.5).describe("A share of the mean: 0.03 is ±3 %."),
        minRepeats: z
          .int()
          .min(2)
          .max(100)
          .default(2)
          .describe("At least this many repeats: one repeat has no interval."),
        maxRepeats: z
          .int()
          .min(2)
          .max(100)
          .default(5)
          .describe("At most this many repeats, however wide the interval still is."),
      })
      .optional()
      .describe(
        "Instead of a fixed `repeats`: each training configuration (the single-node baseline too) repeats until the 95 % interval of its " +
          "throughput is within ±halfWidth of its mean, at least minRepeats and at most maxRepeats times.",
      ),
    runTimeoutSeconds: z
      .int()
      .min(10)
      .default(900)
      .describe("A run still going after this is stopped and recorded as failed."),
    train: z
      .strictObject(describedKnobs(trainKnobs))
      .partial()
      .default({})
      .describe("Knobs fixed for every train run (a knob may be here or in the matrix, not both)."),
    probe: z
      .strictObject({
        enabled: z.boolean().default(PROBE_DEFAULTS.enabled).describe("Run the probe at all."),
        minBytes: z.int().min(4).default(PROBE_DEFAULTS.minBytes).describe("The smallest message summed, in bytes."),
        maxBytes: z.int().min(4).default(PROBE_DEFAULTS.maxBytes).describe("The largest message summed, in bytes."),
        stepFactor: z
          .int()
          .min(2)
          .default(PROBE_DEFAULTS.stepFactor)
          .describe("Each message size is this many times the one before."),
        warmupIters: z
          .int()
          .min(0)
          .default(PROBE_DEFAULTS.warmupIters)
          .describe("Untimed iterations per message size."),
        iters: z.int().min(1).default(PROBE_DEFAULTS.iters).describe("Timed iterations per message size."),
        library: axis(z.enum(PROBE_LIBRARIES))
          .optional()
          .describe(
            "What sums: torch (torch.distributed's backend: Gloo on CPU, NCCL on GPUs) and/or mpi (Open MPI's MPI_Allreduce through mpi4py, " +
              "in the same worker on the same link; needs launcher mpi). Each probe runs once per library.",
          ),
        collective: axis(z.enum(COLLECTIVES))
          .optional()
          .describe(
            "Which collectives it times (nccl-tests' all_reduce_perf, all_gather_perf, reduce_scatter_perf, sendrecv_perf): all-reduce (the " +
              "default), and the all-gather and reduce-scatter of FSDP and the sends of a pipeline, whose own α and β then predict those layouts' " +
              "steps (without them the all-reduce's are used, said to be derived). Each runs once per node count and link; one other than " +
              "all-reduce through torch.distributed only (probe.library torch).",
          ),
        reference: z
          .enum(["iperf3"])
          .optional()
          .describe(
            "iperf3: before each multi-node probe, one TCP stream from node 1 to node 0 (3 s), the rate no library can beat.",
          ),
      })
      .default({ ...PROBE_DEFAULTS })
      .describe("The all-reduce bandwidth probe, once per node count (2 or more) and bandwidth."),
    dataset: dataset.optional(),
    keep: z
      .boolean()
      .default(false)
      .describe("Keep the testbed after the campaign (default: tear it down, also on failure and Ctrl-C)."),
    launcher: z
      .enum(LAUNCHER_NAMES)
      .default(DEFAULT_LAUNCHER)
      .describe(
        "How runs start: `ansible` (every node's worker container started by ansible/run.yml), `slurm` (the testbed is made a Slurm " +
          "cluster, and each run is one sbatch job whose script is kept with the run's logs), or `mpi` (Open MPI is installed, and each run " +
          "is one mpirun on the head, its mpirun.sh kept with the run's logs).",
      ),
    resultsDir: safePath().optional().describe("Default: results/<campaign file name without extension>."),
  })
  .describe("What runs: the matrix of training runs, the bandwidth probe, how often each repeats.");

type CampaignOutput = z.output<typeof campaignSection>;

export const campaignFileSchema = z
  .strictObject({
    testbed: testbed.describe(
      "Where the runs run: the nodes, and the target that brings them (local, aws or kubernetes).",
    ),
    campaign: campaignSection.optional(),
  })
  .superRefine((file, ctx) => {
    const campaign = file.campaign;
    if (campaign === undefined) return;
    const largest = campaign.matrix.nodes.reduce((most, nodes) => Math.max(most, nodes), 0);
    if (largest > file.testbed.nodes) {
      ctx.addIssue({
        code: "custom",
        path: ["campaign", "matrix", "nodes"],
        message: `found ${largest}, expected at most testbed.nodes (${file.testbed.nodes}); raise testbed.nodes or drop that node count`,
      });
    }
    for (const name of TRAIN_KNOB_NAMES) {
      if (campaign.matrix[name] !== undefined && campaign.train[name] !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["campaign", "train", name],
          message: `${name} is also a matrix axis; set it in one place`,
        });
      }
    }
    const precisions = [...(campaign.matrix.precision ?? []), campaign.train.precision];
    const noGpu = gapOfTestbed(file.testbed, "gpu");
    if (noGpu !== undefined && precisions.includes("amp"))
      ctx.addIssue({ code: "custom", path: ["campaign"], message: `precision amp needs a GPU; ${noGpu}` });
    const engines = [...(campaign.matrix.engine ?? []), campaign.train.engine];
    const noHorovod = gapOfTestbed(file.testbed, "horovod");
    if (noHorovod !== undefined && engines.includes("horovod"))
      ctx.addIssue({ code: "custom", path: ["campaign"], message: `engine horovod needs Horovod, ${noHorovod}` });
    const settings = { models: campaign.matrix.model, values: (knob: TrainKnobName) => knobValues(campaign, knob) };
    for (const { knob, message } of [...knobRuleProblems(settings), ...combinationProblems(settings)]) {
      ctx.addIssue({ code: "custom", path: ["campaign", "train", knob], message });
    }
    checkDataKnobs(campaign, ctx);
    checkStrategyKnobs(campaign, ctx);
    checkExcludes(campaign, ctx);
    targetOf(file.testbed).checkCampaign?.(file.testbed, campaign, issueAt(ctx));
    checkTargetGaps(file.testbed, campaign, ctx);
    if (campaign.repeats !== undefined && campaign.repeatUntil !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["campaign", "repeatUntil"],
        message: "set either repeats (a fixed count) or repeatUntil (repeat until the interval is narrow), not both",
      });
    }
    if (campaign.repeatUntil !== undefined && campaign.repeatUntil.maxRepeats < campaign.repeatUntil.minRepeats) {
      ctx.addIssue({
        code: "custom",
        path: ["campaign", "repeatUntil", "maxRepeats"],
        message: `found ${campaign.repeatUntil.maxRepeats}, expected at least minRepeats (${campaign.repeatUntil.minRepeats})`,
      });
    }
    checkProbeLibraries(file.testbed, campaign, ctx);
    if (campaign.probe.maxBytes < campaign.probe.minBytes) {
      ctx.addIssue({
        code: "custom",
        path: ["campaign", "probe", "maxBytes"],
        message: `found ${campaign.probe.maxBytes}, expected at least minBytes (${campaign.probe.minBytes})`,
      });
    }
  }, FIELDS_VALID);

/**
 * What the campaign asks of its testbed that the testbed's target cannot do (its gaps, src/targets/): refused with the
 * target's reason, not written into runs that could not do it.
 */
function checkTargetGaps(testbed: TestbedSection, campaign: CampaignOutput, ctx: RefinementContext): void {
  const issue = (path: string[], message: string) => ctx.addIssue({ code: "custom", path, message });
  const noLaunchers = gapOfTestbed(testbed, "launchers");
  if (noLaunchers !== undefined && campaign.launcher !== DEFAULT_LAUNCHER) {
    const configured = targetsThatCan("launchers")
      .map((target) => target.name)
      .join(", ");
    issue(
      ["campaign", "launcher"],
      `found ${campaign.launcher}: ${noLaunchers}; ${campaign.launcher} needs a testbed ringlab configures (${configured})`,
    );
  }
  const noNodeLoss = gapOfTestbed(testbed, "node-loss");
  const failNodes = [...(campaign.matrix.failNode ?? []), campaign.train.failNode].filter(
    (value) => value !== undefined,
  );
  if (noNodeLoss !== undefined && failNodes.length > 0)
    issue(["campaign", "train", "failNode"], `${noNodeLoss}: leave failNode out`);
  const noRounds = gapOfTestbed(testbed, "repeat-until");
  if (noRounds !== undefined && campaign.repeatUntil !== undefined) {
    issue(
      ["campaign", "repeatUntil"],
      `repeatUntil decides between rounds which runs are still needed, ${noRounds}: use repeats`,
    );
  }
  const noDataset = gapOfTestbed(testbed, "dataset-generate");
  if (noDataset !== undefined && campaign.dataset?.generate === true)
    issue(["campaign", "dataset", "generate"], noDataset);
}

/**
 * Each matrix.exclude entry names axes the matrix varies, with values it has: anything else would leave out nothing.
 */
function checkExcludes(campaign: CampaignOutput, ctx: RefinementContext): void {
  const axes = campaign.matrix as unknown as Readonly<Record<string, readonly unknown[] | undefined>>;
  (campaign.matrix.exclude ?? []).forEach((entry, index) => {
    for (const [axisName, value] of Object.entries(entry)) {
      const values = axes[axisName];
      const path = ["campaign", "matrix", "exclude", index, axisName];
      if (values === undefined) {
        ctx.addIssue({
          code: "custom",
          path,
          message: `${axisName} is not one of the matrix's axes, so excluding it leaves out nothing; make it an axis or drop it here`,
        });
      } else if (!values.includes(value)) {
        ctx.addIssue({
          code: "custom",
          path,
          message: `found ${JSON.stringify(value)}, expected one of the matrix's ${axisName}: ${values.map((v) => JSON.stringify(v)).join(", ")}`,
        });
      }
    }
  });
}

/** Every value a campaign gives a knob, in the matrix and in train. */
function knobValues<K extends TrainKnobName>(campaign: CampaignOutput, knob: K): TrainKnobValue<K>[] {
  return [...((campaign.matrix[knob] ?? []) as unknown[]), campaign.train[knob]].filter(
    (value) => value !== undefined,
  ) as TrainKnobValue<K>[];
}

/** Real data and time to train: the knobs that only make sense together. */
function checkDataKnobs(campaign: CampaignOutput, ctx: RefinementContext): void {
  const values = <K extends TrainKnobName>(knob: K) => knobValues(campaign, knob);
  const sources = values("data");
  if (sources.includes("dataset") && campaign.dataset === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["campaign", "dataset"],
      message: "data: dataset needs a campaign.dataset section (its name, and how to generate it)",
    });
  }
  if (sources.includes("dataset") && campaign.dataset !== undefined) {
    // An image model reads images, a language model text: one dataset serves the models of one kind.
    const wrong = campaign.matrix.model.filter(
      (model) => (MODEL_KIND[model] === "language" ? "text" : "images") !== campaign.dataset!.kind,
    );
    if (wrong.length > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["campaign", "dataset", "kind"],
        message:
          `found ${campaign.dataset.kind}, but ${wrong.join(", ")} ${wrong.length === 1 ? "reads" : "read"} ` +
          `${campaign.dataset.kind === "text" ? "images" : "text"}: a campaign's dataset serves models of one kind (image models: kind images; language models: kind text); put the others in a campaign of their own`,
      });
    }
  }
  const timeToTrain = values("epochs").length > 0;
  if (timeToTrain && (sources.length === 0 || sources.includes("synthetic"))) {
    ctx.addIssue({
      code: "custom",
      path: ["campaign", "train", "epochs"],
      message: "epochs trains over the dataset: set train.data to dataset (synthetic data has no held-out split)",
    });
  }
  const recovers = values("checkpointEvery").length > 0 && values("maxRestarts").some((restarts) => restarts >= 1);
  if (values("failAtStep").length > 0 && !recovers) {
    ctx.addIssue({
      code: "custom",
      path: ["campaign", "train", "failAtStep"],
      message:
        "a killed rank recovers only with checkpointEvery and maxRestarts of 1 or more: set both (without them the run just fails)",
    });
  }
  if (values("minNodes").length > 0 && timeToTrain && !recovers) {
    ctx.addIssue({
      code: "custom",
      path: ["campaign", "train", "minNodes"],
      message:
        "the nodes left after a loss go on only by restarting from a checkpoint: set checkpointEvery and maxRestarts of 1 or more",
    });
  }
  const fewestNodes = Math.min(...campaign.matrix.nodes);
  const fewestRanks = fewestNodes * Math.min(...(campaign.matrix.processesPerNode ?? [1]));
  const failRank = Math.max(-1, ...values("failRank"));
  if (failRank >= fewestRanks) {
    ctx.addIssue({
      code: "custom",
      path: ["campaign", "train", "failRank"],
      message: `found ${failRank}, but the smallest run has ${fewestRanks} rank${fewestRanks === 1 ? "" : "s"} (0 to ${fewestRanks - 1})`,
    });
  }
  checkNodeLoss(campaign, values("failNode"), values("minNodes"), fewestNodes, ctx);
}

/** The strategies (PowerSGD, local SGD): their plain all-reduce steps must fall in the untimed batches. */
function checkStrategyKnobs(campaign: CampaignOutput, ctx: RefinementContext): void {
  const values = <K extends TrainKnobName>(knob: K) => knobValues(campaign, knob);
  const reductions = values("reduction");
  const issue = (knob: string, message: string) =>
    ctx.addIssue({ code: "custom", path: ["campaign", "train", knob], message });
  const strategies = reductions.filter((reduction) => STRATEGIES.includes(reduction));
  if (strategies.length === 0) return;
  // Throughput is timed after the untimed batches: a strategy still in its plain all-reduce steps then would be timed
  // sending the whole gradient, while the report counts its compressed bytes.
  const fewestWarmup = Math.min(
    ...(values("numWarmupBatches").length > 0
      ? values("numWarmupBatches")
      : [TRAIN_KNOBS.numWarmupBatches.default as number]),
  );
  for (const [strategy, knob] of Object.entries(PLAIN_STEPS_KNOB) as [Reduction, TrainKnobName][]) {
    const counts = values(knob).map(Number);
    const most = Math.max(...(counts.length > 0 ? counts : [TRAIN_KNOBS[knob].default as number]));
    if (reductions.includes(strategy) && values("epochs").length === 0 && most > fewestWarmup) {
      issue(
        knob,
        `${knob} ${most} outlasts the untimed batches (numWarmupBatches ${fewestWarmup}): timed steps would still send the whole gradient; raise numWarmupBatches to ${most} or more`,
      );
    }
  }
}

/** Why a launcher's job ends when one node's worker is killed (src/launchers/ say the same to `ringlab run`). */
const NODE_LOSS_ENDS_THE_JOB: Partial<Record<LauncherName, string>> = {
  slurm: "its job step is started with srun --kill-on-bad-exit: one killed node ends the others",
  mpi: "mpirun ends every node's process when one exits with an error",
};

/** failNode and minNodes: a lost node never comes back, so the others must be allowed to go on without it. */
function checkNodeLoss(
  campaign: CampaignOutput,
  failNodes: readonly number[],
  minNodes: readonly number[],
  fewestNodes: number,
  ctx: RefinementContext,
): void {
  const issue = (knob: string, message: string) =>
    ctx.addIssue({ code: "custom", path: ["campaign", "train", knob], message });
  const mostMin = Math.max(0, ...minNodes);
  if (mostMin > fewestNodes)
    issue("minNodes", `found ${mostMin}, but the smallest run has ${fewestNodes} node${fewestNodes === 1 ? "" : "s"}`);
  if (failNodes.length === 0) return;
  const failNode = Math.max(...failNodes);
  if (failNode >= fewestNodes) {
    issue(
      "failNode",
      `found ${failNode}, but the smallest run has ${fewestNodes} node${fewestNodes === 1 ? "" : "s"} (0 to ${fewestNodes - 1}; node 0 holds the rendezvous and cannot be lost): put node-loss runs in a campaign of their own`,
    );
  }
  if (minNodes.length === 0 || mostMin >= fewestNodes) {
    issue(
      "minNodes",
      `a lost node does not come back: set minNodes below the smallest run's ${fewestNodes} nodes, so that the others go on without it (without it the run waits for the node and fails)`,
    );
  }
  const why = NODE_LOSS_ENDS_THE_JOB[campaign.launcher];
  if (why !== undefined) issue("failNode", `node loss runs with launcher ansible only (${why})`);
}

/** The probe through Open MPI: its ranks are the ones mpirun starts, one per node, in the CPU worker image. */
function checkProbeLibraries(testbed: TestbedSection, campaign: CampaignOutput, ctx: RefinementContext): void {
  const others = (campaign.probe.collective ?? []).filter((collective) => collective !== "all-reduce");
  if (others.length > 0 && !(campaign.probe.library ?? ["torch"]).includes("torch")) {
    ctx.addIssue({
      code: "custom",
      path: ["campaign", "probe", "collective"],
      message: `${others.join(" and ")} ${others.length === 1 ? "runs" : "run"} through torch.distributed only (Open MPI's probe is its all-reduce): add torch to probe.library`,
    });
  }
  if (!(campaign.probe.library ?? []).includes("mpi")) return;
  const issue = (message: string) => ctx.addIssue({ code: "custom", path: ["campaign", "probe", "library"], message });
  if (campaign.launcher !== "mpi")
    issue(
      `library mpi sums through Open MPI in processes that mpirun starts: set campaign.launcher to mpi (found ${campaign.launcher})`,
    );
  const noMpi = gapOfTestbed(testbed, "mpi-probe");
  if (noMpi !== undefined) issue(`library mpi needs mpi4py in the worker image, ${noMpi}`);
  const placements = campaign.matrix.processesPerNode ?? [1];
  if (placements.some((processes) => processes !== 1)) {
    issue(
      `library mpi runs one process per node (mpirun's ranks are the nodes): set matrix.processesPerNode to 1 (found ${placements.join(", ")})`,
    );
  }
}

/** Any valid campaign file, whatever its target. */
export type AnyCampaignFile = z.output<typeof campaignFileSchema>;
export type KubernetesTestbed = Extract<AnyCampaignFile["testbed"], { target: "kubernetes" }>;
/**
 * A campaign on a testbed ringlab brings up, configures and runs (its target can "provision": the local testbed, AWS):
 * what up, configure, run and synth take. A Kubernetes campaign (KubernetesCampaignFile) runs on a cluster the user
 * has.
 */
export type CampaignFile = Omit<AnyCampaignFile, "testbed"> & {
  readonly testbed: Exclude<AnyCampaignFile["testbed"], KubernetesTestbed>;
};
export type KubernetesCampaignFile = Omit<AnyCampaignFile, "testbed"> & { readonly testbed: KubernetesTestbed };
export type Testbed = CampaignFile["testbed"];
export type LocalTestbed = Extract<Testbed, { target: "local" }>;
export type AwsTestbed = Extract<Testbed, { target: "aws" }>;
export type CampaignSection = NonNullable<AnyCampaignFile["campaign"]>;
export type DatasetSection = NonNullable<CampaignSection["dataset"]>;

export type ValidationResult =
  | { readonly ok: true; readonly value: AnyCampaignFile }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

export function validateCampaign(document: unknown): ValidationResult {
  const parsed = campaignFileSchema.safeParse(document);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, problems: describeIssues(campaignFileSchema, parsed.error.issues, document) };
}

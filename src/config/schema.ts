/**
 * The campaign file schema: every field, its type and its default, in one place.
 *
 * Pure: takes the plain object that YAML parsing produced and returns typed, defaulted values or a list of
 * problems (field path + message). The rules themselves live in src/rules/ (shared with the constructs and
 * the CLI), problem wording in ./problems.ts, reading files in ./load.ts.
 */
import { z } from "zod";
import { BANDWIDTH_HELP, bandwidthGbps } from "../bandwidth.ts";
import { checkEfaInstanceType, checkShapedRate, EFA_SHAPING_PROBLEM, instanceTypeFacts } from "../catalogue/aws-instance-types.ts";
import { checkAmiId, checkRootVolumeGiB } from "../rules/ami.ts";
import { checkIpv4Cidr, checkSshSource, checkSubnetCidr, checkVpcCidr, DEFAULT_SSH_SOURCE_MIN_PREFIX, parseIpv4Cidr, SSH_SOURCE_PREFIX_FLOOR } from "../rules/cidr.ts";
import { checkDnsLabel, checkDnsSubdomain, checkKubeContext, checkLabelKey, checkLabelValue } from "../rules/kubernetes.ts";
import { checkResourceName } from "../rules/names.ts";
import {
  checkDockerImageReference, checkS3BucketName, checkS3Key, checkSafePath, checkTagKey, checkTagValue, checkUnixUserName,
} from "../rules/safe-text.ts";
import { DEFAULT_LAUNCHER, LAUNCHER_NAMES, type LauncherName } from "../launchers/names.ts";
import { SMALLEST_CPU_QUOTA } from "../limits.ts";
import { combinationProblems, knobRuleProblems } from "./knob-rules.ts";
import { describeIssues, type ConfigProblem } from "./problems.ts";
import {
  DDP_HOOK_REDUCTIONS, MODELS, PROBE_LIBRARIES, STRATEGIES, STRATEGY_KNOBS, TRAIN_KNOB_NAMES as KNOB_NAMES, TRAIN_KNOBS, type Model, type Reduction, type TrainKnob, type TrainKnobName, type TrainKnobValue,
} from "./registry.ts";

export { describeValue, type ConfigProblem } from "./problems.ts";

/** What can deploy an AWS testbed's stack: both take the same commands and flags. */
export const TERRAFORM_BINARIES = ["terraform", "tofu"] as const;

/** Defaults, documented once. The README's campaign reference is generated from nothing: keep it in step. */
export const DEFAULTS = {
  /** Guard against a typo that would start many paid machines; raise `maxNodes` deliberately. */
  maxNodes: 10,
  local: {
    /** A private range unlikely to clash with Docker's default pools (172.17-31.x.x). */
    subnet: "10.77.0.0/24",
    workerImage: "ringlab/worker:cpu",
  },
  aws: {
    region: "us-east-1",
    /** One NVIDIA T4, up to 25 Gbit/s: the cheapest GPU instance with a fast network. */
    instanceType: "g4dn.xlarge",
    /** The AWS Deep Learning Base GPU AMI ships the NVIDIA driver, so no driver install at boot (~3 min saved). */
    amiNamePattern: "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *",
    amiOwner: "amazon",
    /** The Deep Learning Base AMI's own snapshot is 75 GiB. */
    rootVolumeGiB: 100,
    sshUser: "ubuntu",
    sharedStorage: "nfs",
    ttlHours: 8,
    vpcCidr: "10.78.0.0/16",
    subnetCidr: "10.78.1.0/24",
    workerImage: "ringlab/worker:gpu",
  },
  kubernetes: {
    gpusPerPod: 1,
    /** The user (and group) the pods run as: not root, as Pod Security "restricted" requires. */
    runAsUser: 1000,
    /** Where the PersistentVolumeClaim is mounted in every pod: datasets, checkpoints, the runs' results. */
    sharedMountPath: "/ringlab",
  },
} as const;

const AWS_REGION_PATTERN = /^[a-z]{2}(-gov)?-[a-z]+-\d$/;
const AVAILABILITY_ZONE_PATTERN = /^[a-z0-9-]{1,64}$/;

/** Text that must pass one of the shared rules; the rule's problem becomes the field's message. */
function ruled(check: (value: string) => string | undefined): z.ZodString {
  return z.string().superRefine((value, ctx) => {
    const problem = check(value);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });
}

const safePath = () => ruled(checkSafePath);
const nodeCount = z.int().min(1);
const tags = z.record(ruled(checkTagKey), ruled(checkTagValue));

const testbedCommon = {
  /** Used in resource names and tags: lower case letters, digits and dashes, at most 24 characters. */
  name: ruled(checkResourceName),
  nodes: nodeCount,
  maxNodes: z.int().min(1).max(1000).default(DEFAULTS.maxNodes),
};

const localTestbed = z.strictObject({
  target: z.literal("local"),
  ...testbedCommon,
  /** The Docker network of the node containers. */
  subnet: ruled((cidr) => checkIpv4Cidr(cidr, { example: DEFAULTS.local.subnet })).default(DEFAULTS.local.subnet),
  /** Host directory shared by all nodes, bind-mounted at the same path; default .ringlab/testbeds/<name>/shared. */
  sharedDir: safePath().optional(),
  workerImage: ruled(checkDockerImageReference).default(DEFAULTS.local.workerImage),
  /**
   * CPU cores every worker process may use (a CFS quota of its node's container in 10 ms periods, src/limits.ts,
   * times the processes there), so that compute is fixed per node (per GPU) as on a real cluster. Default: (this machine's cores - 0.5) / the
   * most processes that run at once (src/testbed/cpu-quota.ts); more than that is refused.
   */
  cpusPerNode: z.number().min(SMALLEST_CPU_QUOTA).optional(),
  /**
   * Memory of every node's worker (GiB, swap included: a cgroup limit of its container), shared by its processes, as a
   * real node has its own memory: a run whose ranks need more is killed by the kernel, and `ringlab plan` refuses one
   * the memory model predicts will not fit before anything starts. Absent: no limit.
   */
  memoryPerNodeGiB: z.number().min(0.25).max(1024).optional(),
});

const s3State = z.strictObject({
  backend: z.literal("s3"),
  bucket: ruled(checkS3BucketName),
  key: ruled(checkS3Key),
  region: z.string().regex(AWS_REGION_PATTERN).optional(),
});
const localState = z.strictObject({ backend: z.literal("local") });

const awsTestbed = z.strictObject({
  target: z.literal("aws"),
  ...testbedCommon,
  region: z.string().regex(AWS_REGION_PATTERN, { error: "expected an AWS region such as us-east-1" }).default(DEFAULTS.aws.region),
  /** Default: the region's "a" zone. */
  availabilityZone: z.string().regex(AVAILABILITY_ZONE_PATTERN, { error: "expected an availability zone such as us-east-1a" }).optional(),
  instanceType: z.string().regex(/^[a-z][a-z0-9-]*\.[a-z0-9-]+$/, { error: "expected an EC2 instance type such as g4dn.xlarge" })
    .default(DEFAULTS.aws.instanceType),
  /** Default: the newest AWS Deep Learning Base GPU AMI (Ubuntu 22.04), looked up at deploy time. */
  ami: ruled(checkAmiId).optional(),
  rootVolumeGiB: z.int().superRefine((size, ctx) => {
    const problem = checkRootVolumeGiB(size);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  }).default(DEFAULTS.aws.rootVolumeGiB),
  /** Path to an OpenSSH public key; relative paths are relative to the campaign file. */
  sshPublicKeyFile: safePath().optional(),
  /** The public key text itself, instead of sshPublicKeyFile. */
  sshPublicKey: z.string().min(1).optional(),
  /** Default: sshPublicKeyFile without ".pub". */
  sshPrivateKeyFile: safePath().optional(),
  sshUser: ruled(checkUnixUserName).default(DEFAULTS.aws.sshUser),
  /** Who may reach the nodes over SSH, e.g. your address as 203.0.113.7/32. */
  adminCidr: ruled((cidr) => checkIpv4Cidr(cidr, { example: "203.0.113.7/32" })),
  /** The widest adminCidr accepted (as a prefix length) unless allowSshFromAnywhere; 16 lets a /16 through, never wider than a /8. */
  sshSourceMinPrefix: z.int().min(SSH_SOURCE_PREFIX_FLOOR).max(32).default(DEFAULT_SSH_SOURCE_MIN_PREFIX),
  /** An adminCidr wider than sshSourceMinPrefix or a /8 (0.0.0.0/0 included) is refused unless this says so. */
  allowSshFromAnywhere: z.boolean().default(false),
  sharedStorage: z.enum(["nfs", "efs"]).default(DEFAULTS.aws.sharedStorage),
  spot: z.boolean().default(false),
  efa: z.boolean().default(false),
  /** A cluster placement group for the nodes; turn off where none can be had (capacity, an emulator). */
  placementGroup: z.boolean().default(true),
  /** Written into the ringlab:expires-at tag so a sweeper can find leftovers. */
  ttlHours: z.number().positive().max(24 * 30).default(DEFAULTS.aws.ttlHours),
  tags: tags.default({}),
  vpcCidr: ruled(checkVpcCidr).default(DEFAULTS.aws.vpcCidr),
  /** Must lie inside vpcCidr (checked with the testbed). */
  subnetCidr: ruled((cidr) => checkIpv4Cidr(cidr, { example: DEFAULTS.aws.subnetCidr })).default(DEFAULTS.aws.subnetCidr),
  state: z.discriminatedUnion("backend", [localState, s3State]).default({ backend: "local" }),
  workerImage: ruled(checkDockerImageReference).default(DEFAULTS.aws.workerImage),
  /** A `docker save` tarball copied to every node; without it nodes pull workerImage from its registry. */
  workerImageTarball: safePath().optional(),
  /** What deploys and destroys the stack. Default: $TERRAFORM_BINARY_NAME, else terraform. */
  terraformBinary: z.enum(TERRAFORM_BINARIES, { error: "expected terraform or tofu" }).optional(),
});

/**
 * A Kubernetes cluster the user already has (issue #38): ringlab provisions and configures nothing there. Each run
 * is an Indexed Job (one pod per node) and a headless Service for torchrun's rendezvous (src/kubernetes/manifests.ts),
 * run by `ringlab campaign` (src/kubernetes/campaign.ts) or written by `ringlab manifests` for `kubectl apply -f`.
 */
const kubernetesTestbed = z.strictObject({
  target: z.literal("kubernetes"),
  ...testbedCommon,
  /** The kubeconfig's context to use; default: its current context. */
  context: ruled(checkKubeContext).optional(),
  namespace: ruled(checkDnsLabel),
  /** The worker image every pod runs, in a registry the cluster pulls from (GPU: ringlab/worker:gpu, tagged and pushed). */
  workerImage: ruled(checkDockerImageReference),
  /** `nvidia.com/gpu` each pod asks for (0: a CPU pod). */
  gpusPerPod: z.int().min(0).max(16).default(DEFAULTS.kubernetes.gpusPerPod),
  /** Where the pods may run, e.g. {"node.kubernetes.io/instance-type": "p4d.24xlarge"}. */
  nodeSelector: z.record(ruled(checkLabelKey), ruled(checkLabelValue)).default({}),
  /** The PersistentVolumeClaim (ReadWriteMany: EFS, NFS) mounted in every pod at /ringlab. */
  sharedClaim: ruled(checkDnsSubdomain),
  /** The pods use their nodes' network (EFA, RDMA): one ringlab pod per node then. */
  hostNetwork: z.boolean().default(false),
  /** Each pod shapes its own egress with tc before the worker starts (needs the NET_ADMIN capability there). */
  shapeInPod: z.boolean().default(false),
  /**
   * The user id (and group id, and fsGroup) the pods' worker runs as; 0 is root, which Pod Security "restricted"
   * refuses ("baseline" allows it). The shared claim must be writable by that user (fsGroup helps where the
   * volume supports it). Kubernetes takes 0 to 2147483647.
   */
  runAsUser: z.int().min(0).max(2147483647).default(DEFAULTS.kubernetes.runAsUser),
});

type RefinementContext = z.core.$RefinementCtx;
/**
 * Cross-field rules run only once every field passed its own rules: zod keeps going after most issues, and
 * a rule over the whole testbed must not see a matrix axis that is still a bare 0 or a malformed CIDR.
 */
const FIELDS_VALID = { when: (payload: z.core.ParsePayload) => payload.issues.length === 0 };

const testbed = z.discriminatedUnion("target", [localTestbed, awsTestbed, kubernetesTestbed]).superRefine((tb, ctx) => {
  if (tb.nodes > tb.maxNodes) {
    ctx.addIssue({
      code: "custom",
      path: ["nodes"],
      message: `found ${tb.nodes}, expected at most maxNodes (${tb.maxNodes}); raise maxNodes deliberately to go higher`,
    });
  }
  if (tb.target === "local") checkLocalTestbed(tb, ctx);
  else if (tb.target === "aws") checkAwsTestbed(tb, ctx);
}, FIELDS_VALID);

function checkLocalTestbed(tb: z.output<typeof localTestbed>, ctx: RefinementContext): void {
  const parsed = parseIpv4Cidr(tb.subnet);
  if (!parsed.ok) return;
  const addresses = 2 ** (32 - parsed.range.prefixLength);
  // Nodes take .10 and up (src/testbed/local-plan.ts); the last address is the broadcast address.
  if (10 + tb.nodes > addresses - 1) {
    ctx.addIssue({ code: "custom", path: ["subnet"], message: `found ${tb.subnet}, too small for ${tb.nodes} nodes; use a /24` });
  }
}

function checkAwsTestbed(tb: z.output<typeof awsTestbed>, ctx: RefinementContext): void {
  const problemAt = (field: string, message: string | undefined): void => {
    if (message !== undefined) ctx.addIssue({ code: "custom", path: [field], message });
  };
  problemAt("adminCidr", checkSshSource(tb.adminCidr, { allowSshFromAnywhere: tb.allowSshFromAnywhere, minPrefixLength: tb.sshSourceMinPrefix }));
  if (tb.sshPublicKeyFile === undefined && tb.sshPublicKey === undefined) {
    problemAt("sshPublicKeyFile", "missing: expected sshPublicKeyFile (a path) or sshPublicKey (the key text)");
  }
  if (tb.sshPublicKeyFile !== undefined && tb.sshPublicKey !== undefined) {
    problemAt("sshPublicKey", "expected only one of sshPublicKeyFile and sshPublicKey");
  }
  if (tb.efa) problemAt("efa", checkEfaInstanceType(tb.instanceType));
  const subnetProblem = checkSubnetCidr(tb.subnetCidr, tb.vpcCidr);
  if (subnetProblem !== undefined) problemAt("subnetCidr", `found ${JSON.stringify(tb.subnetCidr)}, ${subnetProblem}`);
  if (tb.availabilityZone !== undefined && !tb.availabilityZone.startsWith(tb.region)) {
    problemAt("availabilityZone", `found "${tb.availabilityZone}", expected a zone of region ${tb.region} (such as ${tb.region}a)`);
  }
}

/** Models the worker can train, from its registry (docker/worker/ringlab_worker/registry.json, ./registry.ts). */
export { MODELS, type Model, type TrainKnobName };

/** Where a train run's batches come from (the `data` knob). */
export const DATA_SOURCES = TRAIN_KNOBS.data.choices!;

/** The worker's train knobs by campaign name (its registry's trainKnobs); each becomes its `flag` on the worker's command line. */
export const TRAIN_KNOB_NAMES: TrainKnobName[] = [...KNOB_NAMES];

type TrainKnobSchemas = { readonly [K in TrainKnobName]: z.ZodType<TrainKnobValue<K>> };

/** A knob's own rule, from its registry entry: an integer or a number within its range, one of its choices, or a switch. */
function knobSchema(knob: TrainKnob): z.ZodType {
  switch (knob.type) {
    case "int": return withinRange(z.int(), knob);
    case "number": return withinRange(z.number(), knob);
    case "enum": return z.enum(knob.choices!);
    case "switch": return z.boolean();
  }
}

function withinRange(schema: z.ZodNumber | z.ZodInt, knob: TrainKnob): z.ZodType {
  const checks = [
    knob.min === undefined ? [] : [z.gte(knob.min)], knob.gt === undefined ? [] : [z.gt(knob.gt)],
    knob.max === undefined ? [] : [z.lte(knob.max)], knob.lt === undefined ? [] : [z.lt(knob.lt)],
  ].flat();
  return checks.length === 0 ? schema : schema.check(...checks);
}

const trainKnobs = Object.fromEntries(TRAIN_KNOB_NAMES.map((name) => [name, knobSchema(TRAIN_KNOBS[name])])) as TrainKnobSchemas;

const bandwidth = z.string().refine((rate) => bandwidthGbps(rate) !== undefined, { error: `expected ${BANDWIDTH_HELP}` });

/** A matrix axis: a list of values, or one value. */
function axis<T extends z.ZodType>(value: T) {
  return z.union([value, z.array(value).min(1)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.output<T>[]);
}

/** Most worker processes per node: a GPU node runs one per GPU, and 8 GPUs is the largest node sold. */
export const MOST_PROCESSES_PER_NODE = 16;

/** Every train knob is also a matrix axis: a list of values, or one value. */
type KnobAxes = { readonly [K in TrainKnobName]: z.ZodOptional<z.ZodType<TrainKnobValue<K>[]>> };
const knobAxis = (name: TrainKnobName): z.ZodOptional<z.ZodType<unknown[]>> => axis<z.ZodType>(trainKnobs[name]).optional();
const knobAxes = Object.fromEntries(TRAIN_KNOB_NAMES.map((name) => [name, knobAxis(name)])) as KnobAxes;

const matrix = z.strictObject({
  nodes: axis(z.int().min(1)),
  /**
   * Worker processes per node (torchrun's nproc_per_node): N nodes × P processes; absent, one per GPU on GPU nodes
   * and one on CPU nodes. On GPU nodes the GPUs used per node; on the local testbed each process gets
   * testbed.cpusPerNode cores, as each GPU brings its own compute.
   */
  processesPerNode: axis(z.int().min(1).max(MOST_PROCESSES_PER_NODE)).optional(),
  model: axis(z.enum(MODELS)),
  batchSize: axis(z.int().min(1)),
  bandwidth: axis(bandwidth),
  ...knobAxes,
});

/**
 * A dataset on the testbed's shared storage, at <sharedDir>/datasets/<name>, in ImageNet's layout (train/ and val/
 * folders of class folders). The campaign writes it once before its runs (the worker's `dataset` job: deterministic,
 * learnable JPEG images) unless `generate` is false, in which case it must already be there (a real dataset).
 */
const dataset = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, { error: "expected lower-case letters, digits and '-', at most 63 characters" }),
  generate: z.boolean().default(true),
  classes: z.int().min(2).max(1000).default(10),
  /** Both splits together. */
  imagesPerClass: z.int().min(2).max(100_000).default(100),
  imageSize: z.int().min(8).max(512).default(32),
  /** The fraction of each class in the held-out split (val/). */
  heldOut: z.number().gt(0).lt(1).default(0.2),
  seed: z.int().min(0).default(0),
}).refine((d) => Math.round(d.imagesPerClass * d.heldOut) >= 1, {
  path: ["heldOut"], error: "holds out no image per class at this imagesPerClass (time to train measures accuracy on them); raise heldOut or imagesPerClass",
});

export const PROBE_DEFAULTS = { enabled: true, minBytes: 4096, maxBytes: 64 * 1024 * 1024, stepFactor: 4, warmupIters: 2, iters: 5 } as const;

const campaignSection = z.strictObject({
  matrix,
  /**
   * Combinations of more workers (nodes × processesPerNode) than this are left out of the plan: with
   * `nodes: [1, 2, 4], processesPerNode: [1, 2, 4], maxWorkers: 4` the placements of 4 workers are 1×4, 2×2 and 4×1.
   */
  maxWorkers: z.int().min(1).optional(),
  /** Each combination runs this many times; the report shows mean and 95% interval. Default 1 (without repeatUntil). */
  repeats: z.int().min(1).max(100).optional(),
  /**
   * Instead of a fixed `repeats`: each training configuration (the single-node baseline too) repeats until the 95 %
   * interval of its throughput is within ±halfWidth of its mean, at least minRepeats and at most maxRepeats times.
   */
  repeatUntil: z.strictObject({
    /** A share of the mean: 0.03 is ±3 %. */
    halfWidth: z.number().gt(0).max(0.5),
    /** One repeat has no interval. */
    minRepeats: z.int().min(2).max(100).default(2),
    maxRepeats: z.int().min(2).max(100).default(5),
  }).optional(),
  /** A run still going after this is stopped and recorded as failed. */
  runTimeoutSeconds: z.int().min(10).default(900),
  /** Knobs fixed for every train run (a knob may be here or in the matrix, not both). */
  train: z.strictObject(trainKnobs).partial().default({}),
  /** The all-reduce bandwidth probe, once per node count (2 or more) and bandwidth. */
  probe: z.strictObject({
    enabled: z.boolean().default(PROBE_DEFAULTS.enabled),
    minBytes: z.int().min(4).default(PROBE_DEFAULTS.minBytes),
    maxBytes: z.int().min(4).default(PROBE_DEFAULTS.maxBytes),
    stepFactor: z.int().min(2).default(PROBE_DEFAULTS.stepFactor),
    warmupIters: z.int().min(0).default(PROBE_DEFAULTS.warmupIters),
    iters: z.int().min(1).default(PROBE_DEFAULTS.iters),
    /**
     * What sums: torch (torch.distributed's backend: Gloo on CPU, NCCL on GPUs) and/or mpi (Open MPI's MPI_Allreduce
     * through mpi4py, in the same worker on the same link; needs launcher mpi). Each probe runs once per library.
     */
    library: axis(z.enum(PROBE_LIBRARIES)).optional(),
    /** iperf3: before each multi-node probe, one TCP stream from node 1 to node 0 (3 s), the rate no library can beat. */
    reference: z.enum(["iperf3"]).optional(),
  }).default({ ...PROBE_DEFAULTS }),
  /** The dataset that train runs with `data: dataset` read. */
  dataset: dataset.optional(),
  /** Keep the testbed after the campaign (default: tear it down, also on failure and Ctrl-C). */
  keep: z.boolean().default(false),
  /**
   * How runs start: `ansible` (every node's worker container started by ansible/run.yml), `slurm` (the testbed
   * is made a Slurm cluster, and each run is one sbatch job whose script is kept with the run's logs), or `mpi` (Open
   * MPI is installed, and each run is one mpirun on the head, its mpirun.sh kept with the run's logs).
   */
  launcher: z.enum(LAUNCHER_NAMES).default(DEFAULT_LAUNCHER),
  /** Default: results/<campaign file name without extension>. */
  resultsDir: safePath().optional(),
});

type CampaignOutput = z.output<typeof campaignSection>;

export const campaignFileSchema = z.strictObject({
  testbed,
  campaign: campaignSection.optional(),
}).superRefine((file, ctx) => {
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
      ctx.addIssue({ code: "custom", path: ["campaign", "train", name], message: `${name} is also a matrix axis; set it in one place` });
    }
  }
  const precisions = [...(campaign.matrix.precision ?? []), campaign.train.precision];
  if (file.testbed.target === "local" && precisions.includes("amp")) {
    ctx.addIssue({ code: "custom", path: ["campaign"], message: "precision amp needs a GPU; the local testbed runs on CPU (use fp32)" });
  }
  const engines = [...(campaign.matrix.engine ?? []), campaign.train.engine];
  if (file.testbed.target === "local" && engines.includes("horovod")) {
    ctx.addIssue({ code: "custom", path: ["campaign"], message: "engine horovod needs Horovod, which the local testbed's CPU worker image does not have (use ddp)" });
  }
  const settings = { models: campaign.matrix.model, values: (knob: TrainKnobName) => knobValues(campaign, knob) };
  for (const { knob, message } of [...knobRuleProblems(settings), ...combinationProblems(settings)]) {
    ctx.addIssue({ code: "custom", path: ["campaign", "train", knob], message });
  }
  checkDataKnobs(campaign, ctx);
  checkStrategyKnobs(campaign, ctx);
  if (file.testbed.target === "aws") checkAwsLinks(file.testbed, campaign, ctx);
  if (file.testbed.target === "aws") checkProcessesPerGpu(file.testbed.instanceType, campaign.matrix.processesPerNode ?? [], ctx);
  if (file.testbed.target === "kubernetes") checkKubernetesCampaign(file.testbed, campaign, precisions, ctx);
  if (campaign.repeats !== undefined && campaign.repeatUntil !== undefined) {
    ctx.addIssue({ code: "custom", path: ["campaign", "repeatUntil"], message: "set either repeats (a fixed count) or repeatUntil (repeat until the interval is narrow), not both" });
  }
  if (campaign.repeatUntil !== undefined && campaign.repeatUntil.maxRepeats < campaign.repeatUntil.minRepeats) {
    ctx.addIssue({ code: "custom", path: ["campaign", "repeatUntil", "maxRepeats"], message: `found ${campaign.repeatUntil.maxRepeats}, expected at least minRepeats (${campaign.repeatUntil.minRepeats})` });
  }
  checkProbeLibraries(file.testbed.target, campaign, ctx);
  if (file.testbed.target === "local" && file.testbed.memoryPerNodeGiB !== undefined && campaign.launcher !== DEFAULT_LAUNCHER) {
    ctx.addIssue({ code: "custom", path: ["testbed", "memoryPerNodeGiB"], message: `launcher ${campaign.launcher} starts its workers with a CPU limit alone: memoryPerNodeGiB is applied by launcher ${DEFAULT_LAUNCHER}` });
  }
  if (campaign.probe.maxBytes < campaign.probe.minBytes) {
    ctx.addIssue({ code: "custom", path: ["campaign", "probe", "maxBytes"], message: `found ${campaign.probe.maxBytes}, expected at least minBytes (${campaign.probe.minBytes})` });
  }
}, FIELDS_VALID);

/** What a Kubernetes cluster can run of the campaign: links shaped only inside the pods, GPUs only in a GPU image. */
function checkKubernetesCampaign(tb: KubernetesTestbed, campaign: CampaignOutput, precisions: readonly (string | undefined)[], ctx: RefinementContext): void {
  const shaped = campaign.matrix.bandwidth.filter((rate) => bandwidthGbps(rate) !== null);
  const multiNode = campaign.matrix.nodes.some((nodes) => nodes > 1);
  if (multiNode && shaped.length > 0 && !tb.shapeInPod) {
    ctx.addIssue({
      code: "custom", path: ["campaign", "matrix", "bandwidth"],
      message: `found ${shaped.join(", ")}: on Kubernetes a link is shaped only inside the pods; set testbed.shapeInPod: true where the cluster ` +
        "lets pods have the NET_ADMIN capability, or measure the cluster's own network with bandwidth: [unlimited]",
    });
  }
  if (tb.shapeInPod && tb.hostNetwork) {
    ctx.addIssue({ code: "custom", path: ["testbed", "shapeInPod"], message: "with hostNetwork the pods share their nodes' network: shaping there would shape the node itself; turn one of them off" });
  }
  if (tb.gpusPerPod > 0 && /:cpu$/.test(tb.workerImage)) {
    ctx.addIssue({ code: "custom", path: ["testbed", "gpusPerPod"], message: `found ${tb.gpusPerPod} with workerImage ${tb.workerImage}, which has no CUDA: use the GPU image (ringlab/worker:gpu, pushed where the cluster pulls from) or gpusPerPod: 0` });
  }
  if (tb.gpusPerPod === 0 && precisions.includes("amp")) {
    ctx.addIssue({ code: "custom", path: ["campaign"], message: "precision amp needs a GPU; the pods ask for none (testbed.gpusPerPod: 0)" });
  }
  if (campaign.launcher !== DEFAULT_LAUNCHER) {
    ctx.addIssue({ code: "custom", path: ["campaign", "launcher"], message: `found ${campaign.launcher}: on Kubernetes every run is a Job of the cluster's own; ${campaign.launcher} needs a testbed ringlab configures (local, aws)` });
  }
  const processes = campaign.matrix.processesPerNode ?? [];
  if (tb.gpusPerPod > 0 && processes.some((count) => count > tb.gpusPerPod)) {
    ctx.addIssue({ code: "custom", path: ["campaign", "matrix", "processesPerNode"], message: `found ${Math.max(...processes)}, expected at most testbed.gpusPerPod (${tb.gpusPerPod}): each process trains on a GPU of its pod's` });
  }
  // What ringlab's Kubernetes run path (src/kubernetes/campaign.ts) does not do is refused, not written into
  // manifests that could not do it.
  const failNodes = [...(campaign.matrix.failNode ?? []), campaign.train.failNode].filter((value) => value !== undefined);
  if (failNodes.length > 0) {
    ctx.addIssue({ code: "custom", path: ["campaign", "train", "failNode"], message: "a lost node on Kubernetes fails the whole Job (backoffLimit 0), so the others could not go on: leave failNode out" });
  }
  if (campaign.repeatUntil !== undefined) {
    ctx.addIssue({ code: "custom", path: ["campaign", "repeatUntil"], message: "repeatUntil decides between rounds which runs are still needed, which ringlab does not do on Kubernetes yet: use repeats" });
  }
  if (campaign.dataset?.generate === true) {
    ctx.addIssue({ code: "custom", path: ["campaign", "dataset", "generate"], message: "ringlab writes a dataset onto a testbed it configures, not onto a claim: copy it onto sharedClaim under datasets/<name> and set generate: false" });
  }
}

/** Every value a campaign gives a knob, in the matrix and in train. */
function knobValues<K extends TrainKnobName>(campaign: CampaignOutput, knob: K): TrainKnobValue<K>[] {
  return [...((campaign.matrix[knob] ?? []) as unknown[]), campaign.train[knob]].filter((value) => value !== undefined) as TrainKnobValue<K>[];
}

/** Real data and time to train: the knobs that only make sense together. */
function checkDataKnobs(campaign: CampaignOutput, ctx: RefinementContext): void {
  const values = <K extends TrainKnobName>(knob: K) => knobValues(campaign, knob);
  const sources = values("data");
  if (sources.includes("dataset") && campaign.dataset === undefined) {
    ctx.addIssue({ code: "custom", path: ["campaign", "dataset"], message: "data: dataset needs a campaign.dataset section (its name, and how to generate it)" });
  }
  const timeToTrain = values("epochs").length > 0;
  if (timeToTrain && (sources.length === 0 || sources.includes("synthetic"))) {
    ctx.addIssue({ code: "custom", path: ["campaign", "train", "epochs"], message: "epochs trains over the dataset: set train.data to dataset (synthetic data has no held-out split)" });
  }
  const recovers = values("checkpointEvery").length > 0 && values("maxRestarts").some((restarts) => restarts >= 1);
  if (values("failAtStep").length > 0 && !recovers) {
    ctx.addIssue({ code: "custom", path: ["campaign", "train", "failAtStep"], message: "a killed rank recovers only with checkpointEvery and maxRestarts of 1 or more: set both (without them the run just fails)" });
  }
  if (values("minNodes").length > 0 && timeToTrain && !recovers) {
    ctx.addIssue({ code: "custom", path: ["campaign", "train", "minNodes"], message: "the nodes left after a loss go on only by restarting from a checkpoint: set checkpointEvery and maxRestarts of 1 or more" });
  }
  const fewestNodes = Math.min(...campaign.matrix.nodes);
  const fewestRanks = fewestNodes * Math.min(...(campaign.matrix.processesPerNode ?? [1]));
  const failRank = Math.max(-1, ...values("failRank"));
  if (failRank >= fewestRanks) {
    ctx.addIssue({ code: "custom", path: ["campaign", "train", "failRank"], message: `found ${failRank}, but the smallest run has ${fewestRanks} rank${fewestRanks === 1 ? "" : "s"} (0 to ${fewestRanks - 1})` });
  }
  checkNodeLoss(campaign, values("failNode"), values("minNodes"), fewestNodes, ctx);
}

/** The strategies (PowerSGD, local SGD): their plain all-reduce steps must fall in the untimed batches. */
function checkStrategyKnobs(campaign: CampaignOutput, ctx: RefinementContext): void {
  const values = <K extends TrainKnobName>(knob: K) => knobValues(campaign, knob);
  const reductions = values("reduction");
  const issue = (knob: string, message: string) => ctx.addIssue({ code: "custom", path: ["campaign", "train", knob], message });
  const strategies = reductions.filter((reduction) => STRATEGIES.includes(reduction));
  if (strategies.length === 0) return;
  // Throughput is timed after the untimed batches: a strategy still in its plain all-reduce steps then would be timed
  // sending the whole gradient, while the report counts its compressed bytes.
  const fewestWarmup = Math.min(...(values("numWarmupBatches").length > 0 ? values("numWarmupBatches") : [TRAIN_KNOBS.numWarmupBatches.default as number]));
  for (const [knob, strategy] of [["powersgdStartIter", "powersgd"], ["localSgdWarmup", "local-sgd"]] as const) {
    const most = Math.max(...(values(knob).length > 0 ? values(knob) : [TRAIN_KNOBS[knob].default as number]));
    if (reductions.includes(strategy) && values("epochs").length === 0 && most > fewestWarmup) {
      issue(knob, `${knob} ${most} outlasts the untimed batches (numWarmupBatches ${fewestWarmup}): timed steps would still send the whole gradient; raise numWarmupBatches to ${most} or more`);
    }
  }
}

/** Why a launcher's job ends when one node's worker is killed (src/launchers/ say the same to `ringlab run`). */
const NODE_LOSS_ENDS_THE_JOB: Partial<Record<LauncherName, string>> = {
  slurm: "its job step is started with srun --kill-on-bad-exit: one killed node ends the others",
  mpi: "mpirun ends every node's process when one exits with an error",
};

/** failNode and minNodes: a lost node never comes back, so the others must be allowed to go on without it. */
function checkNodeLoss(campaign: CampaignOutput, failNodes: readonly number[], minNodes: readonly number[], fewestNodes: number, ctx: RefinementContext): void {
  const issue = (knob: string, message: string) => ctx.addIssue({ code: "custom", path: ["campaign", "train", knob], message });
  const mostMin = Math.max(0, ...minNodes);
  if (mostMin > fewestNodes) issue("minNodes", `found ${mostMin}, but the smallest run has ${fewestNodes} node${fewestNodes === 1 ? "" : "s"}`);
  if (failNodes.length === 0) return;
  const failNode = Math.max(...failNodes);
  if (failNode >= fewestNodes) {
    issue("failNode", `found ${failNode}, but the smallest run has ${fewestNodes} node${fewestNodes === 1 ? "" : "s"} (0 to ${fewestNodes - 1}; node 0 holds the rendezvous and cannot be lost): put node-loss runs in a campaign of their own`);
  }
  if (minNodes.length === 0 || mostMin >= fewestNodes) {
    issue("minNodes", `a lost node does not come back: set minNodes below the smallest run's ${fewestNodes} nodes, so that the others go on without it (without it the run waits for the node and fails)`);
  }
  const why = NODE_LOSS_ENDS_THE_JOB[campaign.launcher];
  if (why !== undefined) issue("failNode", `node loss runs with launcher ansible only (${why})`);
}

/** The probe through Open MPI: its ranks are the ones mpirun starts, one per node, in the CPU worker image. */
function checkProbeLibraries(target: string, campaign: CampaignOutput, ctx: RefinementContext): void {
  if (!(campaign.probe.library ?? []).includes("mpi")) return;
  const issue = (message: string) => ctx.addIssue({ code: "custom", path: ["campaign", "probe", "library"], message });
  if (campaign.launcher !== "mpi") issue(`library mpi sums through Open MPI in processes that mpirun starts: set campaign.launcher to mpi (found ${campaign.launcher})`);
  if (target !== "local") issue("library mpi needs mpi4py in the worker image, which only the local testbed's CPU image has (the GPU image is NVIDIA's, untested with it)");
  const placements = campaign.matrix.processesPerNode ?? [1];
  if (placements.some((processes) => processes !== 1)) {
    issue(`library mpi runs one process per node (mpirun's ranks are the nodes): set matrix.processesPerNode to 1 (found ${placements.join(", ")})`);
  }
}

/** On GPU instances every process gets a GPU of its own, so a node runs at most as many as it has GPUs. */
function checkProcessesPerGpu(instanceType: string, processesPerNode: readonly number[], ctx: RefinementContext): void {
  const gpus = instanceTypeFacts(instanceType)?.gpus;
  const most = Math.max(0, ...processesPerNode);
  if (gpus === undefined || gpus === 0 || most <= gpus) return;
  ctx.addIssue({
    code: "custom", path: ["campaign", "matrix", "processesPerNode"],
    message: `found ${most}, but ${instanceType} has ${gpus} GPU${gpus === 1 ? "" : "s"}: use at most ${gpus} process${gpus === 1 ? "" : "es"} per node, or an instance type with more GPUs`,
  });
}

/** Shaped rates the AWS instances can carry: tc only slows links down, and EFA traffic does not pass through it. */
function checkAwsLinks(tb: z.output<typeof awsTestbed>, campaign: CampaignOutput, ctx: RefinementContext): void {
  // Single-node runs send nothing over the network, so their rate is never applied.
  if (!campaign.matrix.nodes.some((nodes) => nodes > 1)) return;
  const shaped = campaign.matrix.bandwidth.filter((rate) => bandwidthGbps(rate) !== null);
  if (tb.efa && shaped.length > 0) ctx.addIssue({ code: "custom", path: ["testbed", "efa"], message: EFA_SHAPING_PROBLEM });
  for (const rate of shaped) {
    const problem = checkShapedRate(tb.instanceType, rate, bandwidthGbps(rate)!);
    if (problem !== undefined) ctx.addIssue({ code: "custom", path: ["campaign", "matrix", "bandwidth"], message: problem });
  }
}

/** Any valid campaign file, whatever its target. */
export type AnyCampaignFile = z.output<typeof campaignFileSchema>;
export type KubernetesTestbed = Extract<AnyCampaignFile["testbed"], { target: "kubernetes" }>;
/**
 * A campaign on a testbed ringlab starts, configures and runs (the local testbed, AWS): what up, configure, run,
 * campaign and plan take. A Kubernetes campaign (KubernetesCampaignFile) is read by `ringlab manifests` alone.
 */
export type CampaignFile = Omit<AnyCampaignFile, "testbed"> & { readonly testbed: Exclude<AnyCampaignFile["testbed"], KubernetesTestbed> };
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

/** The availability zone the stack uses when the file names none. */
export function availabilityZoneOf(tb: AwsTestbed): string {
  return tb.availabilityZone ?? `${tb.region}a`;
}

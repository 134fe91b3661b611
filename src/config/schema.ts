/**
 * The campaign file schema: every field, its type and its default, in one place.
 *
 * Pure: takes the plain object that YAML parsing produced and returns typed, defaulted values or a list of
 * problems (field path + message). Reading files lives in ./load.ts.
 */
import { z } from "zod";
import { BANDWIDTH_HELP, bandwidthGbps } from "../bandwidth.ts";

/** Instance types with an Elastic Fabric Adapter (AWS docs, "Supported instance types" for EFA). */
export const EFA_INSTANCE_TYPES: ReadonlySet<string> = new Set([
  "c5n.9xlarge", "c5n.18xlarge", "c5n.metal",
  "g4dn.8xlarge", "g4dn.12xlarge", "g4dn.16xlarge", "g4dn.metal",
  "g5.8xlarge", "g5.12xlarge", "g5.16xlarge", "g5.24xlarge", "g5.48xlarge",
  "g6.8xlarge", "g6.12xlarge", "g6.16xlarge", "g6.24xlarge", "g6.48xlarge",
  "g6e.8xlarge", "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge", "g6e.48xlarge",
  "p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
  "trn1.32xlarge", "trn1n.32xlarge",
]);

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
} as const;

const NAME_PATTERN = /^[a-z]([a-z0-9-]{0,22}[a-z0-9])?$/;
const AMI_PATTERN = /^ami-[0-9a-f]{8,17}$/;
const AWS_REGION_PATTERN = /^[a-z]{2}(-gov)?-[a-z]+-\d$/;

const nodeCount = z.int().min(1);
const tags = z.record(z.string().min(1).max(128), z.string().max(256));

const testbedCommon = {
  /** Used in resource names and tags: lower case letters, digits and dashes, at most 24 characters. */
  name: z.string().regex(NAME_PATTERN, {
    error: "expected 1-24 lower-case letters, digits or dashes, starting with a letter (it names resources)",
  }),
  nodes: nodeCount,
  maxNodes: z.int().min(1).max(1000).default(DEFAULTS.maxNodes),
};

const localTestbed = z.strictObject({
  target: z.literal("local"),
  ...testbedCommon,
  /** The Docker network of the node containers. */
  subnet: z.cidrv4().default(DEFAULTS.local.subnet),
  /** Host directory shared by all nodes, bind-mounted at the same path; default .ringlab/testbeds/<name>/shared. */
  sharedDir: z.string().min(1).optional(),
  workerImage: z.string().min(1).default(DEFAULTS.local.workerImage),
});

const s3State = z.strictObject({
  backend: z.literal("s3"),
  bucket: z.string().min(3),
  key: z.string().min(1),
  region: z.string().regex(AWS_REGION_PATTERN).optional(),
});
const localState = z.strictObject({ backend: z.literal("local") });

const awsTestbed = z.strictObject({
  target: z.literal("aws"),
  ...testbedCommon,
  region: z.string().regex(AWS_REGION_PATTERN, { error: "expected an AWS region such as us-east-1" }).default(DEFAULTS.aws.region),
  /** Default: the region's "a" zone. */
  availabilityZone: z.string().min(1).optional(),
  instanceType: z.string().regex(/^[a-z][a-z0-9-]*\.[a-z0-9-]+$/, { error: "expected an EC2 instance type such as g4dn.xlarge" })
    .default(DEFAULTS.aws.instanceType),
  /** Default: the newest AWS Deep Learning Base GPU AMI (Ubuntu 22.04), looked up at deploy time. */
  ami: z.string().regex(AMI_PATTERN, { error: "expected an AMI id such as ami-0123456789abcdef0" }).optional(),
  rootVolumeGiB: z.int().min(8).max(16384).default(DEFAULTS.aws.rootVolumeGiB),
  /** Path to an OpenSSH public key; relative paths are relative to the campaign file. */
  sshPublicKeyFile: z.string().min(1).optional(),
  /** The public key text itself, instead of sshPublicKeyFile. */
  sshPublicKey: z.string().min(1).optional(),
  /** Default: sshPublicKeyFile without ".pub". */
  sshPrivateKeyFile: z.string().min(1).optional(),
  sshUser: z.string().min(1).default(DEFAULTS.aws.sshUser),
  /** Who may reach the nodes over SSH, e.g. your address as 203.0.113.7/32. */
  adminCidr: z.cidrv4({ error: "expected an IPv4 CIDR such as 203.0.113.7/32" }),
  /** adminCidr 0.0.0.0/0 is refused unless this says so. */
  allowSshFromAnywhere: z.boolean().default(false),
  sharedStorage: z.enum(["nfs", "efs"]).default(DEFAULTS.aws.sharedStorage),
  spot: z.boolean().default(false),
  efa: z.boolean().default(false),
  /** Written into the ringlab:expires-at tag so a sweeper can find leftovers. */
  ttlHours: z.number().positive().max(24 * 30).default(DEFAULTS.aws.ttlHours),
  tags: tags.default({}),
  vpcCidr: z.cidrv4().default(DEFAULTS.aws.vpcCidr),
  subnetCidr: z.cidrv4().default(DEFAULTS.aws.subnetCidr),
  state: z.discriminatedUnion("backend", [localState, s3State]).default({ backend: "local" }),
  workerImage: z.string().min(1).default(DEFAULTS.aws.workerImage),
  /** A `docker save` tarball copied to every node; without it nodes pull workerImage from its registry. */
  workerImageTarball: z.string().min(1).optional(),
});

const testbed = z.discriminatedUnion("target", [localTestbed, awsTestbed]).superRefine((tb, ctx) => {
  if (tb.nodes > tb.maxNodes) {
    ctx.addIssue({
      code: "custom",
      path: ["nodes"],
      message: `found ${tb.nodes}, expected at most maxNodes (${tb.maxNodes}); raise maxNodes deliberately to go higher`,
    });
  }
  if (tb.target === "local") {
    const prefix = Number(tb.subnet.split("/")[1]);
    const addresses = 2 ** (32 - prefix);
    // Nodes take .10 and up (src/testbed/local-plan.ts); the last address is the broadcast address.
    if (10 + tb.nodes > addresses - 1) {
      ctx.addIssue({ code: "custom", path: ["subnet"], message: `found ${tb.subnet}, too small for ${tb.nodes} nodes; use a /24` });
    }
    return;
  }
  if (tb.adminCidr === "0.0.0.0/0" && !tb.allowSshFromAnywhere) {
    ctx.addIssue({
      code: "custom",
      path: ["adminCidr"],
      message: "0.0.0.0/0 opens SSH to the whole internet; use your own address (e.g. 203.0.113.7/32) " +
        "or set allowSshFromAnywhere: true if that is really meant",
    });
  }
  if (tb.sshPublicKeyFile === undefined && tb.sshPublicKey === undefined) {
    ctx.addIssue({ code: "custom", path: ["sshPublicKeyFile"], message: "missing: expected sshPublicKeyFile (a path) or sshPublicKey (the key text)" });
  }
  if (tb.sshPublicKeyFile !== undefined && tb.sshPublicKey !== undefined) {
    ctx.addIssue({ code: "custom", path: ["sshPublicKey"], message: "expected only one of sshPublicKeyFile and sshPublicKey" });
  }
  if (tb.efa && !EFA_INSTANCE_TYPES.has(tb.instanceType)) {
    ctx.addIssue({
      code: "custom",
      path: ["efa"],
      message: `instance type ${tb.instanceType} has no EFA; use one of ${[...EFA_INSTANCE_TYPES].slice(0, 6).join(", ")}, ... or efa: false`,
    });
  }
  if (tb.availabilityZone !== undefined && !tb.availabilityZone.startsWith(tb.region)) {
    ctx.addIssue({
      code: "custom",
      path: ["availabilityZone"],
      message: `found "${tb.availabilityZone}", expected a zone of region ${tb.region} (such as ${tb.region}a)`,
    });
  }
});

/**
 * Models the worker can train (docker/worker). `tiny` is a small CNN for CPU smoke runs; `small` has a 17 MB
 * gradient, so on CPUs (the local testbed) link bandwidth limits it the way it limits ResNets on GPUs.
 */
export const MODELS = ["tiny", "small", "resnet50", "resnet101", "resnet152", "inception_v3"] as const;

/** Worker knobs for `train` runs, by campaign name; each becomes `--kebab-case` on the worker's command line. */
const trainKnobs = {
  numWarmupBatches: z.int().min(0),
  numBatchesPerIter: z.int().min(1),
  numIters: z.int().min(1),
  imageSize: z.int().min(16),
  precision: z.enum(["fp32", "amp"]),
  /** DDP gradient bucket size, the analogue of Horovod's tensor fusion buffer. */
  bucketCapMb: z.number().positive(),
  fp16Allreduce: z.boolean(),
  ncclAlgoRing: z.boolean(),
  engine: z.enum(["ddp", "horovod"]),
};
export type TrainKnobName = keyof typeof trainKnobs;
export const TRAIN_KNOB_NAMES = Object.keys(trainKnobs) as TrainKnobName[];

const bandwidth = z.string().refine((rate) => bandwidthGbps(rate) !== undefined, { error: `expected ${BANDWIDTH_HELP}` });

/** A matrix axis: a list of values, or one value. */
function axis<T extends z.ZodType>(value: T) {
  return z.union([value, z.array(value).min(1)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.output<T>[]);
}

const matrix = z.strictObject({
  nodes: axis(z.int().min(1)),
  model: axis(z.enum(MODELS)),
  batchSize: axis(z.int().min(1)),
  bandwidth: axis(bandwidth),
  numWarmupBatches: axis(trainKnobs.numWarmupBatches).optional(),
  numBatchesPerIter: axis(trainKnobs.numBatchesPerIter).optional(),
  numIters: axis(trainKnobs.numIters).optional(),
  imageSize: axis(trainKnobs.imageSize).optional(),
  precision: axis(trainKnobs.precision).optional(),
  bucketCapMb: axis(trainKnobs.bucketCapMb).optional(),
  fp16Allreduce: axis(trainKnobs.fp16Allreduce).optional(),
  ncclAlgoRing: axis(trainKnobs.ncclAlgoRing).optional(),
  engine: axis(trainKnobs.engine).optional(),
});

export const PROBE_DEFAULTS = { enabled: true, minBytes: 4096, maxBytes: 64 * 1024 * 1024, stepFactor: 4, warmupIters: 2, iters: 5 } as const;

const campaign = z.strictObject({
  matrix,
  /** Each combination runs this many times; the report shows mean and 95% interval. */
  repeats: z.int().min(1).max(100).default(1),
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
  }).default({ ...PROBE_DEFAULTS }),
  /** Keep the testbed after the campaign (default: tear it down, also on failure and Ctrl-C). */
  keep: z.boolean().default(false),
  /** Default: results/<campaign file name without extension>. */
  resultsDir: z.string().min(1).optional(),
});

export const campaignFileSchema = z.strictObject({
  testbed,
  campaign: campaign.optional(),
}).superRefine((file, ctx) => {
  const plan = file.campaign;
  if (plan === undefined) return;
  const largest = Math.max(...plan.matrix.nodes);
  if (largest > file.testbed.nodes) {
    ctx.addIssue({
      code: "custom",
      path: ["campaign", "matrix", "nodes"],
      message: `found ${largest}, expected at most testbed.nodes (${file.testbed.nodes}); raise testbed.nodes or drop that node count`,
    });
  }
  for (const name of TRAIN_KNOB_NAMES) {
    if (plan.matrix[name] !== undefined && plan.train[name] !== undefined) {
      ctx.addIssue({ code: "custom", path: ["campaign", "train", name], message: `${name} is also a matrix axis; set it in one place` });
    }
  }
  const precisions = [...(plan.matrix.precision ?? []), plan.train.precision];
  if (file.testbed.target === "local" && precisions.includes("amp")) {
    ctx.addIssue({ code: "custom", path: ["campaign"], message: "precision amp needs a GPU; the local testbed runs on CPU (use fp32)" });
  }
  const engines = [...(plan.matrix.engine ?? []), plan.train.engine];
  if (file.testbed.target === "local" && engines.includes("horovod")) {
    ctx.addIssue({ code: "custom", path: ["campaign"], message: "engine horovod needs Horovod, which the local testbed's CPU worker image does not have (use ddp)" });
  }
  if (plan.probe.maxBytes < plan.probe.minBytes) {
    ctx.addIssue({ code: "custom", path: ["campaign", "probe", "maxBytes"], message: `found ${plan.probe.maxBytes}, expected at least minBytes (${plan.probe.minBytes})` });
  }
});

export type CampaignFile = z.output<typeof campaignFileSchema>;
export type Testbed = CampaignFile["testbed"];
export type LocalTestbed = Extract<Testbed, { target: "local" }>;
export type AwsTestbed = Extract<Testbed, { target: "aws" }>;
export type CampaignSection = NonNullable<CampaignFile["campaign"]>;
export type Model = (typeof MODELS)[number];

export interface ConfigProblem {
  /** Dotted field path, e.g. "testbed.nodes"; empty for the whole document. */
  readonly path: string;
  readonly message: string;
}

export type ValidationResult =
  | { readonly ok: true; readonly value: CampaignFile }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

export function validateCampaign(document: unknown): ValidationResult {
  const parsed = campaignFileSchema.safeParse(document);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, problems: describeIssues(parsed.error.issues, document) };
}

/** The availability zone the stack uses when the file names none. */
export function availabilityZoneOf(tb: AwsTestbed): string {
  return tb.availabilityZone ?? `${tb.region}a`;
}

function describeIssues(issues: readonly z.core.$ZodIssue[], document: unknown, prefix: readonly string[] = []): ConfigProblem[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path.map(String)];
    if (issue.code === "invalid_union" && !("discriminator" in issue && issue.discriminator !== undefined) && issue.errors.length > 0) {
      // A matrix axis is "a value or a list of values": explain the branch that fits the input's shape.
      const isList = Array.isArray(valueAt(document, path));
      const fitting = issue.errors.find((branch) => isList
        ? branch.every((inner) => inner.path.length > 0)
        : !branch.some((inner) => inner.code === "invalid_type" && inner.expected === "array"));
      if (fitting !== undefined) return describeIssues(fitting, document, path);
    }
    if (issue.code === "unrecognized_keys") {
      // One problem per key, at the key's own path, so the message points at the typo.
      return issue.keys.map((key) => ({ path: [...path, key].join("."), message: unknownKeyMessage(key, path, document) }));
    }
    return [{ path: path.join("."), message: messageFor(issue, path.join("."), valueAt(document, path)) }];
  });
}

const TYPE_NAMES: Record<string, string> = {
  int: "an integer", number: "a number", string: "text", boolean: "true or false", object: "a mapping", array: "a list",
};

function messageFor(issue: z.core.$ZodIssue, path: string, valueAtPath: unknown): string {
  const found = describeValue(valueAtPath);
  switch (issue.code) {
    case "invalid_type": {
      const expected = TYPE_NAMES[issue.expected] ?? issue.expected;
      return valueAtPath === undefined ? `missing: expected ${expected}` : `found ${found}, expected ${expected}`;
    }
    case "too_small":
      return `found ${found}, expected ${boundText(issue.origin, issue.inclusive ? "at least" : "more than", issue.minimum)}`;
    case "too_big":
      return `found ${found}, expected ${boundText(issue.origin, issue.inclusive ? "at most" : "less than", issue.maximum)}`;
    case "invalid_value":
      return `found ${found}, expected ${issue.values.map((v) => JSON.stringify(v)).join(" or ")}`;
    case "invalid_union":
      if ("discriminator" in issue && issue.discriminator !== undefined) {
        return `found ${found}, expected ${path.endsWith("state.backend") ? '"local" or "s3"' : '"local" or "aws"'}`;
      }
      return `found ${found}, ${issue.message}`;
    case "invalid_format":
      return issue.message.startsWith("Invalid") ? `found ${found}, expected ${issue.format}` : `found ${found}, ${issue.message}`;
    case "custom":
      return issue.message.startsWith("expected") ? `found ${found}, ${issue.message}` : issue.message;
    default:
      return issue.message;
  }
}

function valueAt(document: unknown, path: readonly string[]): unknown {
  let value = document;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function boundText(origin: string, relation: string, bound: number | bigint): string {
  if (origin === "string") return `${relation} ${bound} characters`;
  if (origin === "array" || origin === "set") return `${relation} ${bound} entries`;
  return `${origin === "int" ? "an integer" : "a number"} ${relation} ${bound}`;
}

function unknownKeyMessage(key: string, parentPath: readonly string[], document: unknown): string {
  const known = knownKeysAt(parentPath, document);
  const suggestion = known.find((candidate) => editDistance(candidate.toLowerCase(), key.toLowerCase()) <= 2);
  return `unknown key "${key}"` + (suggestion ? ` (did you mean "${suggestion}"?)` : "") +
    (known.length > 0 ? `; expected one of ${known.join(", ")}` : "");
}

/** The keys the schema accepts at a path, for "did you mean" hints. */
function knownKeysAt(parentPath: readonly string[], document: unknown): string[] {
  const keysOf = (schema: z.ZodObject): string[] => Object.keys(schema.shape);
  const where = parentPath.join(".");
  if (where === "") return keysOf(campaignFileSchema);
  if (where === "testbed") {
    const target = (document as { testbed?: { target?: unknown } }).testbed?.target;
    return keysOf(target === "aws" ? awsTestbed : localTestbed);
  }
  if (where === "testbed.state") return keysOf(s3State);
  if (where === "campaign") return keysOf(campaign);
  if (where === "campaign.matrix") return keysOf(matrix);
  if (where === "campaign.train") return TRAIN_KNOB_NAMES;
  if (where === "campaign.probe") return Object.keys(PROBE_DEFAULTS);
  return [];
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return String(value);
}

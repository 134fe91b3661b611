/**
 * The AWS testbed: GPU instances in a VPC of their own, the stack in stacks/ synthesized from the stored spec and
 * deployed by terraform (src/testbed/aws.ts), reached by Ansible over SSH. Every node is a machine of its own, paid by
 * the hour: nothing is rerun that `ringlab plan` did not estimate, and nothing is found without its spec.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { bandwidthGbps } from "../../rules/bandwidth.ts";
import {
  checkEfaInstanceType,
  checkShapedRate,
  EFA_SHAPING_PROBLEM,
  instanceTypeFacts,
} from "../../catalogue/aws-instance-types.ts";
import { ruled, safePath, tags, testbedCommon, type IssueAt } from "../../config/fields.ts";
import type { CampaignSection } from "../../config/schema.ts";
import { ConfigError, UsageError } from "../../util/errors.ts";
import { checkAmiId, checkRootVolumeGiB } from "../../rules/ami.ts";
import {
  checkIpv4Cidr,
  checkSshSource,
  checkSubnetCidr,
  checkVpcCidr,
  DEFAULT_SSH_SOURCE_MIN_PREFIX,
  SSH_SOURCE_PREFIX_FLOOR,
} from "../../rules/cidr.ts";
import { stackName } from "../../rules/names.ts";
import { checkDockerImageReference, checkS3BucketName, checkS3Key, checkUnixUserName } from "../../rules/safe-text.ts";
import { checkSshPublicKey } from "../../rules/ssh-key.ts";
import { workerImageSourceOf } from "../../rules/worker-image.ts";
import { commonSpecOf, isoTime, specCommon } from "../spec-fields.ts";
import { narrowed, resolvePath, type FileContext, type Target } from "../target.ts";

declare module "../target.ts" {
  interface TargetOptions {
    /** A terraform double, the SSH wait, the leftover look and the preflight (src/testbed/aws.ts). */
    readonly aws?: import("./testbed.ts").AwsOptions;
  }
}

/** What can deploy an AWS testbed's stack: both take the same commands and flags. */
export const TERRAFORM_BINARIES = ["terraform", "tofu"] as const;

export const AWS_DEFAULTS = {
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
} as const;

const AWS_REGION_PATTERN = /^[a-z]{2}(-gov)?-[a-z]+-\d$/;
const AVAILABILITY_ZONE_PATTERN = /^[a-z0-9-]{1,64}$/;

const s3State = z.strictObject({
  backend: z.literal("s3").describe("s3: Terraform's state in an S3 bucket."),
  bucket: ruled(checkS3BucketName).describe("Your bucket (ringlab does not create it)."),
  key: ruled(checkS3Key).describe("The state's object key in the bucket."),
  region: z.string().regex(AWS_REGION_PATTERN).optional().describe("The bucket's region; default: testbed.region."),
});
const localState = z.strictObject({
  backend: z.literal("local").describe("local: Terraform's state file in the testbed's state folder."),
});

export const awsSection = z.strictObject({
  target: z
    .literal("aws")
    .describe(
      "aws: GPU instances in a VPC of their own, deployed by terraform from a cdktf stack, reached by Ansible over SSH.",
    ),
  ...testbedCommon,
  region: z
    .string()
    .regex(AWS_REGION_PATTERN, { error: "expected an AWS region such as us-east-1" })
    .default(AWS_DEFAULTS.region)
    .describe("The AWS region of every resource."),
  availabilityZone: z
    .string()
    .regex(AVAILABILITY_ZONE_PATTERN, { error: "expected an availability zone such as us-east-1a" })
    .optional()
    .describe('Default: the region\'s "a" zone.'),
  instanceType: z
    .string()
    .regex(/^[a-z][a-z0-9-]*\.[a-z0-9-]+$/, { error: "expected an EC2 instance type such as g4dn.xlarge" })
    .default(AWS_DEFAULTS.instanceType)
    .describe("The EC2 instance type of every node."),
  ami: ruled(checkAmiId)
    .optional()
    .describe("Default: the newest AWS Deep Learning Base GPU AMI (Ubuntu 22.04), looked up at deploy time."),
  rootVolumeGiB: z
    .int()
    .superRefine((size, ctx) => {
      const problem = checkRootVolumeGiB(size);
      if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
    })
    .default(AWS_DEFAULTS.rootVolumeGiB)
    .describe("Each node's root volume, GiB."),
  sshPublicKeyFile: safePath()
    .optional()
    .describe("Path to an OpenSSH public key; relative paths are relative to the campaign file."),
  sshPublicKey: z.string().min(1).optional().describe("The public key text itself, instead of sshPublicKeyFile."),
  sshPrivateKeyFile: safePath().optional().describe('Default: sshPublicKeyFile without ".pub".'),
  sshUser: ruled(checkUnixUserName).default(AWS_DEFAULTS.sshUser).describe("The user Ansible logs in as on the nodes."),
  adminCidr: ruled((cidr) => checkIpv4Cidr(cidr, { example: "203.0.113.7/32" })).describe(
    "Who may reach the nodes over SSH, e.g. your address as 203.0.113.7/32.",
  ),
  sshSourceMinPrefix: z
    .int()
    .min(SSH_SOURCE_PREFIX_FLOOR)
    .max(32)
    .default(DEFAULT_SSH_SOURCE_MIN_PREFIX)
    .describe(
      "The widest adminCidr accepted (as a prefix length) unless allowSshFromAnywhere; 16 lets a /16 through, never wider than a /8.",
    ),
  allowSshFromAnywhere: z
    .boolean()
    .default(false)
    .describe(
      "An adminCidr wider than sshSourceMinPrefix or a /8 (0.0.0.0/0 included) is refused unless this says so.",
    ),
  sharedStorage: z
    .enum(["nfs", "efs"])
    .default(AWS_DEFAULTS.sharedStorage)
    .describe("The nodes' shared folder: NFS served by the head node, or an EFS file system."),
  spot: z
    .boolean()
    .default(false)
    .describe("One-time spot instances instead of on-demand ones, terminated on interruption."),
  efa: z
    .boolean()
    .default(false)
    .describe("An Elastic Fabric Adapter on every node (instance types that have one; tc cannot shape its traffic)."),
  placementGroup: z
    .boolean()
    .default(true)
    .describe("A cluster placement group for the nodes; turn off where none can be had (capacity, an emulator)."),
  ttlHours: z
    .number()
    .positive()
    .max(24 * 30)
    .default(AWS_DEFAULTS.ttlHours)
    .describe("Written into the ringlab:expires-at tag so a sweeper can find leftovers."),
  tags: tags
    .default({})
    .describe("Your own tags on every resource, beside ringlab's; the ringlab: and aws: prefixes are reserved."),
  vpcCidr: ruled(checkVpcCidr).default(AWS_DEFAULTS.vpcCidr).describe("The address range of the testbed's own VPC."),
  subnetCidr: ruled((cidr) => checkIpv4Cidr(cidr, { example: AWS_DEFAULTS.subnetCidr }))
    .default(AWS_DEFAULTS.subnetCidr)
    .describe("Must lie inside vpcCidr (checked with the testbed)."),
  state: z
    .discriminatedUnion("backend", [localState, s3State])
    .default({ backend: "local" })
    .describe("Where Terraform keeps the stack's state."),
  workerImage: ruled(checkDockerImageReference)
    .default(AWS_DEFAULTS.workerImage)
    .describe(
      "The image every node's worker runs: ringlab/worker:<tag> is built on each node (unless workerImageTarball), any other name pulled.",
    ),
  workerImageTarball: safePath()
    .optional()
    .describe("A `docker save` tarball copied to every node; without it nodes pull workerImage from its registry."),
  terraformBinary: z
    .enum(TERRAFORM_BINARIES, { error: "expected terraform or tofu" })
    .optional()
    .describe("What deploys and destroys the stack. Default: $TERRAFORM_BINARY_NAME, else terraform."),
});

export type AwsSection = z.output<typeof awsSection>;

const terraformState = z.discriminatedUnion("backend", [
  /** Terraform's state file: under the testbed's own state folder, whatever the working directory. */
  z.strictObject({ backend: z.literal("local"), path: z.string().min(1) }),
  z.strictObject({
    backend: z.literal("s3"),
    bucket: z.string().min(1),
    key: z.string().min(1),
    region: z.string().min(1),
  }),
]);

export const awsSpec = z.strictObject({
  ...specCommon,
  target: z.literal("aws"),
  region: z.string().min(1),
  availabilityZone: z.string().min(1),
  instanceType: z.string().min(1),
  /** An AMI id, or null: look up the newest image matching `amiLookup` at deploy time. */
  ami: z.string().nullable(),
  amiLookup: z.strictObject({ namePattern: z.string(), owner: z.string() }),
  rootVolumeGiB: z.int(),
  /** The public key text itself, never a path: the key file may be gone by teardown. */
  sshPublicKey: z.string().min(1),
  /** How the controller reaches the nodes; only configure and run need it, never teardown. */
  sshPrivateKeyFile: z.string().min(1),
  sshUser: z.string().min(1),
  adminCidr: z.string().min(1),
  allowSshFromAnywhere: z.boolean(),
  sshSourceMinPrefix: z.int().min(0).max(32),
  vpcCidr: z.string().min(1),
  subnetCidr: z.string().min(1),
  sharedStorage: z.enum(["nfs", "efs"]),
  spot: z.boolean(),
  efa: z.boolean(),
  /** Nodes in a cluster placement group; absent (specs written before the field existed) means yes. */
  placementGroup: z.boolean().optional(),
  ttlHours: z.number().positive(),
  expiresAt: isoTime,
  /** The user's own tags; ringlab's tags are derived from name, campaign and expiresAt. */
  tags: z.record(z.string(), z.string()),
  state: terraformState,
  workerImageTarball: z.string().min(1).nullable(),
  /**
   * What runs the stack: terraform or tofu; absent or null (specs written before the field existed):
   * $TERRAFORM_BINARY_NAME, else terraform.
   */
  terraformBinary: z.enum(TERRAFORM_BINARIES).nullable().optional(),
});

/** The availability zone the stack uses when the file names none. */
export function availabilityZoneOf(tb: AwsSection): string {
  return tb.availabilityZone ?? `${tb.region}a`;
}

/** ISO-8601 UTC to the second, e.g. 2025-03-01T18:00:00Z: the `ringlab:expires-at` tag. */
export function expiresAt(createdAt: Date, ttlHours: number): string {
  const expiry = new Date(createdAt.getTime() + Math.round(ttlHours * 3_600_000));
  return expiry.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Why `path` cannot be the worker image tarball, or undefined when it is a file. Shared with the AWS preflight. */
export function tarballProblem(path: string): string | undefined {
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch {
    return `cannot read ${path}; expected a \`docker save\` archive of the worker image (or leave workerImageTarball out: the nodes then build the image themselves)`;
  }
  return isFile ? undefined : `${path} is not a file; expected a \`docker save\` archive of the worker image`;
}

/** A missing tarball would otherwise fail the first configure, after the instances were paid for. */
function checkTarball(path: string, displayName: string): void {
  const message = tarballProblem(path);
  if (message !== undefined) throw new ConfigError(displayName, [{ path: "testbed.workerImageTarball", message }]);
}

/** The key files and the tarball, absolute; the public key read unless `readKeys` is off. */
function resolveKeys(tb: AwsSection, where: FileContext): AwsSection {
  const { baseDir, displayName, readKeys } = where;
  let sshPublicKey = tb.sshPublicKey?.trim();
  let sshPublicKeyFile = tb.sshPublicKeyFile;
  let sshPrivateKeyFile = tb.sshPrivateKeyFile === undefined ? undefined : resolvePath(tb.sshPrivateKeyFile, baseDir);
  let keyField = "testbed.sshPublicKey";
  const workerImageTarball =
    tb.workerImageTarball === undefined ? undefined : resolvePath(tb.workerImageTarball, baseDir);
  if (readKeys && workerImageTarball !== undefined) checkTarball(workerImageTarball, displayName);
  if (sshPublicKeyFile !== undefined) {
    keyField = "testbed.sshPublicKeyFile";
    sshPublicKeyFile = resolvePath(sshPublicKeyFile, baseDir);
    sshPrivateKeyFile ??= sshPublicKeyFile.replace(/\.pub$/, "");
    if (!readKeys) return { ...tb, sshPublicKeyFile, sshPrivateKeyFile, workerImageTarball };
    try {
      sshPublicKey = readFileSync(sshPublicKeyFile, "utf8").trim();
    } catch {
      throw new ConfigError(displayName, [
        {
          path: keyField,
          message:
            `cannot read ${sshPublicKeyFile}; expected an OpenSSH public key file ` +
            "(create one with: ssh-keygen -t ed25519 -f ~/.ssh/ringlab)",
        },
      ]);
    }
  }
  const keyProblem =
    sshPublicKey === undefined ? "missing: expected an OpenSSH public key" : checkSshPublicKey(sshPublicKey);
  if (keyProblem !== undefined) throw new ConfigError(displayName, [{ path: keyField, message: keyProblem }]);
  return { ...tb, sshPublicKey, sshPublicKeyFile, sshPrivateKeyFile, workerImageTarball };
}

/** On GPU instances every process gets a GPU of its own, so a node runs at most as many as it has GPUs. */
function checkProcessesPerGpu(instanceType: string, processesPerNode: readonly number[], issue: IssueAt): void {
  const gpus = instanceTypeFacts(instanceType)?.gpus;
  const most = Math.max(0, ...processesPerNode);
  if (gpus === undefined || gpus === 0 || most <= gpus) return;
  issue(
    ["campaign", "matrix", "processesPerNode"],
    `found ${most}, but ${instanceType} has ${gpus} GPU${gpus === 1 ? "" : "s"}: use at most ${gpus} process${gpus === 1 ? "" : "es"} per node, or an instance type with more GPUs`,
  );
}

/** Shaped rates the AWS instances can carry: tc only slows links down, and EFA traffic does not pass through it. */
function checkLinks(tb: AwsSection, campaign: CampaignSection, issue: IssueAt): void {
  // Single-node runs send nothing over the network, so their rate is never applied.
  if (!campaign.matrix.nodes.some((nodes) => nodes > 1)) return;
  const shaped = campaign.matrix.bandwidth.filter((rate) => bandwidthGbps(rate) !== null);
  if (tb.efa && shaped.length > 0) issue(["testbed", "efa"], EFA_SHAPING_PROBLEM);
  for (const rate of shaped) {
    const problem = checkShapedRate(tb.instanceType, rate, bandwidthGbps(rate)!);
    if (problem !== undefined) issue(["campaign", "matrix", "bandwidth"], problem);
  }
}

/** Why the GPU image cannot run the probe through Open MPI: the same words on every target but the local one. */
export const NO_MPI4PY = "which only the local testbed's CPU image has (the GPU image is NVIDIA's, untested with it)";

export const awsTarget: Target = {
  name: "aws",
  title: "AWS",
  gaps: {
    "cpu-quota": "where every node is a machine of its own",
    "mpi-probe": NO_MPI4PY,
    "node-recovery": "a lost instance is not replaced: the runs that need it are skipped",
    "reuse-configured": "a cloud node may have rebooted since it was configured",
    "host-load": "its nodes are machines of their own, which no other work of this machine disturbs",
    "rerun-disturbed":
      "a rerun costs instance time that `ringlab plan` did not estimate: the report flags the run and `--rerun-flagged` does it",
    "found-by-label": "its stack is destroyed from its stored spec, one testbed at a time (`ringlab down <name>`)",
  },

  checkTestbed(section, issue) {
    const tb = narrowed("aws", section);
    const problemAt = (field: string, message: string | undefined): void => {
      if (message !== undefined) issue([field], message);
    };
    problemAt(
      "adminCidr",
      checkSshSource(tb.adminCidr, {
        allowSshFromAnywhere: tb.allowSshFromAnywhere,
        minPrefixLength: tb.sshSourceMinPrefix,
      }),
    );
    if (tb.sshPublicKeyFile === undefined && tb.sshPublicKey === undefined) {
      problemAt("sshPublicKeyFile", "missing: expected sshPublicKeyFile (a path) or sshPublicKey (the key text)");
    }
    if (tb.sshPublicKeyFile !== undefined && tb.sshPublicKey !== undefined) {
      problemAt("sshPublicKey", "expected only one of sshPublicKeyFile and sshPublicKey");
    }
    if (tb.efa) problemAt("efa", checkEfaInstanceType(tb.instanceType));
    const subnetProblem = checkSubnetCidr(tb.subnetCidr, tb.vpcCidr);
    if (subnetProblem !== undefined)
      problemAt("subnetCidr", `found ${JSON.stringify(tb.subnetCidr)}, ${subnetProblem}`);
    if (tb.availabilityZone !== undefined && !tb.availabilityZone.startsWith(tb.region)) {
      problemAt(
        "availabilityZone",
        `found "${tb.availabilityZone}", expected a zone of region ${tb.region} (such as ${tb.region}a)`,
      );
    }
  },

  checkCampaign(section, campaign, issue) {
    const tb = narrowed("aws", section);
    checkLinks(tb, campaign, issue);
    checkProcessesPerGpu(tb.instanceType, campaign.matrix.processesPerNode ?? [], issue);
  },

  resolveFiles: (section, where) => resolveKeys(narrowed("aws", section), where),

  resolveSpec(section, inputs) {
    const testbed = narrowed("aws", section);
    if (testbed.sshPublicKey === undefined || testbed.sshPrivateKeyFile === undefined) {
      throw new UsageError(
        `testbed ${testbed.name}: the SSH key was not read; expected sshPublicKeyFile (or sshPublicKey with sshPrivateKeyFile)`,
      );
    }
    return {
      ...commonSpecOf(testbed, inputs),
      target: "aws",
      region: testbed.region,
      availabilityZone: availabilityZoneOf(testbed),
      instanceType: testbed.instanceType,
      ami: testbed.ami ?? null,
      amiLookup: { namePattern: AWS_DEFAULTS.amiNamePattern, owner: AWS_DEFAULTS.amiOwner },
      rootVolumeGiB: testbed.rootVolumeGiB,
      sshPublicKey: testbed.sshPublicKey,
      sshPrivateKeyFile: testbed.sshPrivateKeyFile,
      sshUser: testbed.sshUser,
      adminCidr: testbed.adminCidr,
      allowSshFromAnywhere: testbed.allowSshFromAnywhere,
      sshSourceMinPrefix: testbed.sshSourceMinPrefix,
      vpcCidr: testbed.vpcCidr,
      subnetCidr: testbed.subnetCidr,
      sharedStorage: testbed.sharedStorage,
      spot: testbed.spot,
      efa: testbed.efa,
      placementGroup: testbed.placementGroup,
      ttlHours: testbed.ttlHours,
      expiresAt: expiresAt(inputs.createdAt, testbed.ttlHours),
      tags: testbed.tags,
      state:
        testbed.state.backend === "s3"
          ? {
              backend: "s3",
              bucket: testbed.state.bucket,
              key: testbed.state.key,
              region: testbed.state.region ?? testbed.region,
            }
          : { backend: "local", path: join(inputs.testbedDir, "terraform.tfstate") },
      workerImageTarball: testbed.workerImageTarball ?? null,
      terraformBinary: testbed.terraformBinary ?? null,
    };
  },
  // Its expires-at tag stays put when the testbed exists.
  keepsCreationTime: true,

  // Its SDK clients and cdktf are loaded only here: they would slow every local command's start.
  async up(ctx, spec, options) {
    const { upAws } = await import("./testbed.ts");
    return upAws(ctx, narrowed("aws", spec), options.aws);
  },

  async down(ctx, name, spec, options) {
    if (spec === undefined) {
      throw new UsageError(
        `testbed ${name} has a record but no spec in ${ctx.stateDir}, so its stack cannot be destroyed from here`,
        {
          hint: `destroy it by hand (terraform destroy in its cdktf.out/stacks/${stackName(name)} folder) or in the AWS console (tag ringlab:testbed=${name})`,
        },
      );
    }
    const { downAws } = await import("./testbed.ts");
    await ctx.reporter.step(`destroy stack ${stackName(name)}`, () => downAws(ctx, narrowed("aws", spec), options.aws));
    return { target: "aws" };
  },

  stack: {
    async synthesize(spec, outDir, hostKeys) {
      const { synthesizeStack } = await import("../../../stacks/synth.ts");
      return synthesizeStack(narrowed("aws", spec), outDir, hostKeys);
    },
    async inventory(outputs, spec, knownHostsFile, hostKeys) {
      const { awsInventory } = await import("../../testbed/inventory.ts");
      return awsInventory(outputs, narrowed("aws", spec), knownHostsFile, hostKeys);
    },
    async deployer(spec) {
      const { terraformBinaryFor } = await import("../../adapters/terraform.ts");
      return terraformBinaryFor(narrowed("aws", spec).terraformBinary);
    },
  },

  instanceTypeOf: (section) => narrowed("aws", section).instanceType,
  memoryOf: (section) => {
    const { instanceType } = narrowed("aws", section);
    const facts = instanceTypeFacts(instanceType);
    return facts === undefined || facts.gpus === 0
      ? { device: "cuda" }
      : { device: "cuda", perGpu: { gib: facts.gpuMemoryGiB, what: `one ${facts.gpuModel} of ${instanceType}` } };
  },

  estimate: {
    // Single TCP flows on small GPU instances stop at 5 Gbit/s (test/bench/README.md).
    fastestAllReduceGbps: 5,
    // SSH round trips over the internet, and provisioning.
    overheadSeconds: { run: 10, campaign: 15 * 60 },
    workerImageSource(section) {
      const testbed = narrowed("aws", section);
      return workerImageSourceOf(testbed.workerImage, testbed.workerImageTarball);
    },
    workerImageTarball: (section) => narrowed("aws", section).workerImageTarball ?? undefined,
    priceNote: (section) => (narrowed("aws", section).spot ? "spot is usually cheaper" : undefined),
  },
};

/**
 * The testbed spec: everything the stack, the inventory and teardown need, resolved once by `ringlab up` (or
 * `ringlab synth`) from the campaign file's testbed section and stored beside the testbed's record. After that,
 * nothing reads the user's files again: `down`, `status`, `configure`, `run` and the stack (stacks/synth.ts)
 * read this spec only, so editing the campaign file or deleting the SSH key file cannot strand a paid testbed.
 *
 * Flat, versioned, validated when read. `resolveTestbedSpec` reads the file system only to check a local testbed's
 * shared directory (checkLocalSharedDir); `readSpec`/`writeSpec` touch one file.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { availabilityZoneOf, DEFAULTS, TERRAFORM_BINARIES, type Testbed } from "../config/schema.ts";
import { UsageError } from "../errors.ts";
import { checkSafeResolvedPath } from "../rules/safe-text.ts";
import { unsafeFolderProblem, writePrivateFile } from "../util/fs.ts";

export const TESTBED_SPEC_SCHEMA = "ringlab.testbed-spec/v1";

const isoTime = z.string().refine((text) => !Number.isNaN(Date.parse(text)), { error: "expected an ISO-8601 time" });

const common = {
  schema: z.literal(TESTBED_SPEC_SCHEMA),
  name: z.string().min(1),
  nodes: z.int().min(1),
  /** The campaign file's name without extension: the `ringlab:campaign` tag. */
  campaign: z.string().min(1),
  createdAt: isoTime,
  workerImage: z.string().min(1),
};

const localSpec = z.strictObject({
  ...common,
  target: z.literal("local"),
  subnet: z.string().min(1),
  sharedDir: z.string().min(1),
});

const terraformState = z.discriminatedUnion("backend", [
  /** Terraform's state file: under the testbed's own state folder, whatever the working directory. */
  z.strictObject({ backend: z.literal("local"), path: z.string().min(1) }),
  z.strictObject({ backend: z.literal("s3"), bucket: z.string().min(1), key: z.string().min(1), region: z.string().min(1) }),
]);

const awsSpec = z.strictObject({
  ...common,
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
  /** What runs the stack: terraform or tofu; absent or null (specs written before the field existed): $TERRAFORM_BINARY_NAME, else terraform. */
  terraformBinary: z.enum(TERRAFORM_BINARIES).nullable().optional(),
});

export const testbedSpecSchema = z.discriminatedUnion("target", [localSpec, awsSpec]);

export type TestbedSpec = z.output<typeof testbedSpecSchema>;
export type LocalTestbedSpec = Extract<TestbedSpec, { target: "local" }>;
export type AwsTestbedSpec = Extract<TestbedSpec, { target: "aws" }>;

export interface SpecInputs {
  /** The campaign file's name without extension. */
  readonly campaign: string;
  /** The testbed's own state folder (`<state-dir>/testbeds/<name>`), absolute. */
  readonly testbedDir: string;
  /** When the testbed was created: now for a new one, the stored time for one that exists. */
  readonly createdAt: Date;
}

/**
 * The spec of a campaign file's testbed section, as loaded (paths absolute, the AWS public key read).
 * Throws a UsageError when an AWS testbed's key was not read (load the file with readKeys).
 */
export function resolveTestbedSpec(testbed: Testbed, inputs: SpecInputs): TestbedSpec {
  const common = {
    schema: TESTBED_SPEC_SCHEMA,
    name: testbed.name,
    nodes: testbed.nodes,
    campaign: inputs.campaign,
    createdAt: inputs.createdAt.toISOString(),
    workerImage: testbed.workerImage,
  } as const;
  if (testbed.target === "local") {
    const sharedDir = testbed.sharedDir ?? join(inputs.testbedDir, "shared");
    checkLocalSharedDir(sharedDir);
    return { ...common, target: "local", subnet: testbed.subnet, sharedDir };
  }
  if (testbed.sshPublicKey === undefined || testbed.sshPrivateKeyFile === undefined) {
    throw new UsageError(`testbed ${testbed.name}: the SSH key was not read; expected sshPublicKeyFile (or sshPublicKey with sshPrivateKeyFile)`);
  }
  return {
    ...common,
    target: "aws",
    region: testbed.region,
    availabilityZone: availabilityZoneOf(testbed),
    instanceType: testbed.instanceType,
    ami: testbed.ami ?? null,
    amiLookup: { namePattern: DEFAULTS.aws.amiNamePattern, owner: DEFAULTS.aws.amiOwner },
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
    state: testbed.state.backend === "s3"
      ? { backend: "s3", bucket: testbed.state.bucket, key: testbed.state.key, region: testbed.state.region ?? testbed.region }
      : { backend: "local", path: join(inputs.testbedDir, "terraform.tfstate") },
    workerImageTarball: testbed.workerImageTarball ?? null,
    terraformBinary: testbed.terraformBinary ?? null,
  };
}

/**
 * Refuses (a UsageError naming the folder, its owner and mode, and the fix) a local testbed's shared directory, its
 * own or the default one in the state folder, whose path would break a line it goes into, or that someone besides
 * the caller (and root) could write or replace: every node mounts it read-write and works in it as root. Also
 * worth calling right after creating it, so a folder planted in between is caught.
 */
export function checkLocalSharedDir(sharedDir: string): void {
  const pathProblem = checkSafeResolvedPath(sharedDir);
  if (pathProblem !== undefined) throw new UsageError(`shared directory ${JSON.stringify(sharedDir)}: ${pathProblem}`);
  const problem = unsafeFolderProblem(sharedDir);
  if (problem !== undefined) {
    throw new UsageError(`shared directory ${sharedDir}: ${problem}`, {
      hint: "set testbed.sharedDir to a folder you own that only you can write (ringlab creates it if missing)",
    });
  }
}

/** ISO-8601 UTC to the second, e.g. 2025-03-01T18:00:00Z: the `ringlab:expires-at` tag. */
export function expiresAt(createdAt: Date, ttlHours: number): string {
  const expiry = new Date(createdAt.getTime() + Math.round(ttlHours * 3_600_000));
  return expiry.toISOString().replace(/\.\d{3}Z$/, "Z");
}

export function writeSpec(file: string, spec: TestbedSpec): void {
  writePrivateFile(file, `${JSON.stringify(spec, null, 2)}\n`);
}

/** Reads and validates a stored spec; a UsageError naming the file and the first field that does not fit. */
export function readSpec(file: string): TestbedSpec {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
    throw new UsageError(`cannot read the testbed spec ${file}: ${reason}`, {
      hint: "write one with `ringlab synth <campaign.yaml> --out DIR` or `ringlab up <campaign.yaml>`",
    });
  }
  const parsed = testbedSpecSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`${file}: ${issue.path.join(".") || "(top)"}: ${issue.message}; expected a ${TESTBED_SPEC_SCHEMA} spec`);
  }
  return parsed.data;
}

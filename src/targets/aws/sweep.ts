/**
 * `ringlab sweep`: finds every resource in a region tagged `ringlab:testbed`, whatever any local state says, and
 * destroys those whose `ringlab:expires-at` has passed, in dependency order. It is the safety net for what the
 * nodes' own expiry (stacks/expiry.ts) cannot remove: a controller that died, a state folder that was deleted,
 * a deploy killed before Terraform recorded what it created.
 *
 * `planSweep` is pure (found resources and a time in, an ordered plan out); `findTaggedResources` and
 * `deleteResources` talk to AWS through the SDK clients configured by clients.ts.
 *
 * Not swept: placement groups (free of charge, and the emulator the tests use has none), the VPC's default
 * security group and main route table (they go with the VPC), volumes and network interfaces (deleted with
 * their instances), EFS mount targets (deleted with their file system, found through it).
 */
import {
  DeleteInternetGatewayCommand,
  DeleteKeyPairCommand,
  DeleteLaunchTemplateCommand,
  DeleteRouteTableCommand,
  DeleteSecurityGroupCommand,
  DeleteSubnetCommand,
  DeleteVpcCommand,
  DetachInternetGatewayCommand,
  DisassociateRouteTableCommand,
  EC2Client,
  paginateDescribeInstances,
  paginateDescribeInternetGateways,
  paginateDescribeLaunchTemplates,
  paginateDescribeRouteTables,
  paginateDescribeSecurityGroups,
  paginateDescribeSubnets,
  paginateDescribeVpcs,
  DescribeKeyPairsCommand,
  TerminateInstancesCommand,
  waitUntilInstanceTerminated,
  type Filter,
  type Tag,
} from "@aws-sdk/client-ec2";
import {
  DeleteFileSystemCommand,
  DeleteMountTargetCommand,
  DescribeMountTargetsCommand,
  EFSClient,
  paginateDescribeFileSystems,
} from "@aws-sdk/client-efs";
import { PrerequisiteError, ToolError } from "../../util/errors.ts";
import { awsClientConfig } from "./clients.ts";

export const TESTBED_TAG = "ringlab:testbed";
export const EXPIRES_AT_TAG = "ringlab:expires-at";

/** What sweep removes, in the order it removes them: each kind only after everything that depends on it. */
export const SWEEP_ORDER = [
  "instance",
  "efs-file-system",
  "launch-template",
  "key-pair",
  "security-group",
  "subnet",
  "route-table",
  "internet-gateway",
  "vpc",
] as const;
export type SweepKind = (typeof SWEEP_ORDER)[number];

export interface TaggedResource {
  readonly kind: SweepKind;
  readonly id: string;
  readonly testbed: string;
  /** The `ringlab:expires-at` tag as found; undefined when missing. */
  readonly expiresAt: string | undefined;
  /** Internet gateways: the VPCs they are attached to. Route tables: their association ids. */
  readonly attachments?: readonly string[];
}

export interface SweepPlan {
  /** Past their expiry, in SWEEP_ORDER. */
  readonly expired: readonly TaggedResource[];
  /** Not expired yet. */
  readonly current: readonly TaggedResource[];
  /** Without a readable `ringlab:expires-at`: never removed, only reported. */
  readonly undated: readonly TaggedResource[];
}

export function planSweep(found: readonly TaggedResource[], now: Date): SweepPlan {
  const expiry = (resource: TaggedResource) =>
    resource.expiresAt === undefined ? NaN : Date.parse(resource.expiresAt);
  const undated = found.filter((resource) => Number.isNaN(expiry(resource)));
  const dated = found.filter((resource) => !Number.isNaN(expiry(resource)));
  const rank = (resource: TaggedResource) => SWEEP_ORDER.indexOf(resource.kind);
  const expired = dated
    .filter((resource) => expiry(resource) <= now.getTime())
    .sort((a, b) => rank(a) - rank(b) || a.testbed.localeCompare(b.testbed) || a.id.localeCompare(b.id));
  return { expired, current: dated.filter((resource) => expiry(resource) > now.getTime()), undated };
}

export interface SweepClients {
  readonly ec2: EC2Client;
  readonly efs: EFSClient;
}

export function sweepClients(region: string): SweepClients {
  const config = awsClientConfig(region);
  return { ec2: new EC2Client(config), efs: new EFSClient(config) };
}

const TAGGED: Filter[] = [{ Name: "tag-key", Values: [TESTBED_TAG] }];

function tagged(
  kind: SweepKind,
  id: string | undefined,
  tags: readonly Tag[] | undefined,
  attachments?: string[],
): TaggedResource[] {
  const tag = (key: string) => tags?.find((t) => t.Key === key)?.Value;
  const testbed = tag(TESTBED_TAG);
  if (id === undefined || testbed === undefined) return [];
  return [{ kind, id, testbed, expiresAt: tag(EXPIRES_AT_TAG), ...(attachments === undefined ? {} : { attachments }) }];
}

async function collect<Page>(
  pages: AsyncIterable<Page>,
  pick: (page: Page) => TaggedResource[],
): Promise<TaggedResource[]> {
  const found: TaggedResource[] = [];
  for await (const page of pages) found.push(...pick(page));
  return found;
}

/** Every resource of SWEEP_ORDER's kinds in the clients' region that carries the `ringlab:testbed` tag. */
export async function findTaggedResources({ ec2, efs }: SweepClients): Promise<TaggedResource[]> {
  const live: Filter[] = [
    ...TAGGED,
    { Name: "instance-state-name", Values: ["pending", "running", "stopping", "stopped", "shutting-down"] },
  ];
  const found = await Promise.all([
    collect(paginateDescribeInstances({ client: ec2 }, { Filters: live }), (page) =>
      (page.Reservations ?? [])
        .flatMap((r) => r.Instances ?? [])
        .flatMap((i) => tagged("instance", i.InstanceId, i.Tags)),
    ),
    collect(paginateDescribeFileSystems({ client: efs }, {}), (page) =>
      (page.FileSystems ?? []).flatMap((fs) => tagged("efs-file-system", fs.FileSystemId, fs.Tags)),
    ),
    collect(paginateDescribeLaunchTemplates({ client: ec2 }, { Filters: TAGGED }), (page) =>
      (page.LaunchTemplates ?? []).flatMap((t) => tagged("launch-template", t.LaunchTemplateId, t.Tags)),
    ),
    ec2.send(new DescribeKeyPairsCommand({ Filters: TAGGED })).then((page) =>
      // By name: every EC2 API (and moto) takes the name, not all take the id.
      (page.KeyPairs ?? []).flatMap((k) => tagged("key-pair", k.KeyName, k.Tags)),
    ),
    // The VPC's default group goes with the VPC (and cannot be deleted on its own).
    collect(paginateDescribeSecurityGroups({ client: ec2 }, { Filters: TAGGED }), (page) =>
      (page.SecurityGroups ?? [])
        .filter((g) => g.GroupName !== "default")
        .flatMap((g) => tagged("security-group", g.GroupId, g.Tags)),
    ),
    collect(paginateDescribeSubnets({ client: ec2 }, { Filters: TAGGED }), (page) =>
      (page.Subnets ?? []).flatMap((s) => tagged("subnet", s.SubnetId, s.Tags)),
    ),
    collect(paginateDescribeRouteTables({ client: ec2 }, { Filters: TAGGED }), (page) =>
      (page.RouteTables ?? [])
        .filter((t) => !(t.Associations ?? []).some((a) => a.Main === true))
        .flatMap((t) =>
          tagged(
            "route-table",
            t.RouteTableId,
            t.Tags,
            (t.Associations ?? []).flatMap((a) => a.RouteTableAssociationId ?? []),
          ),
        ),
    ),
    collect(paginateDescribeInternetGateways({ client: ec2 }, { Filters: TAGGED }), (page) =>
      (page.InternetGateways ?? []).flatMap((g) =>
        tagged(
          "internet-gateway",
          g.InternetGatewayId,
          g.Tags,
          (g.Attachments ?? []).flatMap((a) => a.VpcId ?? []),
        ),
      ),
    ),
    collect(paginateDescribeVpcs({ client: ec2 }, { Filters: TAGGED }), (page) =>
      (page.Vpcs ?? []).flatMap((v) => tagged("vpc", v.VpcId, v.Tags)),
    ),
  ]);
  return found.flat();
}

/** Seconds to keep retrying a deletion AWS refuses for a dependency still going away (an ENI detaching). */
const DEPENDENCY_RETRY_MS = 5 * 60_000;
const MOUNT_TARGET_WAIT_MS = 5 * 60_000;

async function retryWhileDependent(
  work: () => Promise<unknown>,
  deadline = Date.now() + DEPENDENCY_RETRY_MS,
): Promise<void> {
  for (;;) {
    try {
      await work();
      return;
    } catch (error) {
      const name = (error as { name?: string }).name ?? "";
      if (!/DependencyViolation|FileSystemInUse/.test(name) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5_000));
    }
  }
}

async function deleteFileSystem(efs: EFSClient, fileSystemId: string): Promise<void> {
  const targets = (await efs.send(new DescribeMountTargetsCommand({ FileSystemId: fileSystemId }))).MountTargets ?? [];
  for (const target of targets) await efs.send(new DeleteMountTargetCommand({ MountTargetId: target.MountTargetId }));
  const deadline = Date.now() + MOUNT_TARGET_WAIT_MS;
  while (
    ((await efs.send(new DescribeMountTargetsCommand({ FileSystemId: fileSystemId }))).MountTargets ?? []).length > 0
  ) {
    if (Date.now() > deadline)
      throw new Error(`the mount targets of ${fileSystemId} were not deleted within ${MOUNT_TARGET_WAIT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  }
  await retryWhileDependent(() => efs.send(new DeleteFileSystemCommand({ FileSystemId: fileSystemId })));
}

/** Deletes one resource (not instances: those are terminated together, see deleteResources). */
async function deleteOne({ ec2, efs }: SweepClients, resource: TaggedResource): Promise<void> {
  const id = resource.id;
  switch (resource.kind) {
    case "instance":
      throw new Error("instances are terminated together");
    case "efs-file-system":
      return deleteFileSystem(efs, id);
    case "launch-template":
      return void (await ec2.send(new DeleteLaunchTemplateCommand({ LaunchTemplateId: id })));
    case "key-pair":
      return void (await ec2.send(new DeleteKeyPairCommand({ KeyName: id })));
    case "security-group":
      return retryWhileDependent(() => ec2.send(new DeleteSecurityGroupCommand({ GroupId: id })));
    case "subnet":
      return retryWhileDependent(() => ec2.send(new DeleteSubnetCommand({ SubnetId: id })));
    case "route-table":
      for (const association of resource.attachments ?? [])
        await ec2.send(new DisassociateRouteTableCommand({ AssociationId: association }));
      return void (await ec2.send(new DeleteRouteTableCommand({ RouteTableId: id })));
    case "internet-gateway":
      for (const vpcId of resource.attachments ?? [])
        await ec2.send(new DetachInternetGatewayCommand({ InternetGatewayId: id, VpcId: vpcId }));
      return void (await ec2.send(new DeleteInternetGatewayCommand({ InternetGatewayId: id })));
    case "vpc":
      return retryWhileDependent(() => ec2.send(new DeleteVpcCommand({ VpcId: id })));
  }
}

const INSTANCE_TERMINATION_WAIT_S = 15 * 60;

/**
 * Deletes `resources` in the order given (planSweep's), reporting each; instances first, all at once, waiting
 * until they are terminated. Keeps going past a failure and throws one ToolError listing every failure at the end.
 */
export async function deleteResources(
  clients: SweepClients,
  resources: readonly TaggedResource[],
  report: (line: string) => void,
): Promise<void> {
  const failures: string[] = [];
  const instances = resources.filter((r) => r.kind === "instance").map((r) => r.id);
  if (instances.length > 0) {
    try {
      await clients.ec2.send(new TerminateInstancesCommand({ InstanceIds: instances }));
      await waitUntilInstanceTerminated(
        { client: clients.ec2, maxWaitTime: INSTANCE_TERMINATION_WAIT_S, minDelay: 2 },
        { InstanceIds: instances },
      );
      for (const id of instances) report(`terminated instance ${id}`);
    } catch (error) {
      failures.push(`instances ${instances.join(", ")}: ${(error as Error).message}`);
    }
  }
  for (const resource of resources.filter((r) => r.kind !== "instance")) {
    try {
      await deleteOne(clients, resource);
      report(`deleted ${resource.kind} ${resource.id} (testbed ${resource.testbed})`);
    } catch (error) {
      failures.push(`${resource.kind} ${resource.id}: ${(error as Error).message}`);
    }
  }
  if (failures.length > 0) {
    throw new ToolError(
      "aws",
      `sweep could not delete ${failures.length} of ${resources.length} resources:\n  ${failures.join("\n  ")}`,
      {
        hint: "run `ringlab sweep` again; what is left stays tagged ringlab:testbed, so the next sweep finds it",
      },
    );
  }
}

export interface SweepOptions {
  /** Only list what would be deleted. */
  readonly dryRun: boolean;
  readonly now: Date;
}

/** Finds, reports and (unless dryRun) deletes the expired ringlab resources the clients can see. */
export async function sweep(
  clients: SweepClients,
  options: SweepOptions,
  report: (line: string) => void,
): Promise<SweepPlan> {
  const region = await clients.ec2.config.region();
  const found = await findTaggedResources(clients).catch((error: unknown) => {
    throw cannotAsk(`cannot list the resources tagged ${TESTBED_TAG} in ${region}`, error);
  });
  const plan = planSweep(found, options.now);
  const describe = (r: TaggedResource) =>
    `${r.kind} ${r.id} (testbed ${r.testbed}, expires-at ${r.expiresAt ?? "missing"})`;
  for (const resource of plan.current) report(`not expired: ${describe(resource)}`);
  for (const resource of plan.undated) report(`left alone, no readable ${EXPIRES_AT_TAG} tag: ${describe(resource)}`);
  for (const resource of plan.expired) report(`${options.dryRun ? "would delete" : "expired"}: ${describe(resource)}`);
  if (!options.dryRun && plan.expired.length > 0) await deleteResources(clients, plan.expired, report);
  return plan;
}

/**
 * Why a call to AWS failed, as the error the CLI reports: no credentials is a missing prerequisite (exit 3), any
 * other failure (no network, an AWS error) a failed tool (exit 4).
 */
function cannotAsk(doing: string, error: unknown): PrerequisiteError | ToolError {
  const name = (error as { name?: string }).name ?? "";
  const message = (error as Error).message ?? String(error);
  if (name === "CredentialsProviderError") {
    return new PrerequisiteError(`${doing}: no AWS credentials (${message})`, {
      cause: error,
      hint:
        "give ringlab credentials the AWS CLI would use (AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, " +
        "or `aws configure`); `aws sts get-caller-identity` checks them",
    });
  }
  return new ToolError("aws", `${doing}: ${name && !message.includes(name) ? `${name}: ` : ""}${message}`, {
    cause: error,
    hint: "check the network, the region and the AWS credentials (`aws sts get-caller-identity`), then run it again",
  });
}

/**
 * Deletes what one deploy of a testbed left after its stack was destroyed, expired or not: resources that carry
 * `ringlab:testbed=<testbed>` and that deploy's `ringlab:expires-at` (its spec's `expiresAt`), which the deploy
 * created but did not get to record in Terraform's state (a controller killed mid-deploy). Returns what it deleted.
 * The expires-at scope matters: another state folder may run a testbed of the same name in the region (its deploy
 * fails on the key pair's name, but what it created until then, or the other testbed itself, must not be touched).
 */
export async function deleteTestbedLeftovers(
  clients: SweepClients,
  testbed: string,
  expiringAt: string,
  report: (line: string) => void,
): Promise<readonly TaggedResource[]> {
  const found = (await findTaggedResources(clients)).filter(
    (resource) => resource.testbed === testbed && resource.expiresAt === expiringAt,
  );
  const ordered = planSweep(
    found.map((resource) => ({ ...resource, expiresAt: new Date(0).toISOString() })),
    new Date(),
  ).expired;
  if (ordered.length > 0) await deleteResources(clients, ordered, report);
  return ordered;
}

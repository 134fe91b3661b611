/**
 * `ringlab sweep` against a moto server on 127.0.0.1 through the real AWS SDK: resources of an expired testbed,
 * a current one, an undated one and one that is not ringlab's are created directly with the SDK; sweep removes
 * exactly the expired testbed's, in an order AWS accepts, and --dry-run removes nothing.
 */
import { spawnSync } from "node:child_process";
import { createServer, type AddressInfo } from "node:net";
import { resolve } from "node:path";
import {
  AssociateRouteTableCommand,
  AttachInternetGatewayCommand,
  CreateInternetGatewayCommand,
  CreateKeyPairCommand,
  CreateLaunchTemplateCommand,
  CreateRouteTableCommand,
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeInstancesCommand,
  DescribeInternetGatewaysCommand,
  DescribeKeyPairsCommand,
  DescribeLaunchTemplatesCommand,
  DescribeRouteTablesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  DescribeVpcsCommand,
  RunInstancesCommand,
  EC2Client,
  type ResourceType,
} from "@aws-sdk/client-ec2";
import {
  EFSClient,
  CreateFileSystemCommand,
  CreateMountTargetCommand,
  DescribeFileSystemsCommand,
  DescribeMountTargetsCommand,
} from "@aws-sdk/client-efs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_AWS_ENDPOINT_ENV } from "../../../src/targets/aws/clients.ts";
import { PrerequisiteError } from "../../../src/util/errors.ts";
import {
  deleteTestbedLeftovers,
  findTaggedResources,
  planSweep,
  SWEEP_ORDER,
  sweep,
  sweepClients,
  type SweepClients,
  type TaggedResource,
} from "../../../src/targets/aws/sweep.ts";
import { startMoto, type Moto } from "./moto.ts";

const REGION = "eu-west-1";
/** One of moto's built-in images (it has no current ones); it passes src/rules/ami.ts. */
const MOTO_AMI = "ami-1e749f67";
const PAST = "2020-01-01T00:00:00Z";
const FUTURE = "2999-01-01T00:00:00Z";

let moto: Moto;
let clients: SweepClients;

beforeAll(async () => {
  moto = await startMoto();
  process.env[TEST_AWS_ENDPOINT_ENV] = moto.url;
  clients = sweepClients(REGION);
  // Nothing may fall through to AWS: both clients resolve to the emulator on loopback.
  for (const client of [clients.ec2, clients.efs]) expect((await client.config.endpoint!()).hostname).toBe("127.0.0.1");
}, 60_000);
afterAll(async () => {
  delete process.env[TEST_AWS_ENDPOINT_ENV];
  await moto?.stop();
});

function tags(testbed: string | undefined, expiresAt: string | undefined) {
  return [
    ...(testbed === undefined ? [] : [{ Key: "ringlab:testbed", Value: testbed }]),
    ...(expiresAt === undefined ? [] : [{ Key: "ringlab:expires-at", Value: expiresAt }]),
    { Key: "Name", Value: testbed ?? "someone-else" },
  ];
}
const spec = (type: ResourceType, testbed: string | undefined, expiresAt: string | undefined) => [
  { ResourceType: type, Tags: tags(testbed, expiresAt) },
];

/** A whole testbed the way the stack builds one; returns the VPC id. */
async function createTestbed(
  ec2: EC2Client,
  testbed: string | undefined,
  expiresAt: string | undefined,
  cidr: string,
): Promise<string> {
  const vpcId = (
    await ec2.send(
      new CreateVpcCommand({ CidrBlock: `${cidr}.0.0/16`, TagSpecifications: spec("vpc", testbed, expiresAt) }),
    )
  ).Vpc!.VpcId!;
  const subnetId = (
    await ec2.send(
      new CreateSubnetCommand({
        VpcId: vpcId,
        CidrBlock: `${cidr}.1.0/24`,
        AvailabilityZone: `${REGION}a`,
        TagSpecifications: spec("subnet", testbed, expiresAt),
      }),
    )
  ).Subnet!.SubnetId!;
  const igwId = (
    await ec2.send(
      new CreateInternetGatewayCommand({ TagSpecifications: spec("internet-gateway", testbed, expiresAt) }),
    )
  ).InternetGateway!.InternetGatewayId!;
  await ec2.send(new AttachInternetGatewayCommand({ InternetGatewayId: igwId, VpcId: vpcId }));
  const routeTableId = (
    await ec2.send(
      new CreateRouteTableCommand({ VpcId: vpcId, TagSpecifications: spec("route-table", testbed, expiresAt) }),
    )
  ).RouteTable!.RouteTableId!;
  await ec2.send(new AssociateRouteTableCommand({ RouteTableId: routeTableId, SubnetId: subnetId }));
  const groupId = (
    await ec2.send(
      new CreateSecurityGroupCommand({
        GroupName: `${testbed ?? "other"}-cluster`,
        Description: "test",
        VpcId: vpcId,
        TagSpecifications: spec("security-group", testbed, expiresAt),
      }),
    )
  ).GroupId!;
  await ec2.send(
    new CreateKeyPairCommand({
      KeyName: `${testbed ?? "other"}-${cidr}`,
      TagSpecifications: spec("key-pair", testbed, expiresAt),
    }),
  );
  await ec2.send(
    new CreateLaunchTemplateCommand({
      LaunchTemplateName: `${testbed ?? "other"}-${cidr}-node`,
      LaunchTemplateData: {},
      TagSpecifications: spec("launch-template", testbed, expiresAt),
    }),
  );
  await ec2.send(
    new RunInstancesCommand({
      ImageId: MOTO_AMI,
      InstanceType: "t3.micro",
      MinCount: 2,
      MaxCount: 2,
      SubnetId: subnetId,
      SecurityGroupIds: [groupId],
      TagSpecifications: spec("instance", testbed, expiresAt),
    }),
  );
  const fileSystemId = (
    await clients.efs.send(
      new CreateFileSystemCommand({
        CreationToken: `${testbed ?? "other"}-${cidr}`,
        Encrypted: true,
        Tags: tags(testbed, expiresAt),
      }),
    )
  ).FileSystemId!;
  await clients.efs.send(
    new CreateMountTargetCommand({ FileSystemId: fileSystemId, SubnetId: subnetId, SecurityGroups: [groupId] }),
  );
  return vpcId;
}

/** What is left per kind, as "<testbed or ->:<id>" of everything with a Name tag (the test's resources). */
async function inventory(): Promise<Record<string, string[]>> {
  const { ec2, efs } = clients;
  const label = (t?: { Key?: string; Value?: string }[]) =>
    t?.find((tag) => tag.Key === "ringlab:testbed")?.Value ?? "-";
  const named = <T extends { Tags?: { Key?: string; Value?: string }[] }>(items: T[] | undefined) =>
    (items ?? [])
      .filter((item) => item.Tags?.some((tag) => tag.Key === "Name"))
      .map((item) => label(item.Tags))
      .sort();
  const instances = (await ec2.send(new DescribeInstancesCommand({}))).Reservations?.flatMap(
    (r) => r.Instances ?? [],
  ).filter((i) => i.State?.Name !== "terminated");
  const fileSystems = (await efs.send(new DescribeFileSystemsCommand({}))).FileSystems;
  const mountTargets = (
    await Promise.all(
      (fileSystems ?? []).map((fs) => efs.send(new DescribeMountTargetsCommand({ FileSystemId: fs.FileSystemId }))),
    )
  ).flatMap((r) => r.MountTargets ?? []);
  return {
    vpc: named((await ec2.send(new DescribeVpcsCommand({}))).Vpcs),
    subnet: named((await ec2.send(new DescribeSubnetsCommand({}))).Subnets),
    "internet-gateway": named((await ec2.send(new DescribeInternetGatewaysCommand({}))).InternetGateways),
    "route-table": named((await ec2.send(new DescribeRouteTablesCommand({}))).RouteTables),
    "security-group": named(
      (await ec2.send(new DescribeSecurityGroupsCommand({}))).SecurityGroups?.filter((g) => g.GroupName !== "default"),
    ),
    "key-pair": named((await ec2.send(new DescribeKeyPairsCommand({}))).KeyPairs),
    "launch-template": named((await ec2.send(new DescribeLaunchTemplatesCommand({}))).LaunchTemplates),
    instance: named(instances),
    "efs-file-system": named(fileSystems),
    "efs-mount-target": [String(mountTargets.length)],
  };
}

const everyKind = (labels: string[], mountTargets: number) => ({
  vpc: labels,
  subnet: labels,
  "internet-gateway": labels,
  "route-table": labels,
  "security-group": labels,
  "key-pair": labels,
  "launch-template": labels,
  instance: labels.flatMap((l) => [l, l]),
  "efs-file-system": labels,
  "efs-mount-target": [String(mountTargets)],
});

describe("ringlab sweep against moto", () => {
  it("lists with --dry-run, then deletes exactly the expired testbed's resources, whatever local state says", async () => {
    await createTestbed(clients.ec2, "old", PAST, "10.81");
    await createTestbed(clients.ec2, "fresh", FUTURE, "10.82");
    await createTestbed(clients.ec2, "undated", undefined, "10.83");
    await createTestbed(clients.ec2, undefined, undefined, "10.84");
    const all = everyKind(["-", "fresh", "old", "undated"], 4);
    expect(await inventory()).toEqual(all);

    const lines: string[] = [];
    const dry = await sweep(clients, { dryRun: true, now: new Date() }, (line) => lines.push(line));
    expect(await inventory()).toEqual(all);
    expect(new Set(dry.expired.map((r) => r.testbed))).toEqual(new Set(["old"]));
    expect(dry.expired.map((r) => r.kind)).toEqual(["instance", "instance", ...SWEEP_ORDER.slice(1)]);
    expect(dry.undated.every((r) => r.testbed === "undated")).toBe(true);
    expect(lines.filter((l) => l.startsWith("would delete: "))).toHaveLength(dry.expired.length);

    const swept: string[] = [];
    await sweep(clients, { dryRun: false, now: new Date() }, (line) => swept.push(line));
    expect(await inventory()).toEqual(everyKind(["-", "fresh", "undated"], 3));
    expect(swept.filter((l) => /^(terminated|deleted) /.test(l))).toHaveLength(dry.expired.length);
    const again = await sweep(clients, { dryRun: false, now: new Date() }, () => undefined);
    expect(again.expired).toEqual([]);
  }, 120_000);

  it("runs as `ringlab sweep --dry-run` through the CLI, printing what it finds", () => {
    const result = spawnSync(
      process.execPath,
      [resolve("src/bin/ringlab.mjs"), "sweep", "--region", REGION, "--dry-run"],
      {
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, [TEST_AWS_ENDPOINT_ENV]: moto.url },
      },
    );
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/not expired: vpc vpc-\w+ \(testbed fresh, expires-at 2999-01-01T00:00:00Z\)/);
    expect(result.stdout).toMatch(/left alone, no readable ringlab:expires-at tag: vpc vpc-\w+ \(testbed undated/);
    expect(result.stdout).toMatch(new RegExp(`${REGION}: \\d+ ringlab resources found, 0 expired`));
  }, 60_000);

  it("takes one deploy's leftovers only (its expires-at), never a same-named testbed of another state folder", async () => {
    const ours = "2998-06-01T12:00:00Z";
    await createTestbed(clients.ec2, "twin", ours, "10.85");
    await createTestbed(clients.ec2, "twin", FUTURE, "10.86");
    const twins = async () => (await findTaggedResources(clients)).filter((r) => r.testbed === "twin");
    const before = await twins();
    const kinds = new Set(before.map((r) => r.kind));
    const removed = await deleteTestbedLeftovers(clients, "twin", ours, () => undefined);
    expect(new Set(removed.map((r) => r.kind))).toEqual(kinds);
    expect(removed.map((r) => r.id).sort()).toEqual(
      before
        .filter((r) => r.expiresAt === ours)
        .map((r) => r.id)
        .sort(),
    );
    const left = await twins();
    expect(new Set(left.map((r) => r.kind))).toEqual(kinds);
    expect(left.every((r) => r.expiresAt === FUTURE)).toBe(true);
    // The other one's `down` takes the rest.
    await deleteTestbedLeftovers(clients, "twin", FUTURE, () => undefined);
    expect(await twins()).toEqual([]);
  }, 120_000);

  it("refuses to run with a test endpoint that is not loopback (exit 2), before any call", () => {
    const result = spawnSync(
      process.execPath,
      [resolve("src/bin/ringlab.mjs"), "sweep", "--region", REGION, "--dry-run"],
      {
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, [TEST_AWS_ENDPOINT_ENV]: "https://ec2.eu-west-1.amazonaws.com" },
      },
    );
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("is not a loopback address");
  }, 60_000);
});

/** A loopback port nothing listens on: a call there fails at once, as AWS without a network does. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

describe("sweep when AWS cannot be asked", () => {
  it("fails with exit 4 naming the region, not the SDK's stack trace, when the endpoint does not answer (CLI)", async () => {
    const result = spawnSync(process.execPath, [resolve("src/bin/ringlab.mjs"), "sweep", "--region", REGION], {
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, [TEST_AWS_ENDPOINT_ENV]: `http://127.0.0.1:${await closedPort()}` },
    });
    expect(result.status, result.stderr).toBe(4);
    expect(result.stderr).toContain(`error: cannot list the resources tagged ringlab:testbed in ${REGION}:`);
    expect(result.stderr).toContain("hint: check the network, the region and the AWS credentials");
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.stderr, "the SDK's Node version notice between ringlab's lines").not.toContain(
      "NodeVersionSupportWarning",
    );
  }, 60_000);

  it("fails with exit 3 and how to give credentials when the SDK finds none", async () => {
    const noCredentials = async () => {
      throw Object.assign(new Error("Could not load credentials from any providers"), {
        name: "CredentialsProviderError",
      });
    };
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const clients = {
      ec2: new EC2Client({ region: REGION, endpoint, credentials: noCredentials, maxAttempts: 1 }),
      efs: new EFSClient({ region: REGION, endpoint, credentials: noCredentials, maxAttempts: 1 }),
    };
    const failure = await sweep(clients, { dryRun: true, now: new Date() }, () => undefined).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(PrerequisiteError);
    expect((failure as PrerequisiteError).exitCode).toBe(3);
    expect((failure as PrerequisiteError).message).toBe(
      `cannot list the resources tagged ringlab:testbed in ${REGION}: no AWS credentials (Could not load credentials from any providers)`,
    );
    expect((failure as PrerequisiteError).hint).toContain("AWS_PROFILE");
  });
});

describe("planSweep", () => {
  const resource = (
    kind: TaggedResource["kind"],
    id: string,
    expiresAt: string | undefined,
    testbed = "a",
  ): TaggedResource => ({ kind, id, testbed, expiresAt });

  it("orders expired resources so that nothing is deleted before what depends on it", () => {
    const found = [...SWEEP_ORDER].reverse().map((kind, index) => resource(kind, `id-${index}`, PAST));
    expect(planSweep(found, new Date()).expired.map((r) => r.kind)).toEqual([...SWEEP_ORDER]);
  });

  it("keeps resources that expire later, and those whose expiry cannot be read", () => {
    const now = new Date("2025-03-01T12:00:00Z");
    const plan = planSweep(
      [
        resource("vpc", "expired", "2025-03-01T11:59:59Z"),
        resource("vpc", "exactly-now", "2025-03-01T12:00:00Z"),
        resource("vpc", "later", "2025-03-01T12:00:01Z"),
        resource("vpc", "missing", undefined),
        resource("vpc", "garbled", "next tuesday"),
      ],
      now,
    );
    expect(plan.expired.map((r) => r.id)).toEqual(["exactly-now", "expired"]);
    expect(plan.current.map((r) => r.id)).toEqual(["later"]);
    expect(plan.undated.map((r) => r.id)).toEqual(["missing", "garbled"]);
  });
});

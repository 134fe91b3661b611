/**
 * The AWS path for real, against a moto server on 127.0.0.1: the stack synthesized by the cdktf library, the real
 * terraform and hashicorp/aws provider (from the offline mirror), routed to moto by the test-only endpoint
 * override (RINGLAB_TEST_AWS_ENDPOINT; every service's endpoint, fake credentials). Nothing leaves 127.0.0.0/8:
 * the provider and the SDK go to moto, and under the override the SSH wait probes no address that is not loopback
 * (moto's instance addresses belong to nobody), so it fails after its bound like a node that never booted.
 *
 * The testbeds have `placementGroup: false`: moto 5.2.1 does not implement CreatePlacementGroup.
 * Each apply takes ~50 s and each destroy ~35 s on the build machines: hence two deploy cycles, each asserting much.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  CreateVpcCommand,
  DescribeInstancesCommand,
  DescribeInternetGatewaysCommand,
  DescribeKeyPairsCommand,
  DescribeLaunchTemplatesCommand,
  DescribeRouteTablesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  DescribeVpcsCommand,
  EC2Client,
} from "@aws-sdk/client-ec2";
import { DescribeFileSystemsCommand, EFSClient } from "@aws-sdk/client-efs";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { awsClientConfig, TEST_AWS_ENDPOINT_ENV } from "../../../src/targets/aws/clients.ts";
import { loadCampaignFile } from "../../../src/config/load.ts";
import type { Context } from "../../../src/context/context.ts";
import { ToolError } from "../../../src/util/errors.ts";
import { silentReporter } from "../../../src/context/reporter.ts";
import { testbedPaths } from "../../../src/testbed/paths.ts";
import { up } from "../../../src/testbed/testbed.ts";
import { startMoto, type Moto } from "./moto.ts";

const REPO = resolve(import.meta.dirname, "../../..");
const REGION = "eu-west-1";
/** One of moto's built-in images; moto has no current Deep Learning AMI to look up. */
const MOTO_AMI = "ami-1e749f67";
/** A real ed25519 public key (moto's ImportKeyPair decodes it); its private half was thrown away. */
const PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN937XpgEQ7l3cW/d53arO8Uv8YoKTpYc42yTOnJ6Amg ringlab-moto-test";
const SSH_WAIT_MS = 3_000;

let moto: Moto;
let work = "";
let ec2: EC2Client;
let efs: EFSClient;
const savedEnv: Record<string, string | undefined> = {};

function setEnv(values: Record<string, string>): void {
  for (const [key, value] of Object.entries(values)) {
    savedEnv[key] = process.env[key];
    process.env[key] = value;
  }
}

beforeAll(async () => {
  expect(existsSync("/opt/tf-plugins/registry.terraform.io/hashicorp/aws/5.100.0"), "the provider mirror").toBe(true);
  moto = await startMoto();
  work = mkdtempSync(join(tmpdir(), "ringlab-moto-deploy-"));
  mkdirSync(join(work, "plugin-cache"));
  writeFileSync(
    join(work, "terraform.rc"),
    `plugin_cache_dir = "${work}/plugin-cache"\n` +
      `provider_installation {\n  filesystem_mirror {\n    path    = "/opt/tf-plugins"\n    include = ["registry.terraform.io/hashicorp/aws"]\n  }\n}\n`,
  );
  setEnv({
    [TEST_AWS_ENDPOINT_ENV]: moto.url,
    TF_CLI_CONFIG_FILE: join(work, "terraform.rc"),
    TERRAFORM_BINARY_NAME: "terraform",
    CHECKPOINT_DISABLE: "1",
    AWS_ACCESS_KEY_ID: "testing",
    AWS_SECRET_ACCESS_KEY: "testing",
    AWS_EC2_METADATA_DISABLED: "true",
  });
  ec2 = new EC2Client(awsClientConfig(REGION));
  efs = new EFSClient(awsClientConfig(REGION));
  // The assertions below ask moto, and so must every call of the code under test: never AWS.
  for (const client of [ec2, efs]) expect((await client.config.endpoint!()).hostname).toBe("127.0.0.1");
}, 60_000);

afterAll(async () => {
  for (const [key, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  await moto?.stop();
  rmSync(work, { recursive: true, force: true });
});

function campaignFile(name: string, fields: Record<string, string> = {}): string {
  const file = join(work, `${name}.yaml`);
  const lines = Object.entries({
    target: "aws",
    name,
    nodes: "2",
    region: REGION,
    instanceType: "g4dn.xlarge",
    ami: MOTO_AMI,
    adminCidr: "203.0.113.7/32",
    sshPublicKey: PUBLIC_KEY,
    sshPrivateKeyFile: "/nonexistent/ringlab",
    ttlHours: "2",
    // moto 5.2.1 does not implement CreatePlacementGroup.
    placementGroup: "false",
    ...fields,
  }).map(([key, value]) => `  ${key}: ${value}`);
  writeFileSync(file, `testbed:\n${lines.join("\n")}\n`);
  return file;
}

/** The end of what terraform said (ringlab's log of the state folder): why a resource was left, when one is. */
function logTail(stateDir: string): string {
  const log = join(stateDir, "log");
  return existsSync(log)
    ? `leftovers; the log ends:\n${readFileSync(log, "utf8").split("\n").slice(-60).join("\n")}`
    : "leftovers (no log)";
}

function context(stateDir: string): Context {
  return {
    repoDir: REPO,
    stateDir,
    reporter: silentReporter,
    logFile: join(stateDir, "log"),
    signal: new AbortController().signal,
  };
}

/**
 * What moto holds besides its default VPC and what comes with it: by kind, the ringlab:testbed tag (or "-") of each.
 */
async function leftovers(): Promise<Record<string, string[]>> {
  const owner = (tags?: { Key?: string; Value?: string }[]) =>
    tags?.find((t) => t.Key === "ringlab:testbed")?.Value ?? "-";
  const of = <T extends { Tags?: { Key?: string; Value?: string }[] }>(items?: T[]) =>
    (items ?? []).map((item) => owner(item.Tags)).sort();
  const vpcs = (await ec2.send(new DescribeVpcsCommand({}))).Vpcs?.filter((v) => !v.IsDefault);
  const instances = (await ec2.send(new DescribeInstancesCommand({}))).Reservations?.flatMap(
    (r) => r.Instances ?? [],
  ).filter((i) => i.State?.Name !== "terminated");
  return {
    vpc: of(vpcs),
    subnet: of((await ec2.send(new DescribeSubnetsCommand({}))).Subnets?.filter((s) => !s.DefaultForAz)),
    "security-group": of(
      (await ec2.send(new DescribeSecurityGroupsCommand({}))).SecurityGroups?.filter((g) => g.GroupName !== "default"),
    ),
    "route-table": of(
      (await ec2.send(new DescribeRouteTablesCommand({}))).RouteTables?.filter(
        (t) => !t.Associations?.some((a) => a.Main),
      ),
    ),
    "internet-gateway": of(
      (await ec2.send(new DescribeInternetGatewaysCommand({}))).InternetGateways?.filter((g) =>
        g.Tags?.some((t) => t.Key === "ringlab:testbed"),
      ),
    ),
    instance: of(instances),
    "key-pair": of((await ec2.send(new DescribeKeyPairsCommand({}))).KeyPairs),
    "launch-template": of((await ec2.send(new DescribeLaunchTemplatesCommand({}))).LaunchTemplates),
    "efs-file-system": of((await efs.send(new DescribeFileSystemsCommand({}))).FileSystems),
  };
}

const NOTHING = {
  vpc: [],
  subnet: [],
  "security-group": [],
  "route-table": [],
  "internet-gateway": [],
  instance: [],
  "key-pair": [],
  "launch-template": [],
  "efs-file-system": [],
};

describe("AWS testbed against moto, through the real cdktf synthesizer and terraform", () => {
  // Two deploy cycles (each apply and destroy takes tens of seconds): a whole deploy whose SSH wait fails, and one
  // killed while its instances are being created. Both find resources in moto that are not theirs to remove.
  let unrelated = "";
  let twin = "";

  beforeAll(async () => {
    unrelated = (await ec2.send(new CreateVpcCommand({ CidrBlock: "10.99.0.0/16" }))).Vpc!.VpcId!;
    // Another state folder's testbed named like both below (a deploy of its own, so another expires-at).
    const tags = (name: string) => [
      { Key: "ringlab:testbed", Value: name },
      { Key: "ringlab:expires-at", Value: "2999-01-01T00:00:00Z" },
    ];
    twin = (
      await ec2.send(
        new CreateVpcCommand({
          CidrBlock: "10.98.0.0/16",
          TagSpecifications: [
            { ResourceType: "vpc", Tags: [...tags("motoefs"), { Key: "ringlab:campaign", Value: "another" }] },
          ],
        }),
      )
    ).Vpc!.VpcId!;
  });

  /** What was in moto before the tests is still there: neither a rollback nor `down` removes what it did not create. */
  async function othersLeftAlone(): Promise<void> {
    const kept = (await ec2.send(new DescribeVpcsCommand({ VpcIds: [unrelated, twin] }))).Vpcs?.map(
      (v) => v.VpcId,
    ).sort();
    expect(kept).toEqual([unrelated, twin].sort());
  }

  it("up deploys, reads the real outputs, writes the inventory; the SSH wait fails after its bound and the rollback destroys only what it created", async () => {
    const stateDir = join(work, "state-rollback");
    const started = Date.now();
    const error = await up(context(stateDir), loadCampaignFile(campaignFile("motoefs", { sharedStorage: "efs" })), {
      aws: { sshWaitMs: SSH_WAIT_MS },
    }).catch((e: unknown) => e);
    const seconds = Math.round((Date.now() - started) / 1000);
    expect(error, String(error)).toBeInstanceOf(ToolError);
    expect((error as ToolError).tool).toBe("ssh");
    expect((error as Error).message).toMatch(
      /^SSH did not answer within 3 s on (\d+\.\d+\.\d+\.\d+, )?\d+\.\d+\.\d+\.\d+$/,
    );

    const paths = testbedPaths(stateDir, "motoefs");
    const outputs = JSON.parse(readFileSync(paths.stackOutputs, "utf8"))["ringlab-motoefs"];
    expect(outputs.nodes.map((n: { name: string; role: string }) => [n.name, n.role])).toEqual([
      ["motoefs-node-0", "head"],
      ["motoefs-node-1", "worker"],
    ]);
    expect(outputs.sharedStorageEndpoint).toMatch(/\.efs\.eu-west-1\.amazonaws\.com$/);
    // Every string in the inventory is tagged !unsafe for Ansible; the plain values are what matters here.
    const inventory = load(readFileSync(paths.inventory, "utf8").replaceAll("!unsafe ", "")) as {
      all: {
        vars: Record<string, unknown>;
        children: Record<string, { hosts: Record<string, Record<string, unknown>> }>;
      };
    };
    const hosts = { ...inventory.all.children["head"]!.hosts, ...inventory.all.children["workers"]!.hosts };
    expect(Object.keys(hosts).sort()).toEqual(["motoefs-node-0", "motoefs-node-1"]);
    for (const [name, vars] of Object.entries(hosts)) {
      const node = outputs.nodes.find((n: { name: string }) => n.name === name);
      expect(vars["ansible_host"]).toBe(node.publicIp);
      expect((error as Error).message).toContain(node.publicIp);
      expect(vars["ringlab_ssh_host_key_checking"] ?? inventory.all.vars["ringlab_ssh_host_key_checking"]).toBe("yes");
    }
    // Each node's host key (given to it in its user data) was pinned before the first connection was tried.
    const hostKey = (rank: number) =>
      readFileSync(join(paths.dir, "host-keys", `node-${rank}.pub`), "utf8")
        .split(" ")
        .slice(0, 2)
        .join(" ");
    expect(readFileSync(paths.knownHosts, "utf8")).toBe(
      outputs.nodes
        .map(
          (n: { publicIp: string; privateIp: string }, rank: number) =>
            `${n.publicIp},${n.privateIp} ${hostKey(rank)}\n`,
        )
        .join(""),
    );
    // The twin VPC carries this testbed's name: the rollback's search by tag must tell it apart by expires-at.
    expect(await leftovers(), logTail(stateDir)).toEqual({ ...NOTHING, vpc: ["-", "motoefs"] });
    await othersLeftAlone();
    expect(existsSync(paths.record)).toBe(false);
    console.info(`deploy + failed SSH wait + rollback destroy: ${seconds} s`);
  }, 240_000);

  it("`ringlab down` after the controller was SIGKILLed mid-deploy leaves nothing of it, and nothing it did not create", async () => {
    const stateDir = join(work, "state-killed");
    const cli = (args: string[]) => [resolve(REPO, "src/bin/ringlab.mjs"), "--state-dir", stateDir, "-v", ...args];
    const controller = spawn(process.execPath, cli(["up", campaignFile("motoefs")]), {
      cwd: REPO,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const creating = new Promise<void>((resolveCreating, reject) => {
      const watch = (chunk: Buffer) => {
        output += chunk.toString();
        if (/aws_instance\.[^\n]*Creating\.\.\./.test(output)) resolveCreating();
      };
      controller.stdout.on("data", watch);
      controller.stderr.on("data", watch);
      controller.once("exit", (code) =>
        reject(new Error(`ringlab up exited (${code}) before instances were being created:\n${output}`)),
      );
    });
    await creating;
    process.kill(-controller.pid!, "SIGKILL");
    await new Promise((resolveExit) => controller.once("exit", resolveExit));

    const started = Date.now();
    const down = spawnSync(process.execPath, cli(["down", "motoefs"]), {
      cwd: REPO,
      encoding: "utf8",
      timeout: 300_000,
    });
    expect(down.status, down.stdout + down.stderr).toBe(0);
    // Instances being created when the controller died may be missing from Terraform's state: down finds them by tag.
    const unrecorded =
      /removed (\d+) resources tagged ringlab:testbed=motoefs that Terraform's state did not list/.exec(down.stderr);
    console.info(`resources down found by tag only: ${unrecorded?.[1] ?? 0}`);
    console.info(`down after SIGKILL: ${Math.round((Date.now() - started) / 1000)} s`);
    expect(await leftovers(), logTail(stateDir)).toEqual({ ...NOTHING, vpc: ["-", "motoefs"] });
    await othersLeftAlone();
  }, 360_000);
});

/**
 * The AWS testbed: `cdktf deploy` of the stack in stacks/, its outputs turned into the inventory, then a wait
 * for SSH on every node. Never exercised against AWS in CI (no terraform there): see README.
 */
import { Cdktf } from "../adapters/cdktf.ts";
import type { AwsTestbed } from "../config/schema.ts";
import { uninterruptible, type Context } from "../context.ts";
import { ToolError } from "../errors.ts";
import { awsInventory, awsStackName, renderInventory } from "../inventory.ts";
import { writeFileAtomic } from "../util/fs.ts";
import { mkdirSync } from "node:fs";
import { testbedPaths } from "./paths.ts";
import { loadRecord, saveRecord, type TestbedRecord } from "./record.ts";
import { waitForSsh } from "./reachability.ts";

/** Cloud instances take minutes to boot; a GPU AMI's first boot is slower still. */
const SSH_WAIT_MS = 10 * 60_000;

export interface AwsOptions {
  /** How to start the cdktf CLI; tests pass a double. */
  readonly cdktfCommand?: readonly string[];
  readonly terraformBinary?: string;
}

function cdktfFor(ctx: Context, options: AwsOptions, createdAt?: string): Cdktf {
  return new Cdktf({
    projectDir: ctx.repoDir,
    ...(createdAt === undefined ? {} : { createdAt }),
    logFile: ctx.logFile,
    onLine: (line) => ctx.reporter.toolLine(line),
    signal: ctx.signal,
    ...(options.cdktfCommand === undefined ? {} : { command: options.cdktfCommand }),
    ...(options.terraformBinary === undefined ? {} : { terraformBinary: options.terraformBinary }),
  });
}

export async function upAws(ctx: Context, testbed: AwsTestbed, campaignFile: string, options: AwsOptions = {}): Promise<TestbedRecord> {
  const paths = testbedPaths(ctx.stateDir, testbed.name);
  const stack = awsStackName(testbed.name);
  // A testbed deployed earlier (kept, or resumed) keeps its creation time, so its expires-at tag stays put,
  // and is not destroyed when this deploy fails: only what this call created is rolled back.
  const earlier = loadRecord(ctx.stateDir, testbed.name);
  const createdAt = earlier?.createdAt ?? new Date().toISOString();
  const cdktf = cdktfFor(ctx, options, createdAt);
  await ctx.reporter.step("check terraform", () => cdktf.assertTerraform());
  mkdirSync(paths.dir, { recursive: true });
  try {
    const outputs = await ctx.reporter.step(`cdktf deploy ${stack} (${testbed.nodes} × ${testbed.instanceType} in ${testbed.region})`, () =>
      cdktf.deploy(stack, campaignFile, paths.stackOutputs));
    let inventory: ReturnType<typeof awsInventory>;
    try {
      inventory = awsInventory(outputs, testbed, paths.knownHosts);
    } catch (error) {
      throw new ToolError("cdktf", `the deployed stack's outputs are incomplete: ${(error as Error).message}`, { cause: error });
    }
    writeFileAtomic(paths.inventory, renderInventory(inventory));
    const hosts = Object.values({ ...inventory.all.children.head.hosts, ...inventory.all.children.workers.hosts });
    await ctx.reporter.step("wait for SSH on every node", (detail) =>
      waitForSsh(hosts.map((h) => String(h["ansible_host"])), SSH_WAIT_MS, ctx.signal, (pending) => detail(`waiting for ${pending.join(", ")}`)));
    const record: TestbedRecord = {
      schema: "ringlab.testbed/v1",
      name: testbed.name,
      target: "aws",
      campaignFile,
      inventory: paths.inventory,
      sharedDir: String(inventory.all.vars["ringlab_shared_dir"]),
      nodes: Object.entries({ ...inventory.all.children.head.hosts, ...inventory.all.children.workers.hosts }).map(([name, vars]) => ({
        name, rank: Number(vars["ringlab_node_rank"]), sshAddress: String(vars["ansible_host"]), privateIp: String(vars["ringlab_private_ip"]),
      })),
      createdAt,
    };
    saveRecord(ctx.stateDir, record);
    return record;
  } catch (error) {
    if (earlier !== undefined) {
      ctx.reporter.warn(`testbed ${testbed.name} existed before this deploy and was left as it is; \`ringlab down ${testbed.name}\` removes it`);
      throw error;
    }
    // Paid machines must not outlive a failed `up`. A failing destroy must not hide why `up` failed.
    await ctx.reporter.step(`roll back: cdktf destroy ${stack}`, () => cdktfFor(uninterruptible(ctx), options, createdAt).destroy(stack, campaignFile))
      .catch((rollback: unknown) => ctx.reporter.warn(`the rollback failed too (${(rollback as Error).message}); run \`ringlab down ${campaignFile}\``));
    throw error;
  }
}

export async function downAws(ctx: Context, testbedName: string, campaignFile: string, options: AwsOptions = {}): Promise<void> {
  const cdktf = cdktfFor(uninterruptible(ctx), options, loadRecord(ctx.stateDir, testbedName)?.createdAt);
  await cdktf.assertTerraform();
  await cdktf.destroy(awsStackName(testbedName), campaignFile);
}

/**
 * The AWS testbed: `cdktf deploy` of the stack in stacks/, its outputs turned into the inventory, then a wait
 * for SSH on every node. Never exercised against AWS in CI (no terraform there): see README.
 */
import { Cdktf } from "../adapters/cdktf.ts";
import type { AwsTestbed } from "../config/schema.ts";
import { uninterruptible, type Context } from "../context.ts";
import { awsInventory, awsStackName, renderInventory } from "../inventory.ts";
import { writeFileAtomic } from "../util/fs.ts";
import { mkdirSync } from "node:fs";
import { testbedPaths } from "./paths.ts";
import { saveRecord, type TestbedRecord } from "./record.ts";
import { waitForSsh } from "./reachability.ts";

/** Cloud instances take minutes to boot; a GPU AMI's first boot is slower still. */
const SSH_WAIT_MS = 10 * 60_000;

export interface AwsOptions {
  /** How to start the cdktf CLI; tests pass a double. */
  readonly cdktfCommand?: readonly string[];
  readonly terraformBinary?: string;
}

function cdktfFor(ctx: Context, options: AwsOptions): Cdktf {
  return new Cdktf({
    projectDir: ctx.repoDir,
    logFile: ctx.logFile,
    onLine: (line) => ctx.reporter.toolLine(line),
    signal: ctx.signal,
    ...(options.cdktfCommand === undefined ? {} : { command: options.cdktfCommand }),
    ...(options.terraformBinary === undefined ? {} : { terraformBinary: options.terraformBinary }),
  });
}

export async function upAws(ctx: Context, testbed: AwsTestbed, campaignFile: string, options: AwsOptions = {}): Promise<TestbedRecord> {
  const cdktf = cdktfFor(ctx, options);
  const paths = testbedPaths(ctx.stateDir, testbed.name);
  const stack = awsStackName(testbed.name);
  await ctx.reporter.step("check terraform", () => cdktf.assertTerraform());
  mkdirSync(paths.dir, { recursive: true });
  try {
    const outputs = await ctx.reporter.step(`cdktf deploy ${stack} (${testbed.nodes} × ${testbed.instanceType} in ${testbed.region})`, () =>
      cdktf.deploy(stack, campaignFile, paths.stackOutputs));
    const inventory = awsInventory(outputs, testbed, paths.knownHosts);
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
      createdAt: new Date().toISOString(),
    };
    saveRecord(ctx.stateDir, record);
    return record;
  } catch (error) {
    // Paid machines must not outlive a failed `up`.
    await ctx.reporter.step(`roll back: cdktf destroy ${stack}`, () => cdktfFor(uninterruptible(ctx), options).destroy(stack, campaignFile));
    throw error;
  }
}

export async function downAws(ctx: Context, testbedName: string, campaignFile: string, options: AwsOptions = {}): Promise<void> {
  const cdktf = cdktfFor(uninterruptible(ctx), options);
  await cdktf.assertTerraform();
  await cdktf.destroy(awsStackName(testbedName), campaignFile);
}

/** The testbed verbs, whatever the target: up, configure, status, down. The CLI wires them to commands. */
import { totalChanged } from "../adapters/ansible.ts";
import type { Campaign } from "../config/load.ts";
import { uninterruptible, type Context } from "../context.ts";
import { runPlaybook } from "./playbook.ts";
import { upAws, downAws, type AwsOptions } from "./aws.ts";
import { downLocal, localNodeContainers, upLocal, type LocalResources } from "./local.ts";
import { UsageError } from "../errors.ts";
import { awsStackName } from "../inventory.ts";
import { nodeContainerName } from "./local-plan.ts";
import { forgetTestbed, knownTestbeds, loadRecord, type TestbedRecord } from "./record.ts";
import { sshAnswers } from "./reachability.ts";

export async function up(ctx: Context, campaign: Campaign, awsOptions?: AwsOptions): Promise<TestbedRecord> {
  const testbed = campaign.testbed;
  return testbed.target === "aws"
    ? upAws(ctx, testbed, campaign.sourceFile, awsOptions)
    : upLocal(ctx, testbed, campaign.sourceFile);
}

export interface ConfigureResult {
  /** Changes summed over every node; 0 on a testbed already configured. */
  readonly changed: number;
}

/** Converges every node with ansible/site.yml. A second run reports changed = 0. */
export async function configure(ctx: Context, record: TestbedRecord): Promise<ConfigureResult> {
  const result = await ctx.reporter.step(`configure ${record.nodes.length} nodes (ansible/site.yml)`, (detail) =>
    runPlaybook(ctx, record, "site.yml", { onTask: detail }));
  return { changed: totalChanged(result.recap) };
}

export interface NodeStatus {
  readonly name: string;
  readonly rank: number;
  readonly address: string;
  /** Local target: whether the node container runs. */
  readonly running: boolean | undefined;
  readonly sshAnswers: boolean;
}

export async function status(ctx: Context, record: TestbedRecord): Promise<NodeStatus[]> {
  const containers = record.target === "local" ? await localNodeContainers(ctx, record.name) : [];
  return Promise.all(record.nodes.map(async (node) => ({
    name: node.name,
    rank: node.rank,
    address: node.sshAddress,
    running: record.target === "local" ? containers.some((c) => c.running && c.name === nodeContainerName(record.name, node.rank)) : undefined,
    sshAnswers: await sshAnswers(node.sshAddress),
  })));
}

export interface DownResult {
  readonly target: "local" | "aws";
  /** Local target: what was removed. */
  readonly removed?: LocalResources;
}

/**
 * Removes a testbed. Idempotent: with nothing left it succeeds and says so. On the local target it also removes
 * leftovers of crashed runs, found by label, even when no record exists.
 */
export async function down(ctx: Context, name: string, target: "local" | "aws", campaignFile?: string, awsOptions?: AwsOptions): Promise<DownResult> {
  const teardown = uninterruptible(ctx);
  if (target === "aws") {
    const file = campaignFile ?? loadRecord(ctx.stateDir, name)?.campaignFile;
    if (file === undefined) {
      throw new UsageError(`no record of AWS testbed ${name} here`, { hint: "pass its campaign file: ringlab down <campaign.yaml>" });
    }
    await teardown.reporter.step(`cdktf destroy ${awsStackName(name)}`, () => downAws(teardown, name, file, awsOptions));
    forgetTestbed(ctx.stateDir, name);
    return { target };
  }
  const removed = await teardown.reporter.step(`remove local testbed ${name}`, () => downLocal(teardown, name));
  forgetTestbed(ctx.stateDir, name);
  return { target, removed };
}

/** Removes every local ringlab container, network and volume, whatever testbed it belongs to, and forgets them. */
export async function downAllLocal(ctx: Context): Promise<LocalResources> {
  const removed = await uninterruptible(ctx).reporter.step("remove every local ringlab testbed", () => downLocal(uninterruptible(ctx), undefined));
  for (const name of knownTestbeds(ctx.stateDir)) {
    if (loadRecord(ctx.stateDir, name)?.target === "local") forgetTestbed(ctx.stateDir, name);
  }
  return removed;
}

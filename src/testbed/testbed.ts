/**
 * The testbed verbs, whatever the target: up, synth, configure, status, down. `up` resolves the campaign file's
 * testbed section into a spec (spec.ts) and stores it first; every later verb reads that spec and the record,
 * never the campaign file. Every verb that changes a testbed holds its lock (lock.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { totalChanged } from "../adapters/ansible.ts";
import type { LoadedCampaignFile } from "../config/load.ts";
import type { DatasetSection } from "../config/schema.ts";
import { dockerFor, uninterruptible, type Context } from "../context.ts";
import { UsageError } from "../errors.ts";
import { LAUNCHERS, type LauncherName } from "../launchers/index.ts";
import { campaignNameOf, nodeContainerName, stackName } from "../rules/names.ts";
import { writePrivateFile } from "../util/fs.ts";
import type { AwsOptions } from "./aws.ts";
import { configurationFingerprint, readPlaybookFiles } from "./configured.ts";
import { ensureHostKeys } from "./host-keys.ts";
import { downLocal, localNodeContainers, localTestbedNames, upLocal, type LocalResources } from "./local.ts";
import { testbedLockFile, withLock } from "./lock.ts";
import { forgetConnections, runPlaybook } from "./playbook.ts";
import { testbedPaths } from "./paths.ts";
import { sshAnswers } from "./reachability.ts";
import {
  checkedTestbedName, configuredLaunchers, forgetTestbed, isConfiguredFor, knownHint, knownTestbeds, loadRecord, loadSpec, saveRecord, type TestbedRecord,
} from "./record.ts";
import { resolveTestbedSpec, writeSpec, type TestbedSpec } from "./spec.ts";

/** The AWS target, loaded only for AWS testbeds: its SDK clients and cdktf would slow every local command's start. */
function awsTarget(): Promise<typeof import("./aws.ts")> {
  return import("./aws.ts");
}

/** Runs `work` holding testbed `name`'s lock. */
export function withTestbedLock<T>(ctx: Context, name: string, work: () => Promise<T>): Promise<T> {
  return withLock(testbedLockFile(ctx.stateDir, checkedTestbedName(name)), `testbed ${name}`, (m) => ctx.reporter.warn(m), work);
}

/**
 * The spec of a campaign's testbed. An AWS testbed that exists keeps its creation time, so its expires-at tag
 * stays put; a local one gets a new one, which gives it fresh SSH connections (playbook.ts).
 */
export function specFor(ctx: Context, campaign: LoadedCampaignFile): TestbedSpec {
  const name = campaign.testbed.name;
  const earlier = campaign.testbed.target === "aws" ? loadSpec(ctx.stateDir, name) : undefined;
  return resolveTestbedSpec(campaign.testbed, {
    campaign: campaignNameOf(campaign.sourceFile),
    testbedDir: testbedPaths(ctx.stateDir, name).dir,
    createdAt: earlier === undefined ? new Date() : new Date(earlier.createdAt),
  });
}

export async function up(ctx: Context, campaign: LoadedCampaignFile, awsOptions?: AwsOptions): Promise<TestbedRecord> {
  const spec = specFor(ctx, campaign);
  return withTestbedLock(ctx, spec.name, async () => {
    // Stored before anything is created: teardown needs nothing else, even after a crash mid-deploy.
    writeSpec(testbedPaths(ctx.stateDir, spec.name).spec, spec);
    return spec.target === "aws" ? (await awsTarget()).upAws(ctx, spec, awsOptions) : upLocal(ctx, spec);
  });
}

export interface SynthResult {
  readonly specFile: string;
  /** Only for AWS testbeds: the synthesized Terraform JSON. */
  readonly stackFile?: string;
}

/** Writes the resolved spec and, for AWS, the synthesized `cdk.tf.json` into `outDir`; deploys nothing. */
export async function synth(ctx: Context, campaign: LoadedCampaignFile, outDir: string): Promise<SynthResult> {
  const spec = specFor(ctx, campaign);
  const specFile = join(outDir, "spec.json");
  writeSpec(specFile, spec);
  if (spec.target !== "aws") return { specFile };
  // The cdktf library is loaded only here and for AWS testbeds: the local testbed never pays for it.
  const { synthesizeStack } = await import("../../stacks/synth.ts");
  // The nodes' host keys beside the spec: `ringlab inventory` pins them for a deploy by hand.
  const hostKeys = await ctx.reporter.step("make the nodes' SSH host keys", () => ensureHostKeys(outDir, spec.nodes, spec.name));
  const { file } = await ctx.reporter.step(`synthesize ${stackName(spec.name)}`, async () => synthesizeStack(spec, outDir, hostKeys));
  return { specFile, stackFile: file };
}

export interface ConfigureResult {
  /** Changes summed over every node; 0 on a testbed already configured. */
  readonly changed: number;
}

export interface ConfigureOptions {
  /**
   * Also configure it for these launchers (src/launchers/: site.yml includes the role of each that has a setup, e.g.
   * slurm makes it a Slurm cluster). Launchers it was configured for before stay in its record.
   */
  readonly launchers?: readonly LauncherName[];
}

/** Converges every node with ansible/site.yml. A second run reports changed = 0. */
export async function configure(ctx: Context, record: TestbedRecord, options: ConfigureOptions = {}): Promise<ConfigureResult> {
  return withTestbedLock(ctx, record.name, async () => {
    const setups = (options.launchers ?? []).map((name) => LAUNCHERS[name]).filter((launcher) => launcher.setup !== undefined);
    const what = setups.map((launcher) => ` as ${launcher.setup!.makes}`).join(",");
    const fingerprint = await fingerprintOf(ctx, record);
    // Before it starts: a converge that fails or is stopped half-way leaves no fingerprint behind, and a node container
    // started during it counts as started after it.
    const startedAt = new Date().toISOString();
    const { configured: _earlier, ...unconfigured } = record;
    saveRecord(ctx.stateDir, unconfigured);
    const result = await ctx.reporter.step(`configure ${record.nodes.length} nodes${what} (ansible/site.yml)`, (detail) =>
      runPlaybook(ctx, record, "site.yml", { onTask: detail, ...(setups.length === 0 ? {} : { extraVars: { ringlab_launcher_roles: setups.map((launcher) => launcher.role) } }) }));
    const launchers = [...new Set([...configuredLaunchers(record), ...setups.map((launcher) => launcher.name)])];
    saveRecord(ctx.stateDir, {
      ...unconfigured,
      ...(launchers.length > 1 ? { launchers } : {}),
      ...(fingerprint === undefined ? {} : { configured: { fingerprint, at: startedAt } }),
    });
    return { changed: totalChanged(result.recap) };
  });
}

/**
 * A campaign's configure: skipped on a local testbed that site.yml converged from the same playbooks, inventory and
 * worker image (configured.ts), for the launchers the campaign needs (a Slurm cluster), and whose node containers have run
 * since; the workers a killed invocation may have left are still removed (stop-workers.yml). AWS testbeds are always
 * converged: a cloud node may have rebooted since. Returns whether it converged.
 */
export async function configureUnlessCurrent(ctx: Context, record: TestbedRecord, options: ConfigureOptions = {}): Promise<boolean> {
  const fingerprint = record.configured === undefined ? undefined : await fingerprintOf(ctx, record);
  const launchersReady = (options.launchers ?? []).every((launcher) => isConfiguredFor(record, launcher));
  if (fingerprint === undefined || fingerprint !== record.configured?.fingerprint || !launchersReady) {
    await configure(ctx, record, options);
    return true;
  }
  ctx.reporter.info(`testbed ${record.name}: configured at ${record.configured.at} from the same playbooks, inventory and worker image; ` +
    "not configuring again (`ringlab configure` would)");
  await withTestbedLock(ctx, record.name, () => ctx.reporter.step("remove workers an interrupted run left (ansible/stop-workers.yml)", () =>
    runPlaybook(ctx, record, "stop-workers.yml")));
  return false;
}

/**
 * The fingerprint of what configure converges a local testbed from; undefined for AWS or without the image. The
 * launchers are not part of it: a testbed configured as a Slurm cluster serves a campaign without Slurm as it is
 * (record.launchers).
 */
async function fingerprintOf(ctx: Context, record: TestbedRecord): Promise<string | undefined> {
  if (record.target !== "local") return undefined;
  const workerImage = loadSpec(ctx.stateDir, record.name)?.workerImage;
  const workerImageId = workerImage === undefined ? undefined : await dockerFor(ctx).imageId(workerImage);
  if (workerImageId === undefined) return undefined;
  return configurationFingerprint({
    playbookFiles: readPlaybookFiles(join(ctx.repoDir, "ansible")),
    inventory: readFileSync(record.inventory, "utf8"),
    workerImageId,
  });
}

/**
 * Writes a campaign's dataset to the testbed's shared storage (ansible/dataset.yml: the worker image's `dataset` job
 * on the head node), unless the same dataset is there already. Returns whether it wrote.
 */
export async function prepareDataset(ctx: Context, record: TestbedRecord, dataset: DatasetSection): Promise<{ wrote: boolean; path: string }> {
  const path = `${record.sharedDir}/datasets/${dataset.name}`;
  const result = await withTestbedLock(ctx, record.name, () => ctx.reporter.step(
    `dataset ${dataset.name}: ${dataset.classes} classes x ${dataset.imagesPerClass} images of ${dataset.imageSize} px on the shared storage (ansible/dataset.yml)`,
    (detail) => runPlaybook(ctx, record, "dataset.yml", {
      onTask: detail,
      extraVars: {
        dataset_name: dataset.name, dataset_classes: dataset.classes, dataset_images_per_class: dataset.imagesPerClass,
        dataset_image_size: dataset.imageSize, dataset_held_out: dataset.heldOut, dataset_seed: dataset.seed,
      },
    })));
  return { wrote: totalChanged(result.recap) > 0, path };
}

/** What each launcher the testbed is configured for shows of it (Slurm's nodes and queue), one section each. */
export async function launcherStatus(ctx: Context, record: TestbedRecord): Promise<string[]> {
  const sections: string[] = [];
  for (const name of configuredLaunchers(record)) {
    const status = LAUNCHERS[name].status;
    if (status !== undefined) sections.push(await status(ctx, record));
  }
  return sections;
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
  /** When this state folder removed the testbed earlier, and nothing of it was left now. */
  readonly removedEarlierAt?: string;
}

/**
 * Removes a testbed from its stored spec alone. Idempotent for a testbed this state folder knew: with nothing
 * left it succeeds and says so. On the local target it also removes leftovers of crashed runs, found by label.
 * A name nothing is known of is a UsageError listing the testbeds that are.
 */
export async function down(ctx: Context, name: string, awsOptions?: AwsOptions): Promise<DownResult> {
  checkedTestbedName(name);
  const teardown = uninterruptible(ctx);
  return withTestbedLock(ctx, name, async () => {
    const spec = loadSpec(ctx.stateDir, name);
    const target = spec?.target ?? loadRecord(ctx.stateDir, name)?.target;
    if (spec?.target === "aws") {
      const { downAws } = await awsTarget();
      await teardown.reporter.step(`destroy stack ${stackName(name)}`, () => downAws(teardown, spec, awsOptions));
      forgetAndRemember(ctx, name);
      return { target: "aws" };
    }
    if (target === "aws") {
      throw new UsageError(`testbed ${name} has a record but no spec in ${ctx.stateDir}, so its stack cannot be destroyed from here`, {
        hint: `destroy it by hand (terraform destroy in its cdktf.out/stacks/${stackName(name)} folder) or in the AWS console (tag ringlab:testbed=${name})`,
      });
    }
    const removed = await teardown.reporter.step(`remove local testbed ${name}`, () => downLocal(teardown, name));
    const nothing = removed.containers.length + removed.networks.length + removed.volumes.length === 0;
    if (nothing && target === undefined) return unknownTestbed(ctx, name);
    forgetAndRemember(ctx, name);
    return { target: "local", removed };
  });
}

/** A testbed removed earlier gets "nothing left"; a name never known here gets exit 2 and the names that are. */
async function unknownTestbed(ctx: Context, name: string): Promise<DownResult> {
  const removedAt = removedEarlier(ctx.stateDir, name);
  if (removedAt !== undefined) return { target: "local", removed: { containers: [], networks: [], volumes: [] }, removedEarlierAt: removedAt };
  const running = await localTestbedNames(ctx, "this state folder").catch(() => []);
  const known = [...new Set([...knownTestbeds(ctx.stateDir), ...running])].sort();
  throw new UsageError(`no testbed named ${name} is known in ${ctx.stateDir} or runs on this Docker engine`, {
    hint: known.length === 0 ? knownHint(ctx.stateDir) : `known testbeds: ${known.join(", ")} (a testbed's name is testbed.name in its campaign file)`,
  });
}

function removedMarker(stateDir: string, name: string): string {
  return join(stateDir, "removed", checkedTestbedName(name));
}

function forgetAndRemember(ctx: Context, name: string): void {
  const record = recordIfReadable(ctx.stateDir, name);
  if (record !== undefined) forgetConnections(record);
  forgetTestbed(ctx.stateDir, name);
  writePrivateFile(removedMarker(ctx.stateDir, name), `${new Date().toISOString()}\n`);
}

/** The testbed's record; undefined also when it cannot be read (its folder is removed all the same). */
function recordIfReadable(stateDir: string, name: string): TestbedRecord | undefined {
  try {
    return loadRecord(stateDir, name);
  } catch {
    return undefined;
  }
}

function removedEarlier(stateDir: string, name: string): string | undefined {
  const marker = removedMarker(stateDir, name);
  return existsSync(marker) ? readFileSync(marker, "utf8").trim() : undefined;
}

/**
 * Removes every local testbed of this state folder (or, asked to, of every state folder on this Docker engine)
 * and forgets the local ones it knew. AWS testbeds are never touched: `down <name>` removes those one by one.
 */
export async function downAllLocal(ctx: Context, scope: "this state folder" | "every state folder" = "this state folder"): Promise<{ testbeds: string[]; removed: LocalResources }> {
  const teardown = uninterruptible(ctx);
  const names = [...new Set([...await localTestbedNames(teardown, scope),
    ...knownTestbeds(ctx.stateDir).filter((name) => loadSpec(ctx.stateDir, name)?.target !== "aws" && loadRecord(ctx.stateDir, name)?.target !== "aws")])].sort();
  const removed: LocalResources = { containers: [], networks: [], volumes: [] };
  for (const name of names) {
    const result = await down(teardown, name);
    removed.containers.push(...(result.removed?.containers ?? []));
    removed.networks.push(...(result.removed?.networks ?? []));
    removed.volumes.push(...(result.removed?.volumes ?? []));
  }
  return { testbeds: names, removed };
}

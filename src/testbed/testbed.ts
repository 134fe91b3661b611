/**
 * The testbed verbs, whatever the target: up, synth, configure, status, down. `up` resolves the campaign file's
 * testbed section into a spec (spec.ts) and stores it first; every later verb reads that spec and the record,
 * never the campaign file. What differs between targets is asked of the target table (src/targets/). Every verb
 * that changes a testbed holds its lock (lock.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { totalChanged } from "../adapters/ansible.ts";
import type { LoadedCampaignFile } from "../config/load.ts";
import type { DatasetSection } from "../config/schema.ts";
import { dockerFor, uninterruptible, type Context } from "../context/context.ts";
import { InternalError, UsageError } from "../util/errors.ts";
import { LAUNCHERS, type LauncherName } from "../launchers/index.ts";
import { campaignNameOf, stackName } from "../rules/names.ts";
import { gapOf, targetOf, TARGETS, type Target, type TargetName, type TargetOptions } from "../targets/index.ts";
import { writePrivateFile } from "../util/fs.ts";
import { configurationFingerprint, readPlaybookFiles } from "./configured.ts";
import { ensureHostKeys } from "./host-keys.ts";
import type { LocalResources } from "../targets/local/testbed.ts";
import { testbedLockFile, withLock } from "./lock.ts";
import { forgetConnections, runPlaybook } from "./playbook.ts";
import { testbedPaths } from "./paths.ts";
import { sshAnswers } from "./reachability.ts";
import {
  checkedTestbedName,
  configuredLaunchers,
  forgetTestbed,
  isConfiguredFor,
  knownHint,
  knownTestbeds,
  loadRecord,
  loadSpec,
  saveRecord,
  type TestbedRecord,
} from "./record.ts";
import { resolveTestbedSpec, writeSpec, type TestbedSpec } from "./spec.ts";

/** Runs `work` holding testbed `name`'s lock. */
export function withTestbedLock<T>(ctx: Context, name: string, work: () => Promise<T>): Promise<T> {
  return withLock(
    testbedLockFile(ctx.stateDir, checkedTestbedName(name)),
    `testbed ${name}`,
    (m) => ctx.reporter.warn(m),
    work,
  );
}

/**
 * The spec of a campaign's testbed. One that exists keeps its creation time where its target says so (an AWS
 * testbed's expires-at tag stays put); elsewhere it gets a new one, which gives it fresh SSH connections (playbook.ts).
 */
export function specFor(ctx: Context, campaign: LoadedCampaignFile): TestbedSpec {
  const name = campaign.testbed.name;
  const earlier = targetOf(campaign.testbed).keepsCreationTime === true ? loadSpec(ctx.stateDir, name) : undefined;
  return resolveTestbedSpec(campaign.testbed, {
    campaign: campaignNameOf(campaign.sourceFile),
    testbedDir: testbedPaths(ctx.stateDir, name).dir,
    createdAt: earlier === undefined ? new Date() : new Date(earlier.createdAt),
  });
}

/** `options`: what tests hand a target in place of the real world (src/targets/target.ts). */
export async function up(
  ctx: Context,
  campaign: LoadedCampaignFile,
  options: TargetOptions = {},
): Promise<TestbedRecord> {
  const spec = specFor(ctx, campaign);
  return withTestbedLock(ctx, spec.name, async () => {
    // Stored before anything is created: teardown needs nothing else, even after a crash mid-deploy.
    writeSpec(testbedPaths(ctx.stateDir, spec.name).spec, spec);
    return verb(targetOf(spec), "up").up!(ctx, spec, options);
  });
}

/** A target that has a spec has the verbs that act on it; one without them here is a bug. */
function verb<K extends "up" | "down">(target: Target, name: K): Target & Required<Pick<Target, K>> {
  if (target[name] === undefined)
    throw new InternalError(`the ${target.name} target has no ${name}: ringlab does not bring its testbeds up`);
  return target as Target & Required<Pick<Target, K>>;
}

export interface SynthResult {
  readonly specFile: string;
  /** Only for a target with a stack (AWS): the synthesized Terraform JSON. */
  readonly stackFile?: string;
  /** With stackFile: what deploys it (terraform or tofu). */
  readonly deployer?: string;
}

/**
 * Writes the resolved spec and, for a target with a stack (AWS), the synthesized `cdk.tf.json` into `outDir`; deploys
 * nothing.
 */
export async function synth(ctx: Context, campaign: LoadedCampaignFile, outDir: string): Promise<SynthResult> {
  const spec = specFor(ctx, campaign);
  const specFile = join(outDir, "spec.json");
  writeSpec(specFile, spec);
  // The cdktf library is loaded only for a target with a stack: the local testbed never pays for it.
  const stack = targetOf(spec).stack;
  if (stack === undefined) return { specFile };
  // The nodes' host keys beside the spec: `ringlab inventory` pins them for a deploy by hand.
  const hostKeys = await ctx.reporter.step("make the nodes' SSH host keys", () =>
    ensureHostKeys(outDir, spec.nodes, spec.name),
  );
  const { file } = await ctx.reporter.step(`synthesize ${stackName(spec.name)}`, () =>
    stack.synthesize(spec, outDir, hostKeys),
  );
  return { specFile, stackFile: file, deployer: await stack.deployer(spec) };
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
export async function configure(
  ctx: Context,
  record: TestbedRecord,
  options: ConfigureOptions = {},
): Promise<ConfigureResult> {
  return withTestbedLock(ctx, record.name, async () => {
    const setups = (options.launchers ?? [])
      .map((name) => LAUNCHERS[name])
      .filter((launcher) => launcher.setup !== undefined);
    const what = setups.map((launcher) => ` as ${launcher.setup!.makes}`).join(",");
    const fingerprint = await fingerprintOf(ctx, record);
    // Before it starts: a converge that fails or is stopped half-way leaves no fingerprint behind, and a node container
    // started during it counts as started after it.
    const startedAt = new Date().toISOString();
    const { configured: _earlier, ...unconfigured } = record;
    saveRecord(ctx.stateDir, unconfigured);
    const result = await ctx.reporter.step(
      `configure ${record.nodes.length} nodes${what} (ansible/site.yml)`,
      (detail) =>
        runPlaybook(ctx, record, "site.yml", {
          onTask: detail,
          ...(setups.length === 0
            ? {}
            : { extraVars: { ringlab_launcher_roles: setups.map((launcher) => launcher.role) } }),
        }),
    );
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
 * A campaign's configure: skipped on a testbed whose target can "reuse-configured" (local) that site.yml converged
 * from the same playbooks, inventory and worker image (configured.ts), for the launchers the campaign needs (a Slurm
 * cluster), and whose node containers have run since; the workers a killed invocation may have left are still removed
 * (stop-workers.yml). Other testbeds are always converged (AWS: a cloud node may have rebooted since). Returns whether
 * it converged.
 */
export async function configureUnlessCurrent(
  ctx: Context,
  record: TestbedRecord,
  options: ConfigureOptions = {},
): Promise<boolean> {
  const fingerprint = record.configured === undefined ? undefined : await fingerprintOf(ctx, record);
  const launchersReady = (options.launchers ?? []).every((launcher) => isConfiguredFor(record, launcher));
  if (fingerprint === undefined || fingerprint !== record.configured?.fingerprint || !launchersReady) {
    await configure(ctx, record, options);
    return true;
  }
  ctx.reporter.info(
    `testbed ${record.name}: configured at ${record.configured.at} from the same playbooks, inventory and worker image; ` +
      "not configuring again (`ringlab configure` would)",
  );
  await withTestbedLock(ctx, record.name, () =>
    ctx.reporter.step("remove workers an interrupted run left (ansible/stop-workers.yml)", () =>
      runPlaybook(ctx, record, "stop-workers.yml"),
    ),
  );
  return false;
}

/**
 * The fingerprint of what configure converges a testbed from, where its target can reuse a configured testbed (its
 * nodes use this machine's engine, where the worker image is); undefined elsewhere or without the image. The
 * launchers are not part of it: a testbed configured as a Slurm cluster serves a campaign without Slurm as it is
 * (record.launchers).
 */
async function fingerprintOf(ctx: Context, record: TestbedRecord): Promise<string | undefined> {
  if (gapOf(targetOf(record), "reuse-configured") !== undefined) return undefined;
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
export async function prepareDataset(
  ctx: Context,
  record: TestbedRecord,
  dataset: DatasetSection,
): Promise<{ wrote: boolean; path: string }> {
  const path = `${record.sharedDir}/datasets/${dataset.name}`;
  const what =
    dataset.kind === "text"
      ? "a byte-level text corpus (the worker's Python standard library source)"
      : `${dataset.classes} classes x ${dataset.imagesPerClass} images of ${dataset.imageSize} px`;
  const result = await withTestbedLock(ctx, record.name, () =>
    ctx.reporter.step(`dataset ${dataset.name}: ${what} on the shared storage (ansible/dataset.yml)`, (detail) =>
      runPlaybook(ctx, record, "dataset.yml", {
        onTask: detail,
        extraVars: {
          dataset_name: dataset.name,
          dataset_kind: dataset.kind,
          dataset_classes: dataset.classes,
          dataset_images_per_class: dataset.imagesPerClass,
          dataset_image_size: dataset.imageSize,
          dataset_held_out: dataset.heldOut,
          dataset_seed: dataset.seed,
        },
      }),
    ),
  );
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
  /** Whether the node's container runs, where its nodes are containers here (local); undefined elsewhere. */
  readonly running: boolean | undefined;
  readonly sshAnswers: boolean;
}

export async function status(ctx: Context, record: TestbedRecord): Promise<NodeStatus[]> {
  const running = await targetOf(record).runningNodes?.(ctx, record);
  return Promise.all(
    record.nodes.map(async (node) => ({
      name: node.name,
      rank: node.rank,
      address: node.sshAddress,
      running: running?.has(node.name),
      sshAnswers: await sshAnswers(node.sshAddress),
    })),
  );
}

export interface DownResult {
  readonly target: TargetName;
  /** Where the testbed's resources are containers, networks and volumes here (local): what was removed. */
  readonly removed?: LocalResources;
  /** When this state folder removed the testbed earlier, and nothing of it was left now. */
  readonly removedEarlierAt?: string;
}

/**
 * Removes a testbed from its stored spec alone, by its target. Idempotent for a testbed this state folder knew: with
 * nothing left it succeeds and says so. A target that finds testbeds by their label (local) also removes leftovers
 * of crashed runs, and is where a name this state folder never knew is looked for. A name nothing is known of is a
 * UsageError listing the testbeds that are.
 */
export async function down(ctx: Context, name: string, options: TargetOptions = {}): Promise<DownResult> {
  checkedTestbedName(name);
  const teardown = uninterruptible(ctx);
  return withTestbedLock(ctx, name, async () => {
    const spec = loadSpec(ctx.stateDir, name);
    const known = spec?.target ?? loadRecord(ctx.stateDir, name)?.target;
    const result = await verb(known === undefined ? labelFinder() : TARGETS[known], "down").down!(
      teardown,
      name,
      spec,
      options,
    );
    const removed = result.removed;
    const nothing =
      removed !== undefined && removed.containers.length + removed.networks.length + removed.volumes.length === 0;
    if (nothing && known === undefined) return unknownTestbed(ctx, name);
    forgetAndRemember(ctx, name);
    return result;
  });
}

/** The target that finds its testbeds by their label alone ("found-by-label"): where an unknown name is looked for. */
function labelFinder(): Target {
  const finder = Object.values(TARGETS).find(
    (target) => gapOf(target, "found-by-label") === undefined && target.testbedsByLabel !== undefined,
  );
  if (finder === undefined) throw new InternalError("no target finds its testbeds by their label");
  return finder;
}

/** A testbed removed earlier gets "nothing left"; a name never known here gets exit 2 and the names that are. */
async function unknownTestbed(ctx: Context, name: string): Promise<DownResult> {
  const removedAt = removedEarlier(ctx.stateDir, name);
  if (removedAt !== undefined)
    return {
      target: labelFinder().name,
      removed: { containers: [], networks: [], volumes: [] },
      removedEarlierAt: removedAt,
    };
  const running = await labelFinder().testbedsByLabel!(ctx, "this state folder").catch(() => []);
  const known = [...new Set([...knownTestbeds(ctx.stateDir), ...running])].sort();
  throw new UsageError(`no testbed named ${name} is known in ${ctx.stateDir} or runs on this Docker engine`, {
    hint:
      known.length === 0
        ? knownHint(ctx.stateDir)
        : `known testbeds: ${known.join(", ")} (a testbed's name is testbed.name in its campaign file)`,
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
 * Removes every testbed found by its label (local) of this state folder (or, asked to, of every state folder on this
 * Docker engine) and forgets the ones it knew. The testbeds of a target that cannot be found so (AWS) are never
 * touched: `down <name>` removes those one by one.
 */
export async function downAllLocal(
  ctx: Context,
  scope: "this state folder" | "every state folder" = "this state folder",
): Promise<{ testbeds: string[]; removed: LocalResources }> {
  const teardown = uninterruptible(ctx);
  const foundByLabel = (target: TargetName | undefined) =>
    target === undefined || gapOf(TARGETS[target], "found-by-label") === undefined;
  const names = [
    ...new Set([
      ...(await labelFinder().testbedsByLabel!(teardown, scope)),
      ...knownTestbeds(ctx.stateDir).filter(
        (name) =>
          foundByLabel(loadSpec(ctx.stateDir, name)?.target) && foundByLabel(loadRecord(ctx.stateDir, name)?.target),
      ),
    ]),
  ].sort();
  const removed: LocalResources = { containers: [], networks: [], volumes: [] };
  for (const name of names) {
    const result = await down(teardown, name);
    removed.containers.push(...(result.removed?.containers ?? []));
    removed.networks.push(...(result.removed?.networks ?? []));
    removed.volumes.push(...(result.removed?.volumes ?? []));
  }
  return { testbeds: names, removed };
}

/**
 * What a testbed target is: where a campaign's nodes come from and how its runs reach them. One folder per target
 * holds everything that is its own (./local/: containers on this machine; ./aws/: GPU instances; ./kubernetes/: a
 * cluster the user has), its entry in the table in <name>/target.ts, registered in ./index.ts, in the manner of
 * SkyPilot's clouds: what a target cannot do is data, its `gaps` (each
 * capability it lacks, with why), which callers check with `gapOf`, never by its name.
 *
 * A target owns its campaign-file section (the fields, their defaults and its cross-field rules), the paths that
 * section names, and, when ringlab brings it up ("provision"), its stored spec and the verbs that act on it: up, down,
 * synth, the lost nodes it can bring back. Runs reach ringlab's own nodes through Ansible (src/runner/runner.ts, the
 * campaign's run path in src/campaign/execute.ts); a target that runs them its own way (a Kubernetes Job per run)
 * brings its run path (`ownRunPath`).
 *
 * The table loads no module that runs a tool: what does (Docker, terraform, the cloud's SDK, the cluster's client)
 * is imported when a verb runs, so that `ringlab plan` and the campaign schema stay fast to start.
 */
import { homedir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import { InternalError } from "../util/errors.ts";
import type { AnyCampaignFile, CampaignSection } from "../config/schema.ts";
import type { IssueAt } from "./section-fields.ts";
import type { AnyLoadedCampaignFile } from "../config/load.ts";
import type { Context } from "../context/context.ts";
import type { WorkerImageSource } from "../rules/worker-image.ts";
import type { Inventory } from "../testbed/inventory.ts";
import type { NodeHostKey } from "../rules/ssh-key.ts";
import type { TestbedRecord } from "../testbed/record.ts";
import type { SpecInputs, TestbedSpec } from "../testbed/spec.ts";
import type { DownResult } from "../testbed/testbed.ts";
import type { CampaignRuns } from "../campaign/execute.ts";
import type { PlannedRun } from "../campaign/plan.ts";
import type { TargetName } from "./index.ts";

/** A testbed section of a campaign file, whatever its target. */
export type TestbedSection = AnyCampaignFile["testbed"];

/** Everything a target may be able to do that another cannot; each says what it is. */
export const CAPABILITIES = {
  provision:
    "ringlab brings the testbed up from a spec it stores, configures its nodes with Ansible and tears it down from that spec " +
    "(up, configure, run, status, synth, dataset, down by name)",
  "cpu-quota": "every worker process under a CPU quota (testbed.cpusPerNode, `ringlab run --cpus`)",
  gpu: "training on GPUs (precision amp)",
  horovod: "engine horovod (Horovod in the worker image)",
  "mpi-probe": "the probe's library mpi (mpi4py in the worker image)",
  launchers: "launchers other than the default (slurm, mpi), which configure the nodes for themselves",
  "node-loss": "a node lost on purpose while the others go on (failNode)",
  "repeat-until": "repeatUntil: which runs are still needed, decided between rounds",
  "dataset-generate": "a dataset generated onto the testbed's shared storage (campaign.dataset.generate)",
  "node-recovery": "a node that stopped answering brought back between runs",
  "reuse-configured": "configure skipped on a testbed converged from the same playbooks, inventory and worker image",
  "host-load": "this machine's load sampled while the runs measure (the testbed shares it)",
  "rerun-disturbed": "the runs whose measurement was disturbed run once more at the end of the campaign",
  "simultaneous-start": "a run's workers start within seconds of each other",
  "found-by-label":
    "its testbeds found by their label on this machine, spec or not (`ringlab down --all`, a name this state folder never knew)",
  keep: "kept after the campaign (campaign.keep, --keep)",
  predictions: "each run's throughput and memory predicted before it runs (a calibration, the catalogue)",
  stack: "a cdktf stack to synthesize and deploy by hand (`ringlab synth`, `ringlab inventory`)",
} as const;

export type Capability = keyof typeof CAPABILITIES;

/** What a target cannot do: each capability it lacks, with why (a sentence a message can end with). */
export type Gaps = Readonly<Partial<Record<Capability, string>>>;

/** How load.ts hands a target the campaign file's whereabouts, to resolve the paths its section names. */
export interface FileContext {
  /** The campaign file's folder: relative paths resolve against it. */
  readonly baseDir: string;
  /** How errors name the file. */
  readonly displayName: string;
  /** Read the key files the section names (LoadOptions.readKeys). */
  readonly readKeys: boolean;
  /** Check the folders the section leads to (LoadOptions.checkFolders). */
  readonly checkFolders: boolean;
}

/** Duration estimates of `ringlab plan` (src/campaign/estimate.ts) on this target's machines. */
export interface TargetEstimate {
  /** The fastest all-reduce assumed, in Gbit/s. */
  readonly fastestAllReduceGbps: number;
  /** Orchestration per run and per campaign (up, configure, shape, down), seconds. */
  readonly overheadSeconds: { readonly run: number; readonly campaign: number };
  /** How its nodes get the worker image (src/rules/worker-image.ts). */
  workerImageSource(testbed: TestbedSection): WorkerImageSource;
  /** The image tarball its nodes are sent, whose size the upload estimate wants when the file is here. */
  workerImageTarball?(testbed: TestbedSection): string | undefined;
  /**
   * Said after the on-demand cost, where the section asks for a cheaper kind of machine ("spot is usually cheaper").
   */
  priceNote?(testbed: TestbedSection): string | undefined;
}

/** What a target brings for AWS-style hand deployment: a cdktf stack, and the inventory from its outputs. */
export interface TargetStack {
  /**
   * Synthesizes the stack from the spec into `outDir` (undefined: cdktf's own output folder); returns the stack's file.
   */
  synthesize(
    spec: TestbedSpec,
    outDir: string | undefined,
    hostKeys: readonly NodeHostKey[] | undefined,
  ): Promise<{ file: string }>;
  /** The terraform (or tofu) that deploys it. */
  deployer(spec: TestbedSpec): Promise<string>;
  /**
   * The Ansible inventory of a stack deployed by hand, from its outputs (`terraform output -json`); throws on outputs
   * that do not fit.
   */
  inventory(
    outputs: unknown,
    spec: TestbedSpec,
    knownHostsFile: string,
    hostKeys: readonly NodeHostKey[] | undefined,
  ): Promise<Inventory>;
}

/** The device a target's workers compute on, and what bounds their memory where the target knows it. */
export interface TargetMemory {
  readonly device: "cpu" | "cuda";
  /** A node's limit, for all its processes (the local testbed's memoryPerNodeGiB). */
  readonly perNode?: { readonly gib: number; readonly what: string };
  /** One GPU's memory, which each rank has to itself. */
  readonly perGpu?: { readonly gib: number; readonly what: string };
}

export interface Target {
  readonly name: TargetName;
  /** How messages name it among others: "local", "AWS", "Kubernetes". */
  readonly title: string;
  /** What it cannot do whatever its settings, with why. */
  readonly gaps: Gaps;
  /**
   * Its nodes are containers on the machine that runs ringlab: runs without a CPU quota share that machine's cores
   * (the report says so beside their numbers).
   */
  readonly nodesShareOneMachine?: boolean;
  /** What it cannot do with these settings, beyond `gaps` (a Kubernetes testbed whose pods ask for no GPU). */
  gapsOf?(testbed: TestbedSection): Gaps;

  /** Its testbed section's rules across fields, run once every field passed its own (paths below `testbed`). */
  checkTestbed?(testbed: TestbedSection, issue: IssueAt): void;
  /** What it cannot run of a campaign beyond its gaps (paths from the file's top). */
  checkCampaign?(testbed: TestbedSection, campaign: CampaignSection, issue: IssueAt): void;
  /** The section with the paths it names made absolute and the files it names read (a ConfigError naming the field). */
  resolveFiles?(testbed: TestbedSection, where: FileContext): TestbedSection;

  /** The spec `ringlab up` stores (./spec.ts); a target ringlab does not bring up has none. */
  resolveSpec?(testbed: TestbedSection, inputs: SpecInputs): TestbedSpec;
  /** `up` of a testbed that exists keeps its spec's creation time (its expiry tag stays put). */
  readonly keepsCreationTime?: boolean;
  /** Creates (or reuses) the testbed of a stored spec and records it. */
  up?(ctx: Context, spec: TestbedSpec, options: TargetOptions): Promise<TestbedRecord>;
  /**
   * Removes the testbed named, from its stored spec (undefined when `up` never wrote one, or when nothing of the name
   * is known here and this target is where such a name is looked for: "found-by-label").
   */
  down?(ctx: Context, name: string, spec: TestbedSpec | undefined, options: TargetOptions): Promise<DownResult>;
  /**
   * `ringlab down <file>` of a testbed that has no spec here (a target that cannot "provision"): removes what its
   * campaigns left, from the file's section alone; returns what to say.
   */
  downFromSection?(ctx: Context, testbed: TestbedSection): Promise<string>;
  /** The stack of a spec, for a deploy by hand. */
  readonly stack?: TargetStack;
  /** The names of its testbeds found by their label: of this state folder, or of every one ("found-by-label"). */
  testbedsByLabel?(ctx: Context, scope: "this state folder" | "every state folder"): Promise<string[]>;
  /** Which nodes' containers run (`ringlab status`); absent: its nodes are machines, not containers here. */
  runningNodes?(ctx: Context, record: TestbedRecord): Promise<ReadonlySet<string>>;
  /** Brings lost nodes (by rank) back on the same names and addresses ("node-recovery"). */
  recreateNodes?(ctx: Context, spec: TestbedSpec, ranks: readonly number[]): Promise<void>;

  /** The instance type of every node, where the target rents them by type (records, the GPU's memory, the price). */
  instanceTypeOf?(testbed: TestbedSection): string | undefined;
  /** What its runs compute on and the memory they are held to (src/campaign/fits.ts); absent: GPUs, no known limit. */
  memoryOf?(testbed: TestbedSection): TargetMemory;
  /** What `ringlab plan` estimates with; absent: no duration is estimated there. */
  readonly estimate?: TargetEstimate;
  /** Where its runs go, said after "N to run" when a campaign starts (" as Jobs in namespace ringlab"). */
  runsWhere?(testbed: TestbedSection): string;
  /**
   * Its own way to run a campaign's runs (a Job per run on the user's cluster), given the campaign file and the run
   * path's options; absent: ringlab brings the testbed up (`up`), configures it and runs through Ansible.
   */
  ownRunPath?(ctx: Context, file: AnyLoadedCampaignFile, options: TargetOptions): Promise<CampaignTestbed>;
  /**
   * What its runs ask of the place they run, for `ringlab plan` and `ringlab manifests` to say: a line (the Pod
   * Security level its pods need, and why) and a warning where a guard cannot apply; absent: nothing to say.
   */
  runsNotes?(testbed: TestbedSection, runs: RunsOf): Promise<{ readonly line: string; readonly warning?: string }>;
  /** `ringlab manifests`: each run as the objects that run it, YAML for `kubectl apply -f`; absent: none to write. */
  manifests?(testbed: TestbedSection, runs: RunsOf): Promise<{ readonly runId: string; readonly yaml: string }[]>;
  /**
   * `ringlab sweep`: finds its resources in `region` by their tags, whatever this state folder says, and destroys
   * those past their expiry (only lists them with `dryRun`); returns what to say.
   */
  sweep?(ctx: Context, region: string, dryRun: boolean, print: (line: string) => void): Promise<string>;
}

/** Some runs of a campaign, as planned: what `runsNotes` and `manifests` describe. */
export interface RunsOf {
  readonly runs: readonly PlannedRun[];
  /** The campaign's name, which labels and names its runs' objects. */
  readonly campaign: string;
  readonly runTimeoutSeconds: number;
}

/**
 * What tests hand a target's verbs in place of the real world (a terraform double, a loopback cluster), one entry per
 * target that takes any, under its name: each target module adds its own entry to this interface (declaration merging)
 * and reads only that one.
 */
// biome-ignore lint/suspicious/noEmptyInterface: each target module merges its own entry into it
export interface TargetOptions {}

/**
 * A testbed while a campaign runs on it, once brought up (or connected to): how the campaign's runs go there. The
 * campaign's flow (src/campaign/execute.ts) is the same on every target; this is what differs.
 */
export interface CampaignTestbed {
  /** What it needs before the first run and after bringing it up (configure, the campaign's dataset). */
  prepare?(ctx: Context): Promise<void>;
  /** Runs the runs in order, each record saved (runs.save) as soon as its run ends. */
  run(ctx: Context, runs: CampaignRuns): Promise<void>;
  /** Removes the workers an interrupted campaign left on a testbed it keeps. */
  stopWorkers?(ctx: Context): Promise<void>;
  /** Removes the testbed (or what the campaign left on it); "failed" has been said already. */
  tearDown(ctx: Context): Promise<"done" | "failed">;
}

/** What `down` removed of a testbed whose resources are containers, networks and volumes here (local). */
export interface RemovedResources {
  readonly containers: string[];
  readonly networks: string[];
  readonly volumes: string[];
}

/** Why `target` cannot do `capability` with this testbed's settings; undefined: it can. */
export function gapOf(target: Target, capability: Capability, testbed?: TestbedSection): string | undefined {
  return target.gaps[capability] ?? (testbed === undefined ? undefined : target.gapsOf?.(testbed)[capability]);
}

/**
 * A section or spec handed to the target it names, typed as that target's own: every method of a target gets its own
 * kind (the table picks the target by the value's `target`), and anything else is a bug.
 */
export function narrowed<N extends string, T extends { readonly target: string }>(
  name: N,
  value: T,
): Extract<T, { readonly target: N }> {
  if (value.target !== name) throw new InternalError(`the ${name} target was handed a ${value.target} testbed`);
  return value as Extract<T, { readonly target: N }>;
}

/**
 * A path the campaign file names, absolute: `~` is the home folder, a relative path is relative to the file's folder.
 */
export function resolvePath(path: string, baseDir: string): string {
  if (path === "~" || path.startsWith("~/")) return resolve(homedir(), path.slice(2));
  return isAbsolute(path) ? path : resolve(baseDir, path);
}

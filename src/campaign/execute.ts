/**
 * Runs a campaign: read -> plan -> bring the testbed up -> run what is left -> report -> tear down, on every target
 * (src/targets/): what differs is the testbed the target opens (a CampaignTestbed). By default ringlab brings the
 * testbed up, configures it and runs through Ansible (ansibleTestbed, below); a target with its own run path (a
 * Kubernetes cluster: a Job per run, src/targets/kubernetes/campaign.ts) brings that instead.
 * Every finished run is on disk before the next starts, so a kill loses at most the run in flight, and a rerun
 * of the same file resumes. Teardown runs at the end, on failure and on Ctrl-C/SIGTERM, unless asked to keep.
 */
import { relative, resolve } from "node:path";
import { existsSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { bandwidthGbps } from "../rules/bandwidth.ts";
import type { AnyLoadedCampaignFile, LoadedCampaignFile } from "../config/load.ts";
import { dockerFor, uninterruptible, type Context } from "../context/context.ts";
import { recordedLauncher } from "../launchers/index.ts";
import { writeReport } from "../report/index.ts";
import { writeDerivedFiles } from "../results/derived.ts";
import type { ResultsPaths } from "../results/paths.ts";
import { RUN_RECORD_SCHEMA, type RunRecord } from "../results/record.ts";
import { disturbance, judged, UNSTEADY_SHIFT, type Disturbance } from "../results/steadiness.ts";
import { ResultsStore } from "../results/store.ts";
import { executeRuns, shapeLinks, stopWorkers, type RunOutcome, type RunRequest } from "../runner/runner.ts";
import { CPU_PERIOD_MS, resolveCpuQuota, underQuota } from "../testbed/cpu-quota.ts";
import type { TestbedRecord } from "../testbed/record.ts";
import { NodeKeeper, runnableWith, type NodeRecovery } from "../testbed/health.ts";
import { DEFAULT_BUSY_THRESHOLD, HostLoadSampler } from "../testbed/host-load.ts";
import { configureUnlessCurrent, down, prepareDataset, up } from "../testbed/testbed.ts";
import {
  gapOf,
  gapOfTestbed,
  targetOf,
  type CampaignTestbed,
  type Target,
  type TargetOptions,
} from "../targets/index.ts";
import { writeFileAtomic } from "../util/fs.ts";
import { InternalError, UsageError } from "../util/errors.ts";
import { memoryConstantsFor, memoryRun, planProblems } from "./fits.ts";
import { checkGpuMemory } from "./gpu-memory.ts";
import { checkLinkDrive } from "./link-drive.ts";
import {
  campaignName,
  planCampaign,
  remainingRuns,
  runsToPredict,
  type CampaignPlan,
  type PlannedRun,
} from "./plan.ts";
import { runsStillNeeded, throughputsByConfiguration, withoutRoundsNotNeeded } from "./precision.ts";
import { calibrationInputs, type Calibration } from "../predict/calibration.ts";
import { predictionContextFor, PUBLISHED_ONLY } from "../predict/inputs.ts";
import { rankingsOf } from "../predict/ranking.ts";
import { isMemoryPrediction, predictMemory, type MemoryConstants } from "../predict/memory.ts";
import {
  isPrediction,
  predictRun,
  type MissingInput,
  type PredictionContext,
  type RunPrediction,
} from "../predict/predict.ts";
import {
  countSeen,
  decidePredictions,
  PREDICTIONS_SCHEMA,
  seenSentence,
  type CalibrationInput,
  type PredictionsFile,
  type RecordedRun,
  type SavedPrediction,
  type UnpredictedRun,
} from "../results/predictions.ts";

export interface CampaignOptions {
  /** Keep the testbed afterwards (overrides the file's `keep`). */
  readonly keep?: boolean;
  /** Default: the file's resultsDir, or results/<campaign name>. */
  readonly resultsDir?: string;
  /**
   * This machine's cores, for the local testbed's CPU quota (src/testbed/cpu-quota.ts). @default
   * os.availableParallelism()
   */
  readonly machineCores?: number;
  /**
   * Where the target can ("rerun-disturbed": the local testbed): run once more, at the end, each run whose measurement
   * was disturbed (results/steadiness.ts): the machine was busy during it, or its steps changed speed while it ran.
   * Elsewhere the target says why not (AWS: a rerun costs instance time that `plan` did not estimate; the report flags
   * the run and `--rerun-flagged` does it). @default true
   */
  readonly rerunDisturbed?: boolean;
  /**
   * Also do again the runs of earlier invocations whose latest record was disturbed (`--rerun-flagged`). @default false
   */
  readonly redoDisturbed?: boolean;
  /**
   * Predict every training run from this calibration and save the predictions in the results folder before the
   * first run (predictions.json; kept as it is when the campaign resumes), for the report to score. @default none
   */
  readonly calibration?: { readonly calibration: Calibration; readonly from: string };
  /** What tests hand the target in place of the real world (src/targets/target.ts). @default none */
  readonly targetOptions?: TargetOptions;
}

export interface CampaignOutcome {
  readonly resultsDir: string;
  readonly planned: number;
  /** Runs already done before this invocation (resumed), so not run again. */
  readonly alreadyDone: number;
  readonly ok: number;
  readonly failed: number;
  /** Runs recorded as skipped (status "skipped") because a node they need was lost; a rerun does them. */
  readonly notRun: number;
  readonly wallSeconds: number;
  /** Seconds inside benchmark jobs during this invocation; the rest is orchestration overhead. */
  readonly benchmarkSeconds: number;
  /** Seconds bringing the testbed up: on a first campaign mostly the local images' builds, or the cloud deploy. */
  readonly upSeconds: number;
  /**
   * Runs done once more at the end because their measurement was disturbed: `failed` of them failed or could not run
   * (their record is now the latest: a rerun of the campaign does them), `stillDisturbed` were disturbed again.
   */
  readonly rerun: { readonly runs: number; readonly failed: number; readonly stillDisturbed: number };
  readonly teardown: "done" | "kept" | "failed" | "not needed";
}

export function resultsDirFor(file: Pick<LoadedCampaignFile, "campaign" | "sourceFile">, override?: string): string {
  return resolve(override ?? file.campaign?.resultsDir ?? `results/${campaignName(file.sourceFile)}`);
}

export async function runCampaign(
  ctx: Context,
  file: AnyLoadedCampaignFile,
  options: CampaignOptions = {},
): Promise<CampaignOutcome> {
  const started = Date.now();
  const target = targetOf(file.testbed);
  const plan = planCampaign(file, campaignName(file.sourceFile));
  // Once for the whole campaign, before anything starts: every run, the single-node baseline too, gets it.
  const cpusPerNode = resolveCpuQuota(file, options.machineCores ?? availableParallelism());
  const predictable = predictableFile(file);
  if (predictable !== undefined) refuseWhatCannotFit(plan, predictable, cpusPerNode, options.calibration?.calibration);
  for (const warning of checkLinkDrive(plan, cpusPerNode)) ctx.reporter.warn(warning);
  const leftOut: string[] = [];
  const store = ResultsStore.open(resultsDirFor(file, options.resultsDir), (message) => {
    leftOut.push(message);
    ctx.reporter.warn(message);
  });
  // A testbed whose runs' objects are always deleted (a Kubernetes cluster's) is never kept.
  const keep = gapOf(target, "keep") === undefined && (options.keep ?? plan.keep);
  const todo = runsToDo(plan, store, cpusPerNode, options.redoDisturbed === true);
  const alreadyDone = plan.runs.length - todo.length;
  saveCampaignCopy(store.paths, file.sourceText);
  if (predictable !== undefined)
    savePredictions(ctx, { store, plan, file: predictable, cpusPerNode }, options.calibration);
  ctx.reporter.info(
    `campaign ${plan.name}: ${plan.repeatUntil === undefined ? "" : "up to "}${plan.runs.length} runs planned, ${alreadyDone} already done, ` +
      `${todo.length} to run${target.runsWhere?.(file.testbed) ?? ""}; results in ${store.paths.dir}`,
  );

  const tally: Tally = {
    ok: 0,
    failed: 0,
    notRun: 0,
    benchmarkSeconds: 0,
    rerun: { ok: 0, failed: 0, notRun: 0, benchmarkSeconds: 0, stillDisturbed: 0 },
  };
  let upSeconds = 0;
  let teardown: CampaignOutcome["teardown"] = "not needed";
  let testbed: CampaignTestbed | undefined;
  try {
    if (todo.length > 0) {
      // The testbed is brought up (or connected to) once, as the file describes it, and serves every run.
      const upStarted = Date.now();
      testbed = await openTestbed(ctx, target, file, { plan, todo, targetOptions: options.targetOptions ?? {} });
      upSeconds = (Date.now() - upStarted) / 1000;
      await testbed.prepare?.(ctx);
      const scope: RecordScope = {
        testbed: { name: file.testbed.name, target: file.testbed.target },
        plan,
        store,
        instanceType: target.instanceTypeOf?.(file.testbed),
        cpusPerNode,
        memoryPerNodeGiB: "memoryPerNodeGiB" in file.testbed ? file.testbed.memoryPerNodeGiB : undefined,
      };
      await testbed.run(ctx, { todo, scope, tally, rerunDisturbed: options.rerunDisturbed ?? true });
    }
  } finally {
    const interrupted = ctx.signal.aborted;
    // Only a testbed this invocation brought up (or reused) is torn down: when `up` refused or failed, the
    // testbed of that name, if any, is not ours to remove (a failed `up` rolls back what it created itself).
    if (testbed !== undefined) teardown = keep ? "kept" : await testbed.tearDown(ctx);
    if (keep && testbed !== undefined && interrupted) await testbed.stopWorkers?.(uninterruptible(ctx)).catch(() => {});
    await makeReport(ctx, store, leftOut);
    if (interrupted)
      ctx.reporter.warn(
        `interrupted: ${tally.ok + tally.failed + tally.notRun} runs recorded this time; rerun the same command to resume`,
      );
  }
  const { rerun, ...counts } = tally;
  return {
    resultsDir: store.paths.dir,
    planned: plan.runs.length,
    alreadyDone,
    ...counts,
    benchmarkSeconds: counts.benchmarkSeconds + rerun.benchmarkSeconds,
    rerun: {
      runs: rerun.ok + rerun.failed + rerun.notRun,
      failed: rerun.failed + rerun.notRun,
      stillDisturbed: rerun.stillDisturbed,
    },
    wallSeconds: (Date.now() - started) / 1000,
    upSeconds,
    teardown,
  };
}

/**
 * A run that cannot be laid out on its workers, or that the memory model says will not fit, is refused before anything
 * starts.
 */
function refuseWhatCannotFit(
  plan: CampaignPlan,
  file: LoadedCampaignFile,
  cpusPerNode: number | undefined,
  calibration: Calibration | undefined,
): void {
  const problems = [
    ...checkGpuMemory(plan, file),
    ...planProblems(plan, file, memoryConstantsFor(file, cpusPerNode, calibration)),
  ];
  if (problems.length === 0) return;
  throw new UsageError(`the campaign cannot run as planned:\n${problems.map((problem) => `  ${problem}`).join("\n")}`, {
    hint: `\`ringlab plan ${file.sourceFile}\` prints the plan with the memory predicted for every run; change the file and run the campaign again`,
  });
}

/**
 * The planned runs the results folder does not hold yet (with `redoDisturbed`, also those whose latest record was
 * disturbed).
 */
function runsToDo(
  plan: CampaignPlan,
  store: ResultsStore,
  cpusPerNode: number | undefined,
  redoDisturbed: boolean,
): PlannedRun[] {
  // A record made under another CPU quota (or none, or Docker's 100 ms period) measured something else: its run is done
  // again.
  const sameQuota = store.latestRecords().filter(({ record }) => underQuota(record, cpusPerNode));
  const remaining = remainingRuns(
    plan,
    new Map(sameQuota.map(({ record }) => [record.runId, record])),
    redoDisturbed ? { redo: (record) => disturbance(record) !== undefined } : {},
  );
  // A repeatUntil campaign run again: the rounds its records show are not needed are not counted, nor a testbed brought
  // up for them.
  return plan.repeatUntil === undefined
    ? remaining
    : withoutRoundsNotNeeded(
        remaining,
        throughputsByConfiguration(
          plan.runs,
          sameQuota.map(({ record }) => record),
        ),
        plan.repeatUntil,
      );
}

/**
 * The file where its target lets ringlab predict the runs (their memory and throughput) before they run; undefined
 * where it cannot ("predictions": a Kubernetes cluster's machines are unknown). Such a target is one ringlab brings
 * up, whose file the predictions read (LoadedCampaignFile).
 */
function predictableFile(file: AnyLoadedCampaignFile): LoadedCampaignFile | undefined {
  return gapOfTestbed(file.testbed, "predictions") === undefined ? (file as LoadedCampaignFile) : undefined;
}

/** What opening the testbed needs of the campaign. */
interface OpenRequest {
  readonly plan: CampaignPlan;
  readonly todo: readonly PlannedRun[];
  readonly targetOptions: TargetOptions;
}

/**
 * The testbed the campaign runs on: its target's own run path, or (the default) the testbed ringlab brings up from
 * its spec, configures, and runs through Ansible.
 */
async function openTestbed(
  ctx: Context,
  target: Target,
  file: AnyLoadedCampaignFile,
  request: OpenRequest,
): Promise<CampaignTestbed> {
  if (target.ownRunPath !== undefined) return target.ownRunPath(ctx, file, request.targetOptions);
  if (gapOf(target, "provision") !== undefined)
    throw new InternalError(`the ${target.name} target neither brings its testbed up nor runs campaigns its own way`);
  const record = await up(ctx, file as LoadedCampaignFile, request.targetOptions);
  return ansibleTestbed(record, request);
}

/**
 * A testbed ringlab brought up, as a campaign runs on it: configured (which also removes workers left over from a
 * killed earlier invocation) and given the campaign's dataset; its runs go in batches through Ansible (runAll), and
 * teardown removes it from its spec.
 */
function ansibleTestbed(record: TestbedRecord, { plan, todo }: OpenRequest): CampaignTestbed {
  return {
    async prepare(ctx) {
      await configureUnlessCurrent(ctx, record, { launchers: [plan.launcher] });
      if (plan.dataset?.generate === true && todo.some((run) => run.knobs.data === "dataset"))
        await prepareDataset(ctx, record, plan.dataset);
    },
    run: (ctx, runs) =>
      runAll(ctx, { ...runs.scope, testbed: record, rerunDisturbed: runs.rerunDisturbed }, runs.todo, runs.tally),
    stopWorkers: (ctx) => stopWorkers(ctx, record),
    tearDown: (ctx) => tearDown(ctx, record.name),
  };
}

/** What a testbed's run path gets of the campaign: the runs to do, what their records share, and the tally. */
export interface CampaignRuns {
  readonly todo: readonly PlannedRun[];
  readonly scope: RecordScope;
  readonly tally: Tally;
  /**
   * CampaignOptions.rerunDisturbed: the run path runs disturbed runs again where its target can ("rerun-disturbed").
   */
  readonly rerunDisturbed: boolean;
}

/** What a run's record needs of its campaign invocation, whatever the run path (a Kubernetes campaign's too). */
export interface RecordScope {
  readonly testbed: { readonly name: string; readonly target: RunRecord["testbed"]["target"] };
  readonly plan: CampaignPlan;
  readonly store: ResultsStore;
  /** Where the target rents nodes by instance type (AWS): every node's, for the records. */
  readonly instanceType: string | undefined;
  /** Where the target holds workers to a CPU quota (local): the cores every worker may use; undefined elsewhere. */
  readonly cpusPerNode: number | undefined;
  /**
   * Where the testbed section limits it (local: testbed.memoryPerNodeGiB): the memory of every node's worker container;
   * undefined: no limit.
   */
  readonly memoryPerNodeGiB?: number | undefined;
}

/** What every run of one campaign invocation shares. */
interface CampaignScope extends RecordScope {
  readonly testbed: TestbedRecord;
  /** CampaignOptions.rerunDisturbed. */
  readonly rerunDisturbed: boolean;
}

export interface Tally {
  ok: number;
  failed: number;
  notRun: number;
  benchmarkSeconds: number;
  /** Runs done once more because their first attempt's measurement was disturbed. */
  rerun: RerunTally;
}

interface RerunTally extends Omit<Tally, "rerun"> {
  /** Disturbed again the second time. */
  stillDisturbed: number;
}

/**
 * The runs in order, each recorded as soon as it ends. Consecutive runs at one link rate go to one playbook (a batch:
 * Ansible starts once, not per run). Before each batch every node is checked: lost nodes are brought back where
 * possible (local), and a run that needs a node still lost is recorded as skipped. A batch ends at its first failed
 * run; a run cut short by a node that stopped answering goes again once after the check.
 */
async function runAll(ctx: Context, scope: CampaignScope, todo: readonly PlannedRun[], tally: Tally): Promise<void> {
  const target = targetOf(scope.testbed);
  const sampler = gapOf(target, "host-load") === undefined ? hostLoadSampler(ctx, scope.testbed.name) : undefined;
  await sampler?.start();
  try {
    const saved = await runInBatches(ctx, { ...scope, sampler }, todo, tally);
    const rerun =
      scope.rerunDisturbed && gapOf(target, "rerun-disturbed") === undefined
        ? toRunAgain(disturbedRuns(saved, todo), saved.filter(judged).length, (message) => ctx.reporter.warn(message))
        : [];
    if (rerun.length > 0) {
      // Their rounds were decided already; the new attempts replace the disturbed ones in the report.
      const again = await runInBatches(
        ctx,
        { ...scope, sampler },
        rerun.map(({ run }) => ({ ...run, conditional: false })),
        tally.rerun,
      );
      tally.rerun.stillDisturbed += again.filter((record) => disturbance(record) !== undefined).length;
    }
  } finally {
    await sampler?.stop();
  }
}

/**
 * The disturbed runs to do once more, said with why. Unsteady runs are left alone when more than two, and more than a
 * quarter of the invocation's runs that steadiness judges, changed speed: that is a warm-up too short for every run,
 * not a disturbance, and running them again would only double the campaign.
 */
export function toRunAgain(
  disturbed: readonly DisturbedRun[],
  judgedRuns: number,
  warn: (message: string) => void,
): DisturbedRun[] {
  const unsteady = disturbed.filter(({ why }) => why === "unsteady run").length;
  const tooMany = unsteady > 2 && unsteady > judgedRuns / 4;
  if (tooMany) {
    warn(
      `${unsteady} of ${judgedRuns} runs changed speed by more than ${Math.round(UNSTEADY_SHIFT * 100)} % while they ran (unsteady run): ` +
        "too many to be disturbances; the warm-up is likely shorter than the runs need (raise numWarmupBatches). Not running them again",
    );
  }
  const again = disturbed.filter(({ why }) => !(tooMany && why === "unsteady run"));
  const busy = again.filter(({ why }) => why === "machine busy").length;
  const reasons = [
    ...(busy === 0
      ? []
      : [
          `${busy} ran while other work took more than ${Math.round(DEFAULT_BUSY_THRESHOLD * 100)} % of the machine (machine busy; see each record's hostLoad)`,
        ]),
    ...(again.length === busy
      ? []
      : [
          `${again.length - busy} changed speed by more than ${Math.round(UNSTEADY_SHIFT * 100)} % while ${again.length - busy === 1 ? "it" : "they"} ran (unsteady run)`,
        ]),
  ];
  if (again.length > 0)
    warn(
      `${again.length} run${again.length === 1 ? " was" : "s were"} disturbed: ${reasons.join("; ")}: running ${again.length === 1 ? "it" : "them"} once more`,
    );
  return again;
}

export interface DisturbedRun {
  readonly run: PlannedRun;
  readonly why: Disturbance;
}

/** The planned runs whose saved record's measurement was disturbed, with why. */
function disturbedRuns(saved: readonly RunRecord[], todo: readonly PlannedRun[]): DisturbedRun[] {
  return saved.flatMap((record) => {
    const why = disturbance(record);
    const run = todo.find((planned) => planned.id === record.runId);
    return why === undefined || run === undefined ? [] : [{ run, why }];
  });
}

/**
 * A testbed that shares this machine (local, "host-load"): a sampler of how busy the machine is besides the testbed's
 * containers.
 */
function hostLoadSampler(ctx: Context, testbed: string): HostLoadSampler | undefined {
  const docker = dockerFor(ctx);
  const sampler = new HostLoadSampler({
    testbedContainers: async () => {
      const containers = await docker.inspectContainers(
        await docker.listByLabel("container", `ringlab.testbed=${testbed}`),
      );
      return new Map(
        containers.map((container) => [
          container.id,
          { worker: container.labels["ringlab.role"] === "worker", running: container.running },
        ]),
      );
    },
    onBlind: (message) => ctx.reporter.warn(message),
  });
  return sampler.available() ? sampler : undefined;
}

/** Runs the queue in batches; returns every record it saved, in order. */
async function runInBatches(
  ctx: Context,
  scope: CampaignScope & { sampler: HostLoadSampler | undefined },
  todo: readonly PlannedRun[],
  tally: Tally | RerunTally,
): Promise<RunRecord[]> {
  const saved: RunRecord[] = [];
  const keeper = new NodeKeeper(ctx, scope.testbed, { launchers: [scope.plan.launcher] });
  const position = new Map(todo.map((run, index) => [run.id, index + 1]));
  // With repeatUntil, the rounds that turn out not to be needed are left out: the count is a most.
  const total = `${todo.length}${scope.plan.repeatUntil === undefined ? "" : " at most"}`;
  const announce = (run: PlannedRun) => ctx.reporter.info(`run ${position.get(run.id)}/${total}: ${run.id}`);
  const retried = new Set<string>();
  let queue = [...todo];
  let shapedTo: string | undefined;
  // Runs of conditional rounds (repeatUntil) whose round has been decided: they take place.
  const decided = new Set<string>();
  const save = (record: RunRecord): void => {
    recordRun(ctx, scope, tally, record);
    saved.push(record);
  };
  while (queue.length > 0) {
    ctx.signal.throwIfAborted();
    const health = await keeper.check();
    if (health.recovery !== undefined) shapedTo = undefined;
    const first = queue[0]!;
    // Decided before a lost node makes anything of it: a run the round does not need is not "not run".
    if (first.conditional && !decided.has(first.id)) {
      queue = decideRound(ctx, scope, queue, decided);
      continue;
    }
    if (!runnableWith(first.nodes, health.lost)) {
      save(
        skippedRecord(
          scope,
          first,
          health.lost.map((node) => node.name),
        ),
      );
      queue = queue.slice(1);
      continue;
    }
    const reachable =
      health.lost.length === 0
        ? undefined
        : scope.testbed.nodes.filter((n) => !health.lost.includes(n)).map((n) => n.name);
    if (first.bandwidth !== null && first.bandwidth !== shapedTo) {
      await shapeLinks(ctx, scope.testbed, first.bandwidth, reachable);
      shapedTo = first.bandwidth;
    }
    // A batch ends before a round still to be decided: the decision needs the batch's results.
    const batch = takeWhile(
      queue,
      (run) =>
        (run.bandwidth === null || run.bandwidth === shapedTo) &&
        runnableWith(run.nodes, health.lost) &&
        (!run.conditional || decided.has(run.id)),
    );
    const attempts = new Map(batch.map((run) => [run.id, scope.store.nextAttempt(run.id)]));
    const requests = batch.map((run) => runRequest(scope, run, attempts.get(run.id)!, reachable));
    announce(first);
    const end = await executeRuns(ctx, scope.testbed, requests, (request, outcome) => {
      const index = requests.indexOf(request);
      const run = batch[index]!;
      save(
        withHostLoad(
          runRecord(scope, run, attempts.get(run.id)!, outcome, index === 0 ? health.recovery : undefined),
          scope.sampler,
        ),
      );
      if (outcome.status === "ok")
        ctx.reporter.info(`✓ run ${position.get(run.id)}/${total}: ${run.id} (${outcome.wallSeconds.toFixed(1)} s)`);
      const next = batch[index + 1];
      if (next !== undefined && outcome.status === "ok") announce(next);
    });
    queue = queue.slice(end.done);
    if (end.cutShort !== undefined) {
      const run = queue[0]!;
      if (end.cutShort.nodeLost && !retried.has(run.id)) {
        ctx.reporter.warn(
          `run ${run.id} was cut short by a node that stopped answering; it goes again after the nodes are checked`,
        );
        retried.add(run.id);
        // Its attempt number was not used: the next attempt takes it again.
        continue;
      }
      save(
        runRecord(
          scope,
          run,
          attempts.get(run.id)!,
          end.cutShort.outcome,
          end.done === 0 ? health.recovery : undefined,
        ),
      );
      queue = queue.slice(1);
    }
  }
  return saved;
}

/**
 * The queue once the conditional round at its head is decided (repeatUntil): the round's runs whose configuration is
 * already precise enough are dropped, the others marked decided.
 */
function decideRound(
  ctx: Context,
  scope: CampaignScope,
  queue: readonly PlannedRun[],
  decided: Set<string>,
): PlannedRun[] {
  const head = queue[0]!;
  const round = takeWhile(queue, (run) => run.conditional && run.round === head.round && !decided.has(run.id));
  const target = scope.plan.repeatUntil!;
  // The repeats of the configurations measured under this campaign's quota (as the runs to do are chosen).
  const records = scope.store.records().filter((record) => underQuota(record, scope.cpusPerNode));
  const needed = runsStillNeeded(round, throughputsByConfiguration(scope.plan.runs, records), target);
  for (const run of needed) decided.add(run.id);
  const link = round.find((run) => run.bandwidth !== null)?.bandwidth;
  const where = link === undefined ? "" : ` at ${link}`;
  const configurations = (runs: readonly PlannedRun[]) => runs.filter((run) => run.job === "train").length;
  ctx.reporter.info(
    needed.length === 0
      ? `round ${head.round}${where}: every configuration is within ±${(target.halfWidth * 100).toFixed(1)} % (95 % interval): not needed`
      : `round ${head.round}${where}: ${configurations(needed)} of ${configurations(round)} configurations still wider than ±${(target.halfWidth * 100).toFixed(1)} %: running them`,
  );
  return [...needed, ...queue.slice(round.length)];
}

/** The leading items that satisfy the predicate. */
function takeWhile<T>(items: readonly T[], predicate: (item: T) => boolean): T[] {
  const end = items.findIndex((item) => !predicate(item));
  return items.slice(0, end === -1 ? items.length : end);
}

/** Saves a run's record as soon as it ends, rewrites runs.jsonl and summary.csv, and counts it. */
export function recordRun(ctx: Context, scope: RecordScope, tally: Omit<Tally, "rerun">, record: RunRecord): void {
  scope.store.save(record);
  writeDerivedFiles(
    scope.store.paths,
    scope.store.records(),
    scope.plan.runs.map((run) => run.id),
  );
  count(ctx, tally, record);
}

/** Counts a saved record, and says why a run failed. */
function count(ctx: Context, tally: Omit<Tally, "rerun">, record: RunRecord): void {
  if (record.status === "ok") tally.ok++;
  else if (record.status === "skipped") tally.notRun++;
  else {
    tally.failed++;
    ctx.reporter.warn(`run ${record.runId} failed: ${record.error}`);
  }
  tally.benchmarkSeconds += record.benchmarkSeconds ?? 0;
}

function runRequest(
  scope: CampaignScope,
  run: PlannedRun,
  attempt: number,
  limit: readonly string[] | undefined,
): RunRequest {
  return {
    runId: run.id,
    nodes: run.nodes,
    ...(run.processesPerNode === undefined ? {} : { processesPerNode: run.processesPerNode }),
    job: run.job,
    workerArgs: run.workerArgs,
    timeoutSeconds: scope.plan.runTimeoutSeconds,
    collectDir: scope.store.logsDirOf(run.id, attempt),
    ...(limit === undefined ? {} : { limit }),
    ...(scope.cpusPerNode === undefined ? {} : { cpusPerNode: scope.cpusPerNode }),
    ...(scope.memoryPerNodeGiB === undefined
      ? {}
      : { memoryPerNodeBytes: Math.round(scope.memoryPerNodeGiB * 2 ** 30) }),
    ...recordedLauncher(scope.plan.launcher),
  };
}

export function runRecord(
  scope: RecordScope,
  run: PlannedRun,
  attempt: number,
  outcome: RunOutcome,
  recovery: NodeRecovery | undefined,
): RunRecord {
  const provenance = outcome.result?.provenance;
  // The job's whole life in the worker, torch import and rendezvous included: what is left of the run's wall
  // time is ringlab's own orchestration.
  const benchmarkSeconds =
    provenance === undefined
      ? undefined
      : (Date.parse(provenance.endedAt) - Date.parse(provenance.launchedAt ?? provenance.startedAt)) / 1000;
  return {
    ...recordBase(scope, run, attempt),
    status: outcome.status,
    ...(outcome.error === undefined ? {} : { error: outcome.error }),
    ...(recovery === undefined ? {} : { nodeRecovery: recovery }),
    startedAt: outcome.startedAt,
    endedAt: outcome.endedAt,
    wallSeconds: outcome.wallSeconds,
    ...(benchmarkSeconds === undefined || Number.isNaN(benchmarkSeconds) ? {} : { benchmarkSeconds }),
    logsDir: relative(scope.store.paths.dir, outcome.collectDir),
    ...(outcome.result === undefined ? {} : { result: outcome.result }),
  };
}

/** The machine's load over the window the run's benchmark ran, read off the sampler (local testbed). */
function withHostLoad(record: RunRecord, sampler: HostLoadSampler | undefined): RunRecord {
  const provenance = record.result?.provenance;
  if (sampler === undefined || provenance === undefined) return record;
  const hostLoad = sampler.loadOver(Date.parse(provenance.startedAt), Date.parse(provenance.endedAt));
  return hostLoad === undefined ? record : { ...record, hostLoad };
}

/** A run not attempted because a node it needs is lost; a rerun of the campaign does it. */
function skippedRecord(scope: CampaignScope, run: PlannedRun, lost: readonly string[]): RunRecord {
  const attempt = scope.store.nextAttempt(run.id);
  const now = new Date().toISOString();
  return {
    ...recordBase(scope, run, attempt),
    status: "skipped",
    error: `not run: node${lost.length > 1 ? "s" : ""} ${lost.join(", ")} of the first ${run.nodes} do${lost.length > 1 ? "" : "es"} not answer over SSH; rerun the campaign to do it`,
    startedAt: now,
    endedAt: now,
    wallSeconds: 0,
    logsDir: relative(scope.store.paths.dir, scope.store.logsDirOf(run.id, attempt)),
  };
}

function recordBase(scope: RecordScope, run: PlannedRun, attempt: number) {
  const { testbed, instanceType, cpusPerNode } = scope;
  return {
    schema: RUN_RECORD_SCHEMA,
    campaign: scope.plan.name,
    runId: run.id,
    attempt,
    fingerprint: run.fingerprint,
    params: {
      job: run.job,
      nodes: run.nodes,
      ...(run.processesPerNode === undefined ? {} : { processesPerNode: run.processesPerNode }),
      bandwidth: run.bandwidth,
      linkGbps: run.bandwidth === null ? null : (bandwidthGbps(run.bandwidth) ?? null),
      repeat: run.repeat,
      ...(run.model === undefined ? {} : { model: run.model }),
      ...(run.batchSize === undefined ? {} : { batchSize: run.batchSize }),
      knobs: run.knobs,
      workerArgs: run.workerArgs,
      ...(cpusPerNode === undefined ? {} : { cpusPerNode, cpuPeriodMs: CPU_PERIOD_MS }),
      ...(scope.memoryPerNodeGiB === undefined ? {} : { memoryPerNodeGiB: scope.memoryPerNodeGiB }),
      ...recordedLauncher(scope.plan.launcher),
      ...(scope.plan.repeatUntil === undefined ? {} : { repeatUntil: scope.plan.repeatUntil }),
    },
    testbed: {
      name: testbed.name,
      target: testbed.target,
      ...(instanceType === undefined ? {} : { instanceType }),
    },
  } as const;
}

async function tearDown(ctx: Context, testbedName: string): Promise<"done" | "failed"> {
  try {
    await down(uninterruptible(ctx), testbedName);
    return "done";
  } catch (error) {
    ctx.reporter.warn(`teardown failed: ${(error as Error).message}; run \`ringlab down ${testbedName}\` to finish it`);
    return "failed";
  }
}

/** The report from the records in memory; runs.jsonl and summary.csv were rewritten after each run already. */
export async function makeReport(ctx: Context, store: ResultsStore, leftOut: readonly string[]): Promise<void> {
  const records = store.records();
  if (records.length === 0) return;
  const dir = store.paths.dir;
  try {
    await ctx.reporter.step("write the report", () => writeReport(dir, records, { leftOut }));
  } catch (error) {
    ctx.reporter.warn(
      `the report could not be written: ${(error as Error).message} (the results are safe; retry with \`ringlab report ${dir}\`)`,
    );
  }
}

/**
 * Every training run's prediction and peak memory, saved once, before the first run; `calibration.from` names the
 * calibration (none: published figures and the catalogue). A calibration made before ringlab recorded its folders'
 * absolute paths names them as given to `calibrate`: they are read from here.
 */
function savePredictions(
  ctx: Context,
  scope: { store: ResultsStore; plan: CampaignPlan; file: LoadedCampaignFile; cpusPerNode: number | undefined },
  calibration: CampaignOptions["calibration"],
): void {
  const { paths } = scope.store;
  const context = predictionContextFor(scope.file, scope.cpusPerNode, calibration?.calibration);
  if (context === undefined || existsSync(paths.predictions)) return;
  const from = calibration?.from;
  const inputs =
    context.calibration === undefined
      ? []
      : calibrationInputs(context.calibration).map((input) =>
          input.folder === null && input.resultsDir !== null ? { ...input, folder: resolve(input.resultsDir) } : input,
        );
  const outcome = predictionsToSave({
    plan: scope.plan,
    campaignFile: scope.file.sourceFile,
    recorded: scope.store.records(),
    resultsDir: paths.dir,
    context,
    memory: memoryConstantsFor(scope.file, scope.cpusPerNode, calibration?.calibration),
    from,
    calibrationInputs: inputs,
    madeAt: new Date().toISOString(),
  });
  if ("refused" in outcome) {
    ctx.reporter.warn(outcome.refused);
    return;
  }
  writeFileAtomic(paths.predictions, `${JSON.stringify(outcome.file, null, 2)}\n`);
  ctx.reporter.info(`${outcome.said} (${paths.predictions})`);
  const memory = memoryConstantsFor(scope.file, scope.cpusPerNode, calibration?.calibration);
  const ranking = rankingsOf(scope.plan, context, memory, {
    madeAt: outcome.file.madeAt,
    calibration: outcome.file.calibration,
  });
  if (ranking === undefined) return;
  writeFileAtomic(paths.ranking, `${JSON.stringify(ranking, null, 2)}\n`);
  ctx.reporter.info(
    `predict --recommend's order of the layouts at ${ranking.rankings.length} slots, before the first run (${paths.ranking})`,
  );
}

export interface PredictionsToSave {
  readonly plan: CampaignPlan;
  /** The campaign file, for the `ringlab plan` command the refusal names. */
  readonly campaignFile: string;
  /** Every record in the results folder, all attempts. */
  readonly recorded: readonly RecordedRun[];
  /** The results folder, absolute. */
  readonly resultsDir: string;
  readonly context: PredictionContext;
  /** The memory model's constants for the campaign's machines (fits.ts memoryConstantsFor); absent: no memory saved. */
  readonly memory?: MemoryConstants;
  /** The calibration file or folder; undefined: published figures and the catalogue. */
  readonly from: string | undefined;
  /** The calibration's inputs, each with its folder's absolute path. */
  readonly calibrationInputs: readonly CalibrationInput[];
  readonly madeAt: string;
}

/**
 * The predictions.json to write and the line that says so, or, once runs of the campaign are done in its results
 * folder, the line that says why none is written and which command shows the predictions without running
 * (decidePredictions).
 */
export function predictionsToSave(
  question: PredictionsToSave,
): { readonly file: PredictionsFile; readonly said: string } | { readonly refused: string } {
  const { plan, from } = question;
  const decision = decidePredictions({
    planned: runsToPredict(plan, question.context.cpusPerNode),
    recorded: question.recorded,
    resultsFolder: question.resultsDir,
    calibrationInputs: question.calibrationInputs,
  });
  if (!decision.save) {
    return {
      refused:
        `predictions not saved: ${decision.runsDone.length} of the campaign's ${plan.runs.length} runs are done already in ${question.resultsDir}, ` +
        `so predictions made now would not come before them; \`ringlab plan ${question.campaignFile}${from === undefined ? "" : ` --calibration ${from}`}\` ` +
        "prints them without running anything, and a campaign into a new results folder (--results) saves them before its first run",
    };
  }
  const predictions: SavedPrediction[] = [];
  const missing: UnpredictedRun[] = [];
  for (const run of plan.runs) {
    const outcome = predictRun(run, question.context);
    if (outcome === null) continue;
    if (isPrediction(outcome))
      predictions.push({ ...withMemory(outcome, run, question.memory), seen: decision.seen.get(run.id)! });
    else missing.push(withMemory(outcome, run, question.memory));
  }
  const file: PredictionsFile = {
    schema: PREDICTIONS_SCHEMA,
    calibration: from ?? PUBLISHED_ONLY,
    madeAt: question.madeAt,
    runsDoneBefore: [],
    calibrationInputs: question.calibrationInputs,
    sample: decision.sample,
    predictions,
    missing,
  };
  const claim =
    decision.sample.kind === "in-sample"
      ? `, in-sample: ${decision.sample.reasons.join("; ")}; the report scores them as in-sample, no test of the model`
      : ` before they ran${from === undefined || predictions.length === 0 ? "" : `; ${seenSentence(countSeen(predictions.map((prediction) => prediction.seen!)))}`}`;
  return {
    file,
    said:
      `predicted ${predictions.length} training runs from ${file.calibration}${claim}` +
      (missing.length === 0 ? "" : `; ${missing.length} could not be: ${missing[0]!.missing}`) +
      memoryOnlySentence(missing),
  };
}

/** "; their memory peaks saved all the same (12 runs)": a peak needs the memory model, not a probe of the link. */
function memoryOnlySentence(missing: readonly UnpredictedRun[]): string {
  const peaks = missing.filter((run) => run.memory !== undefined).length;
  return peaks === 0 ? "" : `; the memory peaks of ${peaks} of them saved all the same (a peak needs no link probe)`;
}

/**
 * A run's prediction, or what its step lacked, with the memory model's peak beside it, where the constants are given
 * and its layout is one.
 */
function withMemory<Outcome extends RunPrediction | MissingInput>(
  prediction: Outcome,
  run: PlannedRun,
  constants: MemoryConstants | undefined,
): Outcome & Pick<SavedPrediction, "memory"> {
  if (constants === undefined) return prediction;
  const memory = predictMemory(memoryRun(run), constants);
  if (!isMemoryPrediction(memory)) return prediction;
  return { ...prediction, memory: { rankBytes: memory.rankBytes, nodeBytes: memory.nodeBytes, source: memory.source } };
}

export function saveCampaignCopy(paths: ResultsPaths, text: string): void {
  if (existsSync(paths.campaignCopy) && readFileSync(paths.campaignCopy, "utf8") === text) return;
  writeFileAtomic(paths.campaignCopy, text);
}

/**
 * Runs benchmark jobs on a testbed: shape the links (ansible/shape.yml), run the workers on the first N nodes
 * and collect their logs and result (ansible/run.yml), read the result. Used by `ringlab run` and campaigns.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { writeFileAtomic } from "../util/fs.ts";
import { join } from "node:path";
import { z } from "zod";
import { bandwidthGbps } from "../rules/bandwidth.ts";
import { uninterruptible, type Context } from "../context/context.ts";
import { LAUNCHERS, launcherOf, type RecordedLauncher } from "../launchers/index.ts";
import { plannedLostNode } from "../launchers/node-loss.ts";
import { runPlaybook } from "../testbed/playbook.ts";
import { RinglabError, ToolError } from "../util/errors.ts";
import { JOBS, type Job } from "../results/record.ts";
import { parseWorkerResult, type WorkerResult } from "../results/worker-result.ts";
import { unreachableNodes } from "../testbed/health.ts";
import type { TestbedRecord } from "../testbed/record.ts";
import { formatBytes } from "../util/format.ts";
import { rateUnit, throughputOf } from "../results/worker-result.ts";

export { JOBS, type Job };

export interface RunRequest {
  /** Stable id: names the worker containers' rendezvous and the result's folder. */
  readonly runId: string;
  readonly nodes: number;
  readonly job: Job;
  readonly workerArgs: readonly string[];
  readonly timeoutSeconds: number;
  /** Where the result and every node's log are collected (on this machine): a folder of this attempt alone. */
  readonly collectDir: string;
  /** Only these nodes are contacted (the others are lost); every node when absent. */
  readonly limit?: readonly string[];
  /**
   * CPU cores each worker process may use; its node's container gets this × processesPerNode (Docker's --cpus). No
   * limit when absent.
   */
  readonly cpusPerNode?: number;
  /**
   * Memory of each node's worker container, swap included (local testbed: testbed.memoryPerNodeGiB); no limit when
   * absent.
   */
  readonly memoryPerNodeBytes?: number;
  /** Worker processes on each node (torchrun's nproc_per_node); absent: one per GPU on GPU nodes, one on CPU nodes. */
  readonly processesPerNode?: number;
  /** The launcher that starts the job (src/launchers/); absent: the default, Ansible starts the workers. */
  readonly launcher?: RecordedLauncher;
}

export interface RunOutcome {
  readonly status: "ok" | "failed";
  readonly result?: WorkerResult;
  /** Why it failed, in one paragraph. */
  readonly error?: string;
  readonly startedAt: string;
  readonly endedAt: string;
  /** Wall time of the whole run, orchestration included. */
  readonly wallSeconds: number;
  readonly collectDir: string;
}

/** Sets the egress limit of every node's cluster link; a no-op on nodes already at that rate. */
export async function shapeLinks(
  ctx: Context,
  record: TestbedRecord,
  bandwidth: string,
  limit?: readonly string[],
): Promise<void> {
  await ctx.reporter.step(`shape links to ${bandwidth}`, (detail) =>
    runPlaybook(ctx, record, "shape.yml", {
      extraVars: { net_shaping_rate: bandwidth },
      onTask: detail,
      ...(limit === undefined ? {} : { limit }),
    }),
  );
}

/** Removes every worker container of the testbed (idempotent). */
export async function stopWorkers(ctx: Context, record: TestbedRecord): Promise<void> {
  await ctx.reporter.step("stop workers", () => runPlaybook(ctx, record, "stop-workers.yml"));
}

/** How a batch of runs ended (see executeRuns). */
export interface BatchEnd {
  /** Runs handed to onOutcome, from the first; the rest did not start (a run failed, or the playbook did). */
  readonly done: number;
  /**
   * The run in flight when the playbook itself failed (a node stopped answering, a tool failed): not handed to
   * onOutcome. `nodeLost`: some node does not answer now, so the run may go again once the nodes are checked.
   */
  readonly cutShort?: { readonly outcome: RunOutcome; readonly nodeLost: boolean };
}

/**
 * Runs jobs one after another at the current link rate in one `ansible-playbook run.yml` (its start, the inventory
 * and the checks are paid once), handing each run's outcome to `onOutcome` as soon as the job ends, while the next
 * one runs: a kill loses at most the run in flight. The first failed run ends the batch. A failed job is an outcome,
 * not an exception: campaigns record it and go on. The batch takes the first request's timeout, node limit and
 * launcher (a campaign's runs share them).
 */
export async function executeRuns(
  ctx: Context,
  record: TestbedRecord,
  requests: readonly RunRequest[],
  onOutcome: (request: RunRequest, outcome: RunOutcome) => void,
): Promise<BatchEnd> {
  const first = requests[0];
  if (first === undefined) return { done: 0 };
  for (const request of requests) {
    freshCollectDir(request.collectDir);
  }
  const outcomes = new OutcomeWatch(requests, onOutcome);
  let failure: unknown;
  try {
    await ctx.reporter.step(describeBatch(requests), (detail) =>
      runPlaybook(ctx, record, "run.yml", {
        extraVars: {
          worker_jobs: requests.map(jobOf),
          worker_timeout_seconds: first.timeoutSeconds,
          // run.yml includes this role's tasks/job.yml for each job.
          worker_launcher_role: launcherOf(first.launcher).role,
        },
        // The inventory is the CLI's own and site.yml checked it (a skipped task would still cost a round per node).
        skipTags: ["inventory_checks"],
        // Ansible's own work (start, poll, collect) on top of each job's limit.
        timeoutMs: requests.reduce((sum, request) => sum + request.timeoutSeconds + 60, 120) * 1000,
        onTask: detail,
        ...(first.limit === undefined ? {} : { limit: first.limit }),
      }),
    );
  } catch (error) {
    failure = error;
  } finally {
    outcomes.stop();
  }
  return failure === undefined ? { done: outcomes.done } : endFailedBatch(ctx, record, requests, outcomes, failure);
}

/**
 * Hands each run's outcome to `onOutcome` as soon as its outcome.json appears (every 200 ms), in order: only the
 * next run's file is looked for.
 */
class OutcomeWatch {
  done = 0;
  lastFailed = false;
  /** When the next run began: the end of the one before, or the batch's start. */
  since = new Date();
  private error: unknown;
  private readonly poll = setInterval(() => {
    try {
      this.collect();
    } catch (error) {
      this.error ??= error;
    }
  }, 200);

  constructor(
    private readonly requests: readonly RunRequest[],
    private readonly onOutcome: (request: RunRequest, outcome: RunOutcome) => void,
  ) {}

  /** Stops polling and collects what arrived since; throws what collecting threw. */
  stop(): void {
    clearInterval(this.poll);
    if (this.error !== undefined) throw this.error;
    this.collect();
  }

  private collect(): void {
    for (
      let next = this.requests[this.done];
      next !== undefined && existsSync(outcomeFile(next));
      next = this.requests[this.done]
    ) {
      const outcome = readOutcome(next, this.since);
      this.since = new Date(outcome.endedAt);
      this.lastFailed = outcome.status === "failed";
      this.done++;
      this.onOutcome(next, outcome);
    }
  }
}

/** The end of a batch whose playbook failed: a failed run ended it, or a node or a tool failed under a run. */
async function endFailedBatch(
  ctx: Context,
  record: TestbedRecord,
  requests: readonly RunRequest[],
  outcomes: OutcomeWatch,
  failure: unknown,
): Promise<BatchEnd> {
  const { done } = outcomes;
  // run.yml fails on purpose after a failed run's outcome, whose workers are gone: that run is recorded, the batch
  // is over.
  if (outcomes.lastFailed && !ctx.signal.aborted && failure instanceof RinglabError) return { done };
  // Ranks still up would wait for a failed one until their own timeout, and an interrupted run's workers would run
  // on: stop them.
  await stopWorkers(uninterruptible(ctx), record).catch(() => {});
  if (ctx.signal.aborted || !(failure instanceof RinglabError)) throw failure;
  const inFlight = requests[done];
  if (inFlight === undefined) return { done };
  const nodeLost = (await unreachableNodes(record)).length > 0;
  const outcome = endedNow(inFlight.collectDir, outcomes.since, {
    status: "failed",
    error: describeRunFailure(failure, inFlight),
  });
  return { done, cutShort: { outcome, nodeLost } };
}

/** Runs one job: a batch of one. */
export async function executeRun(ctx: Context, record: TestbedRecord, request: RunRequest): Promise<RunOutcome> {
  let outcome: RunOutcome | undefined;
  const end = await executeRuns(ctx, record, [request], (_, ended) => {
    outcome = ended;
  });
  return outcome ?? end.cutShort!.outcome;
}

/** A run's outcome that began at `since` and ends now. */
/**
 * An attempt's folder, empty. Earlier attempts have folders of their own and are kept; this attempt's folder exists
 * only when an invocation was killed before recording it, and its leftovers must not pass as ours.
 */
export function freshCollectDir(dir: string): void {
  if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

export function endedNow(
  collectDir: string,
  since: Date,
  fields: Pick<RunOutcome, "status" | "result" | "error">,
): RunOutcome {
  const ended = new Date();
  return {
    ...fields,
    startedAt: since.toISOString(),
    endedAt: ended.toISOString(),
    wallSeconds: (ended.getTime() - since.getTime()) / 1000,
    collectDir,
  };
}

function outcomeFile(request: RunRequest): string {
  return join(request.collectDir, "outcome.json");
}

/** One entry of run.yml's worker_jobs. */
function jobOf(request: RunRequest): Record<string, unknown> {
  const processes = request.processesPerNode;
  const lostNode = plannedLostNode(request.workerArgs);
  return {
    run_id: request.runId,
    // The attempt's rendezvous id, a secret (the worker's RINGLAB_RDZV_SECRET): whoever knows the id and reaches node
    // 0's c10d store can make every node run code. Fresh for every attempt; it reaches Ansible in its 0600 vars file.
    rdzv_secret: randomBytes(16).toString("hex"),
    nodes: request.nodes,
    job: request.job,
    args: request.workerArgs,
    collect_dir: request.collectDir,
    ...(processes === undefined ? {} : { procs_per_node: processes }),
    // Docker's --cpus takes two decimals; the product of two such numbers may carry float noise.
    ...(request.cpusPerNode === undefined
      ? {}
      : { cpus: Math.round(request.cpusPerNode * (processes ?? 1) * 100) / 100 }),
    ...(request.memoryPerNodeBytes === undefined ? {} : { memory_bytes: request.memoryPerNodeBytes }),
    ...(lostNode === undefined ? {} : { lost_node: lostNode }),
  };
}

function describeBatch(requests: readonly RunRequest[]): string {
  if (requests.length > 1)
    return `run ${requests.length} jobs in one playbook (${requests[0]!.runId} .. ${requests.at(-1)!.runId})`;
  const { runId, job, nodes, processesPerNode: processes } = requests[0]!;
  const onNodes = `${nodes} node${nodes === 1 ? "" : "s"}`;
  const placement =
    processes === undefined ? onNodes : `${onNodes} × ${processes} process${processes === 1 ? "" : "es"}`;
  return `run ${runId} (${job} on ${placement})`;
}

/** How one rank ended, as run.yml writes it in outcome.json. */
const RankOutcome = z.object({
  rank: z.coerce.number().int(),
  host: z.string(),
  ok: z.union([z.boolean(), z.enum(["True", "False"]).transform((text) => text === "True")]),
  outcome: z.string(),
  log: z.unknown(),
  result: z.string().optional(),
  result_error: z.string().optional(),
  result_file: z.string().optional(),
});
/** What every launcher writes; a launcher adds fields of its own (its readOutcome reads them). */
const JobOutcome = z.looseObject({ ranks: z.array(RankOutcome) });

/**
 * Turns a job's outcome.json into the run's files (worker-<rank>.log of every rank, the head's result.json) and its
 * outcome: ok when every rank exited 0 and the head's result reads as a worker result.
 */
export function readOutcome(request: RunRequest, since: Date): RunOutcome {
  const finish = (fields: Pick<RunOutcome, "status" | "result" | "error">) =>
    endedNow(request.collectDir, since, fields);
  const file = outcomeFile(request);
  let job: z.infer<typeof JobOutcome>;
  try {
    job = JobOutcome.parse(JSON.parse(readFileSync(file, "utf8")));
  } catch (error) {
    return finish({ status: "failed", error: `unreadable outcome ${file}: ${(error as Error).message}` });
  }
  const { ranks } = job;
  for (const rank of ranks) {
    const log = typeof rank.log === "string" ? rank.log : JSON.stringify(rank.log);
    writeFileAtomic(join(request.collectDir, `worker-${rank.rank}.log`), log.endsWith("\n") ? log : `${log}\n`);
  }
  // Each launcher keeps what it added (its job file, its own account of the job) beside the logs. Asked by what the
  // outcome holds, not by the request: the file says which launcher ran the job.
  const added = Object.values(LAUNCHERS).flatMap((launcher) => launcher.readOutcome?.(job, request.collectDir) ?? []);
  for (const [name, text] of added.flatMap((outcome) => Object.entries(outcome.files ?? {}))) {
    writeFileAtomic(join(request.collectDir, name), text);
  }
  const logs = `worker logs: ${request.collectDir}/worker-*.log`;
  const failed = ranks.filter((rank) => !rank.ok);
  const explained = added
    .map((outcome) => outcome.failure?.(failed.map((rank) => rank.host)))
    .find((text) => text !== undefined);
  if (explained !== undefined) return finish({ status: "failed", error: `${explained}; ${logs}` });
  if (failed.length > 0) {
    const what = failed.map(
      (rank) =>
        `${rank.host} failed: Worker rank ${rank.rank} on ${rank.host} ${rank.outcome}` +
        (rank.outcome === "exited with code 0"
          ? ` but wrote no result (${rank.result_file}: ${rank.result_error})`
          : ""),
    );
    return finish({ status: "failed", error: `${what.join("; ")}; ${logs}` });
  }
  const head = ranks.find((rank) => rank.rank === 0);
  if (head?.result === undefined || head.result === "") {
    return finish({
      status: "failed",
      error: `the workers exited cleanly but the head's result was not read; ${logs}`,
    });
  }
  const resultFile = join(request.collectDir, "result.json");
  const text = Buffer.from(head.result, "base64").toString("utf8");
  writeFileAtomic(resultFile, text);
  try {
    return finish({ status: "ok", result: parseWorkerResult(JSON.parse(text)) });
  } catch (error) {
    return finish({ status: "failed", error: `unreadable result ${resultFile}: ${(error as Error).message}` });
  }
}

function describeRunFailure(error: RinglabError, request: RunRequest): string {
  const logs = `worker logs: ${request.collectDir}/worker-*.log`;
  if (error instanceof ToolError && error.details.timedOut)
    return `ansible did not finish within the run's limit; ${logs}`;
  return `${error.message}; ${logs}`;
}

export interface RunOnceOptions {
  readonly nodes: number;
  readonly bandwidth: string;
  readonly job: Job;
  readonly workerArgs: readonly string[];
  readonly timeoutSeconds: number;
  readonly outDir: string;
  /** CPU cores each worker process may use (local testbed); no limit when absent. */
  readonly cpusPerNode?: number;
  /** Worker processes on each node; absent: one per GPU on GPU nodes, one on CPU nodes. */
  readonly processesPerNode?: number;
  /** The launcher that starts the job; absent: the default (Ansible). */
  readonly launcher?: RecordedLauncher;
}

/** `ringlab run`: shape, run, and a human summary of the result. */
export async function runOnce(
  ctx: Context,
  record: TestbedRecord,
  options: RunOnceOptions,
): Promise<RunOutcome & { summary: string }> {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "");
  const runId = `${options.job}-n${options.nodes}-${options.bandwidth}-${stamp}`;
  await shapeLinks(ctx, record, options.bandwidth);
  const outcome = await executeRun(ctx, record, {
    runId,
    nodes: options.nodes,
    job: options.job,
    workerArgs: options.workerArgs,
    timeoutSeconds: options.timeoutSeconds,
    collectDir: join(options.outDir, runId),
    ...(options.cpusPerNode === undefined ? {} : { cpusPerNode: options.cpusPerNode }),
    ...(options.processesPerNode === undefined ? {} : { processesPerNode: options.processesPerNode }),
    ...(options.launcher === undefined ? {} : { launcher: options.launcher }),
  });
  return { ...outcome, summary: summarize(outcome, options.bandwidth) };
}

export function summarize(outcome: RunOutcome, bandwidth: string): string {
  if (outcome.status !== "ok" || outcome.result === undefined) {
    return `run FAILED after ${outcome.wallSeconds.toFixed(1)} s: ${outcome.error}`;
  }
  const result = outcome.result;
  const placement = result.world.procsPerNode === 1 ? "" : ` × ${result.world.procsPerNode} processes`;
  const header = `${result.job} on ${result.world.nodes} nodes${placement} (${result.world.size} workers, ${result.world.backend}) at ${bandwidth}; files in ${outcome.collectDir}`;
  if (result.job === "train") {
    const { unit, total, perWorker } = throughputOf(result.metrics);
    return `${header}\n  total:      ${total.mean.toFixed(1)} ± ${total.ci95.toFixed(1)} ${rateUnit(unit)}\n  per worker: ${perWorker.mean.toFixed(1)} ± ${perWorker.ci95.toFixed(1)} ${rateUnit(unit)}`;
  }
  const link = bandwidthGbps(bandwidth);
  const rows = result.metrics.rows.map((row) => {
    const ofLink = link ? `${((100 * row.busbwGbps) / link).toFixed(0).padStart(4)} %` : "";
    return `  ${formatBytes(row.sizeBytes).padStart(9)}  ${(row.timeSeconds * 1e3).toFixed(2).padStart(10)} ms  ${row.algbwGbps.toFixed(3).padStart(8)}  ${row.busbwGbps.toFixed(3).padStart(8)}  ${ofLink}${row.wrong > 0 ? `  ${row.wrong} WRONG` : ""}`;
  });
  return [
    header,
    `       size        time     algbw    busbw  (Gbit/s${link ? ", busbw as % of link" : ""})`,
    ...rows,
  ].join("\n");
}

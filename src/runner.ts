/**
 * Runs benchmark jobs on a testbed: shape the links (ansible/shape.yml), run the workers on the first N nodes
 * and collect their logs and result (ansible/run.yml), read the result. Used by `ringlab run` and campaigns.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { bandwidthGbps } from "./bandwidth.ts";
import { uninterruptible, type Context } from "./context.ts";
import { runPlaybook } from "./testbed/playbook.ts";
import { RinglabError, ToolError } from "./errors.ts";
import { JOBS, type Job } from "./results/record.ts";
import { parseWorkerResult, type WorkerResult } from "./results/worker-result.ts";
import type { TestbedRecord } from "./testbed/record.ts";
import { formatBytes } from "./util/format.ts";

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
  /** CPU cores each worker process may use; its node's container gets this × processesPerNode (Docker's --cpus). No limit when absent. */
  readonly cpusPerNode?: number;
  /** Worker processes on each node (torchrun's nproc_per_node); absent: one per GPU on GPU nodes, one on CPU nodes. */
  readonly processesPerNode?: number;
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
export async function shapeLinks(ctx: Context, record: TestbedRecord, bandwidth: string, limit?: readonly string[]): Promise<void> {
  await ctx.reporter.step(`shape links to ${bandwidth}`, (detail) =>
    runPlaybook(ctx, record, "shape.yml", { extraVars: { net_shaping_rate: bandwidth }, onTask: detail, ...(limit === undefined ? {} : { limit }) }));
}

/** Removes every worker container of the testbed (idempotent). */
export async function stopWorkers(ctx: Context, record: TestbedRecord): Promise<void> {
  await ctx.reporter.step("stop workers", () => runPlaybook(ctx, record, "stop-workers.yml"));
}

/** Runs one job. A failed job is an outcome, not an exception: campaigns record it and go on. */
export async function executeRun(ctx: Context, record: TestbedRecord, request: RunRequest): Promise<RunOutcome> {
  const started = new Date();
  const finish = (fields: Pick<RunOutcome, "status" | "result" | "error">): RunOutcome => ({
    ...fields,
    startedAt: started.toISOString(),
    endedAt: new Date().toISOString(),
    wallSeconds: (Date.now() - started.getTime()) / 1000,
    collectDir: request.collectDir,
  });
  // run.yml leaves each rank's log here. Earlier attempts have folders of their own and are kept; this attempt's
  // folder exists only when an invocation was killed before recording it, and its leftovers must not pass as ours.
  if (existsSync(request.collectDir)) rmSync(request.collectDir, { recursive: true, force: true });
  const processes = request.processesPerNode;
  const nodes = `${request.nodes} node${request.nodes === 1 ? "" : "s"}`;
  const placement = processes === undefined ? nodes : `${nodes} × ${processes} process${processes === 1 ? "" : "es"}`;
  try {
    await ctx.reporter.step(`run ${request.runId} (${request.job} on ${placement})`, (detail) => runPlaybook(ctx, record, "run.yml", {
      extraVars: {
        worker_run_id: request.runId,
        worker_nodes: request.nodes,
        worker_job: request.job,
        worker_job_args: request.workerArgs,
        worker_timeout_seconds: request.timeoutSeconds,
        worker_collect_dir: request.collectDir,
        ...(processes === undefined ? {} : { worker_procs_per_node: processes }),
        // Docker's --cpus takes two decimals; the product of two such numbers may carry float noise.
        ...(request.cpusPerNode === undefined ? {} : { worker_cpus: Math.round(request.cpusPerNode * (processes ?? 1) * 100) / 100 }),
        // The inventory is the CLI's own and site.yml checked it; run.yml runs once per run, so skip the checks.
        preflight_check_inventory: false,
      },
      // Ansible's own work (start, poll, collect) on top of the job's limit.
      timeoutMs: (request.timeoutSeconds + 180) * 1000,
      onTask: detail,
      ...(request.limit === undefined ? {} : { limit: request.limit }),
    }));
  } catch (error) {
    // Ranks still up would wait for a failed one until their own timeout, and an interrupted run's workers
    // would run on: stop them either way.
    await stopWorkers(uninterruptible(ctx), record).catch(() => {});
    if (ctx.signal.aborted || !(error instanceof RinglabError)) throw error;
    return finish({ status: "failed", error: describeRunFailure(error, request) });
  }
  const resultFile = join(request.collectDir, "result.json");
  if (!existsSync(resultFile)) {
    return finish({ status: "failed", error: `the workers exited cleanly but wrote no result (${resultFile}); see worker-*.log in ${request.collectDir}` });
  }
  try {
    return finish({ status: "ok", result: parseWorkerResult(JSON.parse(readFileSync(resultFile, "utf8"))) });
  } catch (error) {
    return finish({ status: "failed", error: `unreadable result ${resultFile}: ${(error as Error).message}` });
  }
}

function describeRunFailure(error: RinglabError, request: RunRequest): string {
  const logs = `worker logs: ${request.collectDir}/worker-*.log`;
  if (error instanceof ToolError && error.details.timedOut) return `ansible did not finish within the run's limit; ${logs}`;
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
}

/** `ringlab run`: shape, run, and a human summary of the result. */
export async function runOnce(ctx: Context, record: TestbedRecord, options: RunOnceOptions): Promise<RunOutcome & { summary: string }> {
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
    const total = result.metrics.imagesPerSecondTotal;
    const perWorker = result.metrics.imagesPerSecondPerWorker;
    return `${header}\n  total:      ${total.mean.toFixed(1)} ± ${total.ci95.toFixed(1)} img/s\n  per worker: ${perWorker.mean.toFixed(1)} ± ${perWorker.ci95.toFixed(1)} img/s`;
  }
  const link = bandwidthGbps(bandwidth);
  const rows = result.metrics.rows.map((row) => {
    const ofLink = link ? `${((100 * row.busbwGbps) / link).toFixed(0).padStart(4)} %` : "";
    return `  ${formatBytes(row.sizeBytes).padStart(9)}  ${(row.timeSeconds * 1e3).toFixed(2).padStart(10)} ms  ${row.algbwGbps.toFixed(3).padStart(8)}  ${row.busbwGbps.toFixed(3).padStart(8)}  ${ofLink}${row.wrong > 0 ? `  ${row.wrong} WRONG` : ""}`;
  });
  return [header, `       size        time     algbw    busbw  (Gbit/s${link ? ", busbw as % of link" : ""})`, ...rows].join("\n");
}

/**
 * What a launcher is: how one resolved job (a RunRequest of src/runner/runner.ts) is started on a testbed's nodes.
 * Every launcher runs its jobs through ansible/run.yml, which includes the launcher's role:
 * - roles/<role>/tasks/job.yml runs one job and writes its outcome.json (every rank's log, the head's result, and
 *   what the launcher adds, such as its job script);
 * - roles/<role>/tasks/cancel.yml, for a launcher with a queue of its own, cancels its queued jobs before
 *   ansible/stop-workers.yml removes the worker containers (stop-workers.yml includes each);
 * - a launcher that needs more than every testbed has (`setup`) gets roles/<role>/tasks/main.yml from site.yml
 *   when the testbed is configured for it; the testbed record lists the launchers it is configured for.
 * The table of launchers is ./index.ts; adding one is a module here, its role, and its tests.
 */
import type { Context } from "../context/context.ts";
import type { TestbedRecord } from "../testbed/record.ts";
import type { LauncherName } from "./names.ts";

/**
 * Why a job cannot start with a launcher, worded for `ringlab run` (the campaign schema words its own check:
 * src/config/schema.ts).
 */
export interface Refusal {
  readonly message: string;
  readonly hint: string;
}

export interface Launcher {
  readonly name: LauncherName;
  /** How it starts a job, for `--help`. */
  readonly summary: string;
  /**
   * The Ansible role holding its tasks/job.yml (and tasks/main.yml when it has a `setup`, tasks/cancel.yml when it
   * queues jobs).
   */
  readonly role: string;
  /** What configuring a testbed for it adds; absent: every configured testbed serves it. */
  readonly setup?: {
    /** Its option of `ringlab configure` (`--<option>`). */
    readonly option: string;
    readonly description: string;
    /** What the testbed becomes, e.g. "a Slurm cluster" ("configure 3 nodes as a Slurm cluster"). */
    readonly makes: string;
  };
  /** The worker arguments it cannot run (one sentence and a hint), if any. */
  refuses?(workerArgs: readonly string[]): Refusal | undefined;
  /** Said after the testbed's name in the report ("runs as Slurm jobs"); absent for the default. */
  readonly reportNote?: string;
  /**
   * What it adds to a job's outcome.json, read after every rank's log is written: it saves its job file (the
   * re-runnable command) beside the logs, and may explain a failure better than the ranks' exit codes do.
   * Undefined when outcome.json holds nothing of it.
   */
  readOutcome?(outcome: Readonly<Record<string, unknown>>, collectDir: string): LauncherOutcome | undefined;
  /** What `ringlab status` shows of it on a testbed configured for it. */
  status?(ctx: Context, record: TestbedRecord): Promise<string>;
}

export interface LauncherOutcome {
  /** Why the job failed, when the launcher knows (given the hosts of the ranks that failed); undefined: it does not. */
  readonly failure?: (failedHosts: readonly string[]) => string | undefined;
  /**
   * Files to keep in the run's folder, name -> text: the runner writes them (without following a link planted there).
   */
  readonly files?: Readonly<Record<string, string>>;
}

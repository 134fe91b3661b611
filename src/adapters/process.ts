/**
 * Runs one external program for an adapter (docker.ts, ansible.ts, terraform.ts, ssh.ts): the only module that
 * imports execa. Every line the program prints goes to the log file and to `onLine`; a short tail is kept for
 * error messages. A missing program and a failure become named errors; callers branch on their fields.
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { PrerequisiteError, ToolError } from "../util/errors.ts";
import { programPath, trustedPathVariable } from "./tool-path.ts";

export interface RunOptions {
  readonly cwd?: string;
  /** Added to this process's environment. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Every output line is appended here, with the command as a header. */
  readonly logFile?: string | undefined;
  readonly onLine?: ((line: string) => void) | undefined;
  readonly timeoutMs?: number;
  /** Aborting it terminates the program and everything it started (SIGTERM to its process group, SIGKILL after 5 s). */
  readonly signal?: AbortSignal | undefined;
  /** How to install the program, for the "not installed" message. */
  readonly installHint?: string;
  /** Return failures instead of throwing (the caller explains them better). */
  readonly allowFailure?: boolean;
}

export interface RunResult {
  readonly exitCode: number;
  /** stdout and stderr as they interleaved. */
  readonly output: string;
  /** stdout alone: what a program prints as data (`terraform output -json`). */
  readonly stdout: string;
  readonly timedOut: boolean;
  readonly canceled: boolean;
  readonly durationMs: number;
}

const TAIL_LINES = 40;
/** How long a stopped program's process group gets between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 5_000;

export async function runProgram(
  tool: string,
  file: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<RunResult> {
  const command = [file, ...args].join(" ");
  const program = programPath(file);
  if (program.path === undefined) throw notInstalled(tool, file, program.passedOver, options.installHint);
  const started = Date.now();
  if (options.logFile !== undefined) {
    mkdirSync(dirname(options.logFile), { recursive: true });
    appendFileSync(options.logFile, `\n$ ${command}\n`, { mode: 0o600 });
  }
  // Loaded on the first program run, not with the command line (a few hundred modules that `plan`, `predict` and
  // `report` never need).
  const { execa } = await import("execa");
  // Its own process group (and session), so that stopping it reaches everything it started: ansible-playbook's
  // forks and their ssh, terraform's providers. A terminal's Ctrl-C reaches ringlab only, which stops the group.
  const child = execa(program.path, args, {
    cwd: options.cwd,
    // What the program starts in turn (ansible-playbook's ssh, a script's docker) is looked up on the trusted PATH.
    env: { ...options.env, PATH: trustedPathVariable(options.env?.["PATH"] ?? process.env["PATH"]) },
    all: true,
    reject: false,
    stdin: "ignore",
    detached: true,
    forceKillAfterDelay: false,
  });
  const stopper = child.pid === undefined ? undefined : new GroupStopper(child.pid, options);
  let result: Awaited<typeof child>;
  try {
    for await (const line of child.iterable({ from: "all" })) {
      if (options.logFile !== undefined) appendFileSync(options.logFile, `${line}\n`);
      options.onLine?.(line);
    }
    result = await child;
  } finally {
    stopper?.finished();
  }
  const outcome: RunResult = {
    exitCode: result.exitCode ?? -1,
    output: typeof result.all === "string" ? result.all : "",
    stdout: typeof result.stdout === "string" ? result.stdout : "",
    timedOut: stopper?.reason === "timedOut",
    canceled: stopper?.reason === "canceled",
    durationMs: Date.now() - started,
  };
  if ((result as { code?: string }).code === "ENOENT") throw notInstalled(tool, file, [], options.installHint);
  if ((result.failed || stopper?.reason !== undefined) && !options.allowFailure) {
    throw failure(tool, command, outcome, options.logFile);
  }
  return outcome;
}

function notInstalled(
  tool: string,
  file: string,
  passedOver: readonly { entry: string; why: string }[],
  installHint: string | undefined,
): PrerequisiteError {
  const notTaken = passedOver.map(({ entry, why }) => `${entry} (${why})`).join("; ");
  return new PrerequisiteError(
    `${file} is not installed (needed for ${tool})${notTaken === "" ? "" : `; not taken from: ${notTaken}`}`,
    { hint: installHint ?? "run `npm run setup` to install what ringlab needs" },
  );
}

/** Process groups whose program still runs, or that are being stopped: killed if ringlab exits first. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function killLiveGroupsOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers cannot wait, so there is no grace period here.
  process.on("exit", () => {
    for (const group of liveGroups) signalGroup(group, "SIGKILL");
  });
}

/** Sends a signal to every process of a group; false when the group has no process left. */
function signalGroup(group: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-group, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw error;
  }
}

/**
 * Stops a program's process group when the run is aborted or times out: SIGTERM to the whole group, then
 * SIGKILL to whatever is left of it after KILL_GRACE_MS, even if the program itself has already exited.
 */
class GroupStopper {
  reason: "canceled" | "timedOut" | undefined;
  private readonly signal: AbortSignal | undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.stop("canceled");

  constructor(
    private readonly group: number,
    options: Pick<RunOptions, "signal" | "timeoutMs">,
  ) {
    liveGroups.add(group);
    killLiveGroupsOnExit();
    this.signal = options.signal;
    if (options.timeoutMs !== undefined) this.timer = setTimeout(() => this.stop("timedOut"), options.timeoutMs);
    if (this.signal?.aborted) this.stop("canceled");
    else this.signal?.addEventListener("abort", this.onAbort, { once: true });
  }

  /** The program has exited and its output is read; a group being stopped is still followed to its end. */
  finished(): void {
    clearTimeout(this.timer);
    this.signal?.removeEventListener("abort", this.onAbort);
    if (this.reason === undefined) liveGroups.delete(this.group);
  }

  private stop(reason: "canceled" | "timedOut"): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    clearTimeout(this.timer);
    if (!signalGroup(this.group, "SIGTERM")) {
      this.forget();
      return;
    }
    const deadline = Date.now() + KILL_GRACE_MS;
    const poll = setInterval(() => {
      if (Date.now() >= deadline) signalGroup(this.group, "SIGKILL");
      else if (signalGroup(this.group, 0)) return;
      clearInterval(poll);
      this.forget();
    }, 100);
    // Need not keep ringlab alive: the exit hook kills what is left.
    poll.unref();
  }

  private forget(): void {
    liveGroups.delete(this.group);
  }
}

/** A ToolError describing a failed run: how it ended and the last lines it printed. */
export function failure(
  tool: string,
  command: string,
  result: RunResult,
  logFile?: string,
  summary?: string,
): ToolError {
  const how = result.canceled
    ? "was interrupted"
    : result.timedOut
      ? `timed out after ${(result.durationMs / 1000).toFixed(0)} s`
      : `exited with code ${result.exitCode}`;
  return new ToolError(tool, summary ?? `${command} ${how}`, {
    command,
    toolExitCode: result.exitCode,
    timedOut: result.timedOut,
    outputTail: lastLines(result.output, TAIL_LINES),
    logFile,
  });
}

export function lastLines(text: string, count: number): string {
  return text.split("\n").slice(-count).join("\n");
}

/**
 * Runs one external program for an adapter (docker.ts, ansible.ts, cdktf.ts, ssh.ts): the only module that
 * imports execa. Every line the program prints goes to the log file and to `onLine`; a short tail is kept for
 * error messages. A missing program and a failure become named errors; callers branch on their fields.
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { execa } from "execa";
import { PrerequisiteError, ToolError } from "../errors.ts";

export interface RunOptions {
  readonly cwd?: string;
  /** Added to this process's environment. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Every output line is appended here, with the command as a header. */
  readonly logFile?: string | undefined;
  readonly onLine?: ((line: string) => void) | undefined;
  readonly timeoutMs?: number;
  /** Aborting it terminates the program (SIGTERM, then SIGKILL after 5 s). */
  readonly signal?: AbortSignal | undefined;
  /** How to install the program, for the "not installed" message. */
  readonly installHint?: string;
  /** Return failures instead of throwing (the caller explains them better). */
  readonly allowFailure?: boolean;
}

export interface RunResult {
  readonly exitCode: number;
  readonly output: string;
  readonly timedOut: boolean;
  readonly canceled: boolean;
  readonly durationMs: number;
}

const TAIL_LINES = 40;

export async function runProgram(tool: string, file: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const command = [file, ...args].join(" ");
  const started = Date.now();
  if (options.logFile !== undefined) {
    mkdirSync(dirname(options.logFile), { recursive: true });
    appendFileSync(options.logFile, `\n$ ${command}\n`);
  }
  const child = execa(file, args, {
    cwd: options.cwd,
    env: options.env,
    all: true,
    reject: false,
    stdin: "ignore",
    ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
    ...(options.signal === undefined ? {} : { cancelSignal: options.signal }),
    forceKillAfterDelay: 5_000,
  });
  for await (const line of child.iterable({ from: "all" })) {
    if (options.logFile !== undefined) appendFileSync(options.logFile, `${line}\n`);
    options.onLine?.(line);
  }
  const result = await child;
  const output = typeof result.all === "string" ? result.all : "";
  const outcome: RunResult = {
    exitCode: result.exitCode ?? -1,
    output,
    timedOut: result.timedOut,
    canceled: result.isCanceled,
    durationMs: Date.now() - started,
  };
  if ((result as { code?: string }).code === "ENOENT") {
    throw new PrerequisiteError(`${file} is not installed (needed for ${tool})`, {
      hint: options.installHint ?? "run `npm run setup` to install what ringlab needs",
    });
  }
  if (result.failed && !options.allowFailure) {
    throw failure(tool, command, outcome, options.logFile);
  }
  return outcome;
}

/** A ToolError describing a failed run: how it ended and the last lines it printed. */
export function failure(tool: string, command: string, result: RunResult, logFile?: string, summary?: string): ToolError {
  const how = result.canceled ? "was interrupted"
    : result.timedOut ? `timed out after ${(result.durationMs / 1000).toFixed(0)} s`
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

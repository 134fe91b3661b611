/**
 * The CLI entry: handles signals, makes each command's context, runs the program (program.ts), and is the only
 * place that turns errors into messages and exit codes.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CommanderError, type Command } from "commander";
import type { Context } from "../context/context.ts";
import { EXIT, RinglabError, ToolError, UsageError } from "../util/errors.ts";
import { ConsoleReporter } from "../context/reporter.ts";
import { modeText } from "../rules/ownership.ts";
import { checkSafeResolvedPath } from "../rules/safe-text.ts";
import { logsDir } from "../testbed/paths.ts";
import { prepareStateFolder, PRIVATE_FOLDER_MODE } from "../util/fs.ts";
import { trustedPathVariable } from "../adapters/tool-path.ts";
import { buildProgram } from "./program.ts";
import { err } from "../util/output.ts";

const REPO_DIR = fileURLToPath(new URL("../..", import.meta.url));

interface GlobalOptions {
  readonly stateDir: string;
  readonly verbose: boolean;
}

export async function main(argv: readonly string[]): Promise<number> {
  // What a library starts by name (an AWS credential_process, a kubeconfig's exec plugin) searches this PATH too.
  process.env["PATH"] = trustedPathVariable();
  const interruption = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (interruption.signal.aborted) {
      err(
        `\n${signal} again: exiting now; run \`ringlab down <testbed name or campaign file>\` to remove what is left\n`,
      );
      process.exit(EXIT.interrupted);
    }
    err(`\n${signal}: stopping; cleaning up (press Ctrl-C again to exit at once)\n`);
    interruption.abort(signal);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  let logFile: string | undefined;
  const contextFor = (command: Command, verb: string): Context => {
    const global = command.optsWithGlobals() as GlobalOptions;
    const stateDir = resolve(global.stateDir);
    const reporter = new ConsoleReporter(global.verbose);
    prepareState(stateDir, reporter);
    mkdirSync(logsDir(stateDir), { recursive: true, mode: PRIVATE_FOLDER_MODE });
    logFile = join(logsDir(stateDir), `${new Date().toISOString().replace(/[:.]/g, "-")}-${verb}.log`);
    return { repoDir: REPO_DIR, stateDir, reporter, logFile, signal: interruption.signal };
  };

  const program = buildProgram(contextFor);
  try {
    await program.command.parseAsync(argv);
    return interruption.signal.aborted ? EXIT.interrupted : (program.exitCode() ?? EXIT.ok);
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.badInput;
    if (interruption.signal.aborted) {
      err("interrupted\n");
      return EXIT.interrupted;
    }
    return reportError(error, logFile);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/**
 * Checks the state folder as it will be used (resolved: the working directory and RINGLAB_STATE_DIR count) and makes
 * it its user's alone: its path reaches ssh's options (known_hosts), and it holds the testbeds' keys, records and logs.
 * One that others can write is refused; one they could only read is tightened to 0700.
 */
function prepareState(stateDir: string, reporter: ConsoleReporter): void {
  const pathProblem = checkSafeResolvedPath(stateDir, { sshOption: true });
  if (pathProblem !== undefined) {
    throw new UsageError(
      `state folder ${JSON.stringify(stateDir)} (--state-dir, RINGLAB_STATE_DIR or the working directory): ${pathProblem}`,
      {
        hint: "pass --state-dir with a plain path, such as ~/.ringlab-state",
      },
    );
  }
  const outcome = prepareStateFolder(stateDir);
  if (outcome.problem !== undefined) {
    throw new UsageError(`state folder: ${outcome.problem}`, {
      hint: "it holds the testbeds' keys and records: check what others may have left in it, or pass --state-dir with a folder of your own",
    });
  }
  if (outcome.tightenedFrom !== undefined) {
    reporter.warn(
      `state folder ${stateDir} had mode ${modeText(outcome.tightenedFrom)}; made it 0700 (its testbeds' keys, records and logs are yours alone)`,
    );
  }
}

function reportError(error: unknown, logFile: string | undefined): number {
  if (error instanceof RinglabError) {
    err(`error: ${error.message}\n`);
    if (error instanceof ToolError && error.details.outputTail) {
      err(
        `${error.details.outputTail
          .split("\n")
          .slice(-15)
          .map((line) => `  | ${line}`)
          .join("\n")}\n`,
      );
    }
    if (error.hint !== undefined) err(`hint: ${error.hint}\n`);
    if (logFile !== undefined && existsSync(logFile)) err(`full log: ${logFile}\n`);
    return error.exitCode;
  }
  err(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  if (logFile !== undefined && existsSync(logFile)) err(`full log: ${logFile}\n`);
  return EXIT.unexpected;
}

/**
 * A reader that goes away (`ringlab plan x | head -1`) is not an error. Output is dropped from then on, but the
 * command still finishes: exiting at once could leave a half-built testbed behind mid-campaign.
 */
export function ignoreClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") throw error;
    });
  }
}

/**
 * The few named errors ringlab raises. Each carries the exit code the CLI turns it into; only the CLI entry
 * prints errors and exits. Callers branch on the class and its fields, never on message text.
 */

/** Exit codes, stable for scripts that call ringlab. */
export const EXIT = {
  ok: 0,
  unexpected: 1,
  /** The campaign file, the command line or saved state is wrong: nothing was started. */
  badInput: 2,
  /** Something ringlab needs is missing on this machine (Docker, Ansible, images): nothing was started. */
  missingPrerequisite: 3,
  /** An external tool (docker, ansible-playbook, terraform) failed. */
  toolFailed: 4,
  /** The campaign finished but some runs failed; their records say why. */
  runsFailed: 5,
  /** Interrupted by Ctrl-C or SIGTERM (after teardown). */
  interrupted: 130,
} as const;

export abstract class RinglabError extends Error {
  abstract readonly exitCode: number;
  /** One line telling the user what to do about it. */
  readonly hint: string | undefined;

  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.hint = options.hint;
  }
}

export interface ConfigProblemAt {
  readonly path: string;
  readonly message: string;
}

/** A campaign file (or CLI input) that cannot be used. Lists every problem, each with its field path. */
export class ConfigError extends RinglabError {
  readonly exitCode = EXIT.badInput;

  constructor(
    readonly file: string,
    readonly problems: readonly ConfigProblemAt[],
  ) {
    super(problems.map((p) => `${file}: ${p.path ? `${p.path}: ` : ""}${p.message}`).join("\n"));
  }
}

/** Wrong command-line usage or saved state that does not fit the request. */
export class UsageError extends RinglabError {
  readonly exitCode = EXIT.badInput;
}

/** A broken invariant of ringlab itself (a bug), stopped before it could do harm: never the user's fault. */
export class InternalError extends RinglabError {
  readonly exitCode = EXIT.unexpected;
}

/** Something needed on this machine is missing or not running. */
export class PrerequisiteError extends RinglabError {
  readonly exitCode = EXIT.missingPrerequisite;
}

/** An external tool failed. Keeps what is needed to explain it: the command, exit code, output tail. */
export class ToolError extends RinglabError {
  readonly exitCode = EXIT.toolFailed;

  constructor(
    readonly tool: string,
    message: string,
    readonly details: {
      readonly command?: string;
      readonly toolExitCode?: number | undefined;
      readonly timedOut?: boolean;
      readonly outputTail?: string;
      readonly logFile?: string | undefined;
      readonly hint?: string;
      readonly cause?: unknown;
    } = {},
  ) {
    super(message, { hint: details.hint, cause: details.cause });
  }
}

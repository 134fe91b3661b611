/**
 * The only module that runs Terraform (or OpenTofu): init, apply from a saved plan, outputs, destroy, each in one
 * stack's folder (`<cdktf.out>/stacks/<stack>`, synthesized by stacks/synth.ts). ringlab runs Terraform itself
 * rather than through the cdktf CLI, which HashiCorp deprecated in December 2025: the synthesized `cdk.tf.json`
 * is plain Terraform JSON, and `cdktf deploy` from the README still works on the same folder.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { PrerequisiteError, ToolError } from "../util/errors.ts";
import { runProgram, type RunOptions } from "./process.ts";

export interface TerraformOptions {
  /** terraform or tofu. @default $TERRAFORM_BINARY_NAME (the variable cdktf reads too), else "terraform" */
  readonly binary?: string;
  readonly logFile?: string | undefined;
  readonly onLine?: ((line: string) => void) | undefined;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Terraform waits this long for the state lock instead of failing at once: a deploy left running by a controller
 * that was killed still holds it, and `down` should destroy after it, not fail beside it.
 */
const STATE_LOCK_TIMEOUT = "-lock-timeout=300s";
/** The saved plan that `apply` carries out: what was planned is exactly what is applied. */
const PLAN_FILE = "ringlab.tfplan";
const INSTALL_HINT =
  "install Terraform (https://developer.hashicorp.com/terraform/install) or OpenTofu and set TERRAFORM_BINARY_NAME=tofu";

/** The binary a run uses: the testbed's own setting, else the environment's, else terraform. */
export function terraformBinaryFor(setting: string | null | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env["TERRAFORM_BINARY_NAME"];
  return setting ?? (fromEnv === undefined || fromEnv === "" ? "terraform" : fromEnv);
}

export class Terraform {
  readonly binary: string;

  constructor(private readonly options: TerraformOptions = {}) {
    this.binary = options.binary ?? terraformBinaryFor(undefined);
  }

  /** Says before anything starts that terraform (or tofu) is missing or broken, and how to get it. */
  async assertInstalled(): Promise<void> {
    const result = await runProgram("terraform", this.binary, ["version"], {
      allowFailure: true,
      installHint: INSTALL_HINT,
      timeoutMs: 30_000,
    });
    if (result.exitCode !== 0) {
      throw new PrerequisiteError(`${this.binary} is installed but \`${this.binary} version\` failed`, {
        hint: INSTALL_HINT,
      });
    }
  }

  /** Installs the providers and sets up the backend; quick when they are there already. */
  async init(dir: string): Promise<void> {
    await this.run(dir, ["init", "-input=false", "-no-color"]);
  }

  /** Plans into a file, then applies exactly that plan; the file (it holds the values the state holds) goes after. */
  async apply(dir: string): Promise<void> {
    try {
      await this.run(dir, ["plan", "-input=false", "-no-color", STATE_LOCK_TIMEOUT, `-out=${PLAN_FILE}`]);
      await this.run(dir, ["apply", "-input=false", "-no-color", STATE_LOCK_TIMEOUT, PLAN_FILE]);
    } finally {
      rmSync(join(dir, PLAN_FILE), { force: true });
    }
  }

  /**
   * The stack's outputs as `cdktf output --outputs-file` writes them, `{ "<stack>": { "<name>": value } }`, so
   * `ringlab inventory --outputs` reads either.
   */
  async outputs(dir: string, stack: string): Promise<Record<string, Record<string, unknown>>> {
    // Not echoed: an output the stack marks sensitive must not reach the log or the terminal.
    const result = await runProgram("terraform", this.binary, ["output", "-json", "-no-color"], {
      ...this.runOptions(dir),
      onLine: undefined,
      logFile: undefined,
    });
    let parsed: Record<string, { value: unknown }>;
    try {
      parsed = JSON.parse(result.stdout) as Record<string, { value: unknown }>;
    } catch (error) {
      throw new ToolError(
        "terraform",
        `\`${this.binary} output -json\` in ${dir} printed no JSON: ${(error as Error).message}`,
        { cause: error },
      );
    }
    return { [stack]: Object.fromEntries(Object.entries(parsed).map(([name, output]) => [name, output.value])) };
  }

  async destroy(dir: string): Promise<void> {
    await this.run(dir, ["destroy", "-input=false", "-no-color", STATE_LOCK_TIMEOUT, "-auto-approve"]);
  }

  private async run(dir: string, args: readonly string[]): Promise<void> {
    await runProgram("terraform", this.binary, args, this.runOptions(dir));
  }

  private runOptions(dir: string): RunOptions {
    return {
      cwd: dir,
      // TF_IN_AUTOMATION: no "run terraform apply next" advice in ringlab's output; no update check either.
      env: { TF_IN_AUTOMATION: "1", TF_INPUT: "0", CHECKPOINT_DISABLE: "1" },
      logFile: this.options.logFile,
      onLine: this.options.onLine,
      signal: this.options.signal,
      installHint: INSTALL_HINT,
    };
  }
}

/**
 * The only module that runs the cdktf CLI (which runs terraform or OpenTofu): synth, deploy, read outputs,
 * destroy. The cdktf app (stacks/main.ts) synthesizes from the testbed spec file named by RINGLAB_SPEC and
 * reads nothing else. Each testbed synthesizes into its own output folder, so two testbeds never share one.
 */
import { readFileSync } from "node:fs";
import { PrerequisiteError } from "../errors.ts";
import { runProgram, type RunOptions } from "./process.ts";

export interface CdktfOptions {
  /** The repository root, where cdktf.json is. */
  readonly projectDir: string;
  /** How to start the cdktf CLI. @default ["npx", "cdktf"] */
  readonly command?: readonly string[];
  /** terraform, or tofu; cdktf reads the same TERRAFORM_BINARY_NAME. @default $TERRAFORM_BINARY_NAME or "terraform" */
  readonly terraformBinary?: string;
  readonly logFile?: string | undefined;
  readonly onLine?: ((line: string) => void) | undefined;
  readonly signal?: AbortSignal | undefined;
}

/** One testbed's stack: its name, the spec it is synthesized from, and where the synthesized files go. */
export interface StackFiles {
  readonly stack: string;
  /** The testbed spec (src/testbed/spec.ts). */
  readonly specFile: string;
  /** cdktf's output folder (cdktf.out) for this testbed. */
  readonly outDir: string;
}

/**
 * Terraform waits this long for the state lock instead of failing at once: a deploy left running by a controller
 * that was killed still holds it, and `down` should destroy after it, not fail beside it.
 */
const STATE_LOCK_TIMEOUT = "-lock-timeout=300s";

function lockTimeoutArgs(): Record<string, string> {
  const args: Record<string, string> = {};
  for (const command of ["plan", "apply", "destroy"]) {
    const key = `TF_CLI_ARGS_${command}`;
    args[key] = [process.env[key], STATE_LOCK_TIMEOUT].filter((part) => part !== undefined && part !== "").join(" ");
  }
  return args;
}

export class Cdktf {
  private readonly command: readonly string[];
  private readonly terraformBinary: string;

  constructor(private readonly options: CdktfOptions) {
    this.command = options.command ?? ["npx", "cdktf"];
    this.terraformBinary = options.terraformBinary ?? process.env["TERRAFORM_BINARY_NAME"] ?? "terraform";
  }

  /** cdktf deploy/destroy need terraform (or OpenTofu): say so before anything starts. */
  async assertTerraform(): Promise<void> {
    const hint = "install Terraform (https://developer.hashicorp.com/terraform/install) or OpenTofu and set TERRAFORM_BINARY_NAME=tofu";
    const result = await runProgram("terraform", this.terraformBinary, ["version"], { allowFailure: true, installHint: hint, timeoutMs: 30_000 });
    if (result.exitCode !== 0) {
      throw new PrerequisiteError(`${this.terraformBinary} is installed but \`${this.terraformBinary} version\` failed`, { hint });
    }
  }

  /** Writes the stack's Terraform JSON to `<outDir>/stacks/<stack>/cdk.tf.json`; needs no terraform. */
  async synth(files: StackFiles): Promise<void> {
    await this.cdktf(["synth", "--output", files.outDir], files.specFile);
  }

  /**
   * Deploys the stack and writes its outputs (JSON) to `outputsFile`. --skip-provider-lock (here and in destroy):
   * cdktf would otherwise run `terraform providers lock`, which asks the registry for checksums only HCP
   * Terraform's remote runs need (`init` records the installed provider's), so even a provider from a local
   * mirror would need the registry.
   */
  async deploy(files: StackFiles, outputsFile: string): Promise<unknown> {
    await this.cdktf(["deploy", files.stack, "--output", files.outDir, "--auto-approve", "--skip-provider-lock",
      "--outputs-file", outputsFile, "--outputs-file-include-sensitive-outputs"], files.specFile);
    return JSON.parse(readFileSync(outputsFile, "utf8"));
  }

  async destroy(files: StackFiles): Promise<void> {
    await this.cdktf(["destroy", files.stack, "--output", files.outDir, "--auto-approve", "--skip-provider-lock"], files.specFile);
  }

  private async cdktf(args: readonly string[], specFile: string): Promise<void> {
    const [file, ...prefix] = this.command;
    const options: RunOptions = {
      cwd: this.options.projectDir,
      env: { RINGLAB_SPEC: specFile, CHECKPOINT_DISABLE: "1", TERRAFORM_BINARY_NAME: this.terraformBinary, CI: "1", ...lockTimeoutArgs() },
      logFile: this.options.logFile,
      onLine: this.options.onLine,
      signal: this.options.signal,
    };
    await runProgram("cdktf", file!, [...prefix, ...args], options);
  }
}

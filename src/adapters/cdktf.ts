/**
 * The only module that runs the cdktf CLI (which runs terraform or OpenTofu). Deploy, read outputs, destroy.
 * Terraform is not installed on the machines ringlab is developed on: tests replace `command` with a double.
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
  /** The testbed's creation time (ISO-8601): stacks/main.ts derives the ringlab:expires-at tag from it. */
  readonly createdAt?: string;
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

  /** Deploys the stack described by the campaign file and writes its outputs (JSON) to `outputsFile`. */
  async deploy(stack: string, campaignFile: string, outputsFile: string): Promise<unknown> {
    await this.cdktf(["deploy", stack, "--auto-approve", "--outputs-file", outputsFile, "--outputs-file-include-sensitive-outputs"], campaignFile);
    return readOutputs(outputsFile);
  }

  async destroy(stack: string, campaignFile: string): Promise<void> {
    await this.cdktf(["destroy", stack, "--auto-approve"], campaignFile);
  }

  private async cdktf(args: readonly string[], campaignFile: string): Promise<void> {
    const [file, ...prefix] = this.command;
    const options: RunOptions = {
      cwd: this.options.projectDir,
      env: {
        RINGLAB_CONFIG: campaignFile,
        CHECKPOINT_DISABLE: "1",
        TERRAFORM_BINARY_NAME: this.terraformBinary,
        CI: "1",
        ...(this.options.createdAt === undefined ? {} : { RINGLAB_CREATED_AT: this.options.createdAt }),
      },
      logFile: this.options.logFile,
      onLine: this.options.onLine,
      signal: this.options.signal,
    };
    await runProgram("cdktf", file!, [...prefix, ...args], options);
  }
}

function readOutputs(outputsFile: string): unknown {
  return JSON.parse(readFileSync(outputsFile, "utf8"));
}

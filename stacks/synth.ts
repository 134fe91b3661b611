/**
 * Synthesizes one testbed's stack from its stored spec into `<outDir>/stacks/ringlab-<name>/cdk.tf.json`: the
 * folder layout `cdktf synth --output <outDir>` gives, so ringlab's own Terraform run and a user's `cdktf deploy`
 * work on the same files. Used in-process by `ringlab up/down/synth` and by the cdktf app (main.ts).
 */
import { chmodSync } from "node:fs";
import { join } from "node:path";
import util from "node:util";
import { App } from "cdktf";
import { testAwsEndpoint } from "../src/targets/aws/clients.ts";
import { UsageError } from "../src/util/errors.ts";
import { stackName } from "../src/rules/names.ts";
import type { NodeHostKey } from "../src/rules/ssh-key.ts";
import { PRIVATE_FILE_MODE } from "../src/util/fs.ts";
import type { AwsTestbedSpec } from "../src/testbed/spec.ts";
import { stackPropsFromSpec } from "./from-spec.ts";
import { TestbedStack } from "./testbed-stack.ts";

// cdktf 0.21 (deprecated upstream: no more releases) calls util.isArray, which Node.js 22 deprecates at run time
// (DEP0044, printed between ringlab's lines). The same function, without the warning.
(util as { isArray: (value: unknown) => value is unknown[] }).isArray = Array.isArray;

export interface SynthesizedStack {
  readonly stack: string;
  /** The stack's folder: where Terraform runs. */
  readonly dir: string;
  /** Its Terraform JSON. */
  readonly file: string;
}

/**
 * `outDir` is absolute; the App creates it. Without it the App takes cdktf's own choice (CDKTF_OUTDIR, set by the
 * cdktf CLI). `hostKeys`: the nodes' SSH host keys (src/testbed/host-keys.ts), which go into their user data; the
 * Terraform JSON then holds private keys and is made its user's alone (0600). Throws a UsageError for a spec the
 * test endpoint override cannot serve.
 */
export function synthesizeStack(
  spec: AwsTestbedSpec,
  outDir?: string,
  hostKeys?: readonly NodeHostKey[],
): SynthesizedStack {
  // Tests only; refused (exit 2) unless it is a loopback URL.
  const endpoint = testAwsEndpoint();
  if (endpoint !== undefined && spec.state.backend !== "local") {
    throw new UsageError(
      `testbed ${spec.name}: RINGLAB_TEST_AWS_ENDPOINT works with the local state backend only; this spec keeps its state in S3`,
    );
  }
  const stack = stackName(spec.name);
  // The App creates its output folder: only once the input is known to be good.
  const app = new App(outDir === undefined ? {} : { outdir: outDir });
  new TestbedStack(app, stack, {
    ...stackPropsFromSpec(spec, hostKeys),
    ...(endpoint === undefined ? {} : { testAwsEndpoint: endpoint }),
  });
  app.synth();
  const dir = join(app.outdir, "stacks", stack);
  const file = join(dir, "cdk.tf.json");
  if (hostKeys !== undefined) chmodSync(file, PRIVATE_FILE_MODE);
  return { stack, dir, file };
}

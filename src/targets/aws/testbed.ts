/**
 * The AWS testbed: the stack in stacks/ synthesized from the stored spec (in-process, with the cdktf library), then
 * `terraform init` and `apply` of a saved plan in the stack's folder, its outputs turned into the inventory, then a
 * wait for SSH on every node; teardown is `terraform destroy` of the same stack, synthesized again from the spec.
 */
import { existsSync, readFileSync } from "node:fs";
import { Terraform, terraformBinaryFor } from "../../adapters/terraform.ts";
import { testAwsEndpoint } from "./clients.ts";
import { preflightAws, type PreflightOptions } from "./preflight.ts";
import { deleteTestbedLeftovers, sweepClients, type SweepClients } from "./sweep.ts";
import { uninterruptible, type Context } from "../../context/context.ts";
import { ToolError } from "../../util/errors.ts";
import { awsInventory, pinnedKnownHosts, renderInventory } from "../../testbed/inventory.ts";
import { stackName } from "../../rules/names.ts";
import type { NodeHostKey } from "../../rules/ssh-key.ts";
import { writePrivateFile } from "../../util/fs.ts";
import { ensureHostKeys, hostKeysStarted, readHostKeys } from "../../testbed/host-keys.ts";
import { testbedPaths } from "../../testbed/paths.ts";
import { loadRecord, saveRecord, type TestbedRecord } from "../../testbed/record.ts";
import { waitForSsh } from "../../testbed/reachability.ts";
import type { AwsTestbedSpec } from "../../testbed/spec.ts";

/** Cloud instances take minutes to boot; a GPU AMI's first boot is slower still. */
const SSH_WAIT_MS = 10 * 60_000;

export interface AwsOptions {
  /**
   * terraform, tofu, or a test double's path. @default the spec's terraformBinary, else $TERRAFORM_BINARY_NAME, else
   * terraform
   */
  readonly terraformBinary?: string;
  /** How long to wait for SSH on the nodes. @default 10 minutes */
  readonly sshWaitMs?: number;
  /**
   * How `down` reaches AWS to look for resources tagged with the testbed's name that Terraform's state missed;
   * null skips the look (tests with a terraform double, which created nothing).
   * @default sweepClients: the SDK with the standard credential chain (or the test endpoint override)
   */
  readonly leftoverClients?: ((region: string) => SweepClients) | null;
  /**
   * The checks before anything is created (zone offers the type, vCPU quota, worker image tarball); null skips
   * them (tests with a terraform double, which reach no AWS API).
   * @default preflightAws with the SDK (or the test endpoint override)
   */
  readonly preflight?: PreflightOptions | null;
}

function terraformFor(ctx: Context, spec: AwsTestbedSpec, options: AwsOptions): Terraform {
  return new Terraform({
    binary: options.terraformBinary ?? terraformBinaryFor(spec.terraformBinary),
    logFile: ctx.logFile,
    onLine: (line) => ctx.reporter.toolLine(line),
    signal: ctx.signal,
  });
}

/**
 * Synthesizes the stack from the spec into the testbed's folder (the layout `cdktf synth --output` gives), then
 * `terraform init` there. The cdktf library is loaded only here: the local testbed never pays for it. `hostKeys`:
 * the nodes' SSH host keys, for their user data (teardown passes whatever keys the deploy had, if any).
 */
async function synthAndInit(
  stateDir: string,
  spec: AwsTestbedSpec,
  terraform: Terraform,
  hostKeys: readonly NodeHostKey[] | undefined,
): Promise<string> {
  const { synthesizeStack } = await import("../../../stacks/synth.ts");
  const { dir } = synthesizeStack(spec, testbedPaths(stateDir, spec.name).cdktfOut, hostKeys);
  await terraform.init(dir);
  return dir;
}

/** Deploys the testbed whose spec is stored already (testbed.ts writes it first, so teardown always has it). */
export async function upAws(ctx: Context, spec: AwsTestbedSpec, options: AwsOptions = {}): Promise<TestbedRecord> {
  // A testbed deployed earlier (kept, or resumed) is not destroyed when this deploy fails: only what this call
  // created is rolled back.
  const earlier = loadRecord(ctx.stateDir, spec.name);
  // A test endpoint override that is not loopback stops here (exit 2), before anything is created.
  testAwsEndpoint();
  if (options.preflight !== null) {
    const report = await ctx.reporter.step(
      `check ${spec.instanceType} in ${spec.availabilityZone} and the vCPU quota`,
      () => preflightAws(spec, options.preflight ?? {}),
    );
    for (const warning of report.warnings) ctx.reporter.warn(warning);
  }
  const terraform = terraformFor(ctx, spec, options);
  await ctx.reporter.step(`check ${terraform.binary}`, () => terraform.assertInstalled());
  try {
    return await deployAndReach(ctx, spec, terraform, options, earlier !== undefined);
  } catch (error) {
    if (earlier !== undefined) {
      ctx.reporter.warn(
        `testbed ${spec.name} existed before this deploy and was left as it is; \`ringlab down ${spec.name}\` removes it`,
      );
      throw error;
    }
    // Paid machines must not outlive a failed `up`. A failing destroy must not hide why `up` failed. Like `down`:
    // the stack, then what carries this deploy's tags but Terraform's state missed (a create retried under load
    // can leave one), and nothing of a same-named testbed another state folder runs.
    await ctx.reporter
      .step(`roll back: ${terraform.binary} destroy ${stackName(spec.name)}`, () => downAws(ctx, spec, options))
      .catch((rollback: unknown) =>
        ctx.reporter.warn(
          `the rollback failed too (${(rollback as Error).message}); run \`ringlab down ${spec.name}\``,
        ),
      );
    throw error;
  }
}

/** `deployedBefore`: the stack exists already (a kept or resumed testbed), with the nodes' user data it has. */
async function deployAndReach(
  ctx: Context,
  spec: AwsTestbedSpec,
  terraform: Terraform,
  options: AwsOptions,
  deployedBefore: boolean,
): Promise<TestbedRecord> {
  const paths = testbedPaths(ctx.stateDir, spec.name);
  const stack = stackName(spec.name);
  // Nodes deployed before ringlab gave them host keys keep theirs (cloud-init installs keys at first boot only, and
  // new user data would restart them): they stay trusted on first use.
  const hostKeys =
    deployedBefore && !hostKeysStarted(paths.dir)
      ? undefined
      : await ctx.reporter.step("make the nodes' SSH host keys", () =>
          ensureHostKeys(paths.dir, spec.nodes, spec.name),
        );
  const dir = await ctx.reporter.step(`synthesize ${stack} and ${terraform.binary} init`, () =>
    synthAndInit(ctx.stateDir, spec, terraform, hostKeys),
  );
  await ctx.reporter.step(
    `${terraform.binary} apply ${stack} (${spec.nodes} × ${spec.instanceType} in ${spec.region})`,
    () => terraform.apply(dir),
  );
  const outputs = await terraform.outputs(dir, stack);
  writePrivateFile(paths.stackOutputs, `${JSON.stringify(outputs, null, 2)}\n`);
  let inventory: ReturnType<typeof awsInventory>;
  try {
    inventory = awsInventory(outputs, spec, paths.knownHosts, hostKeys);
  } catch (error) {
    throw new ToolError("terraform", `the deployed stack's outputs are incomplete: ${(error as Error).message}`, {
      cause: error,
    });
  }
  // Pinned before the first connection (the inventory makes ssh refuse any other key): written afresh, since a
  // redeployed node may have an address another node had.
  if (hostKeys !== undefined) writePrivateFile(paths.knownHosts, pinnedKnownHosts(inventory, hostKeys));
  writePrivateFile(paths.inventory, renderInventory(inventory));
  const hosts = { ...inventory.all.children.head.hosts, ...inventory.all.children.workers.hosts };
  // Under the test-only endpoint override the addresses are an emulator's inventions: probe none of them.
  const loopbackOnly = testAwsEndpoint() !== undefined;
  await ctx.reporter.step("wait for SSH on every node", (detail) =>
    waitForSsh(
      Object.values(hosts).map((h) => String(h["ansible_host"])),
      options.sshWaitMs ?? SSH_WAIT_MS,
      ctx.signal,
      (pending) => detail(`waiting for ${pending.join(", ")}`),
      { loopbackOnly },
    ),
  );
  const record: TestbedRecord = {
    schema: "ringlab.testbed/v2",
    name: spec.name,
    target: "aws",
    inventory: paths.inventory,
    sharedDir: String(inventory.all.vars["ringlab_shared_dir"]),
    nodes: Object.entries(hosts).map(([name, vars]) => ({
      name,
      rank: Number(vars["ringlab_node_rank"]),
      sshAddress: String(vars["ansible_host"]),
      privateIp: String(vars["ringlab_private_ip"]),
    })),
    createdAt: spec.createdAt,
    // A redeploy of the same stack keeps its machines, and what they were configured for (Slurm's services) with them.
    ...launchersOf(loadRecord(ctx.stateDir, spec.name)),
  };
  saveRecord(ctx.stateDir, record);
  return record;
}

/**
 * Destroys the stack from its stored spec; throws when Terraform's local state still lists resources after. Then
 * removes what this spec's deploy left untracked, found by its tags (deleteTestbedLeftovers): never a same-named
 * testbed of another state folder.
 */
export async function downAws(ctx: Context, spec: AwsTestbedSpec, options: AwsOptions = {}): Promise<void> {
  // Teardown runs to its end: a second Ctrl-C must not leave half a stack billing.
  const steady = uninterruptible(ctx);
  const terraform = terraformFor(steady, spec, options);
  await terraform.assertInstalled();
  const dir = await synthAndInit(
    steady.stateDir,
    spec,
    terraform,
    readHostKeys(testbedPaths(steady.stateDir, spec.name).dir, spec.nodes),
  );
  await terraform.destroy(dir);
  const state = spec.state;
  const left = state.backend === "local" ? resourcesInState(state.path) : [];
  if (left.length > 0 && state.backend === "local") {
    throw new ToolError(
      "terraform",
      `${terraform.binary} destroy finished, but Terraform's state ${state.path} still lists ${left.length} resources (${left.slice(0, 5).join(", ")})`,
      {
        hint: `the testbed's state is kept; run \`ringlab down ${spec.name}\` again, or look at the AWS console for resources tagged ringlab:testbed=${spec.name}`,
      },
    );
  }
  // A deploy stopped between creating a resource and recording it (the controller killed mid-deploy) leaves
  // something Terraform does not know of; its tags still name the testbed and this deploy's expires-at.
  const clientsFor = options.leftoverClients === undefined ? sweepClients : options.leftoverClients;
  if (clientsFor === null) return;
  const removed = await deleteTestbedLeftovers(clientsFor(spec.region), spec.name, spec.expiresAt, (line) =>
    ctx.reporter.info(line),
  ).catch((error: unknown) => {
    if (error instanceof ToolError) throw error;
    throw new ToolError(
      "aws",
      `the stack was destroyed, but looking for resources tagged ringlab:testbed=${spec.name} failed: ${(error as Error).message}`,
      {
        cause: error,
        hint: `run \`ringlab down ${spec.name}\` again once AWS answers`,
      },
    );
  });
  if (removed.length > 0)
    ctx.reporter.warn(
      `removed ${removed.length} resources tagged ringlab:testbed=${spec.name} that Terraform's state did not list`,
    );
}

/** `type.name` of every resource a Terraform state file lists; none when the file does not exist. */
export function resourcesInState(stateFile: string): string[] {
  if (!existsSync(stateFile)) return [];
  const state = JSON.parse(readFileSync(stateFile, "utf8")) as {
    resources?: { mode?: string; type: string; name: string }[];
  };
  return (state.resources ?? []).filter((r) => r.mode !== "data").map((r) => `${r.type}.${r.name}`);
}

function launchersOf(earlier: TestbedRecord | undefined): Pick<TestbedRecord, "launchers"> {
  return earlier?.launchers === undefined ? {} : { launchers: earlier.launchers };
}

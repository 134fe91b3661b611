import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { Terraform, terraformBinaryFor } from "../../src/adapters/terraform.ts";
import { loadCampaignFile } from "../../src/config/load.ts";
import type { Context } from "../../src/context/context.ts";
import { PrerequisiteError, ToolError, UsageError } from "../../src/util/errors.ts";
import { silentReporter } from "../fixtures/silent-reporter.ts";
import { testbedPaths } from "../../src/testbed/paths.ts";
import { saveRecord } from "../../src/testbed/record.ts";
import { readSpec } from "../../src/testbed/spec.ts";
import { down, up } from "../../src/testbed/testbed.ts";

const FAKE = resolve("test/fixtures/fake-terraform.mjs");
const OUTPUTS = resolve("test/fixtures/cdktf-outputs.json");
/** The same outputs with loopback addresses no server listens on: the SSH wait sends nothing off this machine. */
const LOOPBACK_OUTPUTS = resolve("test/fixtures/cdktf-outputs-loopback.json");
const PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2 me@host";

interface FakeCall {
  readonly args: string[];
  readonly cwd: string;
  /** The Terraform JSON in the folder it ran in. */
  readonly stack: Record<string, any> | null;
}

/** A terraform double: an executable in `dir` that runs fake-terraform.mjs with the given environment. */
function fakeTerraform(dir: string, extraEnv: Record<string, string> = {}) {
  const calls = join(dir, "calls.jsonl");
  const env = Object.entries({ FAKE_TERRAFORM_CALLS: calls, FAKE_TERRAFORM_OUTPUTS: OUTPUTS, ...extraEnv }).map(
    ([k, v]) => `${k}='${v}'`,
  );
  const binary = join(dir, "terraform");
  writeFileSync(binary, `#!/bin/sh\nexec env ${env.join(" ")} '${process.execPath}' '${FAKE}' "$@"\n`);
  chmodSync(binary, 0o755);
  return {
    binary,
    calls: (): FakeCall[] =>
      existsSync(calls)
        ? readFileSync(calls, "utf8")
            .trim()
            .split("\n")
            .map((line) => JSON.parse(line) as FakeCall)
        : [],
  };
}

describe("terraform adapter", () => {
  it("initializes without prompting, plans into a file and applies exactly that plan, in the stack's folder", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-terraform-"));
    const fake = fakeTerraform(dir);
    const terraform = new Terraform({ binary: fake.binary });
    await terraform.init(dir);
    await terraform.apply(dir);
    expect(fake.calls().map(({ args, cwd }) => ({ args, cwd }))).toEqual([
      { args: ["init", "-input=false", "-no-color"], cwd: dir },
      { args: ["plan", "-input=false", "-no-color", "-lock-timeout=300s", "-out=ringlab.tfplan"], cwd: dir },
      { args: ["apply", "-input=false", "-no-color", "-lock-timeout=300s", "ringlab.tfplan"], cwd: dir },
    ]);
  });

  it("reads the outputs into the form of cdktf's outputs file, without echoing them to the log", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-terraform-"));
    const fake = fakeTerraform(dir);
    const log = join(dir, "log");
    const outputs = await new Terraform({ binary: fake.binary, logFile: log }).outputs(dir, "ringlab-scale");
    expect(outputs).toEqual(JSON.parse(readFileSync(OUTPUTS, "utf8")));
    expect(existsSync(log) ? readFileSync(log, "utf8") : "").not.toContain("publicIp");
  });

  it("destroys without prompting, waiting for a state lock another run holds", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-terraform-"));
    const fake = fakeTerraform(dir);
    await new Terraform({ binary: fake.binary }).destroy(dir);
    expect(fake.calls().map((call) => call.args)).toEqual([
      ["destroy", "-input=false", "-no-color", "-lock-timeout=300s", "-auto-approve"],
    ]);
  });

  it("removes the saved plan after applying it, and after a failed apply too (it holds the values the state holds)", async () => {
    for (const fail of ["nothing", "apply"]) {
      const dir = mkdtempSync(join(tmpdir(), "ringlab-terraform-"));
      // The double writes no plan: one is put there as `plan -out` would have.
      writeFileSync(join(dir, "ringlab.tfplan"), "plan");
      await new Terraform({ binary: fakeTerraform(dir, { FAKE_TERRAFORM_FAIL: fail }).binary })
        .apply(dir)
        .catch(() => undefined);
      expect(existsSync(join(dir, "ringlab.tfplan")), fail).toBe(false);
    }
  });

  it("turns a failed apply into a ToolError that keeps terraform's own message", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-terraform-"));
    const fake = fakeTerraform(dir, { FAKE_TERRAFORM_FAIL: "apply" });
    const error = (await new Terraform({ binary: fake.binary }).apply(dir).catch((e: unknown) => e)) as ToolError;
    expect(error).toBeInstanceOf(ToolError);
    expect(error.tool).toBe("terraform");
    expect(error.details.toolExitCode).toBe(1);
    expect(error.details.outputTail).toMatch(/InsufficientInstanceCapacity/);
  });

  it("says terraform is missing, and how to get it or OpenTofu, before running anything", async () => {
    const error = await new Terraform({ binary: "terraform-that-does-not-exist" }).assertInstalled().catch((e) => e);
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect(error.hint).toMatch(/OpenTofu and set TERRAFORM_BINARY_NAME=tofu/);
  });

  it("runs the testbed's own choice of binary, else TERRAFORM_BINARY_NAME's, else terraform", () => {
    expect(terraformBinaryFor("tofu", { TERRAFORM_BINARY_NAME: "terraform" })).toBe("tofu");
    expect(terraformBinaryFor(null, { TERRAFORM_BINARY_NAME: "tofu" })).toBe("tofu");
    expect(terraformBinaryFor(undefined, {})).toBe("terraform");
    expect(terraformBinaryFor(null, { TERRAFORM_BINARY_NAME: "" })).toBe("terraform");
  });
});

describe("AWS testbed up and down through the terraform double", () => {
  function setUp(extraEnv: Record<string, string> = {}) {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-aws-"));
    mkdirSync(join(dir, "keys"));
    writeFileSync(join(dir, "keys", "ringlab.pub"), `${PUBLIC_KEY}\n`);
    const file = join(dir, "scale.yaml");
    writeFileSync(
      file,
      "testbed: {target: aws, name: scale, nodes: 3, adminCidr: 203.0.113.7/32, sshPublicKeyFile: keys/ringlab.pub}\n",
    );
    const ctx: Context = {
      repoDir: dir,
      stateDir: join(dir, "state"),
      reporter: silentReporter,
      logFile: join(dir, "log"),
      signal: new AbortController().signal,
    };
    const fake = fakeTerraform(dir, { FAKE_TERRAFORM_OUTPUTS: LOOPBACK_OUTPUTS, ...extraEnv });
    return {
      dir,
      file,
      ctx,
      fake,
      aws: { terraformBinary: fake.binary, sshWaitMs: 1, leftoverClients: null, preflight: null },
    };
  }

  it("stores the resolved spec before deploying, and deploys the stack synthesized from it: key text inline, state in the testbed's folder", async () => {
    const { file, ctx, fake, aws } = setUp({ FAKE_TERRAFORM_FAIL: "apply" });
    await up(ctx, loadCampaignFile(file), { aws }).catch(() => undefined);
    const paths = testbedPaths(ctx.stateDir, "scale");
    expect(readSpec(paths.spec)).toMatchObject({
      schema: "ringlab.testbed-spec/v1",
      target: "aws",
      name: "scale",
      campaign: "scale",
      sshPublicKey: PUBLIC_KEY,
      state: { backend: "local", path: join(paths.dir, "terraform.tfstate") },
    });
    const [init, plan] = fake.calls();
    expect([init!.args[0], plan!.args[0]]).toEqual(["init", "plan"]);
    expect(plan!.cwd).toBe(join(paths.cdktfOut, "stacks", "ringlab-scale"));
    expect(plan!.stack!["terraform"]["backend"]).toEqual({ local: { path: join(paths.dir, "terraform.tfstate") } });
    expect(Object.values(plan!.stack!["resource"]["aws_key_pair"]).map((pair: any) => pair.public_key)).toEqual([
      PUBLIC_KEY,
    ]);
  });

  it("destroys what a failed deploy may have created, so no paid machine outlives it", async () => {
    const { file, ctx, fake, aws } = setUp({ FAKE_TERRAFORM_FAIL: "apply" });
    const error = await up(ctx, loadCampaignFile(file), { aws }).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(fake.calls().map((call) => call.args[0])).toEqual(["init", "plan", "apply", "init", "destroy"]);
    expect(fake.calls().at(-1)!.cwd).toBe(
      join(testbedPaths(ctx.stateDir, "scale").cdktfOut, "stacks", "ringlab-scale"),
    );
  });

  it("leaves a testbed deployed earlier alone when a new deploy of it fails, and keeps its creation time", async () => {
    const { file, ctx, fake, aws } = setUp();
    await up(ctx, loadCampaignFile(file), { aws }).catch(() => undefined);
    const expiresAt = (call: FakeCall) =>
      call.stack!["provider"]["aws"][0]["default_tags"][0]["tags"]["ringlab:expires-at"];
    const firstExpiry = expiresAt(fake.calls().find((call) => call.args[0] === "apply")!);
    const created = readSpec(testbedPaths(ctx.stateDir, "scale").spec).createdAt;
    saveRecord(ctx.stateDir, {
      schema: "ringlab.testbed/v2",
      name: "scale",
      target: "aws",
      inventory: join(ctx.stateDir, "inventory.yml"),
      sharedDir: "/shared",
      nodes: [],
      createdAt: created,
    });
    const failing = setUp({ FAKE_TERRAFORM_FAIL: "apply" });
    const error = await up(ctx, loadCampaignFile(file), {
      aws: { ...aws, terraformBinary: failing.fake.binary },
    }).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(failing.fake.calls().map((call) => call.args[0])).toEqual(["init", "plan", "apply"]);
    expect(expiresAt(failing.fake.calls().at(-1)!)).toBe(firstExpiry);
    expect(readSpec(testbedPaths(ctx.stateDir, "scale").spec).createdAt).toBe(created);
  });

  it("stops before anything is created when the zone does not offer the instance type or the vCPU quota is short", async () => {
    const { file, ctx, fake, aws } = setUp();
    const ec2 = (offered: boolean) => ({ offeredInZone: async () => offered, vcpus: async () => 4 });
    const notOffered = await up(ctx, loadCampaignFile(file), { aws: { ...aws, preflight: { ec2: ec2(false) } } }).catch(
      (e) => e,
    );
    expect(notOffered).toBeInstanceOf(UsageError);
    expect(notOffered.message).toBe("the availability zone us-east-1a does not offer g4dn.xlarge");
    const shortQuota = await up(ctx, loadCampaignFile(file), {
      aws: { ...aws, preflight: { ec2: ec2(true), quotas: { quota: async () => ({ vcpus: 8 }) } } },
    }).catch((e) => e);
    expect(shortQuota).toBeInstanceOf(PrerequisiteError);
    expect(shortQuota.hint).toMatch(/request at least 12 vCPUs/);
    expect(fake.calls()).toEqual([]);
  });

  it("refuses to start when terraform is missing, before synthesizing or running anything", async () => {
    const { file, ctx, fake, aws } = setUp();
    const error = await up(ctx, loadCampaignFile(file), {
      aws: { ...aws, terraformBinary: "no-terraform-here" },
    }).catch((e) => e);
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect(fake.calls()).toEqual([]);
    expect(existsSync(testbedPaths(ctx.stateDir, "scale").cdktfOut)).toBe(false);
  });

  it("comes down from its stored spec after the campaign file and the key file are deleted", async () => {
    const { dir, file, ctx, fake, aws } = setUp();
    await up(ctx, loadCampaignFile(file), { aws }).catch(() => undefined);
    rmSync(file);
    rmSync(join(dir, "keys"), { recursive: true });
    // Synthesized again from the spec alone.
    rmSync(testbedPaths(ctx.stateDir, "scale").cdktfOut, { recursive: true, force: true });
    const before = fake.calls().length;
    const result = await down(ctx, "scale", { aws });
    expect(result.target).toBe("aws");
    expect(
      fake
        .calls()
        .slice(before)
        .map((call) => call.args[0]),
    ).toEqual(["init", "destroy"]);
    const destroy = fake.calls().at(-1)!;
    expect(Object.values(destroy.stack!["resource"]["aws_key_pair"]).map((pair: any) => pair.public_key)).toEqual([
      PUBLIC_KEY,
    ]);
    expect(existsSync(testbedPaths(ctx.stateDir, "scale").dir)).toBe(false);
  });

  it("keeps the testbed's state when Terraform's state still lists resources after destroy", async () => {
    const { file, ctx, aws } = setUp();
    await up(ctx, loadCampaignFile(file), { aws }).catch(() => undefined);
    const stateFile = join(ctx.stateDir, "testbeds", "scale", "terraform.tfstate");
    writeFileSync(stateFile, JSON.stringify({ resources: [{ mode: "managed", type: "aws_instance", name: "node0" }] }));
    const error = await down(ctx, "scale", { aws }).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(error.message).toMatch(/still lists 1 resources \(aws_instance\.node0\)/);
    expect(existsSync(testbedPaths(ctx.stateDir, "scale").spec)).toBe(true);
  });

  it("refuses a testbed name that is not a name, before anything is removed", async () => {
    const { ctx, aws } = setUp();
    for (const name of ["..", "../..", "a/b", ""]) {
      await expect(down(ctx, name, { aws })).rejects.toBeInstanceOf(UsageError);
    }
  });
});

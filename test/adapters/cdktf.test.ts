import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { Cdktf } from "../../src/adapters/cdktf.ts";
import { loadCampaignFile } from "../../src/config/load.ts";
import type { Context } from "../../src/context.ts";
import { PrerequisiteError, ToolError, UsageError } from "../../src/errors.ts";
import { silentReporter } from "../../src/reporter.ts";
import { testbedPaths } from "../../src/testbed/paths.ts";
import { saveRecord } from "../../src/testbed/record.ts";
import { down, up } from "../../src/testbed/testbed.ts";

const FAKE = resolve("test/fixtures/fake-cdktf.mjs");
const OUTPUTS = resolve("test/fixtures/cdktf-outputs.json");
/** The same outputs with loopback addresses no server listens on: the SSH wait sends nothing off this machine. */
const LOOPBACK_OUTPUTS = resolve("test/fixtures/cdktf-outputs-loopback.json");
const PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2 me@host";

interface FakeCall {
  readonly args: string[];
  readonly specFile: string;
  readonly spec: Record<string, unknown> | null;
}

/** A cdktf command line that runs the double with the given environment. */
function fakeCdktf(dir: string, extraEnv: Record<string, string> = {}) {
  const calls = join(dir, "calls.jsonl");
  const env = Object.entries({ FAKE_CDKTF_CALLS: calls, FAKE_CDKTF_OUTPUTS: OUTPUTS, ...extraEnv }).map(([k, v]) => `${k}=${v}`);
  return {
    command: ["env", ...env, process.execPath, FAKE],
    calls: (): FakeCall[] => existsSync(calls) ? readFileSync(calls, "utf8").trim().split("\n").map((line) => JSON.parse(line) as FakeCall) : [],
  };
}

const files = (dir: string) => ({ stack: "ringlab-scale", specFile: "/s/spec.json", outDir: join(dir, "cdktf.out") });

describe("cdktf adapter", () => {
  it("deploys the named stack without prompting, from the spec in RINGLAB_SPEC, into the testbed's own output folder", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cdktf-"));
    const fake = fakeCdktf(dir);
    const outputs = await new Cdktf({ projectDir: dir, command: fake.command, terraformBinary: "true" })
      .deploy(files(dir), join(dir, "outputs.json"));
    expect(fake.calls().map(({ args, specFile }) => ({ args, specFile }))).toEqual([{
      args: ["deploy", "ringlab-scale", "--output", join(dir, "cdktf.out"), "--auto-approve", "--skip-provider-lock", "--outputs-file", join(dir, "outputs.json"),
        "--outputs-file-include-sensitive-outputs"],
      specFile: "/s/spec.json",
    }]);
    expect(outputs).toEqual(JSON.parse(readFileSync(OUTPUTS, "utf8")));
  });

  it("destroys without prompting", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cdktf-"));
    const fake = fakeCdktf(dir);
    await new Cdktf({ projectDir: dir, command: fake.command, terraformBinary: "true" }).destroy(files(dir));
    expect(fake.calls().map((call) => call.args)).toEqual([["destroy", "ringlab-scale", "--output", join(dir, "cdktf.out"), "--auto-approve", "--skip-provider-lock"]]);
  });

  it("turns a failed deploy into a ToolError that keeps cdktf's own message", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cdktf-"));
    const fake = fakeCdktf(dir, { FAKE_CDKTF_FAIL: "deploy" });
    const error = (await new Cdktf({ projectDir: dir, command: fake.command, terraformBinary: "true" })
      .deploy(files(dir), join(dir, "outputs.json")).catch((e: unknown) => e)) as ToolError;
    expect(error).toBeInstanceOf(ToolError);
    expect(error.details.toolExitCode).toBe(1);
    expect(error.details.outputTail).toMatch(/InsufficientInstanceCapacity/);
  });

  it("says terraform is missing, and how to get it or OpenTofu, before running cdktf", async () => {
    const error = await new Cdktf({ projectDir: ".", terraformBinary: "terraform-that-does-not-exist" }).assertTerraform().catch((e) => e);
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect(error.hint).toMatch(/OpenTofu and set TERRAFORM_BINARY_NAME=tofu/);
  });
});

describe("AWS testbed up and down through the cdktf double", () => {
  function setUp(extraEnv: Record<string, string> = {}) {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-aws-"));
    mkdirSync(join(dir, "keys"));
    writeFileSync(join(dir, "keys", "ringlab.pub"), `${PUBLIC_KEY}\n`);
    const file = join(dir, "scale.yaml");
    writeFileSync(file, "testbed: {target: aws, name: scale, nodes: 3, adminCidr: 203.0.113.7/32, sshPublicKeyFile: keys/ringlab.pub}\n");
    const ctx: Context = { repoDir: dir, stateDir: join(dir, "state"), reporter: silentReporter, logFile: join(dir, "log"), signal: new AbortController().signal };
    const fake = fakeCdktf(dir, { FAKE_CDKTF_OUTPUTS: LOOPBACK_OUTPUTS, ...extraEnv });
    return { dir, file, ctx, fake, aws: { cdktfCommand: fake.command, terraformBinary: "true", sshWaitMs: 1, leftoverClients: null, preflight: null } };
  }

  it("stores the resolved spec before deploying, and deploys from it: key text inline, state in the testbed's folder", async () => {
    const { file, ctx, fake, aws } = setUp({ FAKE_CDKTF_FAIL: "deploy" });
    await up(ctx, loadCampaignFile(file), aws).catch(() => undefined);
    const deploy = fake.calls()[0]!;
    expect(deploy.specFile).toBe(testbedPaths(ctx.stateDir, "scale").spec);
    expect(deploy.spec).toMatchObject({
      schema: "ringlab.testbed-spec/v1", target: "aws", name: "scale", campaign: "scale", sshPublicKey: PUBLIC_KEY,
      state: { backend: "local", path: join(ctx.stateDir, "testbeds", "scale", "terraform.tfstate") },
    });
  });

  it("destroys what a failed deploy may have created, so no paid machine outlives it", async () => {
    const { file, ctx, fake, aws } = setUp({ FAKE_CDKTF_FAIL: "deploy" });
    const error = await up(ctx, loadCampaignFile(file), aws).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(fake.calls().map((call) => call.args[0])).toEqual(["deploy", "destroy"]);
    expect(fake.calls()[1]!.specFile).toBe(testbedPaths(ctx.stateDir, "scale").spec);
  });

  it("leaves a testbed deployed earlier alone when a new deploy of it fails, and keeps its creation time", async () => {
    const { file, ctx, fake, aws } = setUp();
    await up(ctx, loadCampaignFile(file), aws).catch(() => undefined);
    const created = fake.calls()[0]!.spec!["createdAt"];
    saveRecord(ctx.stateDir, {
      schema: "ringlab.testbed/v2", name: "scale", target: "aws", inventory: join(ctx.stateDir, "inventory.yml"),
      sharedDir: "/shared", nodes: [], createdAt: String(created),
    });
    const failing = setUp({ FAKE_CDKTF_FAIL: "deploy" });
    const error = await up(ctx, loadCampaignFile(file), { ...aws, cdktfCommand: failing.fake.command }).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(failing.fake.calls().map((call) => [call.args[0], call.spec!["createdAt"]])).toEqual([["deploy", created]]);
  });

  it("stops before anything is created when the zone does not offer the instance type or the vCPU quota is short", async () => {
    const { file, ctx, fake, aws } = setUp();
    const ec2 = (offered: boolean) => ({ offeredInZone: async () => offered, vcpus: async () => 4 });
    const notOffered = await up(ctx, loadCampaignFile(file), { ...aws, preflight: { ec2: ec2(false) } }).catch((e) => e);
    expect(notOffered).toBeInstanceOf(UsageError);
    expect(notOffered.message).toBe("the availability zone us-east-1a does not offer g4dn.xlarge");
    const shortQuota = await up(ctx, loadCampaignFile(file), { ...aws, preflight: { ec2: ec2(true), quotas: { quota: async () => ({ vcpus: 8 }) } } })
      .catch((e) => e);
    expect(shortQuota).toBeInstanceOf(PrerequisiteError);
    expect(shortQuota.hint).toMatch(/request at least 12 vCPUs/);
    expect(fake.calls()).toEqual([]);
  });

  it("refuses to start when terraform is missing, before calling cdktf at all", async () => {
    const { file, ctx, fake, aws } = setUp();
    const error = await up(ctx, loadCampaignFile(file), { ...aws, terraformBinary: "no-terraform-here" }).catch((e) => e);
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect(fake.calls()).toEqual([]);
  });

  it("comes down from its stored spec after the campaign file and the key file are deleted", async () => {
    const { dir, file, ctx, fake, aws } = setUp({ FAKE_CDKTF_FAIL: "nothing" });
    await up(ctx, loadCampaignFile(file), aws).catch(() => undefined);
    rmSync(file);
    rmSync(join(dir, "keys"), { recursive: true });
    const result = await down(ctx, "scale", aws);
    expect(result.target).toBe("aws");
    const destroy = fake.calls().at(-1)!;
    expect(destroy.args.slice(0, 2)).toEqual(["destroy", "ringlab-scale"]);
    expect(destroy.spec).toMatchObject({ name: "scale", sshPublicKey: PUBLIC_KEY });
    expect(existsSync(testbedPaths(ctx.stateDir, "scale").dir)).toBe(false);
  });

  it("keeps the testbed's state when Terraform's state still lists resources after destroy", async () => {
    const { file, ctx, aws } = setUp({ FAKE_CDKTF_FAIL: "nothing" });
    await up(ctx, loadCampaignFile(file), aws).catch(() => undefined);
    const stateFile = join(ctx.stateDir, "testbeds", "scale", "terraform.tfstate");
    writeFileSync(stateFile, JSON.stringify({ resources: [{ mode: "managed", type: "aws_instance", name: "node0" }] }));
    const error = await down(ctx, "scale", aws).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(error.message).toMatch(/still lists 1 resources \(aws_instance\.node0\)/);
    expect(existsSync(testbedPaths(ctx.stateDir, "scale").spec)).toBe(true);
  });

  it("refuses a testbed name that is not a name, before anything is removed", async () => {
    const { ctx, aws } = setUp();
    for (const name of ["..", "../..", "a/b", ""]) {
      await expect(down(ctx, name, aws)).rejects.toBeInstanceOf(UsageError);
    }
  });
});

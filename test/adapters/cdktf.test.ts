import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { Cdktf } from "../../src/adapters/cdktf.ts";
import { parseCampaign } from "../../src/config/load.ts";
import type { Context } from "../../src/context.ts";
import { PrerequisiteError, ToolError } from "../../src/errors.ts";
import { silentReporter } from "../../src/reporter.ts";
import { upAws } from "../../src/testbed/aws.ts";
import { saveRecord } from "../../src/testbed/record.ts";

const FAKE = resolve("test/fixtures/fake-cdktf.mjs");
const OUTPUTS = resolve("test/fixtures/cdktf-outputs.json");

/** A cdktf command line that runs the double with the given environment. */
function fakeCdktf(dir: string, extraEnv: Record<string, string> = {}) {
  const calls = join(dir, "calls.jsonl");
  const env = Object.entries({ FAKE_CDKTF_CALLS: calls, FAKE_CDKTF_OUTPUTS: OUTPUTS, ...extraEnv }).map(([k, v]) => `${k}=${v}`);
  return {
    command: ["env", ...env, process.execPath, FAKE],
    calls: () => existsSync(calls) ? readFileSync(calls, "utf8").trim().split("\n").map((line) => JSON.parse(line) as { args: string[]; config: string; createdAt?: string }) : [],
  };
}

describe("cdktf adapter", () => {
  it("deploys the named stack without prompting, with the campaign file in RINGLAB_CONFIG, and returns its outputs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cdktf-"));
    const fake = fakeCdktf(dir);
    const outputs = await new Cdktf({ projectDir: dir, command: fake.command, terraformBinary: "true" })
      .deploy("ringlab-scale", "/c/scale.yaml", join(dir, "outputs.json"));
    expect(fake.calls()).toEqual([{
      args: ["deploy", "ringlab-scale", "--auto-approve", "--outputs-file", join(dir, "outputs.json"), "--outputs-file-include-sensitive-outputs"],
      config: "/c/scale.yaml",
    }]);
    expect(outputs).toEqual(JSON.parse(readFileSync(OUTPUTS, "utf8")));
  });

  it("destroys without prompting", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cdktf-"));
    const fake = fakeCdktf(dir);
    await new Cdktf({ projectDir: dir, command: fake.command, terraformBinary: "true" }).destroy("ringlab-scale", "/c/scale.yaml");
    expect(fake.calls().map((call) => call.args)).toEqual([["destroy", "ringlab-scale", "--auto-approve"]]);
  });

  it("turns a failed deploy into a ToolError that keeps cdktf's own message", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cdktf-"));
    const fake = fakeCdktf(dir, { FAKE_CDKTF_FAIL: "deploy" });
    const error = (await new Cdktf({ projectDir: dir, command: fake.command, terraformBinary: "true" })
      .deploy("ringlab-scale", "/c/scale.yaml", join(dir, "outputs.json")).catch((e: unknown) => e)) as ToolError;
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

describe("AWS testbed up", () => {
  const campaignText = `testbed: {target: aws, name: scale, nodes: 3, adminCidr: 203.0.113.7/32,
    sshPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2", sshPrivateKeyFile: /k/ringlab}\n`;

  function context(dir: string): Context {
    return { repoDir: dir, stateDir: join(dir, "state"), reporter: silentReporter, logFile: join(dir, "log"), signal: new AbortController().signal };
  }

  it("destroys what a failed deploy may have created, so no paid machine outlives it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-aws-"));
    const file = join(dir, "scale.yaml");
    writeFileSync(file, campaignText);
    const fake = fakeCdktf(dir, { FAKE_CDKTF_FAIL: "deploy" });
    const campaign = parseCampaign(campaignText, file, file);
    if (campaign.testbed.target !== "aws") throw new Error("fixture is aws");
    const error = await upAws(context(dir), campaign.testbed, file, { cdktfCommand: fake.command, terraformBinary: "true" }).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(fake.calls().map((call) => call.args[0])).toEqual(["deploy", "destroy"]);
    expect(fake.calls()[1]!.config).toBe(file);
  });

  it("leaves a testbed deployed earlier alone when a new deploy of it fails, and keeps its creation time", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-aws-"));
    const file = join(dir, "scale.yaml");
    writeFileSync(file, campaignText);
    const ctx = context(dir);
    saveRecord(ctx.stateDir, {
      schema: "ringlab.testbed/v1", name: "scale", target: "aws", campaignFile: file, inventory: join(dir, "inventory.yml"),
      sharedDir: "/shared", nodes: [], createdAt: "2026-01-02T03:04:05.000Z",
    });
    const fake = fakeCdktf(dir, { FAKE_CDKTF_FAIL: "deploy" });
    const campaign = parseCampaign(campaignText, file, file);
    if (campaign.testbed.target !== "aws") throw new Error("fixture is aws");
    const error = await upAws(ctx, campaign.testbed, file, { cdktfCommand: fake.command, terraformBinary: "true" }).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(fake.calls().map((call) => [call.args[0], call.createdAt])).toEqual([["deploy", "2026-01-02T03:04:05.000Z"]]);
  });

  it("refuses to start when terraform is missing, before calling cdktf at all", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-aws-"));
    const fake = fakeCdktf(dir);
    const campaign = parseCampaign(campaignText, "scale.yaml");
    if (campaign.testbed.target !== "aws") throw new Error("fixture is aws");
    const error = await upAws(context(dir), campaign.testbed, "scale.yaml", { cdktfCommand: fake.command, terraformBinary: "no-terraform-here" }).catch((e) => e);
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect(fake.calls()).toEqual([]);
  });
});

/**
 * The synthesized stacks through the real Terraform (1.11) and the real hashicorp/aws provider (5.100.0, the
 * version @cdktf/provider-aws 20.1.0 is generated for), fully offline: `init` installs the provider from the
 * filesystem mirror /opt/tf-plugins, `validate` checks the JSON against the provider's schema, and `terraform
 * test` plans it with the provider configured for endpoints on 127.0.0.1:9, where nothing listens, so a call
 * that slipped through would fail rather than reach AWS. The AMI lookup is the only data source; it is replaced
 * by `override_data`.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OVERRIDDEN_SERVICES } from "../../stacks/endpoints.ts";
import { resourcesOf, synthTestbed, type TerraformJson } from "./fixtures.ts";

const MIRROR = "/opt/tf-plugins";
const NOWHERE = "http://127.0.0.1:9";
const LOOKED_UP_AMI = "ami-0123456789abcdef0";
const CASE_TIMEOUT_MS = 60_000;

let workDir = "";
let env: NodeJS.ProcessEnv = {};

beforeAll(() => {
  expect(
    existsSync(join(MIRROR, "registry.terraform.io/hashicorp/aws/5.100.0")),
    `the provider mirror in ${MIRROR}`,
  ).toBe(true);
  workDir = mkdtempSync(join(tmpdir(), "ringlab-terraform-"));
  const cache = join(workDir, "plugin-cache");
  mkdirSync(cache);
  // Only the mirror: no direct installation, so init cannot go to the registry. The cache lets the second and
  // later inits link the 700 MB provider instead of copying it.
  writeFileSync(
    join(workDir, "terraform.rc"),
    [
      `plugin_cache_dir = "${cache}"`,
      `provider_installation {`,
      `  filesystem_mirror {`,
      `    path    = "${MIRROR}"`,
      `    include = ["registry.terraform.io/hashicorp/aws"]`,
      `  }`,
      `}`,
      "",
    ].join("\n"),
  );
  env = {
    ...process.env,
    TF_CLI_CONFIG_FILE: join(workDir, "terraform.rc"),
    TF_IN_AUTOMATION: "1",
    CHECKPOINT_DISABLE: "1",
    AWS_ACCESS_KEY_ID: "testing",
    AWS_SECRET_ACCESS_KEY: "testing",
    AWS_EC2_METADATA_DISABLED: "true",
  };
  for (const key of ["AWS_PROFILE", "AWS_SESSION_TOKEN", "TF_PLUGIN_CACHE_DIR"]) delete env[key];
});
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/** Runs terraform without blocking the test worker (a plan takes seconds); resolves with its exit code and output. */
function terraform(dir: string, args: string[]): Promise<{ status: number | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn("terraform", [`-chdir=${dir}`, ...args], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
      timeout: CASE_TIMEOUT_MS,
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("close", (status) => resolvePromise({ status, output }));
  });
}

async function succeeds(dir: string, args: string[]): Promise<string> {
  const { status, output } = await terraform(dir, args);
  expect(status, `terraform ${args.join(" ")}:\n${output}`).toBe(0);
  return output;
}

const hclString = (text: string) => JSON.stringify(text);
const hclMap = (map: Record<string, string>) =>
  `{ ${Object.entries(map)
    .map(([k, v]) => `${hclString(k)} = ${hclString(v)}`)
    .join(", ")} }`;

/**
 * The test file: the stack's own provider settings (region, default tags) plus fake credentials and endpoints
 * where nothing listens; the AMI lookup overridden; assertions on what the plan knows.
 */
function testFile(json: TerraformJson): string {
  const provider = json.provider?.["aws"]?.[0] ?? {};
  const tags = provider["default_tags"][0]["tags"] as Record<string, string>;
  const amiLookups = Object.keys(json.data?.["aws_ami"] ?? {});
  const instances = Object.entries(resourcesOf(json, "aws_instance"));
  const expectedAmi = (instance: Record<string, any>) =>
    String(instance["ami"]).startsWith("${") ? LOOKED_UP_AMI : String(instance["ami"]);
  const asserts = instances.flatMap(([id, instance]) => [
    [`aws_instance.${id}.metadata_options[0].http_tokens == "required"`, `${id}: IMDSv2 required`],
    [`aws_instance.${id}.root_block_device[0].encrypted == true`, `${id}: root volume encrypted`],
    [`aws_instance.${id}.instance_initiated_shutdown_behavior == "terminate"`, `${id}: powering off terminates`],
    [`aws_instance.${id}.ami == ${hclString(expectedAmi(instance))}`, `${id}: AMI`],
    [`aws_instance.${id}.tags_all["ringlab:testbed"] == ${hclString(tags["ringlab:testbed"]!)}`, `${id}: testbed tag`],
    [
      `aws_instance.${id}.tags_all["ringlab:expires-at"] == ${hclString(tags["ringlab:expires-at"]!)}`,
      `${id}: expiry tag`,
    ],
  ]);
  return [
    `provider "aws" {`,
    `  region                      = ${hclString(provider["region"])}`,
    `  access_key                  = "testing"`,
    `  secret_key                  = "testing"`,
    `  skip_credentials_validation = true`,
    `  skip_requesting_account_id  = true`,
    `  skip_metadata_api_check     = true`,
    `  endpoints {`,
    ...OVERRIDDEN_SERVICES.map((service) => `    ${service} = ${hclString(NOWHERE)}`),
    `  }`,
    `  default_tags {`,
    `    tags = ${hclMap(tags)}`,
    `  }`,
    `}`,
    ...amiLookups.map(
      (id) => `override_data {\n  target = data.aws_ami.${id}\n  values = { id = ${hclString(LOOKED_UP_AMI)} }\n}`,
    ),
    `run "plan" {`,
    `  command = plan`,
    ...asserts.map(
      ([condition, message]) =>
        `  assert {\n    condition     = ${condition}\n    error_message = ${hclString(message!)}\n  }`,
    ),
    `}`,
    "",
  ].join("\n");
}

/** The four stacks of the issue in three runs: the 1-node stack keeps its state in S3 (each run costs ~15 s). */
const CASES: Record<string, Record<string, unknown>> = {
  "1 node, AMI lookup, s3 backend": {
    nodes: 1,
    region: "eu-west-1",
    state: { backend: "s3", bucket: "ringlab-state", key: "testbeds/tb.tfstate" },
  },
  "10 nodes": { nodes: 10, ami: "ami-0abcdef1234567890" },
  "efs + efa + spot": { nodes: 2, sharedStorage: "efs", efa: true, spot: true, instanceType: "g5.12xlarge" },
};

function writeCase(name: string, fields: Record<string, unknown>): { dir: string; json: TerraformJson } {
  const { json, synthesized } = synthTestbed(fields);
  const dir = join(workDir, name.replace(/[^a-z0-9]+/g, "-"));
  mkdirSync(join(dir, "tests"), { recursive: true });
  writeFileSync(join(dir, "main.tf.json"), synthesized);
  writeFileSync(join(dir, "tests", "plan.tftest.hcl"), testFile(json));
  return { dir, json };
}

describe("synthesized stacks through terraform init, validate and a test plan (offline)", () => {
  it.each(Object.entries(CASES))(
    "%s",
    async (name, fields) => {
      const { dir, json } = writeCase(name, fields);
      if (name.startsWith("1 node")) {
        expect(json.terraform?.["backend"]).toHaveProperty("s3");
        expect(json.data?.["aws_ami"]).toBeDefined();
        // A second test file whose assertion cannot hold: it must fail, so the passes mean something.
        writeFileSync(join(dir, "tests", "broken.tftest.hcl"), testFile(json).replace('== "terminate"', '== "stop"'));
      }
      await succeeds(dir, ["init", "-backend=false", "-input=false", "-no-color"]);
      expect(await succeeds(dir, ["validate", "-no-color"])).toContain("Success! The configuration is valid.");
      const { status, output } = await terraform(dir, ["test", "-no-color"]);
      // Terraform may print the broken file's error between these lines: assert the verdicts, not the layout.
      expect(output).toMatch(/^tests\/plan\.tftest\.hcl\.\.\. pass$/m);
      if (name.startsWith("1 node")) {
        expect(status).not.toBe(0);
        expect(output).toMatch(/^tests\/broken\.tftest\.hcl\.\.\. fail$/m);
        expect(output).toContain("powering off terminates");
        expect(output).toContain("1 passed, 1 failed");
      } else {
        expect(status, output).toBe(0);
        expect(output).toContain("1 passed, 0 failed");
      }
    },
    CASE_TIMEOUT_MS * 3,
  );
});

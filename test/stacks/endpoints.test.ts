/**
 * The test-only endpoint override: every service the stack uses goes to the loopback emulator, with fake
 * credentials; a stack without the override has none of it; anything but a loopback URL is refused (exit 2).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { writeSpec } from "../../src/testbed/spec.ts";
import { OVERRIDDEN_SERVICES, SERVICE_OF_TYPE } from "../../stacks/endpoints.ts";
import { awsSpec, synthTestbed, type TerraformJson } from "./fixtures.ts";

const ENDPOINT = "http://127.0.0.1:5999";
const PROJECT_DIR = resolve(import.meta.dirname, "../..");
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Every variant that adds a resource type: EFS, EFA and spot, the placement group, the AMI lookup. */
const VARIANTS: Record<string, Record<string, unknown>> = {
  "nfs, AMI lookup, placement group": { nodes: 2 },
  "efs + efa + spot, explicit AMI": {
    sharedStorage: "efs",
    efa: true,
    spot: true,
    instanceType: "g5.12xlarge",
    ami: "ami-1e749f67",
  },
};

function typesOf(json: TerraformJson): string[] {
  return [...Object.keys(json.resource ?? {}), ...Object.keys(json.data ?? {})];
}

describe("test-only endpoint override of the stack's provider", () => {
  it.each(Object.entries(VARIANTS))("sends every resource type's service to the emulator (%s)", (_variant, fields) => {
    const { json } = synthTestbed(fields, { testAwsEndpoint: ENDPOINT });
    const provider = json.provider?.["aws"]?.[0] ?? {};
    const endpoints = provider["endpoints"][0] as Record<string, string>;
    expect(endpoints).toEqual(Object.fromEntries(OVERRIDDEN_SERVICES.map((service) => [service, ENDPOINT])));
    for (const type of typesOf(json)) {
      expect(SERVICE_OF_TYPE, `${type} has no service in stacks/endpoints.ts`).toHaveProperty([type]);
      expect(endpoints[SERVICE_OF_TYPE[type]!], `${type}'s service ${SERVICE_OF_TYPE[type]} has no endpoint`).toBe(
        ENDPOINT,
      );
    }
    expect(provider).toMatchObject({
      access_key: "testing",
      secret_key: "testing",
      skip_credentials_validation: true,
      skip_requesting_account_id: true,
      skip_metadata_api_check: "true",
      s3_use_path_style: true,
    });
  });

  it("covers every type the variants use, so the checks above are not vacuous", () => {
    const used = new Set(Object.values(VARIANTS).flatMap((fields) => typesOf(synthTestbed(fields).json)));
    expect([...used].sort()).toEqual(Object.keys(SERVICE_OF_TYPE).sort());
  });

  it("leaves a stack without the override on AWS itself with the standard credential chain", () => {
    const provider = synthTestbed().json.provider?.["aws"]?.[0] ?? {};
    for (const key of [
      "endpoints",
      "access_key",
      "secret_key",
      "skip_credentials_validation",
      "skip_requesting_account_id",
    ]) {
      expect(provider).not.toHaveProperty([key]);
    }
  });

  it("refuses the override with an S3 state backend, which would still reach AWS", () => {
    expect(() =>
      synthTestbed({ state: { backend: "s3", bucket: "ringlab-state", key: "k" } }, { testAwsEndpoint: ENDPOINT }),
    ).toThrow(/works with the local state backend only/);
  });

  it("stacks/main.ts exits 2 for an override that is not a loopback URL, before synthesizing anything", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-endpoint-"));
    dirs.push(dir);
    writeSpec(join(dir, "spec.json"), awsSpec());
    for (const endpoint of ["https://ec2.us-east-1.amazonaws.com", "http://10.0.0.5:5000"]) {
      const result = spawnSync("npx", ["tsx", "stacks/main.ts"], {
        cwd: PROJECT_DIR,
        encoding: "utf8",
        timeout: 60_000,
        env: {
          ...process.env,
          RINGLAB_SPEC: join(dir, "spec.json"),
          RINGLAB_TEST_AWS_ENDPOINT: endpoint,
          CDKTF_OUTDIR: join(dir, "out"),
        },
      });
      expect(result.status, endpoint).toBe(2);
      expect(result.stderr).toContain(`RINGLAB_TEST_AWS_ENDPOINT=${endpoint}: `);
    }
  }, 120_000);
});

/**
 * The checks before deploy. The instance-type offering and the vCPU lookup go through the real AWS SDK to a moto
 * server on 127.0.0.1 (RINGLAB_TEST_AWS_ENDPOINT). moto holds no EC2 quotas in Service Quotas (it answers
 * NoSuchResource), so the quota comparison is tested with a double of the quota lookup; the SDK-backed lookup is
 * still asked of moto once, to show that an unreadable quota becomes a warning instead of a failed deploy.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  preflightAws,
  QUOTA_REQUEST_URL,
  sdkEc2Lookups,
  sdkVcpuQuotas,
  vcpuQuotaFor,
  type VcpuQuotaLookup,
} from "../../../src/targets/aws/preflight.ts";
import { EXIT, PrerequisiteError, UsageError } from "../../../src/util/errors.ts";
import type { AwsTestbedSpec } from "../../../src/testbed/spec.ts";
import { startMoto, type Moto } from "./moto.ts";

const spec = (overrides: Partial<AwsTestbedSpec> = {}): AwsTestbedSpec => ({
  schema: "ringlab.testbed-spec/v1",
  target: "aws",
  name: "pf",
  nodes: 4,
  campaign: "pf",
  createdAt: "2025-03-01T10:00:00.000Z",
  workerImage: "ringlab/worker:gpu",
  region: "eu-west-1",
  availabilityZone: "eu-west-1a",
  instanceType: "g4dn.xlarge",
  ami: null,
  amiLookup: { namePattern: "x *", owner: "amazon" },
  rootVolumeGiB: 100,
  sshPublicKey: "ssh-ed25519 AAAA me",
  sshPrivateKeyFile: "/k/id",
  sshUser: "ubuntu",
  adminCidr: "203.0.113.7/32",
  allowSshFromAnywhere: false,
  sshSourceMinPrefix: 16,
  vpcCidr: "10.78.0.0/16",
  subnetCidr: "10.78.1.0/24",
  sharedStorage: "nfs",
  spot: false,
  efa: false,
  ttlHours: 8,
  expiresAt: "2025-03-01T18:00:00Z",
  tags: {},
  state: { backend: "local", path: "/state/terraform.tfstate" },
  workerImageTarball: null,
  ...overrides,
});

/** Quota values by code, as an account would hold them. */
const quotas = (values: Record<string, number>): VcpuQuotaLookup & { asked: string[] } => {
  const asked: string[] = [];
  return {
    asked,
    quota: async (code) => {
      asked.push(code);
      return code in values ? { vcpus: values[code]! } : { unreadable: "NoSuchResourceException" };
    },
  };
};

let moto: Moto;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  moto = await startMoto();
  // Only the emulator's URL: no inherited AWS_* variable can point the SDK anywhere else.
  env = { RINGLAB_TEST_AWS_ENDPOINT: moto.url };
}, 40_000);

afterAll(async () => {
  await moto?.stop();
});

describe("preflightAws", () => {
  it("passes a testbed whose zone offers the type and whose quota covers its vCPUs", async () => {
    const lookup = quotas({ "L-DB2E81BA": 16 });
    const report = await preflightAws(spec(), { env, quotas: lookup });
    expect(report).toEqual({
      vcpusNeeded: 16,
      quota: { code: "L-DB2E81BA", name: "Running On-Demand G and VT instances", vcpus: 16 },
      warnings: [],
    });
    expect(lookup.asked).toEqual(["L-DB2E81BA"]);
  });

  it("refuses an instance type the zone does not offer, with exit 2, before asking for quotas", async () => {
    const lookup = quotas({});
    // moto offers p4d.24xlarge in eu-west-1c only (its copy of the real offerings).
    const offered = await sdkEc2Lookups("eu-west-1", env).offeredInZone("p4d.24xlarge", "eu-west-1a");
    expect(offered).toBe(false);
    const error = await preflightAws(spec({ instanceType: "p4d.24xlarge" }), { env, quotas: lookup }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(EXIT.badInput);
    expect((error as Error).message).toBe("the availability zone eu-west-1a does not offer p4d.24xlarge");
    expect(lookup.asked).toEqual([]);
  });

  it("refuses a quota too small with exit 3, the vCPUs needed and where to ask for more", async () => {
    const error = await preflightAws(spec({ nodes: 10, instanceType: "g5.xlarge" }), {
      env,
      quotas: quotas({ "L-DB2E81BA": 8 }),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect((error as PrerequisiteError).exitCode).toBe(EXIT.missingPrerequisite);
    expect((error as Error).message).toBe(
      '10 × g5.xlarge need 40 vCPUs (4 each), but the account\'s quota "Running On-Demand G and VT instances" (L-DB2E81BA) in eu-west-1 is 8 vCPUs',
    );
    expect((error as PrerequisiteError).hint).toContain(
      `request at least 40 vCPUs for L-DB2E81BA in eu-west-1 at ${QUOTA_REQUEST_URL}`,
    );
  });

  it("checks spot testbeds against the spot quota of the family", async () => {
    const lookup = quotas({ "L-3819A6DF": 64, "L-DB2E81BA": 0 });
    await expect(preflightAws(spec({ spot: true }), { env, quotas: lookup })).resolves.toMatchObject({
      quota: { code: "L-3819A6DF" },
    });
    expect(vcpuQuotaFor("p3.2xlarge", false)?.code).toBe("L-417A185B");
    expect(vcpuQuotaFor("p4d.24xlarge", true)?.code).toBe("L-7212CCBC");
    expect(vcpuQuotaFor("c5n.9xlarge", false)?.code).toBe("L-1216C47A");
    expect(vcpuQuotaFor("inf2.xlarge", false)).toBeUndefined();
  });

  it("turns a quota it cannot read (moto has none) into a warning with the vCPUs needed", async () => {
    const answer = await sdkVcpuQuotas("eu-west-1", env).quota("L-DB2E81BA");
    expect(answer).toMatchObject({ unreadable: expect.stringMatching(/NoSuchResource/) });
    const report = await preflightAws(spec({ nodes: 2 }), { env });
    expect(report.vcpusNeeded).toBe(8);
    expect(report.warnings).toEqual([
      expect.stringMatching(
        /^could not read the quota "Running On-Demand G and VT instances" \(L-DB2E81BA\): .*; 8 vCPUs are needed$/,
      ),
    ]);
  });

  it("reports a missing worker image tarball with exit 2 before asking AWS anything", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-preflight-"));
    const noEc2 = {
      offeredInZone: () => Promise.reject(new Error("asked EC2")),
      vcpus: () => Promise.reject(new Error("asked EC2")),
    };
    const error = await preflightAws(spec({ workerImageTarball: join(dir, "missing.tar") }), { env, ec2: noEc2 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(
      /^workerImageTarball: cannot read .*missing\.tar; expected a `docker save` archive/,
    );
    writeFileSync(join(dir, "w.tar"), "x");
    await expect(
      preflightAws(spec({ workerImageTarball: join(dir, "w.tar") }), { env, quotas: quotas({ "L-DB2E81BA": 96 }) }),
    ).resolves.toMatchObject({ warnings: [] });
  });

  it("stops with exit 3 when EC2 cannot be asked at all", async () => {
    const unreachable = { RINGLAB_TEST_AWS_ENDPOINT: "http://127.0.0.1:9" };
    const error = await preflightAws(spec(), { env: unreachable, quotas: quotas({}), callTimeoutMs: 5_000 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PrerequisiteError);
    expect((error as Error).message).toMatch(/^cannot ask EC2 in eu-west-1 about g4dn\.xlarge: /);
  });
});

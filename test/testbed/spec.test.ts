import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseCampaign } from "../../src/config/load.ts";
import { UsageError } from "../../src/util/errors.ts";
import { expiresAt } from "../../src/targets/aws/target.ts";
import { readSpec, resolveTestbedSpec, writeSpec } from "../../src/testbed/spec.ts";

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2 me@host";
const CREATED = new Date("2025-03-01T10:00:00Z");

function specOf(text: string) {
  return resolveTestbedSpec(parseCampaign(text, "/c/scaling.yaml").testbed, {
    campaign: "scaling",
    testbedDir: "/state/testbeds/tb",
    createdAt: CREATED,
  });
}

describe("testbed spec", () => {
  it("resolves an AWS testbed into one flat record: key text, zone, expiry, state in the testbed's folder", () => {
    const spec = specOf(
      `testbed: {target: aws, name: tb, nodes: 2, adminCidr: 203.0.113.7/32, sshPublicKey: "${KEY}", sshPrivateKeyFile: /k/id, ttlHours: 8}\n`,
    );
    expect(spec).toMatchObject({
      schema: "ringlab.testbed-spec/v1",
      target: "aws",
      name: "tb",
      nodes: 2,
      campaign: "scaling",
      region: "us-east-1",
      availabilityZone: "us-east-1a",
      instanceType: "g4dn.xlarge",
      ami: null,
      sshPublicKey: KEY,
      sshPrivateKeyFile: "/k/id",
      createdAt: "2025-03-01T10:00:00.000Z",
      expiresAt: "2025-03-01T18:00:00Z",
      state: { backend: "local", path: "/state/testbeds/tb/terraform.tfstate" },
      workerImageTarball: null,
    });
  });

  it("gives an S3 state the testbed's region unless it names one", () => {
    const spec =
      specOf(`testbed: {target: aws, name: tb, nodes: 1, region: eu-west-1, adminCidr: 203.0.113.7/32, sshPublicKey: "${KEY}",
      sshPrivateKeyFile: /k/id, state: {backend: s3, bucket: ringlab-state, key: k}}\n`);
    expect(spec.target === "aws" && spec.state).toEqual({
      backend: "s3",
      bucket: "ringlab-state",
      key: "k",
      region: "eu-west-1",
    });
  });

  it("resolves a local testbed's shared directory into the testbed's folder by default", () => {
    expect(specOf("testbed: {target: local, name: tb, nodes: 3}\n")).toMatchObject({
      target: "local",
      subnet: "10.77.0.0/24",
      sharedDir: "/state/testbeds/tb/shared",
      workerImage: "ringlab/worker:cpu",
    });
  });

  it("round-trips through its file, and a file of another shape is refused naming the field", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-spec-"));
    const spec = specOf("testbed: {target: local, name: tb, nodes: 3}\n");
    writeSpec(join(dir, "spec.json"), spec);
    expect(readSpec(join(dir, "spec.json"))).toEqual(spec);
    writeFileSync(join(dir, "bad.json"), JSON.stringify({ ...spec, nodes: "three" }));
    expect(() => readSpec(join(dir, "bad.json"))).toThrow(/bad\.json: nodes: .*ringlab\.testbed-spec\/v1/);
    expect(() => readSpec(join(dir, "missing.json"))).toThrow(UsageError);
    writeFileSync(join(dir, "truncated.json"), '{"schema":');
    expect(() => readSpec(join(dir, "truncated.json"))).toThrow(UsageError);
  });

  it("says when the ringlab:expires-at time falls, in UTC to the second, for fractional hours too", () => {
    expect(expiresAt(new Date("2025-12-31T23:30:00.123+02:00"), 1.5)).toBe("2025-12-31T23:00:00Z");
  });
});

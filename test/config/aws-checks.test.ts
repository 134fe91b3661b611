/** The campaign file's AWS rules that keep a paid run from measuring something else than it says. */
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkShapedRate, gpuTypesSustaining } from "../../src/catalogue/aws-instance-types.ts";
import { loadCampaignFile, parseCampaign } from "../../src/config/load.ts";
import { ConfigError, EXIT } from "../../src/util/errors.ts";

const PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2Jm3ZpG5a0xV8y3Qb1ZrjQ5k6m0z2b7Vt3nq2XaBc test@ringlab";

const campaignText = (testbed: string, matrix: string) => `
testbed: {target: aws, name: s, nodes: 4, adminCidr: 203.0.113.7/32, sshPublicKey: "${PUBLIC_KEY}", ${testbed}}
campaign: {matrix: {${matrix}}}
`;

function problemsOf(text: string): string[] {
  try {
    parseCampaign(text, "c.yaml");
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
  }
  throw new Error("expected the campaign to be rejected");
}

describe("shaped rates and the instance type's sustained bandwidth", () => {
  it("refuses a rate above the type's baseline, naming the burst and the types that sustain it", () => {
    const problems = problemsOf(
      campaignText(
        "instanceType: g4dn.xlarge",
        "nodes: [1, 2], model: resnet50, batchSize: 32, bandwidth: [1gbit, 10gbit]",
      ),
    );
    expect(problems).toEqual([
      "campaign.matrix.bandwidth: found 10gbit, above the 5 Gbit/s that g4dn.xlarge sustains (it bursts to 25 Gbit/s only until " +
        "its network credits run out, then drops back), so the runs would measure the instance, not 10gbit; use an instance type " +
        "that sustains it (g4dn.2xlarge, g4dn.4xlarge, g5.4xlarge, g6.8xlarge, g4dn.8xlarge, ...) or a lower rate",
    ]);
  });

  it("accepts rates the type sustains, unlimited, single-node campaigns and types it does not know", () => {
    expect(() =>
      parseCampaign(
        campaignText(
          "instanceType: g4dn.xlarge",
          "nodes: 2, model: resnet50, batchSize: 32, bandwidth: [5gbit, unlimited]",
        ),
        "c.yaml",
      ),
    ).not.toThrow();
    expect(() =>
      parseCampaign(
        campaignText("instanceType: g4dn.2xlarge", "nodes: 2, model: resnet50, batchSize: 32, bandwidth: 10gbit"),
        "c.yaml",
      ),
    ).not.toThrow();
    expect(() =>
      parseCampaign(
        campaignText("instanceType: g4dn.xlarge", "nodes: 1, model: resnet50, batchSize: 32, bandwidth: 10gbit"),
        "c.yaml",
      ),
    ).not.toThrow();
    expect(() =>
      parseCampaign(
        campaignText("instanceType: x9.large", "nodes: 2, model: resnet50, batchSize: 32, bandwidth: 100gbit"),
        "c.yaml",
      ),
    ).not.toThrow();
  });

  it("refuses more processes per node than the instance type has GPUs", () => {
    expect(
      problemsOf(
        campaignText(
          "instanceType: g4dn.xlarge",
          "nodes: 2, processesPerNode: [1, 2], model: resnet50, batchSize: 32, bandwidth: 1gbit",
        ),
      ),
    ).toEqual([
      "campaign.matrix.processesPerNode: found 2, but g4dn.xlarge has 1 GPU: use at most 1 process per node, or an instance type with more GPUs",
    ]);
    expect(() =>
      parseCampaign(
        campaignText(
          "instanceType: g4dn.12xlarge",
          "nodes: 2, processesPerNode: [1, 2, 4], model: resnet50, batchSize: 32, bandwidth: 1gbit",
        ),
        "c.yaml",
      ),
    ).not.toThrow();
  });

  it("suggests only GPU types, cheapest first, each sustaining the rate", () => {
    const types = gpuTypesSustaining(10);
    expect(types[0]).toBe("g4dn.2xlarge");
    expect(types).not.toContain("c5n.9xlarge");
    expect(types).not.toContain("g5.xlarge");
    expect(checkShapedRate("g5.xlarge", "3gbit", 3)).toMatch(/above the 2\.5 Gbit\/s that g5\.xlarge sustains/);
    expect(checkShapedRate("g4dn.8xlarge", "50gbit", 50)).toBeUndefined();
  });
});

describe("EFA and tc shaping", () => {
  it("refuses efa with a shaped rate, explaining that EFA traffic bypasses tc", () => {
    const problems = problemsOf(
      campaignText(
        "instanceType: g5.8xlarge, efa: true",
        "nodes: [1, 2], model: resnet50, batchSize: 32, bandwidth: [unlimited, 10gbit]",
      ),
    );
    expect(problems).toEqual([
      expect.stringMatching(
        /^testbed\.efa: found true with a shaped bandwidth: NCCL over EFA bypasses the kernel's network stack .* set every bandwidth to unlimited to measure EFA$/,
      ),
    ]);
  });

  it("accepts efa when every bandwidth is unlimited", () => {
    expect(() =>
      parseCampaign(
        campaignText(
          "instanceType: g5.8xlarge, efa: true",
          "nodes: 2, model: resnet50, batchSize: 32, bandwidth: unlimited",
        ),
        "c.yaml",
      ),
    ).not.toThrow();
  });
});

describe("the worker image tarball", () => {
  it("is reported at load, with exit 2, when it does not exist or is not a file", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-tarball-"));
    const file = join(dir, "c.yaml");
    mkdirSync(join(dir, "a-directory.tar"));
    for (const [tarball, expected] of [
      ["missing.tar", /^cannot read .*missing\.tar; expected a `docker save` archive/],
      ["a-directory.tar", /a-directory\.tar is not a file/],
    ] as const) {
      writeFileSync(
        file,
        `testbed: {target: aws, name: s, nodes: 2, adminCidr: 203.0.113.7/32, sshPublicKey: "${PUBLIC_KEY}", workerImageTarball: ${tarball}}\n`,
      );
      const error = (() => {
        try {
          loadCampaignFile(file);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).exitCode).toBe(EXIT.badInput);
      expect((error as ConfigError).problems).toEqual([
        { path: "testbed.workerImageTarball", message: expect.stringMatching(expected) },
      ]);
    }
  });

  it("is resolved beside the campaign file, and only checked when the testbed is to be provisioned", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-tarball-"));
    const file = join(dir, "c.yaml");
    writeFileSync(
      file,
      `testbed: {target: aws, name: s, nodes: 2, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub, workerImageTarball: w.tar}\n`,
    );
    // `ringlab plan` reads no keys and needs no tarball yet.
    expect(loadCampaignFile(file, { readKeys: false }).testbed).toMatchObject({
      workerImageTarball: join(dir, "w.tar"),
    });
    writeFileSync(join(dir, "w.tar"), "archive");
    writeFileSync(join(dir, "id.pub"), `${PUBLIC_KEY}\n`);
    expect(loadCampaignFile(file).testbed).toMatchObject({ workerImageTarball: join(dir, "w.tar") });
  });
});

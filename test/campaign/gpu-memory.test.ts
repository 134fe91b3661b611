/** Whether training runs fit one GPU, and the seed campaign planned with none that does not. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { checkGpuMemory, trainingMemoryGiB, usableGpuMemoryGiB } from "../../src/campaign/gpu-memory.ts";
import { planCampaign } from "../../src/campaign/plan.ts";
import { loadCampaignFile, parseCampaign } from "../../src/config/load.ts";
import { MODEL_KIND, MODELS } from "../../src/config/registry.ts";

const BIN = resolve("src/bin/ringlab.mjs");
const T4 = usableGpuMemoryGiB(16);
const A100_80 = usableGpuMemoryGiB(80);

const awsCampaign = (instanceType: string, matrix: string, train = "{}") =>
  parseCampaign(
    `
testbed: {target: aws, name: s, nodes: 2, instanceType: ${instanceType}, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub}
campaign: {matrix: {${matrix}}, train: ${train}, probe: {enabled: false}}
`,
    "c.yaml",
    "/c/c.yaml",
    { readKeys: false },
  );

describe("training memory of one GPU", () => {
  it("agrees with what is known to fit and known not to", () => {
    // ResNet-50 at batch 64 in fp32 trains on 12-16 GB cards; batch 256 in fp32 does not fit 16 GB.
    expect(trainingMemoryGiB("resnet50", 64, "fp32")).toBeLessThan(T4);
    expect(trainingMemoryGiB("resnet50", 256, "fp32")).toBeGreaterThan(T4);
    expect(trainingMemoryGiB("resnet50", 256, "amp")).toBeLessThan(A100_80);
    // The seed experiment's largest configuration: too big for a T4 in fp32, fits in amp.
    expect(trainingMemoryGiB("resnet101", 96, "fp32")).toBeGreaterThan(T4);
    expect(trainingMemoryGiB("resnet101", 96, "amp")).toBeLessThan(T4);
    expect(trainingMemoryGiB("inception_v3", 96, "amp")).toBeLessThan(T4);
  });

  it("grows with batch size and image size, and amp needs less than fp32", () => {
    expect(trainingMemoryGiB("resnet152", 64, "fp32")).toBeGreaterThan(trainingMemoryGiB("resnet152", 32, "fp32"));
    expect(trainingMemoryGiB("resnet50", 32, "fp32", 448)).toBeGreaterThan(
      3 * (trainingMemoryGiB("resnet50", 32, "fp32") - 1.5),
    );
    for (const model of ["resnet50", "resnet101", "resnet152", "inception_v3"] as const) {
      expect(trainingMemoryGiB(model, 64, "amp"), model).toBeLessThan(trainingMemoryGiB(model, 64, "fp32"));
    }
  });

  it("flags each configuration that does not fit once, with what to change", () => {
    const file = awsCampaign(
      "g4dn.2xlarge",
      "nodes: [1, 2], model: [resnet101, resnet50], batchSize: [32, 96], bandwidth: 1gbit",
    );
    expect(checkGpuMemory(planCampaign(file, "c"), file)).toEqual([
      expect.stringMatching(
        /^resnet101 at batch 96 in fp32 needs about \d+\.\d GiB of GPU memory, more than the 14\.9 GiB of one NVIDIA T4 \(g4dn\.2xlarge\); use precision amp, a smaller batch size, or an instance type with more GPU memory$/,
      ),
    ]);
    const amp = awsCampaign(
      "g4dn.2xlarge",
      "nodes: [1, 2], model: [resnet101, resnet50], batchSize: [32, 96], bandwidth: 1gbit",
      "{precision: amp}",
    );
    expect(checkGpuMemory(planCampaign(amp, "c"), amp)).toEqual([]);
    const bigGpu = awsCampaign("g6e.xlarge", "nodes: 2, model: resnet101, batchSize: 96, bandwidth: 1gbit");
    expect(checkGpuMemory(planCampaign(bigGpu, "c"), bigGpu)).toEqual([]);
  });

  // Issue #51: the check skipped any model missing from its own activation table, without a word; now every image
  // model's figure is the registry's, required there, and only language models are left to their memory model.
  it.each(MODELS.filter((model) => MODEL_KIND[model] === "image"))(
    "checks %s at a batch no GPU holds and flags it",
    (model) => {
      const file = awsCampaign("g4dn.xlarge", `nodes: 1, model: ${model}, batchSize: 100000, bandwidth: 1gbit`);
      expect(checkGpuMemory(planCampaign(file, "c"), file)).toEqual([
        expect.stringMatching(new RegExp(`^${model} at batch 100000 in fp32 needs about `)),
      ]);
    },
  );

  it("checks nothing on the local testbed, which trains on CPUs", () => {
    const local = parseCampaign(
      "testbed: {target: local, name: l, nodes: 2}\ncampaign: {matrix: {nodes: 2, model: resnet152, batchSize: 512, bandwidth: 1gbit}}\n",
      "l.yaml",
    );
    expect(checkGpuMemory(planCampaign(local, "l"), local)).toEqual([]);
  });
});

describe("campaigns/aws-seed.yaml", () => {
  const seed = loadCampaignFile("campaigns/aws-seed.yaml", { readKeys: false });

  it("plans with zero problems: every shaped rate sustained, every batch within the GPU's memory", () => {
    // Loading applies the schema's rules (rates against the instance's baseline, EFA and shaping).
    expect(seed.testbed.target).toBe("aws");
    expect(checkGpuMemory(planCampaign(seed, "aws-seed"), seed)).toEqual([]);
    const result = spawnSync(
      process.execPath,
      [BIN, "--state-dir", mkdtempSync(join(tmpdir(), "ringlab-plan-")), "plan", "campaigns/aws-seed.yaml"],
      { encoding: "utf8" },
    );
    expect(result.stderr).not.toMatch(/problem:/);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^worker image: built on every node on NVIDIA's PyTorch base/m);
    expect(result.stdout).toMatch(/^estimated cost: \$\d+\.\d\d \(\d+\.\d instance-hours at \$1\.204 on demand\)$/m);
  });

  it("`ringlab plan` exits 2 naming the configuration when a batch does not fit", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-plan-"));
    const file = join(dir, "fp32.yaml");
    writeFileSync(
      file,
      `testbed: {target: aws, name: s, nodes: 2, instanceType: g4dn.4xlarge, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub}
campaign: {matrix: {nodes: 2, model: resnet101, batchSize: 96, bandwidth: 10gbit}}
`,
    );
    const result = spawnSync(process.execPath, [BIN, "--state-dir", dir, "plan", file], { encoding: "utf8" });
    expect(result.status).toBe(2);
    expect(result.stdout).toMatch(/^estimated duration: /m);
    expect(result.stderr).toMatch(/^problem: resnet101 at batch 96 in fp32 needs about/m);
  });
});

/**
 * `ringlab predict --cluster` as a user runs it: the real CLI on the real catalogue (src/catalogue/clusters/).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const BIN = resolve("src/bin/ringlab.mjs");

function ringlab(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [BIN, "predict", ...args], { encoding: "utf8" });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("ringlab predict --cluster", () => {
  it("ranks the tp × pp × dp layouts that fit on 16 p5.48xlarge for Llama 3.1 8B, with memory and step", () => {
    const { status, stdout } = ringlab(
      "--cluster",
      "p5.48xlarge",
      "--nodes",
      "16",
      "--model",
      "llama3.1-8b",
      "--recommend",
    );
    expect(status).toBe(0);
    const rows = stdout.split("\n").filter((line) => line.startsWith("tp "));
    expect(rows.length).toBeGreaterThan(5);
    const perGpu = rows.map((row) => Number(row.split(/\s{2,}/)[3]));
    expect(perGpu).toEqual([...perGpu].sort((a, b) => b - a));
    for (const row of rows) expect(Number(row.split(/\s{2,}/)[1])).toBeLessThanOrEqual(80);
    expect(stdout).toMatch(/\d+ more layouts do not fit/);
    expect(stdout).toContain("source: compute (published efficiency)");
  });

  it("answers for one node of 8 GPUs, and says which compute figure it used", () => {
    const derived = ringlab("--cluster", "p5.48xlarge", "--model", "llama3.1-8b", "--batch", "2");
    expect(derived.status).toBe(0);
    expect(derived.stdout).toContain("tp 1 × pp 1 × dp 8, ZeRO-3");
    expect(derived.stdout).toContain("compute published efficiency");
    const measured = ringlab("--cluster", "p5.48xlarge", "--model", "llama3.1-8b", "--gpu-throughput", "5000");
    expect(measured.status).toBe(0);
    expect(measured.stdout).toContain("compute measured");
    expect(measured.stdout).toContain("5000 tokens/s (--gpu-throughput)");
  });

  it("sizes a language model with AdamW unless --optimizer names another (sgd is the CPU testbed's default)", () => {
    const peak = (...optimizer: string[]) => {
      const { status, stdout } = ringlab(
        ...["--cluster", "p5.48xlarge", "--model", "llama3.1-8b", "--dp", "8", "--format", "json", ...optimizer],
      );
      expect(status).toBe(0);
      return (JSON.parse(stdout) as { points: { peakBytesPerGpu: number }[] }).points[0]!.peakBytesPerGpu;
    };
    const [given, adamw, sgd] = [peak(), peak("--optimizer", "adamw"), peak("--optimizer", "sgd")];
    expect(given).toBe(adamw);
    // AdamW's two fp32 moments of the 8.03 G parameters, sharded over 8 GPUs: 8 bytes a parameter / 8.
    expect((adamw - sgd) / 8.03e9).toBeCloseTo(1, 1);
  });

  it("refuses degrees whose product is not the GPU count, naming the option (exit 2)", () => {
    const { status, stderr } = ringlab(
      "--cluster",
      "p5.48xlarge",
      "--nodes",
      "2",
      "--model",
      "llama3.1-8b",
      "--tp",
      "4",
      "--dp",
      "3",
    );
    expect(status).toBe(2);
    // src/layouts/composition.ts's rule and words, which say what dp would fill the GPUs.
    expect(stderr).toContain(
      "error: --dp: tp 4 × cp 1 × pp 1 × dp 3 = 12 ranks, but the cluster has 16 GPUs (2 nodes × 8): the degrees must multiply to the GPU count; with tp 4 × cp 1 × pp 1, dp 4 fills it",
    );
  });

  it("refuses tp wider than a node unless told so", () => {
    const refused = ringlab("--cluster", "p5.48xlarge", "--nodes", "2", "--model", "llama3.1-8b", "--tp", "16");
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(
      "error: --tp: tp 16 is larger than a node's 8 GPUs: its collectives on every block would cross the network; keep tp at most 8, or set allowCrossNodeTensor (predict --cluster's --allow-cross-node-tensor) to mean it",
    );
    const allowed = ringlab(
      "--cluster",
      "p5.48xlarge",
      "--nodes",
      "2",
      "--model",
      "llama3.1-8b",
      "--tp",
      "16",
      "--allow-cross-node-tensor",
    );
    expect(allowed.status).toBe(0);
    // The group spans both nodes: 8 of its ranks on each.
    expect(allowed.stdout).toMatch(/tensor-parallel all-gather\s+16 \(8 a node\)/);
  });

  it("refuses a cluster file whose NIC rate is the node's where the catalogue has one NIC per GPU", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-cluster-"));
    const file = join(dir, "my-p5.yaml");
    writeFileSync(
      file,
      [
        "name: p5.48xlarge",
        "gpu: h100-sxm5-80gb",
        'gpusPerNode: {value: 8, source: "AWS"}',
        'intraNode: {kind: nvswitch, gbPerSecondPerGpuPerDirection: 450, source: "NVIDIA"}',
        'nics: {count: 1, gbitPerNic: 3200, perGpu: false, kind: EFA, source: "AWS: 3200 Gbps"}',
        'network: {topology: fat-tree, oversubscription: 1, source: "assumed"}',
      ].join("\n"),
    );
    const { status, stderr } = ringlab("--cluster", file, "--nodes", "2", "--model", "llama3.1-8b");
    expect(status).toBe(2);
    expect(stderr).toContain("nics.perGpu: found false");
    expect(stderr).toContain("3200 Gbit/s is the node's total, not one card's");
  });

  it("refuses --bandwidth beside --cluster, whose NICs set the link", () => {
    const { status, stderr } = ringlab("--cluster", "p5.48xlarge", "--model", "llama3.1-8b", "--bandwidth", "400gbit");
    expect(status).toBe(2);
    expect(stderr).toContain("--bandwidth with --cluster");
  });
});

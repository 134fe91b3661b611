import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { collectiveTime, tierShares, type GroupCollective } from "../../src/cluster/collectives.ts";
import { computeOnGpu } from "../../src/cluster/compute.ts";
import { deviceNetworkGBps, type Cluster } from "../../src/cluster/description.ts";
import { clusterCatalogue, loadClusterFile, readCatalogue } from "../../src/cluster/load.ts";
import { predictClusterStep, stepCollectives, type ClusterQuestion } from "../../src/cluster/step.ts";
import { awsNodeType, localTestbedCluster } from "../../src/cluster/testbeds.ts";
import { ConfigError, EXIT } from "../../src/util/errors.ts";

const FIXTURES = fileURLToPath(new URL("catalogue/", import.meta.url));
const catalogue = readCatalogue(FIXTURES);
const published = {
  rows: catalogue.collectives,
  nodeTypes: new Map([...catalogue.nodes].map(([name, entry]) => [name, entry.type])),
};
const railsNode = catalogue.nodes.get("rails-h100")!.type;
const sharedNode = catalogue.nodes.get("shared-nic-h100")!.type;

function clusterFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "ringlab-cluster-"));
  const path = join(dir, "mine.yaml");
  writeFileSync(path, text);
  return path;
}

function problemsOf(action: () => unknown): { file: string; paths: string[]; messages: string } {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const configError = error as ConfigError;
    expect(configError.exitCode).toBe(EXIT.badInput);
    return {
      file: configError.file,
      paths: configError.problems.map((problem) => problem.path),
      messages: configError.message,
    };
  }
  throw new Error("expected a ConfigError");
}

const RAILS_FILE = `
name: rails-h100
gpu: h100-sxm5-80gb
gpusPerNode: {value: 8, source: "my rack's inventory"}
intraNode: {kind: nvswitch, gbPerSecondPerGpuPerDirection: 450, source: "NVIDIA H100 datasheet"}
nics: {count: 32, gbitPerNic: 100, perGpu: true, kind: EFA, source: "my rack's inventory"}
network: {topology: fat-tree, oversubscription: 1, source: "assumed: non-blocking"}
`;

describe("a cluster file", () => {
  it("reads the catalogue's format, its GPU by the catalogue's name", () => {
    const node = loadClusterFile(clusterFile(RAILS_FILE), "mine.yaml", catalogue);
    expect(node.device.kind === "gpu" && node.device.gpu.denseTflops.bf16?.value).toBe(989.4);
    expect(node.nics).toMatchObject({ count: 32, gbitPerNic: 100, perGpu: true });
  });

  it("refuses a figure without its source, naming the file and the field (exit 2)", () => {
    const text = RAILS_FILE.replace(
      `gbPerSecondPerGpuPerDirection: 450, source: "NVIDIA H100 datasheet"`,
      "gbPerSecondPerGpuPerDirection: 450",
    );
    const { file, paths, messages } = problemsOf(() => loadClusterFile(clusterFile(text), "mine.yaml", catalogue));
    expect(file).toBe("mine.yaml");
    expect(paths).toEqual(["intraNode.source"]);
    expect(messages).toContain("where the figure comes from");
  });

  it("refuses a NIC rate given for the whole node where the catalogue has one NIC per GPU", () => {
    const text = RAILS_FILE.replace(
      "count: 32, gbitPerNic: 100, perGpu: true",
      "count: 1, gbitPerNic: 3200, perGpu: false",
    );
    const { paths, messages } = problemsOf(() => loadClusterFile(clusterFile(text), "mine.yaml", catalogue));
    expect(paths).toEqual(["nics.perGpu"]);
    expect(messages).toContain("3200 Gbit/s is the node's total, not one card's");
    expect(messages).toContain("write count: 32, gbitPerNic: 100, perGpu: true");
  });

  it("refuses a GPU the catalogue does not have, and an unknown field, each at its path", () => {
    const text = `${RAILS_FILE.replace("gpu: h100-sxm5-80gb", "gpu: h900")}\nnicz: 3\n`;
    const { paths } = problemsOf(() => loadClusterFile(clusterFile(text), "mine.yaml", catalogue));
    expect(paths).toEqual(["nicz"]);
    const { paths: gpuPaths } = problemsOf(() =>
      loadClusterFile(clusterFile(RAILS_FILE.replace("gpu: h100-sxm5-80gb", "gpu: h900")), "mine.yaml", catalogue),
    );
    expect(gpuPaths).toEqual(["gpu"]);
  });
});

describe("the network a GPU gets", () => {
  it("is its own rail where the NICs are one per GPU, whoever else sends", () => {
    expect(deviceNetworkGBps(railsNode, 8)).toBe(50);
    expect(deviceNetworkGBps(railsNode, 1)).toBe(50);
  });

  it("is a share of the node's card where the GPUs share it", () => {
    expect(deviceNetworkGBps(sharedNode, 8)).toBeCloseTo(12.5 / 8);
    expect(deviceNetworkGBps(sharedNode, 1)).toBeCloseTo(12.5);
  });
});

describe("a collective on the hierarchy", () => {
  const cluster: Cluster = { node: railsNode, nodes: 16 };
  const shares = tierShares(railsNode, published, 16);
  const allReduce = (span: { ranks: number; ranksPerNode: number }): GroupCollective => ({
    label: "test",
    op: "all_reduce",
    bytesPerCall: 2 ** 30,
    calls: 1,
    span,
    overlap: "backward",
  });

  it("reads each tier's share from the published rows, ring rather than NVLink SHARP", () => {
    expect(shares.intraNode.value).toBeCloseTo(0.8);
    expect(shares.interNode.value).toBeCloseTo(0.9);
  });

  it("stays on the node's fabric for a group inside one node", () => {
    const time = collectiveTime(allReduce({ ranks: 8, ranksPerNode: 8 }), cluster, shares);
    expect(time.bottleneck).toBe("intra-node");
    // 2 (n - 1)/n S over 360 GB/s, plus NCCL's ring latency (8.4 + 14 x 3.4 µs).
    expect(time.seconds).toBeCloseTo((1.75 * 2 ** 30) / 360e9 + (8.4 + 14 * 3.4) * 1e-6, 6);
  });

  it("goes through its ranks' rails between nodes: one rank a node gets one rail", () => {
    const oneRankANode = collectiveTime(allReduce({ ranks: 16, ranksPerNode: 1 }), cluster, shares);
    const eightRanksANode = collectiveTime(allReduce({ ranks: 128, ranksPerNode: 8 }), cluster, shares);
    expect(oneRankANode.bottleneck).toBe("inter-node");
    // One rail: 50 GB/s at 90 %; eight rails: eight times that, so the fabric inside the node sets the pace.
    expect(oneRankANode.seconds).toBeGreaterThan((1.875 * 2 ** 30) / (50e9 * 0.9));
    expect(eightRanksANode.seconds).toBeLessThan(oneRankANode.seconds / 4);
  });
});

describe("a step on a GPU cluster", () => {
  const question = (overrides: Partial<ClusterQuestion> = {}): ClusterQuestion => ({
    cluster: { node: railsNode, nodes: 2 },
    workload: {
      kind: "language",
      width: 4096,
      layers: 32,
      kvWidth: 1024,
      ffnWidth: 14336,
      sequence: 8192,
      parameters: 8.03e9,
      flopsPerToken: 6 * 8.03e9 + 12 * 32 * 4096 * 8192,
      activationCheckpointing: "selective",
    },
    layout: {
      tp: 1,
      pp: 1,
      cp: 1,
      dp: 16,
      dpSharding: "full",
      pipelineSchedule: "1f1b",
      virtualStages: 1,
      microBatches: 1,
    },
    microSamples: 2,
    gradientAccumulation: 1,
    precision: "bf16",
    optimizer: "adamw",
    published,
    ...overrides,
  });

  it("lies between its no-overlap and full-overlap bounds", () => {
    const prediction = predictClusterStep(question());
    if ("missing" in prediction) throw new Error(prediction.missing);
    expect(prediction.perGpu.noOverlap).toBeLessThan(prediction.perGpu.predicted);
    expect(prediction.perGpu.predicted).toBeLessThanOrEqual(prediction.perGpu.fullOverlap);
    expect(prediction.computeBasis).toBe("published efficiency");
    expect(prediction.sources.compute).toContain("mosaicml/llm-foundry");
  });

  it("charges tensor parallelism's collectives in full and looks its GEMMs up at width / tp", () => {
    const layout = { ...question().layout, tp: 8, dp: 2 };
    const prediction = predictClusterStep(question({ layout }));
    if ("missing" in prediction) throw new Error(prediction.missing);
    const tensor = prediction.collectives.filter((collective) => collective.label.startsWith("tensor-parallel"));
    expect(tensor.length).toBe(2);
    for (const collective of tensor) {
      expect(collective.span).toEqual({ ranks: 8, ranksPerNode: 8 });
      expect(collective.exposedSeconds).toBe(collective.seconds);
    }
    expect(prediction.sources.compute).toContain("for width 512 (4096 / tp 8)");
  });

  it("places each group where composition.ts's mesh puts it: tensor inside a node, data parallel and stages across", () => {
    const spans = (layout: Partial<ClusterQuestion["layout"]>, nodes: number) =>
      Object.fromEntries(
        stepCollectives(
          question({ cluster: { node: railsNode, nodes }, layout: { ...question().layout, ...layout } }),
        ).map((collective) => [collective.label.split(" ")[0], collective.span]),
      );
    // tp 8 fills a node; its 16 replicas are one a node.
    expect(spans({ tp: 8, dp: 16 }, 16)).toMatchObject({
      "tensor-parallel": { ranks: 8, ranksPerNode: 8 },
      FSDP: { ranks: 16, ranksPerNode: 1 },
    });
    // tp 2: four replicas share each node's links.
    expect(spans({ tp: 2, dp: 32 }, 8)).toMatchObject({ FSDP: { ranks: 32, ranksPerNode: 4 } });
    // Context parallelism lies inside the data-parallel dimension: FSDP shards over both (torchtitan's dp_shard_cp).
    expect(spans({ tp: 2, cp: 2, dp: 8 }, 4)).toMatchObject({
      FSDP: { ranks: 16, ranksPerNode: 4 },
      "context-parallel": { ranks: 2, ranksPerNode: 2 },
    });
    // A stage of 16 ranks fills two nodes: each boundary's sends cross; stages of 4 leave two on a node.
    const pipeline = { pp: 4, microBatches: 4, dpSharding: "none" } as const;
    expect(spans({ ...pipeline, tp: 8, dp: 2 }, 8)).toMatchObject({ pipeline: { ranks: 2, ranksPerNode: 1 } });
    expect(spans({ ...pipeline, tp: 2, dp: 2 }, 2)).toMatchObject({ pipeline: { ranks: 2, ranksPerNode: 2 } });
  });

  it("takes a measured single-GPU throughput over the derived one, and says so", () => {
    const measured = { samplesPerSecond: 5000, unit: "tokens/s", source: "one rented H100, an hour" };
    const prediction = predictClusterStep(question({ measured }));
    if ("missing" in prediction) throw new Error(prediction.missing);
    expect(prediction.computeBasis).toBe("measured");
    expect(prediction.sources.compute).toContain("one rented H100, an hour");
    expect(prediction.computeSeconds).toBeCloseTo((2 * 8192) / 5000);
  });

  it("says what is missing for a GPU without published efficiency", () => {
    const gpu = { ...(railsNode.device.kind === "gpu" ? railsNode.device.gpu : undefined)!, key: "b300" };
    const answer = computeOnGpu({
      gpu,
      precision: "bf16",
      workload: question().workload as Parameters<typeof computeOnGpu>[0]["workload"],
      tensorParallel: 1,
      samplesPerGpu: 2,
      optimizerParameters: 1e9,
      optimizer: "adamw",
    });
    expect("missing" in answer && answer.missing).toContain("--gpu-throughput");
  });
});

describe("a local testbed's cluster", () => {
  it("is CPU nodes on its shaped link", () => {
    const cluster = localTestbedCluster({ nodes: 3, processesPerNode: 1, bandwidth: "300mbit" })!;
    expect(cluster.node.device.kind).toBe("cpu");
    expect(cluster.node.nics.gbitPerNic).toBeCloseTo(0.3);
    expect(localTestbedCluster({ nodes: 3, processesPerNode: 1, bandwidth: "unlimited" })).toBeUndefined();
  });
});

describe("the catalogue (src/catalogue/clusters/)", () => {
  const real = clusterCatalogue();

  it("reads every GPU, node type and published bus bandwidth through the one loader", () => {
    expect(real.gpus.size).toBeGreaterThanOrEqual(11);
    expect(real.nodes.size).toBeGreaterThanOrEqual(21);
    expect(real.collectives.length).toBeGreaterThan(0);
    for (const [name, { type }] of real.nodes) expect(type.devicesPerNode.value, name).toBeGreaterThan(0);
  });

  it("gives an AWS testbed its instance type's node: the catalogue's entry, else the instance catalogue's figures, said so", () => {
    const p5 = awsNodeType("p5.48xlarge", real);
    expect("missing" in p5 ? p5.missing : p5.nics).toMatchObject({ count: 32, gbitPerNic: 100, perGpu: true });
    const p3 = awsNodeType("p3.16xlarge", real);
    if ("missing" in p3) throw new Error(p3.missing);
    expect(p3.devicesPerNode.value).toBe(8);
    expect(p3.nics).toMatchObject({ count: 1, gbitPerNic: 25, perGpu: false });
    expect(p3.intraNode.source).toMatch(/^assumed: /);
    const g4dn = awsNodeType("g4dn.12xlarge", real);
    expect("missing" in g4dn && g4dn.missing).toContain("no entry in src/catalogue/clusters/gpus/");
  });
});

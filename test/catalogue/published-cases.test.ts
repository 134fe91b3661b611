import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { AWS_INSTANCE_TYPES, instanceTypeFacts } from "../../src/catalogue/aws-instance-types.ts";

// The cluster catalogue (src/catalogue/clusters/) and the published set (test/bench/data/published/): data only, read
// by the model's authors. These tests hold what docs/published.md promises of every file: it parses, uses only the
// fields of its format, gives a source for every figure, and names catalogue entries that exist.

const ROOT = join(import.meta.dirname, "..", "..");
const CATALOGUE = join(ROOT, "src", "catalogue", "clusters");
const PUBLISHED = join(ROOT, "test", "bench", "data", "published");

type Yaml = Record<string, unknown>;
const isObject = (value: unknown): value is Yaml =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const yamlFiles = (folder: string) =>
  readdirSync(folder)
    .filter((name) => name.endsWith(".yaml"))
    .sort()
    .map((name) => join(folder, name));
const read = (file: string): Yaml => {
  const parsed = load(readFileSync(file, "utf8"));
  if (!isObject(parsed)) throw new Error(`${file}: not a YAML mapping`);
  return parsed;
};
const nameOf = (file: string) => basename(file, ".yaml");

const gpuFiles = yamlFiles(join(CATALOGUE, "gpus"));
const nodeFiles = yamlFiles(join(CATALOGUE, "nodes"));
const caseFiles = yamlFiles(PUBLISHED);
const ownClusterFiles = yamlFiles(join(PUBLISHED, "clusters"));
const gpuNames = new Set(gpuFiles.map(nameOf));
const nodeNames = new Set(nodeFiles.map(nameOf));

/** Field paths (dotted) that no pattern in `allowed` matches (a pattern's `*` matches any one key). */
function unknownFields(value: unknown, allowed: ReadonlySet<string>, at: readonly string[] = []): string[] {
  if (!isObject(value)) return [];
  const patterns = [...allowed].map((pattern) => pattern.split("."));
  const matches = (path: readonly string[]) =>
    patterns.some(
      (pattern) => pattern.length === path.length && pattern.every((part, i) => part === "*" || part === path[i]),
    );
  return Object.entries(value).flatMap(([key, inner]) => {
    const path = [...at, key];
    return matches(path) ? unknownFields(inner, allowed, path) : [path.join(".")];
  });
}

/** Paths of objects that hold a number but no source (or an `assumed: ...` source). */
function figuresWithoutSource(value: unknown, at = ""): string[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => figuresWithoutSource(item, `${at}[${index}]`));
  if (!isObject(value)) return [];
  const holdsNumber = Object.values(value).some((inner) => typeof inner === "number");
  const sourced = typeof value.source === "string" && value.source.trim().length > 0;
  const here = holdsNumber && !sourced ? [at === "" ? "(top level)" : at] : [];
  return [
    ...here,
    ...Object.entries(value).flatMap(([key, inner]) => figuresWithoutSource(inner, at === "" ? key : `${at}.${key}`)),
  ];
}

const SOURCED = ["value", "source", "readVia", "unchecked"];
const GPU_FIELDS = new Set([
  "vendor",
  "name",
  "about",
  "denseTflops",
  ...["fp32", "tf32", "bf16", "fp16", "fp8"].flatMap((precision) => [
    `denseTflops.${precision}`,
    ...SOURCED.map((field) => `denseTflops.${precision}.${field}`),
  ]),
  ...["memoryGiB", "memoryTBps", "powerW"].flatMap((figure) => [figure, ...SOURCED.map((f) => `${figure}.${f}`)]),
]);
const NODE_FIELDS = new Set([
  "provider",
  "name",
  "about",
  "gpu",
  ...["gpusPerNode", "hostCpus", "memoryGiB"].flatMap((figure) => [figure, ...SOURCED.map((f) => `${figure}.${f}`)]),
  ...["kind", "generation", "gbPerSecondPerGpuPerDirection", "source", "readVia", "unchecked"].map(
    (f) => `intraNode.${f}`,
  ),
  "intraNode",
  ...["count", "gbitPerNic", "perGpu", "kind", "source", "readVia", "unchecked"].map((f) => `nics.${f}`),
  "nics",
  ...["topology", "oversubscription", "source"].map((f) => `network.${f}`),
  "network",
]);
// The case file format: the contract between the published set and `ringlab predict --case` (docs/published.md).
const FIGURE = ["value", "note"];
const CASE_FIELDS = new Set([
  "source",
  "about",
  "cluster",
  "nodes",
  "gpusPerNode",
  "model",
  ...["parameters", "family", "layers", "width", "heads", "kvHeads", "ffnWidth", "vocab", "tiedEmbeddings"].map(
    (f) => `model.${f}`,
  ),
  "model.maxPositions",
  "layout",
  ...["dp", "dpSharding", "tp", "pp", "cp", "pipelineSchedule", "virtualStages", "microBatches"].map(
    (f) => `layout.${f}`,
  ),
  "batch",
  ...["micro", "sequence", "gradientAccumulation"].map((f) => `batch.${f}`),
  "precision",
  "optimizer",
  "activationCheckpointing",
  "offload",
  // What a run's software did, beyond its layout (src/cluster/software.ts).
  "compile",
  "float8",
  "asyncTensorParallel",
  "transport",
  "inputs",
  "inputs.*",
  ...["value", "unit", "source"].map((f) => `inputs.*.${f}`),
  "published",
  "published.note",
  ...[
    "peakMemoryGiB",
    "modelStatesGB",
    "modelStatesGiB",
    "tokensPerSecondPerGpu",
    "imagesPerSecond",
    "imagesPerSecondPerGpu",
    "scalingEfficiency",
    "mfu",
    "tflopsPerGpu",
  ].flatMap((figure) => [`published.${figure}`, ...FIGURE.map((f) => `published.${figure}.${f}`)]),
  "heldOut",
]);
const PUBLISHED_FIGURES = [...CASE_FIELDS].filter((f) => /^published\.[a-zA-Z]+$/.test(f) && f !== "published.note");

/** The node a case runs on: a catalogue name, or a cluster file's path relative to the case file. */
function clusterOf(caseFile: string, cluster: unknown): Yaml | undefined {
  if (typeof cluster !== "string") return undefined;
  if (nodeNames.has(cluster)) return read(join(CATALOGUE, "nodes", `${cluster}.yaml`));
  const path = join(dirname(caseFile), cluster);
  return cluster.endsWith(".yaml") && existsSync(path) ? read(path) : undefined;
}
const figureValue = (figure: unknown) => (isObject(figure) ? figure.value : figure);

describe("the cluster catalogue", () => {
  it.each(gpuFiles.map((file) => [nameOf(file), file]))(
    "gpus/%s uses only the GPU fields, each figure sourced",
    (_, file) => {
      const gpu = read(file);
      expect(unknownFields(gpu, GPU_FIELDS)).toEqual([]);
      expect(figuresWithoutSource(gpu)).toEqual([]);
      expect(typeof gpu.vendor === "string" && typeof gpu.name === "string").toBe(true);
    },
  );

  it.each([...nodeFiles, ...ownClusterFiles].map((file) => [basename(file), file]))(
    "%s uses only the node fields, each figure sourced, on a GPU of the catalogue",
    (_, file) => {
      const node = read(file);
      expect(unknownFields(node, NODE_FIELDS)).toEqual([]);
      expect(figuresWithoutSource(node)).toEqual([]);
      expect(gpuNames).toContain(node.gpu);
      expect(["nvlink", "nvswitch", "pcie"]).toContain((node.intraNode as Yaml).kind);
      expect(["EFA", "InfiniBand", "RoCE", "TCP"]).toContain((node.nics as Yaml).kind);
    },
  );

  it("agrees with aws-instance-types.ts on each AWS node it shares: GPUs, GPU memory and network rate", () => {
    const shared = nodeFiles
      .map(read)
      .filter((node) => node.provider === "aws" && Object.hasOwn(AWS_INSTANCE_TYPES, node.name as string));
    expect(shared.map((node) => node.name).sort()).toEqual(
      [
        "g5.12xlarge",
        "g5.48xlarge",
        "g6e.12xlarge",
        "g6e.48xlarge",
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
      ].sort(),
    );
    for (const node of shared) {
      const facts = instanceTypeFacts(node.name as string);
      if (facts === undefined) throw new Error(`${node.name}: not in aws-instance-types.ts`);
      const nics = node.nics as Yaml;
      const gpu = read(join(CATALOGUE, "gpus", `${node.gpu}.yaml`));
      expect([node.name, figureValue(node.gpusPerNode)]).toEqual([node.name, facts.gpus]);
      expect([node.name, (nics.count as number) * (nics.gbitPerNic as number)]).toEqual([
        node.name,
        facts.burstNetworkGbps,
      ]);
      expect([node.name, figureValue(gpu.memoryGiB)]).toEqual([node.name, facts.gpuMemoryGiB]);
    }
  });

  it("collectives.yaml: every all-reduce row has its tier, a catalogue node, a size, a bus bandwidth and a source", () => {
    const { allReduce, ...rest } = read(join(CATALOGUE, "collectives.yaml"));
    expect(rest).toEqual({});
    expect(Array.isArray(allReduce) && allReduce.length > 0).toBe(true);
    const fields = new Set([
      "tier",
      "node",
      "nodes",
      "gpus",
      "algorithm",
      "messageBytes",
      "busbwGBps",
      "source",
      "note",
    ]);
    for (const row of allReduce as Yaml[]) {
      expect(Object.keys(row).filter((key) => !fields.has(key))).toEqual([]);
      expect(["intra-node", "inter-node"]).toContain(row.tier);
      expect(nodeNames).toContain(row.node);
      expect(typeof row.busbwGBps === "number" && row.busbwGBps > 0).toBe(true);
      expect(row.messageBytes === null || Number.isInteger(row.messageBytes)).toBe(true);
      expect(typeof row.source === "string" && row.source.length > 20).toBe(true);
    }
  });
});

describe("the published set", () => {
  it("holds 15 or more cases, from 8 to hundreds of GPUs", () => {
    const gpus = caseFiles.map((file) => {
      const published = read(file);
      const node = clusterOf(file, published.cluster) as Yaml;
      return (
        (published.nodes as number) * ((published.gpusPerNode as number) ?? (figureValue(node.gpusPerNode) as number))
      );
    });
    expect(caseFiles.length).toBeGreaterThanOrEqual(15);
    expect(Math.min(...gpus)).toBe(8);
    expect(Math.max(...gpus)).toBeGreaterThanOrEqual(512);
  });

  it.each(caseFiles.map((file) => [nameOf(file), file]))(
    "%s uses only the case fields, cites its source and its inputs', and names a cluster that exists",
    (_, file) => {
      const published = read(file);
      expect(unknownFields(published, CASE_FIELDS)).toEqual([]);
      expect(typeof published.source === "string" && published.source.length > 20).toBe(true);
      for (const [name, input] of Object.entries((published.inputs as Yaml | undefined) ?? {})) {
        expect([name, typeof (input as Yaml).source]).toEqual([name, "string"]);
      }
      const figures = PUBLISHED_FIGURES.filter((figure) =>
        Object.hasOwn(published.published as Yaml, figure.slice(10)),
      );
      expect(figures.length).toBeGreaterThan(0);
      expect(clusterOf(file, published.cluster)).toBeDefined();
    },
  );

  it.each(caseFiles.map((file) => [nameOf(file), file]))("%s: its layout's degrees fill its GPUs", (_, file) => {
    const published = read(file);
    const { dp = 1, tp = 1, pp = 1, cp = 1 } = published.layout as Record<string, number | undefined>;
    const node = clusterOf(file, published.cluster) as Yaml;
    const gpus =
      (published.nodes as number) * ((published.gpusPerNode as number) ?? (figureValue(node.gpusPerNode) as number));
    expect(dp * tp * pp * cp).toBe(gpus);
  });

  it("holds out every third case by file name, chosen before any constant was fitted", () => {
    const heldOut = caseFiles.filter((file) => read(file).heldOut === true).map(nameOf);
    expect(heldOut).toEqual(caseFiles.map(nameOf).filter((_, index) => index % 3 === 2));
  });
});

describe("docs/published.md", () => {
  const doc = readFileSync(join(ROOT, "docs", "published.md"), "utf8");
  const rowOf = (name: string) => doc.split("\n").find((line) => line.startsWith(`| ${name} |`));

  it.each(caseFiles.map((file) => [nameOf(file), file]))("lists case %s with its published figures", (name, file) => {
    const row = rowOf(name);
    expect(row).toBeDefined();
    for (const [figure, value] of Object.entries(read(file).published as Yaml)) {
      if (figure !== "note") expect(row).toContain(` ${figureValue(value)}`);
    }
  });

  it.each([...gpuFiles, ...nodeFiles].map((file) => [nameOf(file), file]))("lists %s", (name, file) => {
    const entry = read(file);
    const row = rowOf(name);
    expect(row).toBeDefined();
    if (isObject(entry.memoryTBps)) expect(row).toContain(` ${figureValue(entry.memoryTBps)} |`);
    if (isObject(entry.nics)) expect(row).toContain(`${entry.nics.count} × ${entry.nics.gbitPerNic} Gbit/s`);
  });
});

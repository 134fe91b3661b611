/**
 * Reads the cluster catalogue (src/catalogue/clusters/: gpus/, nodes/, collectives.yaml) and a user's cluster file:
 * the one module of src/cluster/ that touches the file system. Every file goes through ./schema.ts; a problem names the
 * file and the field (exit 2).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { z } from "zod";
import { parseYaml } from "../config/load.ts";
import type { ConfigProblem } from "../config/problems.ts";
import { ConfigError, UsageError } from "../util/errors.ts";
import type { GpuSpec, NodeType } from "./description.ts";
import {
  checkAgainst,
  collectivesFileSchema,
  gpuFileSchema,
  gpuSpecOf,
  nicProblems,
  nodeFileSchema,
  nodeTypeOf,
  railProblems,
  type NodeFile,
  type PublishedBusBandwidth,
} from "./schema.ts";

export const CATALOGUE_DIR = fileURLToPath(new URL("../catalogue/clusters/", import.meta.url));
/** A cluster file is a page; a bigger one is a mistake. */
const MAX_CLUSTER_FILE_BYTES = 256 * 1024;

export interface ClusterCatalogue {
  readonly gpus: ReadonlyMap<string, GpuSpec>;
  readonly nodes: ReadonlyMap<string, { readonly file: NodeFile; readonly type: NodeType }>;
  readonly collectives: readonly PublishedBusBandwidth[];
}

let cached: ClusterCatalogue | undefined;

/** The catalogue, read once: every entry checked, the first bad one exit 2 naming its file and field. */
export function clusterCatalogue(): ClusterCatalogue {
  cached ??= readCatalogue(CATALOGUE_DIR);
  return cached;
}

/** A catalogue in another folder (tests). */
export function readCatalogue(dir: string): ClusterCatalogue {
  const gpus = new Map<string, GpuSpec>();
  for (const file of yamlFiles(join(dir, "gpus"))) {
    const key = basename(file).replace(/\.ya?ml$/, "");
    gpus.set(key, gpuSpecOf(key, checked(file, gpuFileSchema, readYaml(file))));
  }
  const nodes = new Map<string, { file: NodeFile; type: NodeType }>();
  for (const path of yamlFiles(join(dir, "nodes"))) {
    const key = basename(path).replace(/\.ya?ml$/, "");
    const file = checked(path, nodeFileSchema, readYaml(path));
    const problems = railProblems(file);
    const gpu = gpuOf(file, gpus, problems);
    if (problems.length > 0) throw new ConfigError(path, problems);
    nodes.set(key, { file, type: nodeTypeOf(key, file, gpu!) });
  }
  const collectivesPath = join(dir, "collectives.yaml");
  const collectives = existsAsFile(collectivesPath)
    ? checked(collectivesPath, collectivesFileSchema, readYaml(collectivesPath)).allReduce
    : [];
  return { gpus, nodes, collectives };
}

/**
 * A cluster by its catalogue name (p5.48xlarge) or a cluster file's path (relative to `baseDir`): a name that is
 * neither is exit 2 with the catalogue's names.
 */
export function resolveNodeType(nameOrPath: string, baseDir = process.cwd()): NodeType {
  const catalogue = clusterCatalogue();
  const entry = catalogue.nodes.get(nameOrPath);
  if (entry !== undefined) return entry.type;
  if (!/\.ya?ml$/.test(nameOrPath)) {
    throw new UsageError(
      `cluster ${JSON.stringify(nameOrPath)}: not in ringlab's catalogue (src/catalogue/clusters/nodes/) and not a .yaml cluster file`,
      { hint: `one of ${[...catalogue.nodes.keys()].join(", ")}; or a cluster file in the format of those entries` },
    );
  }
  return loadClusterFile(isAbsolute(nameOrPath) ? nameOrPath : resolve(baseDir, nameOrPath), nameOrPath, catalogue);
}

/** A user's cluster file: the node format, its GPU by catalogue name or written out, checked against the catalogue. */
export function loadClusterFile(path: string, displayName: string, catalogue = clusterCatalogue()): NodeType {
  const file = checked(displayName, nodeFileSchema, readYaml(path, displayName));
  const problems = [...railProblems(file), ...nicProblems(file, catalogued(catalogue, file.name))];
  const gpu = gpuOf(file, catalogue.gpus, problems);
  if (problems.length > 0) throw new ConfigError(displayName, problems);
  return nodeTypeOf(displayName, file, gpu!);
}

/** The catalogue's node file of a name: its key (p5.48xlarge) or the name it gives itself. */
function catalogued(catalogue: ClusterCatalogue, name: string): NodeFile | undefined {
  return (
    catalogue.nodes.get(name)?.file ?? [...catalogue.nodes.values()].find((entry) => entry.file.name === name)?.file
  );
}

function gpuOf(file: NodeFile, gpus: ReadonlyMap<string, GpuSpec>, problems: ConfigProblem[]): GpuSpec | undefined {
  if (typeof file.gpu !== "string") return gpuSpecOf(file.gpu.name, file.gpu);
  const gpu = gpus.get(file.gpu);
  if (gpu === undefined) {
    problems.push({
      path: "gpu",
      message: `found ${JSON.stringify(file.gpu)}, expected a GPU of ringlab's catalogue (${[...gpus.keys()].join(", ")}) or the GPU written out (vendor, name, denseTflops, memoryGiB, memoryTBps, each with its source)`,
    });
  }
  return gpu;
}

function checked<T>(displayName: string, schema: z.ZodType<T>, document: unknown): T {
  const result = checkAgainst(schema, document);
  if (!result.ok) throw new ConfigError(displayName, result.problems);
  return result.value;
}

function readYaml(path: string, displayName = path): unknown {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size > MAX_CLUSTER_FILE_BYTES) {
      throw new ConfigError(displayName, [
        {
          path: "",
          message: `the file is ${size} bytes; expected a cluster file of at most ${MAX_CLUSTER_FILE_BYTES}`,
        },
      ]);
    }
    text = readFileSync(path, "utf8");
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : String(error);
    throw new ConfigError(displayName, [
      { path: "", message: `${reason}; expected a cluster file (the format of src/catalogue/clusters/nodes/*.yaml)` },
    ]);
  }
  return parseYaml(text, displayName);
}

function yamlFiles(dir: string): string[] {
  if (!existsAsDir(dir)) return [];
  return readdirSync(dir)
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .map((name) => join(dir, name));
}

function existsAsDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function existsAsFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The cluster catalogue's files and a user's cluster file, field by field: a GPU (gpus/<name>.yaml), a node type
 * (nodes/<name>.yaml, or a cluster file of one's own in the same format, whose `gpu` may be written out in place) and
 * the published collective bandwidths (collectives.yaml). Every figure needs its source: a datasheet, a page, or
 * "assumed: ..." where nothing states it. Pure: plain objects in, typed values or problems (field path and message)
 * out; ./load.ts reads the files.
 */
import { z } from "zod";
import { describeIssues, type ConfigProblem } from "../config/problems.ts";
import { INTRA_NODE_KINDS, TENSOR_PRECISIONS, type GpuSpec, type NodeType, type Sourced } from "./description.ts";

const SOURCE_HELP = "where the figure comes from: a datasheet or page (and the line), or 'assumed: why'";
const source = z
  .string()
  .trim()
  .min(1, { error: `expected ${SOURCE_HELP}` });
/** What the catalogue's files may say beside a source: the page actually read, why a figure was read from none. */
const provenance = { readVia: z.string().optional(), unchecked: z.string().optional(), note: z.string().optional() };
const sourcedNumber = z.strictObject({ value: z.number().positive(), source, ...provenance });
const sourcedInteger = z.strictObject({ value: z.number().int().positive(), source, ...provenance });

export const gpuFileSchema = z.strictObject({
  vendor: z.string().min(1),
  name: z.string().min(1),
  about: z.string().optional(),
  /** Absent where no datasheet states them (AWS's A10G): a prediction that needs them says so. */
  denseTflops: z
    .strictObject(Object.fromEntries(TENSOR_PRECISIONS.map((precision) => [precision, sourcedNumber.optional()])))
    .optional(),
  memoryGiB: sourcedNumber,
  memoryTBps: sourcedNumber.optional(),
  powerW: sourcedNumber.optional(),
});
export type GpuFile = z.infer<typeof gpuFileSchema>;

export const nodeFileSchema = z.strictObject({
  provider: z.string().min(1).optional(),
  name: z.string().min(1),
  about: z.string().optional(),
  /** A catalogue GPU's name (gpus/<name>.yaml), or the GPU written out. */
  gpu: z.union([z.string().min(1), gpuFileSchema]),
  gpusPerNode: sourcedInteger,
  intraNode: z.strictObject({
    kind: z.enum(INTRA_NODE_KINDS.filter((kind) => kind !== "loopback") as ["nvswitch", "nvlink", "pcie"]),
    generation: z.string().optional(),
    gbPerSecondPerGpuPerDirection: z.number().positive(),
    source,
    ...provenance,
  }),
  nics: z.strictObject({
    count: z.number().int().positive(),
    gbitPerNic: z.number().positive(),
    perGpu: z.boolean(),
    kind: z.string().min(1),
    source,
    ...provenance,
  }),
  network: z.strictObject({
    topology: z.string().min(1),
    oversubscription: z.number().min(1),
    source,
    ...provenance,
  }),
  hostCpus: sourcedInteger.optional(),
  /** The host's memory. */
  memoryGiB: sourcedNumber.optional(),
  price: z.strictObject({ usdPerHour: z.number().positive(), source, ...provenance }).optional(),
});
export type NodeFile = z.infer<typeof nodeFileSchema>;

export const collectivesFileSchema = z.strictObject({
  allReduce: z.array(
    z.strictObject({
      tier: z.enum(["intra-node", "inter-node"]),
      node: z.string().min(1),
      nodes: z.number().int().positive().optional(),
      gpus: z.number().int().positive(),
      algorithm: z.string().min(1),
      messageBytes: z.number().int().positive().nullable(),
      busbwGBps: z.number().positive(),
      source,
      note: z.string().optional(),
    }),
  ),
});
export type CollectivesFile = z.infer<typeof collectivesFileSchema>;
export type PublishedBusBandwidth = CollectivesFile["allReduce"][number];

export type Checked<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly problems: ConfigProblem[] };

export function checkAgainst<S extends z.ZodType>(schema: S, document: unknown): Checked<z.infer<S>> {
  const result = schema.safeParse(document);
  if (result.success) return { ok: true, value: result.data };
  // A missing source is the rule users meet most: say what one is, not only that text was expected.
  const problems = describeIssues(schema, result.error.issues, document).map((problem) =>
    /(^|\.)source$/.test(problem.path) && problem.message.startsWith("missing")
      ? { ...problem, message: `missing: expected ${SOURCE_HELP}` }
      : problem,
  );
  return { ok: false, problems };
}

function sourced(figure: { value: number; source: string }): Sourced {
  return { value: figure.value, source: figure.source };
}

/** A GPU file as the predictor reads it. */
export function gpuSpecOf(key: string, file: GpuFile): GpuSpec {
  const denseTflops = Object.fromEntries(
    Object.entries(file.denseTflops ?? {}).flatMap(([precision, peak]) =>
      peak === undefined ? [] : [[precision, sourced(peak)]],
    ),
  );
  return {
    key,
    vendor: file.vendor,
    name: file.name,
    denseTflops,
    memoryGiB: sourced(file.memoryGiB),
    ...(file.memoryTBps === undefined ? {} : { memoryTBps: sourced(file.memoryTBps) }),
  };
}

/** A node file as the predictor reads it, its GPU resolved. */
export function nodeTypeOf(name: string, file: NodeFile, gpu: GpuSpec): NodeType {
  return {
    name,
    device: { kind: "gpu", gpu },
    devicesPerNode: sourced(file.gpusPerNode),
    intraNode: {
      kind: file.intraNode.kind,
      generation: file.intraNode.generation ?? "",
      gbPerSecondPerDevicePerDirection: file.intraNode.gbPerSecondPerGpuPerDirection,
      source: file.intraNode.source,
    },
    nics: { ...file.nics },
    network: {
      topology: file.network.topology,
      oversubscription: file.network.oversubscription,
      source: file.network.source,
    },
  };
}

/**
 * A cluster file's NICs against the catalogue's entry of the same name: where the catalogue has the node's NICs one
 * per GPU (rails), a file that says one card for the node gives the node's total as if one card carried it, which
 * NCCL's one ring per rail does not see (3,200 Gbit/s entered for a p5 is 400 per GPU, not 3,200).
 */
export function nicProblems(file: NodeFile, catalogued: NodeFile | undefined): ConfigProblem[] {
  if (catalogued === undefined || !catalogued.nics.perGpu || file.nics.perGpu) return [];
  const perGpuGbit = (catalogued.nics.count * catalogued.nics.gbitPerNic) / catalogued.gpusPerNode.value;
  const total = file.nics.count * file.nics.gbitPerNic;
  return [
    {
      path: "nics.perGpu",
      message:
        `found false (${file.nics.count} × ${file.nics.gbitPerNic} Gbit/s shared by the node), but ringlab's catalogue has ` +
        `${catalogued.name}'s NICs one per GPU (${catalogued.nics.count} × ${catalogued.nics.gbitPerNic} Gbit/s: ` +
        `${perGpuGbit} Gbit/s a GPU)` +
        (total === catalogued.nics.count * catalogued.nics.gbitPerNic
          ? `; ${total} Gbit/s is the node's total, not one card's`
          : "") +
        `; write count: ${catalogued.nics.count}, gbitPerNic: ${catalogued.nics.gbitPerNic}, perGpu: true, or give the node another name`,
    },
  ];
}

/** The GPUs of a node file and its NICs, where rails need a NIC (or several) for each GPU. */
export function railProblems(file: NodeFile): ConfigProblem[] {
  if (!file.nics.perGpu || file.nics.count % file.gpusPerNode.value === 0) return [];
  return [
    {
      path: "nics.count",
      message: `found ${file.nics.count} NICs one per GPU on ${file.gpusPerNode.value} GPUs: rails need the same number of NICs for every GPU; write perGpu: false where GPUs share cards`,
    },
  ];
}

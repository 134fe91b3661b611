/**
 * A published case (`ringlab predict --case FILE`): one published configuration of a training run and the figures its
 * source gives, which ringlab predicts and scores itself against (test/bench/data/published/, docs/predictions.md).
 * The one schema of the format (its JSON Schema is generated from it: docs/case.schema.json); every field is checked
 * here before anything is predicted, and every problem names the file and the field. Reading the file is in
 * ./case-file.ts.
 */
import { z } from "zod";
import { MODEL_FAMILIES } from "../config/registry.ts";
import { describeIssues, type ConfigProblem } from "../config/problems.ts";
import { CHECKPOINTING_MODES } from "../workload/transformer.ts";
import { DP_SHARDINGS, PIPELINE_SCHEDULES } from "../layouts/composition.ts";
import { OFFLOADS } from "../workload/model-states.ts";
import { FLOAT8_RECIPES, TRANSPORTS } from "../cluster/software.ts";

const positiveInt = z.number().int().min(1);
const text = z.string().trim().min(1);

/** A figure: a number, or a number with a note on how the source measured it. */
const figure = z.union([
  z.number().positive(),
  z.strictObject({ value: z.number().positive(), note: text.describe("how the source measured it").optional() }),
]);

/** A language model's shape written out, as the worker's registry writes one (registry.json's models). */
const shapeFields = z.strictObject({
  family: z.enum(MODEL_FAMILIES),
  layers: positiveInt,
  width: positiveInt,
  heads: positiveInt,
  kvHeads: positiveInt.optional().describe("default: heads (no grouped-query attention)"),
  ffnWidth: positiveInt.optional().describe("default: 4 × width (gpt2's)"),
  vocab: positiveInt,
  tiedEmbeddings: z.boolean().default(false),
  maxPositions: positiveInt.optional().describe("default: the case's sequence"),
});

/** Model states alone: a parameter count (and DeepSpeed ZeRO-3's largest layer), no shape and no activations. */
const parametersOnly = z.strictObject({
  parameters: z.number().positive().describe("Ψ: the model's parameters"),
  largestLayerParameters: z
    .number()
    .positive()
    .optional()
    .describe("the largest layer's parameters, which ZeRO-3 gathers whole (DeepSpeed's largest_layer_params)"),
});

export const caseFileSchema = z
  .strictObject({
    source: text.describe("where the figures come from, precisely: the document, table and row"),
    about: text.optional().describe("one line for people"),
    heldOut: z.boolean().optional().describe("kept apart for a last check of a model fitted on the others"),
    framework: z
      .enum(["pytorch", "deepspeed", "zero-paper"])
      .default("pytorch")
      .describe(
        "whose accounting of model states: pytorch (FSDP2's MixedPrecisionPolicy, DDP with autocast), deepspeed (its ZeRO implementation as its estimators count it), zero-paper (the ZeRO paper's Table 1 arithmetic)",
      ),
    cluster: text
      .optional()
      .describe("the nodes: an AWS instance type of ringlab's catalogue, or a name the source gives them"),
    nodes: positiveInt.default(1),
    gpusPerNode: positiveInt.optional().describe("default: the cluster's, where ringlab's catalogue knows it"),
    model: z
      .union([text, shapeFields, parametersOnly])
      .describe("a registry name (registry.json), a shape written out, or {parameters} for model states alone"),
    layout: z.strictObject({
      dp: positiveInt.describe("data-parallel ranks"),
      dpSharding: z
        .enum(DP_SHARDINGS)
        .default("none")
        .describe("ZeRO's stage: none, optimizer (1), gradients (2; FSDP's SHARD_GRAD_OP), full (3; FULL_SHARD)"),
      tp: positiveInt.default(1),
      pp: positiveInt.default(1),
      cp: positiveInt.default(1).describe("context-parallel ranks (not predicted yet)"),
      pipelineSchedule: z.enum(PIPELINE_SCHEDULES).optional(),
      virtualStages: positiveInt.optional(),
      microBatches: positiveInt.optional(),
    }),
    batch: z
      .strictObject({
        micro: positiveInt.describe("samples per GPU and step"),
        sequence: positiveInt.optional().describe("tokens per sample (language models)"),
        gradientAccumulation: positiveInt.optional(),
      })
      .optional(),
    precision: z.enum(["fp32", "tf32", "bf16", "fp16", "amp"]),
    optimizer: z.enum(["adamw", "adam", "sgd"]).default("adamw").describe("sgd: with momentum (one buffer)"),
    activationCheckpointing: z.enum(CHECKPOINTING_MODES).default("none"),
    offload: z.enum(OFFLOADS).default("none"),
    compile: z.boolean().default(false).describe("torch.compile on (torchtitan's compile option)"),
    float8: z
      .enum(FLOAT8_RECIPES)
      .default("none")
      .describe("Float8 linears (torchao.float8's scaling recipe; the output head stays bf16), or none"),
    asyncTensorParallel: z
      .boolean()
      .default(false)
      .describe("asynchronous tensor parallelism: the tensor-parallel collectives run under the matrix products"),
    transport: z
      .enum(TRANSPORTS)
      .optional()
      .describe(
        "what NCCL's inter-node traffic ran over: nccl-ib (InfiniBand verbs, RoCE too), nccl-efa, nccl-socket (TCP, one socket a ring); default: what the cluster's NICs run",
      ),
    inputs: z
      .record(
        z.string().regex(/^[a-zA-Z][a-zA-Z0-9]*$/),
        z.strictObject({ value: z.number(), unit: text.optional(), source: text }),
      )
      .optional()
      .describe("what a user has before renting, each with its source"),
    published: z
      .strictObject({
        peakMemoryGiB: figure.optional().describe("the peak the source reports (torchtitan: max reserved)"),
        modelStatesGB: figure.optional().describe("per-GPU model-state bytes, GB = 1e9 bytes (ZeRO paper)"),
        modelStatesGiB: figure.optional().describe("per-GPU model-state bytes in GiB (DeepSpeed's estimators)"),
        tokensPerSecondPerGpu: figure.optional(),
        imagesPerSecond: figure.optional().describe("over all GPUs"),
        imagesPerSecondPerGpu: figure.optional(),
        scalingEfficiency: figure.optional(),
        mfu: figure.optional(),
        tflopsPerGpu: figure.optional(),
        note: text.optional(),
      })
      .refine((published) => Object.keys(published).some((key) => key !== "note"), {
        message: "no figure: give at least one (peakMemoryGiB, modelStatesGB, tokensPerSecondPerGpu, ...)",
      }),
  })
  .superRefine((file, context) => {
    const { dp, tp, pp, cp } = file.layout;
    const ranks = dp * tp * pp * cp;
    if (file.gpusPerNode !== undefined && ranks !== file.nodes * file.gpusPerNode) {
      context.addIssue({
        code: "custom",
        path: ["layout"],
        message: `dp × tp × pp × cp = ${ranks} ranks, but nodes × gpusPerNode = ${file.nodes * file.gpusPerNode} GPUs`,
      });
    }
    if (typeof file.model !== "string" && "parameters" in file.model) return;
    if (file.batch === undefined)
      context.addIssue({ code: "custom", path: ["batch"], message: "a model with a shape needs batch.micro" });
  });

export type CaseFile = z.output<typeof caseFileSchema>;
export type PublishedFigureName = Exclude<keyof CaseFile["published"], "note">;

/** The case, or every problem with its field path. */
export function validateCase(document: unknown): { case: CaseFile } | { problems: ConfigProblem[] } {
  const parsed = caseFileSchema.safeParse(document);
  if (parsed.success) return { case: parsed.data };
  return { problems: describeIssues(caseFileSchema, parsed.error.issues, document) };
}

/** A figure's value, whichever way it was written. */
export function figureValue(value: number | { readonly value: number } | undefined): number | undefined {
  return typeof value === "object" ? value.value : value;
}

/** The case file's JSON Schema (docs/case.schema.json, written by scripts/gen-docs.ts), from the schema above. */
export function caseJsonSchemaText(): string {
  const { $schema, ...rest } = z.toJSONSchema(caseFileSchema, { target: "draft-2020-12", io: "input" }) as Record<
    string,
    unknown
  >;
  const schema = {
    $schema,
    title: "ringlab published case",
    description:
      "A published training configuration and the figures its source gives, for `ringlab predict --case FILE` " +
      "(src/predict/case.ts; docs/predictions.md). Looser than ringlab's own check, which also requires " +
      "dp × tp × pp × cp = nodes × gpusPerNode, a registry model name, batch.sequence within the model's positions, and at " +
      "least one published figure.",
    ...rest,
  };
  return `${JSON.stringify(schema, null, 2)}\n`;
}

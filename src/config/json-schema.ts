/**
 * The campaign file's JSON Schema (`ringlab schema`, docs/campaign.schema.json), generated from the zod schema the
 * loader validates with (./schema.ts): every field's type, default, range, choices and description come from there.
 * Pure.
 */
import { z } from "zod";
import { campaignFileSchema } from "./schema.ts";

export type JsonSchema = Record<string, unknown>;

/** The JSON Schema draft z.toJSONSchema writes; a validator of the same draft reads it (ajv's Ajv2020). */
export const JSON_SCHEMA_DRAFT = "draft-2020-12";

export function campaignJsonSchema(): JsonSchema {
  // The file as written is zod's input: a field with a default may be left out, a matrix axis is one value or a list.
  const generated = z.toJSONSchema(campaignFileSchema, {
    target: JSON_SCHEMA_DRAFT,
    io: "input",
    override: keepSectionDefault,
  });
  const { $schema, ...rest } = generated as JsonSchema;
  return {
    $schema,
    title: "ringlab campaign file",
    description: looserThanValidator(refinedPaths(campaignFileSchema)),
    ...rest,
  };
}

/** The schema as `ringlab schema` writes it and docs/campaign.schema.json holds it: the same bytes either way. */
export function campaignJsonSchemaText(): string {
  return `${JSON.stringify(campaignJsonSchema(), null, 2)}\n`;
}

/**
 * zod leaves out, in input mode, the default of a section holding a field that transforms (probe, whose library is a
 * matrix-style axis), as the default is an output value. Where that value is also valid input it is the section's
 * default as written, so it goes back in.
 */
function keepSectionDefault({
  zodSchema,
  jsonSchema,
}: {
  zodSchema: z.core.$ZodType;
  jsonSchema: z.core.JSONSchema.BaseSchema;
}): void {
  if (!(zodSchema instanceof z.ZodDefault) || jsonSchema.default !== undefined) return;
  const value: unknown = zodSchema.def.defaultValue;
  if ((zodSchema.def.innerType as z.ZodType).safeParse(value).success)
    jsonSchema.default = JSON.parse(JSON.stringify(value)) as unknown;
}

/** The top-level description: what the loader checks beyond this schema, and which fields it checks further. */
function looserThanValidator(paths: readonly string[]): string {
  return (
    "A ringlab campaign file (generated from src/config/schema.ts by `ringlab schema`; reference: docs/campaign-file.md). " +
    "This schema is looser than ringlab's own validator: the rules zod checks in code (refinements) have no JSON Schema form, so " +
    "the rules across fields (matrix.nodes within testbed.nodes, a knob set in train or the matrix but not both, the worker " +
    "registry's combinations, what the testbed's target cannot do, ...) and the further rules of these fields (names, CIDRs, " +
    `paths, rates, ...) are not checked here: ${paths.join(", ")}. \`ringlab plan <file>\` checks them all before anything starts.`
  );
}

/**
 * The dotted paths of the fields that carry a refinement, in schema order. A section's own refinements (the file's, the
 * testbed's, the dataset's) are rules across its fields, which the description names by kind instead.
 */
function refinedPaths(root: z.ZodType): string[] {
  const found = new Set<string>();
  const visit = (schema: z.ZodType, path: readonly string[]): void => {
    const def = schema.def as z.core.$ZodTypeDef & Record<string, unknown>;
    const checks = (def.checks ?? []) as readonly z.core.$ZodCheck[];
    const isSection = def.type === "object" || (def.type === "union" && "discriminator" in def);
    if (!isSection && checks.some((check) => check._zod.def.check === "custom")) found.add(path.join("."));
    for (const [key, child] of childrenOf(def)) visit(child, key === undefined ? path : [...path, key]);
  };
  visit(root, []);
  return [...found];
}

/**
 * A schema's children, each with the key it adds to the path (undefined: the same path, as an option or a wrapped
 * schema).
 */
function childrenOf(def: z.core.$ZodTypeDef & Record<string, unknown>): [string | undefined, z.ZodType][] {
  if (def.type === "object") return Object.entries(def["shape"] as Record<string, z.ZodType>);
  if (def.type === "union") return (def["options"] as z.ZodType[]).map((option) => [undefined, option]);
  if (def.type === "pipe") return [[undefined, def["in"] as z.ZodType]];
  if (def.type === "array") return [[undefined, def["element"] as z.ZodType]];
  if (def.type === "record")
    return [
      [undefined, def["keyType"] as z.ZodType],
      [undefined, def["valueType"] as z.ZodType],
    ];
  return "innerType" in def ? [[undefined, def["innerType"] as z.ZodType]] : [];
}

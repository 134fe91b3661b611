/**
 * Turns zod's issues into problems a user can act on: the field path, what was found and what was expected,
 * and for an unknown key the keys that are known there. Known keys come from walking the schema itself, so
 * a new field or section needs nothing here. Pure.
 */
import { z } from "zod";

export interface ConfigProblem {
  /** Dotted field path, e.g. "testbed.nodes"; empty for the whole document. */
  readonly path: string;
  readonly message: string;
}

type Issue = z.core.$ZodIssue;

/** One problem per issue (per unknown key), in the order zod found them. */
export function describeIssues(
  schema: z.ZodType,
  issues: readonly Issue[],
  document: unknown,
  prefix: readonly string[] = [],
): ConfigProblem[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path.map(String)];
    if (issue.code === "invalid_union" && !isDiscriminatorIssue(issue) && issue.errors.length > 0) {
      // A matrix axis is "a value or a list of values": explain the branch that fits the input's shape.
      const isList = Array.isArray(valueAt(document, path));
      const fitting = issue.errors.find((branch) =>
        isList
          ? branch.every((inner) => inner.path.length > 0)
          : !branch.some((inner) => inner.code === "invalid_type" && inner.expected === "array"),
      );
      if (fitting !== undefined) return describeIssues(schema, fitting, document, path);
    }
    if (issue.code === "unrecognized_keys") {
      // One problem per key, at the key's own path, so the message points at the typo.
      const known = knownKeysAt(schema, path, document);
      return issue.keys.map((key) => ({ path: [...path, key].join("."), message: unknownKeyMessage(key, known) }));
    }
    if (issue.code === "invalid_key") {
      // A mapping key that breaks a rule (a tag key): the key itself is what was found.
      return issue.issues.map((inner) => ({ path: path.join("."), message: messageFor(inner, path[path.length - 1]) }));
    }
    return [{ path: path.join("."), message: messageFor(issue, valueAt(document, path)) }];
  });
}

function isDiscriminatorIssue(issue: Issue): issue is Issue & { readonly options: readonly unknown[] } {
  return issue.code === "invalid_union" && "discriminator" in issue && issue.discriminator !== undefined;
}

const TYPE_NAMES: Record<string, string> = {
  int: "an integer",
  number: "a number",
  string: "text",
  boolean: "true or false",
  object: "a mapping",
  array: "a list",
};

function messageFor(issue: Issue, valueAtPath: unknown): string {
  const found = describeValue(valueAtPath);
  switch (issue.code) {
    case "invalid_type": {
      const expected = TYPE_NAMES[issue.expected] ?? issue.expected;
      return valueAtPath === undefined ? `missing: expected ${expected}` : `found ${found}, expected ${expected}`;
    }
    case "too_small":
      return `found ${found}, expected ${boundText(issue.origin, issue.inclusive ? "at least" : "more than", issue.minimum)}`;
    case "too_big":
      return `found ${found}, expected ${boundText(issue.origin, issue.inclusive ? "at most" : "less than", issue.maximum)}`;
    case "invalid_value":
      return `found ${found}, expected ${choices(issue.values)}`;
    case "invalid_union":
      if (isDiscriminatorIssue(issue)) return `found ${found}, expected ${choices(issue.options)}`;
      return `found ${found}, ${issue.message}`;
    case "invalid_format":
      return issue.message.startsWith("Invalid")
        ? `found ${found}, expected ${issue.format}`
        : `found ${found}, ${issue.message}`;
    case "custom":
      return issue.message.startsWith("expected") ? `found ${found}, ${issue.message}` : issue.message;
    default:
      return issue.message;
  }
}

function boundText(origin: string, relation: string, bound: number | bigint): string {
  if (origin === "string") return `${relation} ${bound} characters`;
  if (origin === "array" || origin === "set") return `${relation} ${bound} entries`;
  return `${origin === "int" ? "an integer" : "a number"} ${relation} ${bound}`;
}

function unknownKeyMessage(key: string, known: readonly string[]): string {
  const suggestion = known.find(
    (candidate) =>
      Math.abs(candidate.length - key.length) <= 2 && editDistance(candidate.toLowerCase(), key.toLowerCase()) <= 2,
  );
  return (
    `unknown key ${JSON.stringify(key)}` +
    (suggestion ? ` (did you mean "${suggestion}"?)` : "") +
    (known.length > 0 ? `; expected one of ${known.join(", ")}` : "")
  );
}

/** '"a" or "b"', '"a", "b" or "c"': the values a field takes. */
function choices(values: readonly unknown[]): string {
  const quoted = values.map((value) => JSON.stringify(value));
  return quoted.length <= 2 ? quoted.join(" or ") : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
}

/** The keys the schema accepts for the mapping at `path` of `document`, for "did you mean" hints. */
export function knownKeysAt(root: z.ZodType, path: readonly string[], document: unknown): string[] {
  let schema: z.ZodType | undefined = root;
  for (let depth = 0; schema !== undefined && depth <= path.length; depth++) {
    const here = unwrap(schema, valueAt(document, path.slice(0, depth)));
    if (depth === path.length) return here.length === 1 ? keysOf(here[0]!) : [...new Set(here.flatMap(keysOf))];
    schema = here.map((candidate) => childSchema(candidate, path[depth]!)).find((child) => child !== undefined);
  }
  return [];
}

/**
 * The schemas a value is checked against once wrappers are peeled off: optional, default, pipe (transform)
 * and the like give their inner schema; a discriminated union the option the value's discriminator picks
 * (all options when none fits); a plain union its options.
 */
function unwrap(schema: z.ZodType, value: unknown): z.ZodType[] {
  const def = schema.def as z.core.$ZodTypeDef & Record<string, unknown>;
  if ("innerType" in def) return unwrap(def.innerType as z.ZodType, value);
  if (def.type === "pipe") return unwrap(def["in"] as z.ZodType, value);
  if (def.type === "union") {
    const options = def["options"] as z.ZodType[];
    const discriminator = def["discriminator"] as string | undefined;
    const picked =
      discriminator === undefined ? [] : options.filter((option) => discriminatorFits(option, discriminator, value));
    return (picked.length > 0 ? picked : options).flatMap((option) => unwrap(option, value));
  }
  return [schema];
}

function discriminatorFits(option: z.ZodType, discriminator: string, value: unknown): boolean {
  const field = option instanceof z.ZodObject ? (option.shape as Record<string, z.ZodType>)[discriminator] : undefined;
  const actual =
    value !== null && typeof value === "object" && Object.hasOwn(value, discriminator)
      ? (value as Record<string, unknown>)[discriminator]
      : undefined;
  return field instanceof z.ZodLiteral && field.values.has(actual as z.core.util.Literal);
}

function childSchema(schema: z.ZodType, key: string): z.ZodType | undefined {
  if (schema instanceof z.ZodObject) return (schema.shape as Record<string, z.ZodType>)[key];
  if (schema instanceof z.ZodRecord) return schema.valueType as z.ZodType;
  if (schema instanceof z.ZodArray) return schema.element as z.ZodType;
  return undefined;
}

function keysOf(schema: z.ZodType): string[] {
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

function valueAt(document: unknown, path: readonly string[]): unknown {
  let value = document;
  for (const key of path) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return String(value);
}

/**
 * What the worker can do, as typed values: its models, its reductions and the train knobs a campaign sets, read
 * from the worker's registry (docker/worker/ringlab_worker/registry.json), the one place they are written. This
 * is the one module that imports the JSON; a leaf (nothing else from ringlab).
 *
 * A JSON module has no literal types, but its keys are literal: model, reduction, layout and knob names are the
 * JSON's keys (`keyof`). A knob's value type follows from its entry's shape: `choices: "reductions"` a Reduction,
 * `choices: "layouts"` a Parallelism (NamedChoices), other choices a string, a boolean default (a switch) a boolean,
 * anything else a number.
 */
import registry from "../../docker/worker/ringlab_worker/registry.json" with { type: "json" };

type Registry = typeof registry;
export type Model = keyof Registry["models"];
/** How gradients are summed across ranks: the worker's --reduction. */
export type Reduction = keyof Registry["reductions"];
/** How the model is laid out over the workers: the worker's --parallelism, one unit each in src/layouts/. */
export type Parallelism = keyof Registry["layouts"];
export type TrainKnobName = keyof Registry["trainKnobs"];

type ValueOf<Entry> = Entry extends { choices: string | readonly string[] }
  ? string
  : Entry extends { default: boolean }
    ? boolean
    : number;
/** The knobs whose choices name a section of the registry: JSON gives the section's name no literal type. */
interface NamedChoices {
  readonly reduction: Reduction;
  readonly parallelism: Parallelism;
}
/** The value a campaign gives knob K. */
export type TrainKnobValue<K extends TrainKnobName> = K extends keyof NamedChoices
  ? NamedChoices[K]
  : ValueOf<Registry["trainKnobs"][K]>;

const KNOB_TYPES = ["int", "number", "enum", "switch"] as const;

export interface TrainKnob<Value = string | number | boolean> {
  /** The worker's command-line flag. */
  readonly flag: string;
  /** int and number: ranges below; enum: choices; switch: a flag without a value, given when true. */
  readonly type: (typeof KNOB_TYPES)[number];
  /** The worker's value when the campaign sets none; null where the worker derives it or the feature is off. */
  readonly default: Value | null;
  readonly min?: number;
  readonly max?: number;
  readonly gt?: number;
  readonly lt?: number;
  /** enum only, in the registry's order ("reductions" and "layouts" already resolved to REDUCTIONS and LAYOUTS). */
  readonly choices?: readonly [string, ...string[]];
  /** Knobs a campaign that sets this one must set too, and knobs it must not set with it. */
  readonly needs: readonly TrainKnobName[];
  readonly excludes: readonly TrainKnobName[];
  /** What a message calls the feature the knob turns on ("time to train"), where it has a name of its own. */
  readonly label?: string;
  /**
   * enum only: the values older campaign files and records gave it (a switch's true and false, as "true" and "false")
   * and the choice each now reads as.
   */
  readonly legacyValues?: Readonly<Record<string, string>>;
  /** What the knob does, in a line: its description in the campaign file's schema and reference. */
  readonly about?: string;
}

function keysOf<K extends string>(record: Readonly<Record<K, unknown>>): readonly [K, ...K[]] {
  return Object.keys(record) as K[] as [K, ...K[]];
}

function mapValues<K extends string, V, T>(
  record: Readonly<Record<K, V>>,
  pick: (value: V) => T,
): Readonly<Record<K, T>> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, pick(value as V)])) as Record<K, T>;
}

/** The models the worker trains, in the registry's order. */
export const MODELS = keysOf(registry.models);
/**
 * What a model does: image (a CNN classifying images, throughput in images) or language (a transformer predicting the
 * next token, in tokens).
 */
export type ModelKind = "image" | "language";
export const MODEL_KIND: Readonly<Record<Model, ModelKind>> = mapValues(
  registry.models,
  (model) => model.kind as ModelKind,
);
/** fp32 parameter counts of the worker's models. */
export const PARAMETER_COUNT: Readonly<Record<Model, number>> = mapValues(registry.models, (model) => model.parameters);
/** The worker's default image size of each image model (its --image-size when the campaign sets no imageSize). */
export const NATIVE_IMAGE_SIZE: Readonly<Partial<Record<Model, number>>> = Object.fromEntries(
  Object.entries(registry.models).flatMap(([name, model]) => ("imageSize" in model ? [[name, model.imageSize]] : [])),
);

/**
 * ringlab's planning figures of an image model (registry.json's `planning`, where each figure's source is written
 * beside it): coarse numbers that size `ringlab plan`'s estimate and its GPU memory check. Language models have none:
 * they are planned from their shape's FLOPs and their memory model.
 */
export interface PlanningFigures {
  /** Images per second of one local testbed worker with 2 cores to itself. */
  readonly cpuImagesPerSecond: number;
  /**
   * Images per second of one worker on a T4 in fp32: what plan and predict assume where nothing measured, published or
   * scaled answers.
   */
  readonly t4Fp32ImagesPerSecond: number;
  /**
   * MiB autograd keeps per image for the backward pass at the model's native image size, fp32 and amp (16-bit
   * activations).
   */
  readonly activationMibPerImage: Readonly<Record<"fp32" | "amp", number>>;
}

/**
 * Where an image model's planning entry holds each number (each must be above 0) and each figure's source (a sentence).
 */
const PLANNING_NUMBERS = [
  "cpuImagesPerSecond.value",
  "t4Fp32ImagesPerSecond.value",
  "activationMibPerImage.fp32",
  "activationMibPerImage.amp",
];
const PLANNING_SOURCES = ["cpuImagesPerSecond.source", "t4Fp32ImagesPerSecond.source", "activationMibPerImage.source"];

/**
 * An image model's planning figures from its registry entry's `planning`. Throws naming every figure or source it
 * lacks: a model without them used to be skipped by the GPU memory check and estimated as NaN, and nobody was told.
 */
export function planningFigures(model: string, planning: unknown): PlanningFigures {
  const at = (path: string): unknown =>
    path
      .split(".")
      .reduce<unknown>(
        (value, key) =>
          typeof value === "object" && value !== null ? (value as Readonly<Record<string, unknown>>)[key] : undefined,
        planning,
      );
  const missing = [
    ...PLANNING_NUMBERS.filter((path) => {
      const value = at(path);
      return typeof value !== "number" || !(value > 0);
    }),
    ...PLANNING_SOURCES.filter((path) => {
      const value = at(path);
      return typeof value !== "string" || value.trim() === "";
    }),
  ];
  if (missing.length > 0) {
    throw new Error(
      `registry.json: image model ${model} lacks planning.${missing.join(", planning.")}: ` +
        "`ringlab plan` sizes its estimate and GPU memory check with them (each figure a number above 0, beside where it came from)",
    );
  }
  const number = (path: string) => at(path) as number;
  return {
    cpuImagesPerSecond: number("cpuImagesPerSecond.value"),
    t4Fp32ImagesPerSecond: number("t4Fp32ImagesPerSecond.value"),
    activationMibPerImage: { fp32: number("activationMibPerImage.fp32"), amp: number("activationMibPerImage.amp") },
  };
}

/**
 * Every image model's planning figures, by name. A registry whose image model lacks one does not load
 * (planningFigures).
 */
export const PLANNING: Readonly<Partial<Record<Model, PlanningFigures>>> = Object.fromEntries(
  Object.entries(registry.models).flatMap(([name, model]) =>
    model.kind === "image" ? [[name, planningFigures(name, (model as { readonly planning?: unknown }).planning)]] : [],
  ),
);

/**
 * An image model's planning figures. A language model has none (plan takes its FLOPs): asking for them is a bug, said
 * so.
 */
export function planningOf(model: string): PlanningFigures {
  const figures = Object.hasOwn(PLANNING, model)
    ? (PLANNING as Readonly<Record<string, PlanningFigures>>)[model]
    : undefined;
  if (figures === undefined)
    throw new Error(`registry.json has no planning figures for ${model}: only image models have them`);
  return figures;
}

/**
 * The families of language models the worker builds (docker/worker/ringlab_worker/models/): gpt2, GPT-2's decoder
 * (LayerNorm, a 4x-wide GELU MLP, learned positions); llama, Llama's (RMSNorm, a SwiGLU MLP of its own width, rotary
 * positions, grouped-query attention). src/workload/families/ holds each one's counts.
 */
export const MODEL_FAMILIES = ["gpt2", "llama"] as const;
export type ModelFamily = (typeof MODEL_FAMILIES)[number];

/**
 * A language model's shape, registry.json's one description of it, which the worker builds and src/workload/ counts.
 * A gpt2 entry writes fewer fields: its kvHeads are its heads, its ffnWidth 4 x width, its embeddings untied.
 */
export interface TransformerShape {
  readonly family: ModelFamily;
  readonly layers: number;
  readonly width: number;
  /** Query heads. */
  readonly heads: number;
  /** Key and value heads, each shared by heads / kvHeads query heads (grouped-query attention; heads: none shared). */
  readonly kvHeads: number;
  /** The MLP's hidden width. */
  readonly ffnWidth: number;
  readonly vocab: number;
  /** The head is the token embedding's matrix (Llama 3.2 1B and 3B). */
  readonly tiedEmbeddings: boolean;
  /** Tokens per training sequence: the registry's default, or a run's. */
  readonly sequenceLength: number;
  /** The longest sequence the model takes: gpt2's learned positions, llama's trained context. */
  readonly maxPositions: number;
}

const SHAPE_NUMBERS = ["layers", "width", "heads", "sequenceLength", "vocab"] as const;
const LLAMA_NUMBERS = ["kvHeads", "ffnWidth", "maxPositions", "ropeTheta"] as const;

/**
 * A language model's shape from its registry entry. Throws naming every field it lacks or has wrong: a shape that did
 * not divide would otherwise be counted, planned and only refused by the worker.
 */
export function languageShape(model: string, entry: Readonly<Record<string, unknown>>): TransformerShape {
  const family = (entry["family"] ?? "gpt2") as ModelFamily;
  const problems: string[] = [];
  if (!MODEL_FAMILIES.includes(family))
    problems.push(`family ${String(family)} (expected ${MODEL_FAMILIES.join(" or ")})`);
  const needed = family === "llama" ? [...SHAPE_NUMBERS, ...LLAMA_NUMBERS] : SHAPE_NUMBERS;
  for (const field of needed) {
    const value = entry[field];
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1)
      problems.push(`${field} (a whole number above 0)`);
  }
  if (family === "llama" && typeof entry["tiedEmbeddings"] !== "boolean")
    problems.push("tiedEmbeddings (true or false)");
  if (problems.length > 0) throw new Error(`registry.json: language model ${model} lacks ${problems.join(", ")}`);
  const number = (field: string, fallback?: number) => (entry[field] ?? fallback) as number;
  const shape: TransformerShape = {
    family,
    layers: number("layers"),
    width: number("width"),
    heads: number("heads"),
    kvHeads: number("kvHeads", number("heads")),
    ffnWidth: number("ffnWidth", 4 * number("width")),
    vocab: number("vocab"),
    tiedEmbeddings: entry["tiedEmbeddings"] === true,
    sequenceLength: number("sequenceLength"),
    maxPositions: number("maxPositions", number("sequenceLength")),
  };
  const wrong = [
    shape.width % shape.heads === 0 ? [] : [`width ${shape.width} is not a multiple of heads ${shape.heads}`],
    shape.heads % shape.kvHeads === 0 ? [] : [`kvHeads ${shape.kvHeads} does not divide heads ${shape.heads}`],
    shape.sequenceLength <= shape.maxPositions
      ? []
      : [`sequenceLength ${shape.sequenceLength} is more than maxPositions ${shape.maxPositions}`],
  ].flat();
  if (wrong.length > 0) throw new Error(`registry.json: language model ${model}: ${wrong.join("; ")}`);
  return shape;
}

/** Each language model's shape, by name. A registry whose language model lacks a field does not load. */
export const LANGUAGE_SHAPE: Readonly<Partial<Record<Model, TransformerShape>>> = Object.fromEntries(
  Object.entries(registry.models).flatMap(([name, model]) =>
    model.kind === "language" ? [[name, languageShape(name, model as Readonly<Record<string, unknown>>)]] : [],
  ),
);

/**
 * A language model's shape as a run has it: the registry's, with the run's sequenceLength, layers, width, heads and
 * kvHeads. A gpt2 model's MLP follows its width (4 x) and its key and value heads its heads; a llama model's MLP keeps
 * the registry's width.
 */
export function shapeOf(model: string, knobs: Readonly<Record<string, unknown>>): TransformerShape | undefined {
  const registered = (LANGUAGE_SHAPE as Readonly<Record<string, TransformerShape>>)[model];
  if (registered === undefined) return undefined;
  const pick = (knob: string, fallback: number) => (typeof knobs[knob] === "number" ? knobs[knob] : fallback);
  const width = pick("width", registered.width);
  const heads = pick("heads", registered.heads);
  const gpt2 = registered.family === "gpt2";
  return {
    ...registered,
    layers: pick("layers", registered.layers),
    width,
    heads,
    kvHeads: gpt2 ? heads : pick("kvHeads", registered.kvHeads),
    ffnWidth: gpt2 ? 4 * width : registered.ffnWidth,
    sequenceLength: pick("sequenceLength", registered.sequenceLength),
  };
}

/**
 * A published parameter count of a language model, where registry.json quotes one (publishedParameters, with its
 * parametersSource): what test/workload/transformer.test.ts holds ringlab's count to.
 */
export const PUBLISHED_PARAMETERS: Readonly<
  Partial<Record<Model, { readonly count: number; readonly source: string }>>
> = Object.fromEntries(
  Object.entries(registry.models).flatMap(([name, model]) =>
    "publishedParameters" in model
      ? [[name, { count: model.publishedParameters as number, source: model.parametersSource as string }]]
      : [],
  ),
);
/** What throughput counts for a model: images, or tokens. */
export function throughputUnit(model: string): "images" | "tokens" {
  return (MODEL_KIND as Readonly<Record<string, ModelKind>>)[model] === "language" ? "tokens" : "images";
}

/** The worker's layouts (parallelism's values), in the registry's order: ddp, its default, first. */
export const LAYOUTS = keysOf(registry.layouts);

/**
 * Why a layout cannot train a model whose head is its token embedding (tied), by layout: registry.json layouts'
 * refusesTiedEmbeddings. A layout absent here trains one.
 */
export const TIED_EMBEDDINGS_REFUSED: Readonly<Partial<Record<Parallelism, string>>> = Object.fromEntries(
  Object.entries(registry.layouts as Readonly<Record<string, { readonly refusesTiedEmbeddings?: string }>>).flatMap(
    ([layout, entry]) => (entry.refusesTiedEmbeddings === undefined ? [] : [[layout, entry.refusesTiedEmbeddings]]),
  ),
);

/** The worker's reductions, in the registry's order: ring first, then the two parameter servers. */
export const REDUCTIONS = keysOf(registry.reductions);
/**
 * The reduction whose probe measures a reduction's link: itself, or ring for strategies that are ring all-reduces of
 * fewer bytes (PowerSGD, local SGD).
 */
export function probedAs(reduction: Reduction): Reduction {
  return registry.reductions[reduction].probedAs as Reduction;
}
/**
 * A strategy's knob counting its first steps of plain all-reduce (registry.json's plainStepsKnob: PowerSGD's
 * powersgdStartIter, local SGD's localSgdWarmup), which the campaign keeps inside the untimed batches.
 */
export const PLAIN_STEPS_KNOB: Readonly<Partial<Record<Reduction, TrainKnobName>>> = Object.fromEntries(
  REDUCTIONS.flatMap((reduction) => {
    const entry = registry.reductions[reduction];
    return "plainStepsKnob" in entry ? [[reduction, entry.plainStepsKnob as TrainKnobName]] : [];
  }),
);
/**
 * What a knob's belongsTo (registry.json) names: the axis whose value it goes with (model: the model's kind;
 * parallelism; reduction) and the values it goes with. Both validators refuse the knob elsewhere, and a matrix varies
 * it only in the runs of its owners.
 */
export const OWNER_AXES = ["model", "parallelism", "reduction"] as const;
export type OwnerAxis = (typeof OWNER_AXES)[number];
export interface KnobOwner {
  readonly axis: OwnerAxis;
  readonly values: readonly string[];
}
/** The knobs that belong to some models, layouts or reductions, with their owner. */
export const KNOB_OWNERS: Readonly<Partial<Record<TrainKnobName, KnobOwner>>> = Object.fromEntries(
  Object.entries(registry.trainKnobs).flatMap(([name, entry]) => {
    const belongsTo = (entry as { belongsTo?: Readonly<Record<string, readonly string[]>> }).belongsTo;
    if (belongsTo === undefined) return [];
    const [axis, values] = Object.entries(belongsTo)[0]!;
    if (!(OWNER_AXES as readonly string[]).includes(axis))
      throw new Error(`registry.json: train knob ${name} belongs to ${axis}, expected one of ${OWNER_AXES.join(", ")}`);
    return [[name, { axis: axis as OwnerAxis, values }]];
  }),
);
/** Knobs that belong to one reduction (a strategy's): a run of another reduction does not get them. */
export const STRATEGY_KNOBS: Readonly<Partial<Record<TrainKnobName, Reduction>>> = Object.fromEntries(
  Object.entries(KNOB_OWNERS).flatMap(([name, owner]) =>
    owner.axis === "reduction" ? [[name, owner.values[0] as Reduction]] : [],
  ),
);
/**
 * Combinations the worker refuses, each with why (registry.json's rules): when a run's values are among `if`'s (an axis
 * is a train knob or "model", the model's kind), each knob of `then` must take one of its values (null: unset).
 */
export interface KnobRule {
  readonly if: Readonly<Record<string, readonly unknown[]>>;
  readonly then: Readonly<Partial<Record<TrainKnobName, readonly unknown[]>>>;
  readonly because: string;
}
export const KNOB_RULES: readonly KnobRule[] = registry.rules as unknown as readonly KnobRule[];
/** The strategies with knobs of their own (PowerSGD, local SGD, the asynchronous parameter server). */
export const STRATEGIES: readonly Reduction[] = [...new Set(Object.values(STRATEGY_KNOBS))];
/** The value a run has on an owner axis: its model's kind, its parallelism, its reduction (defaults when unset). */
export function ownerAxisValue(axis: OwnerAxis, model: string, knobs: Readonly<Record<string, unknown>>): string {
  if (axis === "model") return (MODEL_KIND as Readonly<Record<string, ModelKind>>)[model] ?? "image";
  return String(knobs[axis] ?? TRAIN_KNOBS[axis].default);
}

/** Train knobs by campaign name, in the registry's order (which is the campaign schema's and the worker's flags'). */
export const TRAIN_KNOB_NAMES = keysOf(registry.trainKnobs);

function trainKnob(name: TrainKnobName): TrainKnob {
  const entry: Readonly<Record<string, unknown>> = registry.trainKnobs[name];
  const type = entry["type"] as TrainKnob["type"];
  if (!KNOB_TYPES.includes(type))
    throw new Error(
      `registry.json: train knob ${name} has type ${String(type)}, expected one of ${KNOB_TYPES.join(", ")}`,
    );
  const named: Readonly<Record<string, TrainKnob["choices"]>> = { reductions: REDUCTIONS, layouts: LAYOUTS };
  const choices =
    typeof entry["choices"] === "string" ? named[entry["choices"]] : (entry["choices"] as TrainKnob["choices"]);
  if (typeof entry["choices"] === "string" && choices === undefined)
    throw new Error(
      `registry.json: train knob ${name} has choices "${entry["choices"]}", expected a list or one of ${Object.keys(named).join(", ")}`,
    );
  const numbers = Object.fromEntries(
    (["min", "max", "gt", "lt"] as const).flatMap((bound) =>
      typeof entry[bound] === "number" ? [[bound, entry[bound]]] : [],
    ),
  );
  return {
    flag: entry["flag"] as string,
    type,
    default: entry["default"] as TrainKnob["default"],
    ...numbers,
    ...(choices === undefined ? {} : { choices }),
    needs: (entry["needs"] ?? []) as TrainKnobName[],
    excludes: (entry["excludes"] ?? []) as TrainKnobName[],
    ...(typeof entry["label"] === "string" ? { label: entry["label"] } : {}),
    ...(typeof entry["legacyValues"] === "object" && entry["legacyValues"] !== null
      ? { legacyValues: entry["legacyValues"] as Readonly<Record<string, string>> }
      : {}),
    ...(typeof entry["about"] === "string" ? { about: entry["about"] } : {}),
  };
}

/** Every train knob's flag, type, default, range and relations, by campaign name. */
export const TRAIN_KNOBS = Object.fromEntries(TRAIN_KNOB_NAMES.map((name) => [name, trainKnob(name)])) as {
  readonly [K in TrainKnobName]: TrainKnob<TrainKnobValue<K>>;
};

/**
 * A knob's value as it reads today: an older campaign file's or record's value (registry.json's legacyValues: true and
 * false for activationCheckpointing) as the choice it now means, any other value as it is.
 */
export function currentKnobValue(name: string, value: unknown): unknown {
  const legacy = (TRAIN_KNOBS as Readonly<Record<string, TrainKnob>>)[name]?.legacyValues;
  return legacy !== undefined && (typeof value === "boolean" || value === null)
    ? (legacy[String(value)] ?? value)
    : value;
}

/** A numeric knob as a run has it: its own value, or the worker's default (what the worker then used). */
export function numericKnob(knobs: Readonly<Record<string, unknown>>, name: TrainKnobName): number | undefined {
  const value = knobs[name] ?? TRAIN_KNOBS[name].default;
  return typeof value === "number" ? value : undefined;
}

/**
 * What the all-reduce probe sums with (`allreduce --library`): torch, torch.distributed's own backend (Gloo on CPU,
 * NCCL on GPUs), or mpi, Open MPI's MPI_Allreduce through mpi4py (docker/worker/ringlab_worker/mpi_library.py).
 */
export const PROBE_LIBRARIES = ["torch", "mpi"] as const;
export type ProbeLibrary = (typeof PROBE_LIBRARIES)[number];

/**
 * The collectives the probe times (`allreduce --collective`, nccl-tests' all_reduce_perf, all_gather_perf,
 * reduce_scatter_perf and sendrecv_perf), each with the name a layout's recorded traffic gives it (`op`).
 */
export const COLLECTIVES = keysOf(registry.collectives);
export type Collective = keyof Registry["collectives"];
export const COLLECTIVE_OP: Readonly<Record<Collective, "all_reduce" | "all_gather" | "reduce_scatter" | "send">> =
  mapValues(registry.collectives, (entry) => entry.op as "all_reduce" | "all_gather" | "reduce_scatter" | "send");

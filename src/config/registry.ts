/**
 * What the worker can do, as typed values: its models, its reductions and the train knobs a campaign sets, read
 * from the worker's registry (docker/worker/ringlab_worker/registry.json), the one place they are written. This
 * is the one module that imports the JSON; a leaf (nothing else from ringlab).
 *
 * A JSON module has no literal types, but its keys are literal: model, reduction and knob names are the JSON's
 * keys (`keyof`). A knob's value type follows from its entry's shape: `choices: "reductions"` a Reduction, other
 * choices a string, a boolean default (a switch) a boolean, anything else a number.
 */
import registry from "../../docker/worker/ringlab_worker/registry.json" with { type: "json" };

type Registry = typeof registry;
export type Model = keyof Registry["models"];
/** How gradients are summed across ranks: the worker's --reduction. */
export type Reduction = keyof Registry["reductions"];
export type TrainKnobName = keyof Registry["trainKnobs"];

type ValueOf<Entry> = Entry extends { choices: string }
  ? Reduction
  : Entry extends { choices: readonly string[] }
    ? string
    : Entry extends { default: boolean }
      ? boolean
      : number;
/** The value a campaign gives knob K. */
export type TrainKnobValue<K extends TrainKnobName> = ValueOf<Registry["trainKnobs"][K]>;

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
  /** enum only, in the registry's order ("reductions" already resolved to REDUCTIONS). */
  readonly choices?: readonly [string, ...string[]];
  /** Knobs a campaign that sets this one must set too, and knobs it must not set with it. */
  readonly needs: readonly TrainKnobName[];
  readonly excludes: readonly TrainKnobName[];
  /** What a message calls the feature the knob turns on ("time to train"), where it has a name of its own. */
  readonly label?: string;
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

/** A language model's shape (docker/worker/ringlab_worker/models/transformer.py builds it). */
export interface TransformerShape {
  readonly layers: number;
  readonly width: number;
  readonly heads: number;
  /** The learned positions: the longest sequence. */
  readonly sequenceLength: number;
  readonly vocab: number;
}
/** Each language model's shape, by name. */
export const LANGUAGE_SHAPE: Readonly<Partial<Record<Model, TransformerShape>>> = Object.fromEntries(
  Object.entries(registry.models).flatMap(([name, model]) =>
    "layers" in model
      ? [
          [
            name,
            {
              layers: model.layers,
              width: model.width,
              heads: model.heads,
              sequenceLength: model.sequenceLength,
              vocab: model.vocab,
            },
          ],
        ]
      : [],
  ),
);
/** What throughput counts for a model: images, or tokens. */
export function throughputUnit(model: string): "images" | "tokens" {
  return (MODEL_KIND as Readonly<Record<string, ModelKind>>)[model] === "language" ? "tokens" : "images";
}

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
  const choices = entry["choices"] === "reductions" ? REDUCTIONS : (entry["choices"] as TrainKnob["choices"]);
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
    ...(typeof entry["about"] === "string" ? { about: entry["about"] } : {}),
  };
}

/** Every train knob's flag, type, default, range and relations, by campaign name. */
export const TRAIN_KNOBS = Object.fromEntries(TRAIN_KNOB_NAMES.map((name) => [name, trainKnob(name)])) as {
  readonly [K in TrainKnobName]: TrainKnob<TrainKnobValue<K>>;
};

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

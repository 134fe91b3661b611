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

type ValueOf<Entry> = Entry extends { choices: string } ? Reduction
  : Entry extends { choices: readonly string[] } ? string
    : Entry extends { default: boolean } ? boolean
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
}

function keysOf<K extends string>(record: Readonly<Record<K, unknown>>): readonly [K, ...K[]] {
  return Object.keys(record) as K[] as [K, ...K[]];
}

function mapValues<K extends string, V, T>(record: Readonly<Record<K, V>>, pick: (value: V) => T): Readonly<Record<K, T>> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, pick(value as V)])) as Record<K, T>;
}

/** The models the worker trains, in the registry's order. */
export const MODELS = keysOf(registry.models);
/** The worker's default image size of each model (its --image-size when the campaign sets no imageSize). */
export const NATIVE_IMAGE_SIZE: Readonly<Record<Model, number>> = mapValues(registry.models, (model) => model.imageSize);
/** fp32 parameter counts of the worker's models. */
export const PARAMETER_COUNT: Readonly<Record<Model, number>> = mapValues(registry.models, (model) => model.parameters);

/** The worker's reductions, in the registry's order: ring first, then the two parameter servers. */
export const REDUCTIONS = keysOf(registry.reductions);
/** Reductions that run as a DDP communication hook (Horovod has only its own all-reduce). */
export const DDP_HOOK_REDUCTIONS: readonly Reduction[] = REDUCTIONS.filter((reduction) => registry.reductions[reduction].ddpHook);
/** The reduction whose probe measures a reduction's link: itself, or ring for strategies that are ring all-reduces of fewer bytes (PowerSGD, local SGD). */
export function probedAs(reduction: Reduction): Reduction {
  return registry.reductions[reduction].probedAs as Reduction;
}
/** Knobs that belong to one reduction (a strategy's): a run of another reduction does not get them. */
export const STRATEGY_KNOBS: Readonly<Partial<Record<TrainKnobName, Reduction>>> = {
  powersgdRank: "powersgd", powersgdStartIter: "powersgd", localSgdPeriod: "local-sgd", localSgdWarmup: "local-sgd",
  asyncStaleness: "async-parameter-server",
};
/** The strategies with knobs of their own (PowerSGD, local SGD, the asynchronous parameter server). */
export const STRATEGIES: readonly Reduction[] = [...new Set(Object.values(STRATEGY_KNOBS))];

/** Train knobs by campaign name, in the registry's order (which is the campaign schema's and the worker's flags'). */
export const TRAIN_KNOB_NAMES = keysOf(registry.trainKnobs);

function trainKnob(name: TrainKnobName): TrainKnob {
  const entry: Readonly<Record<string, unknown>> = registry.trainKnobs[name];
  const type = entry["type"] as TrainKnob["type"];
  if (!KNOB_TYPES.includes(type)) throw new Error(`registry.json: train knob ${name} has type ${String(type)}, expected one of ${KNOB_TYPES.join(", ")}`);
  const choices = entry["choices"] === "reductions" ? REDUCTIONS : entry["choices"] as TrainKnob["choices"];
  const numbers = Object.fromEntries((["min", "max", "gt", "lt"] as const).flatMap((bound) => typeof entry[bound] === "number" ? [[bound, entry[bound]]] : []));
  return {
    flag: entry["flag"] as string, type, default: entry["default"] as TrainKnob["default"], ...numbers,
    ...(choices === undefined ? {} : { choices }),
    needs: (entry["needs"] ?? []) as TrainKnobName[], excludes: (entry["excludes"] ?? []) as TrainKnobName[],
  };
}

/** Every train knob's flag, type, default, range and relations, by campaign name. */
export const TRAIN_KNOBS = Object.fromEntries(TRAIN_KNOB_NAMES.map((name) => [name, trainKnob(name)])) as
  { readonly [K in TrainKnobName]: TrainKnob<TrainKnobValue<K>> };

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

/**
 * The worker's registry (docker/worker/ringlab_worker/registry.json) against the campaign schema: every train knob
 * is a campaign train knob and a matrix axis with the registry's range, choices and default, the knobs a knob
 * needs or excludes are enforced, and the planner passes each knob with the registry's flag.
 * test/worker/test_registry.py checks the same file against the worker's parser.
 */
import { describe, expect, it } from "vitest";
import { planCampaign } from "../../src/campaign/plan.ts";
import {
  KNOB_OWNERS,
  LANGUAGE_SHAPE,
  MODEL_KIND,
  MODELS,
  NATIVE_IMAGE_SIZE,
  PARAMETER_COUNT,
  PLAIN_STEPS_KNOB,
  PLANNING,
  STRATEGY_KNOBS,
  planningFigures,
  planningOf,
  TRAIN_KNOB_NAMES,
  TRAIN_KNOBS,
  type TrainKnob,
  type TrainKnobName,
} from "../../src/config/registry.ts";
import { TRAIN_KNOB_NAMES as SCHEMA_KNOB_NAMES, validateCampaign } from "../../src/config/schema.ts";
import registry from "../../docker/worker/ringlab_worker/registry.json" with { type: "json" };

type Value = string | number | boolean;
type Knobs = Readonly<Record<string, Value>>;
/** Matrix axes: one value, or a list of values. */
type Axes = Readonly<Record<string, Value | Value[]>>;

/** An AWS testbed: a GPU (amp) and Horovod are allowed there, so every choice of every knob can be accepted. */
const TESTBED = { target: "aws", name: "t", nodes: 3, adminCidr: "203.0.113.7/32", sshPublicKey: "ssh-ed25519 AAAA" };
/** Time to train with recovery from a checkpoint: what the schema asks before a fault can be injected. */
const TIME_TO_TRAIN: Knobs = { data: "dataset", epochs: 2, checkpointEvery: 2, maxRestarts: 1 };
/** Knobs the schema's cross-knob rules tie to time to train though the registry lists no `needs` for them. */
const SCHEMA_TIME_TO_TRAIN: readonly TrainKnobName[] = ["maxRestarts", "minNodes"];
/** What the schema's rules ask beyond the registry's needs: the other nodes may go on without the lost one. */
const SCHEMA_EXTRA: Partial<Record<TrainKnobName, Knobs>> = { failNode: { minNodes: 1 } };
/** A language model, for the knobs that belong to language models or to the layouts that split one. */
const LANGUAGE_MODEL = "gpt-nano";
/**
 * What the schema's shape rules ask for a knob's whole range to be a shape the worker builds: a llama model with 131072
 * positions for the longest sequence and key and value heads of its own, a width that 512 heads divide.
 */
const SHAPE_CONTEXT: Partial<Record<TrainKnobName, { readonly model: string; readonly knobs: Knobs }>> = {
  sequenceLength: { model: "llama3.1-8b", knobs: {} },
  heads: { model: LANGUAGE_MODEL, knobs: { width: 65536 } },
  kvHeads: { model: "llama3.1-8b", knobs: { heads: 512, width: 65536 } },
};

/** The model and node count a knob is tried with: its owner's (registry.json's belongsTo). */
function matrixOf(knob: TrainKnobName): Axes {
  const owner = KNOB_OWNERS[knob];
  const language =
    knob === "parallelism" ||
    (owner?.axis === "model" && owner.values.includes("language")) ||
    (owner?.axis === "parallelism" && !owner.values.includes("fsdp"));
  // Pipeline stages divide the workers: 2 stages, 2 nodes.
  return {
    ...(language ? { model: SHAPE_CONTEXT[knob]?.model ?? LANGUAGE_MODEL } : {}),
    ...(owner?.axis === "parallelism" && owner.values.includes("pipeline") ? { nodes: [2] } : {}),
  };
}

/** The knob's owner as a train knob: the reduction or parallelism it belongs to (fsdp where it is one of several). */
function ownerKnobs(knob: TrainKnobName): Knobs {
  const owner = KNOB_OWNERS[knob];
  if (owner === undefined || owner.axis === "model") return {};
  return { [owner.axis]: owner.values.includes("fsdp") ? "fsdp" : owner.values[0]! };
}

function document(train: Knobs, axes: Axes = {}): unknown {
  return {
    testbed: TESTBED,
    campaign: {
      matrix: { nodes: [3], model: "tiny", batchSize: 8, bandwidth: "1gbit", ...axes },
      train,
      dataset: { name: "shapes" },
    },
  };
}

/** Every knob `knob` needs, and what those need in turn. */
function needsOf(knob: TrainKnobName): TrainKnobName[] {
  const direct: readonly TrainKnobName[] = TRAIN_KNOBS[knob].needs;
  return [...new Set(direct.flatMap((needed) => [needed, ...needsOf(needed)]))];
}

/** A valid value of a knob: its default, else the smallest value its range allows, else its first choice. */
function validValue(knob: TrainKnob): Value {
  if (knob.default !== null) return knob.default;
  return knob.type === "switch" ? true : (knob.choices?.[0] ?? knob.min ?? (knob.gt ?? 0) + 1);
}

/**
 * The other knobs a campaign that sets `knob` needs for the schema to accept it: the registry's needs and the schema's
 * own.
 */
function contextOf(knob: TrainKnobName): Record<string, Value> {
  const needs = needsOf(knob);
  const timeToTrain = knob === "epochs" || needs.includes("epochs") || SCHEMA_TIME_TO_TRAIN.includes(knob);
  const context: Record<string, Value> = timeToTrain ? { ...TIME_TO_TRAIN } : {};
  for (const needed of needs) context[needed] ??= validValue(TRAIN_KNOBS[needed]);
  Object.assign(context, SCHEMA_EXTRA[knob], SHAPE_CONTEXT[knob]?.knobs, ownerKnobs(knob));
  delete context[knob];
  return context;
}

/** Values the registry's range accepts and values just outside it. */
function rangeCases(knob: TrainKnob): { inside: number[]; outside: number[] } {
  const step = knob.type === "int" ? 1 : 0.001;
  const inside: number[] = [];
  const outside: number[] = [];
  if (knob.min !== undefined) {
    inside.push(knob.min);
    outside.push(knob.min - step);
  }
  if (knob.gt !== undefined) {
    inside.push(knob.gt + step);
    outside.push(knob.gt);
  }
  if (knob.max !== undefined) {
    inside.push(knob.max);
    outside.push(knob.max + step);
  }
  if (knob.lt !== undefined) {
    inside.push(knob.lt - step);
    outside.push(knob.lt);
  }
  if (knob.type === "int") outside.push((knob.min ?? knob.max ?? 0) + 0.5);
  return { inside, outside };
}

function acceptedValues(knob: TrainKnob): Value[] {
  const values: Value[] =
    knob.type === "enum" ? [...knob.choices!] : knob.type === "switch" ? [true, false] : rangeCases(knob).inside;
  return knob.default === null ? values : [...values, knob.default];
}

function refusedValues(knob: TrainKnob): Value[] {
  if (knob.type === "enum") return ["not-a-choice", 1];
  if (knob.type === "switch") return [1, "yes"];
  return [...rangeCases(knob).outside, "1"];
}

function problemsIn(train: Knobs, axes: Axes = {}): string[] {
  const result = validateCampaign(document(train, axes));
  return result.ok ? [] : result.problems.map((problem) => `${problem.path}: ${problem.message}`);
}

describe("the registry's names", () => {
  it("lists the campaign's train knobs, in the registry's order", () => {
    expect(TRAIN_KNOB_NAMES).toEqual(Object.keys(registry.trainKnobs));
    expect(SCHEMA_KNOB_NAMES).toEqual(Object.keys(registry.trainKnobs));
  });

  it("gives every image model a native image size, every language model a shape, and every model a parameter count", () => {
    expect(MODELS).toEqual(Object.keys(registry.models));
    expect([...Object.keys(NATIVE_IMAGE_SIZE), ...Object.keys(LANGUAGE_SHAPE)]).toEqual(MODELS);
    expect(Object.keys(PARAMETER_COUNT)).toEqual(MODELS);
  });

  // Issue #51: the planning figures were tables of their own in estimate.ts, assumed-throughput.ts and gpu-memory.ts;
  // a model missing from one was estimated as NaN or skipped by the GPU memory check without a word.
  it("gives every image model its planning figures, each beside where it came from, and no language model any", () => {
    const imageModels = MODELS.filter((model) => MODEL_KIND[model] === "image");
    expect(Object.keys(PLANNING)).toEqual(imageModels);
    for (const model of imageModels) {
      const entry = registry.models[model] as { readonly planning?: unknown };
      expect(() => planningFigures(model, entry.planning), model).not.toThrow();
    }
    expect(() => planningOf("gpt-nano")).toThrow(
      "registry.json has no planning figures for gpt-nano: only image models have them",
    );
  });

  it("refuses an image model's planning without a figure or its source, naming each", () => {
    const complete = {
      cpuImagesPerSecond: { value: 190, source: "measured" },
      t4Fp32ImagesPerSecond: { value: 4000, source: "a guess" },
      activationMibPerImage: { fp32: 0.3, amp: 0.2, source: "measured" },
    };
    expect(planningFigures("small2", complete)).toEqual({
      cpuImagesPerSecond: 190,
      t4Fp32ImagesPerSecond: 4000,
      activationMibPerImage: { fp32: 0.3, amp: 0.2 },
    });
    const { cpuImagesPerSecond: _, ...withoutCpu } = complete;
    expect(() => planningFigures("small2", withoutCpu)).toThrow(
      "registry.json: image model small2 lacks planning.cpuImagesPerSecond.value, planning.cpuImagesPerSecond.source: " +
        "`ringlab plan` sizes its estimate and GPU memory check with them (each figure a number above 0, beside where it came from)",
    );
    const noAmp = { ...complete, activationMibPerImage: { fp32: 0.3, source: "measured" } };
    expect(() => planningFigures("small2", noAmp)).toThrow(/ lacks planning\.activationMibPerImage\.amp: /);
    const zero = { ...complete, cpuImagesPerSecond: { value: 0, source: "measured" } };
    expect(() => planningFigures("small2", zero)).toThrow(/ lacks planning\.cpuImagesPerSecond\.value: /);
    const unsourced = { ...complete, t4Fp32ImagesPerSecond: { value: 4000, source: " " } };
    expect(() => planningFigures("small2", unsourced)).toThrow(/ lacks planning\.t4Fp32ImagesPerSecond\.source: /);
    expect(() => planningFigures("small2", undefined)).toThrow(
      / lacks planning\.cpuImagesPerSecond\.value, .*, planning\.activationMibPerImage\.source: /,
    );
  });

  it("names as a strategy's plain steps an integer knob of that strategy", () => {
    expect(PLAIN_STEPS_KNOB).toEqual({ powersgd: "powersgdStartIter", "local-sgd": "localSgdWarmup" });
    for (const [reduction, knob] of Object.entries(PLAIN_STEPS_KNOB)) {
      expect(TRAIN_KNOBS[knob!].type).toBe("int");
      expect(STRATEGY_KNOBS[knob!]).toBe(reduction);
    }
  });

  it("names only known knobs in needs and excludes, and gives every knob a flag of its own", () => {
    for (const knob of TRAIN_KNOB_NAMES) {
      for (const other of [...TRAIN_KNOBS[knob].needs, ...TRAIN_KNOBS[knob].excludes])
        expect(TRAIN_KNOB_NAMES).toContain(other);
    }
    const flags = TRAIN_KNOB_NAMES.map((knob) => TRAIN_KNOBS[knob].flag);
    expect(new Set(flags).size).toBe(flags.length);
  });
});

describe.each(TRAIN_KNOB_NAMES)("train knob %s", (name) => {
  const knob = TRAIN_KNOBS[name];
  const context = contextOf(name);
  const problemsOf = (train: Knobs, axes: Axes = {}) => problemsIn(train, { ...matrixOf(name), ...axes });

  it("is accepted within the registry's range or choices (and at its default), in train and as a matrix axis", () => {
    for (const value of acceptedValues(knob)) {
      expect(problemsOf({ ...context, [name]: value }), `train ${name}: ${value}`).toEqual([]);
      expect(problemsOf(context, { [name]: value }), `matrix ${name}: ${value}`).toEqual([]);
      expect(problemsOf(context, { [name]: [value] }), `matrix ${name}: [${value}]`).toEqual([]);
    }
  });

  it("is refused just outside them, at its own path", () => {
    for (const value of refusedValues(knob)) {
      expect(problemsOf({ ...context, [name]: value }), `train ${name}: ${value}`).toEqual(
        expect.arrayContaining([expect.stringMatching(new RegExp(`^campaign\\.train\\.${name}\\b`))]),
      );
      expect(problemsOf(context, { [name]: value }), `matrix ${name}: ${value}`).toEqual(
        expect.arrayContaining([expect.stringMatching(new RegExp(`^campaign\\.matrix\\.${name}\\b`))]),
      );
    }
  });

  it.each(knob.needs.map((needed) => [needed]))("is refused without %s, which it needs", (needed) => {
    const without = { ...context, [name]: validValue(knob) };
    delete without[needed];
    expect(problemsOf(without)).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`^campaign\\.train\\.${name}: .*${needed}`))]),
    );
  });

  it.each(knob.excludes.map((excluded) => [excluded]))("is refused with %s, which it excludes", (excluded) => {
    const both = {
      ...contextOf(excluded),
      ...context,
      [excluded]: validValue(TRAIN_KNOBS[excluded]),
      [name]: validValue(knob),
    };
    expect(problemsOf(both)).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`(${name}.*${excluded})|(${excluded}.*${name})`))]),
    );
  });

  it("reaches the worker as the registry's flag", () => {
    const value = knob.type === "switch" ? true : knob.type === "enum" ? knob.choices!.at(-1)! : validValue(knob);
    const result = validateCampaign(document({ ...context, [name]: value }, matrixOf(name)));
    if (!result.ok) throw new Error(result.problems.map((problem) => problem.message).join("\n"));
    const run = planCampaign(result.value, "registry").runs.find((planned) => planned.job === "train")!;
    const at = run.workerArgs.indexOf(knob.flag);
    expect(at, run.workerArgs.join(" ")).toBeGreaterThanOrEqual(0);
    if (knob.type !== "switch") expect(run.workerArgs[at + 1]).toContain(String(value));
  });
});

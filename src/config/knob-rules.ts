/**
 * The rules registry.json declares of the train knobs, enforced as declared (the worker's command line enforces the
 * same declarations, docker/worker/ringlab_worker/cli.py check_registry_rules): a knob's belongsTo names the models,
 * layouts or reductions it goes with; its needs, the knobs a campaign that sets it must set too; its excludes, those it
 * must not set with it; and the registry's rules, combinations refused with the reason. A campaign's knob has a value
 * in train or a list in the matrix: belongsTo and needs hold when some run can satisfy them, a rule when no run the
 * matrix makes breaks it. Pure.
 */
import {
  KNOB_OWNERS,
  KNOB_RULES,
  MODEL_KIND,
  TRAIN_KNOB_NAMES,
  TRAIN_KNOBS,
  type KnobOwner,
  type Model,
  type OwnerAxis,
  type TrainKnobName,
} from "./registry.ts";

/** What a campaign sets of each knob: its train value and matrix values, the model axis. */
export interface KnobSettings {
  readonly models: readonly Model[];
  /** Every value the campaign gives a knob, in the matrix and in train. */
  readonly values: (knob: TrainKnobName) => readonly unknown[];
}

export interface KnobRuleProblem {
  readonly knob: TrainKnobName;
  readonly message: string;
}

/**
 * The values a campaign's runs take on an owner axis: its models' kinds, or the knob's values (its default if unset).
 */
function axisValues(axis: OwnerAxis, settings: KnobSettings): string[] {
  if (axis === "model") return [...new Set(settings.models.map((model) => MODEL_KIND[model]))];
  const set = settings.values(axis).map(String);
  return set.length > 0 ? set : [String(TRAIN_KNOBS[axis].default)];
}

function ownerText(owner: KnobOwner): string {
  return owner.axis === "model" ? `${owner.values.join(" and ")} models` : `${owner.axis} ${owner.values.join(" or ")}`;
}

function remedy(owner: KnobOwner): string {
  if (owner.axis === "model") {
    const examples = (Object.keys(MODEL_KIND) as Model[])
      .filter((model) => owner.values.includes(MODEL_KIND[model]))
      .slice(0, 3);
    return `add one to matrix.model (${examples.join(", ")}, ...)`;
  }
  return `set ${owner.axis} to ${owner.values[0]} (in train or the matrix)`;
}

/** Every rule of the registry a campaign breaks, knob by knob in the registry's order. */
export function knobRuleProblems(settings: KnobSettings): KnobRuleProblem[] {
  const isSet = (knob: TrainKnobName) => settings.values(knob).length > 0;
  const problems: KnobRuleProblem[] = [];
  for (const knob of TRAIN_KNOB_NAMES.filter(isSet)) {
    const owner = KNOB_OWNERS[knob];
    if (owner !== undefined && !axisValues(owner.axis, settings).some((value) => owner.values.includes(value))) {
      problems.push({ knob, message: `${knob} belongs to ${ownerText(owner)}: ${remedy(owner)}` });
    }
    for (const needed of TRAIN_KNOBS[knob].needs.filter((other) => !isSet(other))) {
      const label = TRAIN_KNOBS[needed].label;
      problems.push({
        knob,
        message: `${knob} needs ${needed}${label === undefined ? "" : ` (${label})`}: set it too`,
      });
    }
    // Once per pair, at the later knob.
    for (const excluded of TRAIN_KNOBS[knob].excludes.filter(
      (other) => isSet(other) && TRAIN_KNOB_NAMES.indexOf(other) < TRAIN_KNOB_NAMES.indexOf(knob),
    )) {
      problems.push({ knob, message: `${knob} and ${excluded} exclude each other: set one` });
    }
  }
  return problems;
}

/** A value as a message names it: null is a knob left unset. */
function shown(axis: string, value: unknown): string {
  if (axis === "model") return `${String(value)} models`;
  return value === null ? `${axis} unset` : value === true ? axis : `${axis} ${String(value)}`;
}

/**
 * The values a run of the campaign can take on an axis of a rule: the model kinds, or a knob's values (null: unset).
 */
function ruleAxisValues(axis: string, settings: KnobSettings): unknown[] {
  if (axis === "model") return [...new Set(settings.models.map((model) => MODEL_KIND[model]))];
  const set = settings.values(axis as TrainKnobName);
  return set.length > 0 ? [...new Set(set)] : [TRAIN_KNOBS[axis as TrainKnobName].default];
}

/** The registry's rules a run of the campaign would break: every combination of the rule's axes the matrix makes. */
export function combinationProblems(settings: KnobSettings): KnobRuleProblem[] {
  const problems: KnobRuleProblem[] = [];
  for (const rule of KNOB_RULES) {
    const conditions = Object.entries(rule.if);
    for (const [knob, allowed] of Object.entries(rule.then) as [TrainKnobName, readonly unknown[]][]) {
      const axes = [...conditions.map(([axis]) => axis), knob];
      const combinations = axes.reduce<unknown[][]>(
        (combos, axis) => combos.flatMap((combo) => ruleAxisValues(axis, settings).map((value) => [...combo, value])),
        [[]],
      );
      const broken = combinations.find(
        (combo) =>
          conditions.every(([, values], index) => values.includes(combo[index])) &&
          !allowed.includes(combo.at(-1) ?? null),
      );
      if (broken !== undefined) {
        const when = conditions.map(([axis], index) => shown(axis, broken[index])).join(" and ");
        problems.push({ knob, message: `${shown(knob, broken.at(-1))} with ${when}: ${rule.because}` });
      }
    }
  }
  return problems;
}

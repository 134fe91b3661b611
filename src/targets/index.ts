/**
 * The testbed targets, by name: where a campaign's nodes come from (./target.ts says what a target is). The campaign
 * schema, the spec, the testbed verbs, the campaign's flow and the CLI ask this table and check a target's gaps, never
 * its name; only src/targets/ compares target names (test/results/imports.test.ts holds that). Adding a target is a
 * module here and its line in each list below.
 */
import { z } from "zod";
import { awsSection, awsSpec, awsTarget } from "./aws/target.ts";
import { kubernetesSection, kubernetesTarget } from "./kubernetes/target.ts";
import { localSection, localSpec, localTarget } from "./local/target.ts";
import { gapOf, type Capability, type Target, type TestbedSection } from "./target.ts";

export {
  CAPABILITIES,
  gapOf,
  type Capability,
  type CampaignTestbed,
  type Gaps,
  type Target,
  type TargetEstimate,
  type TargetOptions,
  type TestbedSection,
} from "./target.ts";

/** Each target's campaign-file section, in the order a wrong `testbed.target` lists them. */
const SECTIONS = { local: localSection, aws: awsSection, kubernetes: kubernetesSection } as const;
/** The spec each target that ringlab brings up stores (src/testbed/spec.ts). */
const SPECS = { local: localSpec, aws: awsSpec } as const;

export type TargetName = keyof typeof SECTIONS;
export type SpecTargetName = keyof typeof SPECS;

export const TARGETS: { readonly [N in TargetName]: Target } = {
  local: localTarget,
  aws: awsTarget,
  kubernetes: kubernetesTarget,
};

export const TARGET_NAMES = Object.keys(SECTIONS) as TargetName[];
/** The targets whose testbeds have a spec and a record (src/testbed/record.ts). */
export const SPEC_TARGET_NAMES = Object.keys(SPECS) as [SpecTargetName, ...SpecTargetName[]];

type Sections = (typeof SECTIONS)[TargetName];
type Specs = (typeof SPECS)[SpecTargetName];

/** The campaign file's `testbed`: one section per target, told apart by `target`. */
export const TESTBED_SECTIONS = Object.values(SECTIONS) as unknown as readonly [Sections, ...Sections[]];
/** A stored testbed spec: one schema per target that has one, told apart by `target`. */
export const testbedSpecSchema = z.discriminatedUnion(
  "target",
  Object.values(SPECS) as unknown as readonly [Specs, ...Specs[]],
);

/** The target of a testbed section, spec or record (each names its own). */
export function targetOf(testbed: { readonly target: TargetName }): Target {
  return TARGETS[testbed.target];
}

/**
 * The target a record names (a record's target is the name it was written with), or undefined for a name this ringlab
 * does not know.
 */
export function targetNamed(name: string): Target | undefined {
  return (TARGET_NAMES as readonly string[]).includes(name) ? TARGETS[name as TargetName] : undefined;
}

/** Why the testbed's target cannot do `capability` with its settings; undefined: it can. */
export function gapOfTestbed(testbed: TestbedSection, capability: Capability): string | undefined {
  return gapOf(targetOf(testbed), capability, testbed);
}

/** The targets that can do `capability` whatever their settings, for messages ("local, aws"). */
export function targetsThatCan(capability: Capability): Target[] {
  return Object.values(TARGETS).filter((target) => target.gaps[capability] === undefined);
}

/**
 * local-sgd: after its warm-up every rank steps alone and the parameters are all-reduced once every localSgdPeriod
 * (H) steps: the ring's bound with S the parameters / H, and 1/H all-reduces per step.
 */
import { numericKnob } from "../config/registry.ts";
import { ring } from "./ring.ts";
import type { Knobs, ReductionUnit } from "./unit.ts";

const period = (knobs: Knobs) => numericKnob(knobs, "localSgdPeriod") ?? 1;

export const localSgd: ReductionUnit = {
  lowerBoundSeconds: ring.lowerBoundSeconds,
  wireBytesPerStep: (gradientBytes, knobs) => gradientBytes / period(knobs),
  allReducesPerStep: (_gradientBytes, knobs) => 1 / period(knobs),
};

/**
 * The reductions, one unit each (unit.ts says what a unit answers), keyed by registry.json's names: a reduction of the
 * registry without its unit here does not compile. A new reduction is its registry entry, its module here and its
 * line below, and its unit in the worker (docker/worker/ringlab_worker/reductions/).
 */
import { REDUCTIONS, type Reduction } from "../config/registry.ts";
import type { Placement } from "../results/cost-model.ts";
import { asyncParameterServer } from "./async-parameter-server.ts";
import { localSgd } from "./local-sgd.ts";
import { parameterServer } from "./parameter-server.ts";
import { powersgd } from "./powersgd.ts";
import { ring } from "./ring.ts";
import { shardedParameterServer } from "./sharded-parameter-server.ts";
import type { Knobs, ReductionUnit } from "./unit.ts";

export type { Reduction } from "../config/registry.ts";

const UNITS: Readonly<Record<Reduction, ReductionUnit>> = {
  ring,
  "sharded-parameter-server": shardedParameterServer,
  "parameter-server": parameterServer,
  powersgd,
  "local-sgd": localSgd,
  "async-parameter-server": asyncParameterServer,
};

export function isReduction(value: unknown): value is Reduction {
  return (REDUCTIONS as readonly unknown[]).includes(value);
}

/** Lower bound on summing `bytes` over every rank of `placement` with `reduction` (unit.ts); zero on one node. */
export function reductionLowerBoundSeconds(
  reduction: Reduction,
  bytes: number,
  placement: Placement,
  linkGbps: number,
  egressShaped: boolean,
): number {
  return placement.nodes <= 1 ? 0 : UNITS[reduction].lowerBoundSeconds(bytes, placement, linkGbps, egressShaped);
}

/** The bytes one rank sends per step with `reduction`, or why only a run of it can say. */
export function wireBytesPerStep(
  reduction: Reduction,
  gradientBytes: number,
  knobs: Knobs,
): number | { readonly missing: string } {
  return UNITS[reduction].wireBytesPerStep(gradientBytes, knobs);
}

/** Ring all-reduces per step for the latency term; undefined: one per DDP bucket. */
export function allReducesPerStep(reduction: Reduction, gradientBytes: number, knobs: Knobs): number | undefined {
  return UNITS[reduction].allReducesPerStep?.(gradientBytes, knobs);
}

/** The share of its probe's exchange that one training step pays: 1 but for the asynchronous server. */
export function exchangeShare(reduction: Reduction, ranks: number): number {
  return UNITS[reduction].exchangeShare?.(ranks) ?? 1;
}

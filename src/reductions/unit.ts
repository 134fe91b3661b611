/**
 * What one reduction (registry.json's reductions; the worker's --reduction) costs, as the planner, the predictions and
 * the report ask it: one module per reduction in this folder, collected in index.ts. The worker has the same units
 * (docker/worker/ringlab_worker/reductions/): its install and the bytes it reports sending, which wireBytesPerStep
 * predicts.
 */
import type { Placement } from "../results/cost-model.ts";

/** A run's train knobs, as a campaign or `predict` gives them (unset: the registry's default). */
export type Knobs = Readonly<Record<string, unknown>>;

export interface ReductionUnit {
  /**
   * Lower bound on one exchange of `bytes` (S) over every rank of `placement` (2 nodes or more), on node links of
   * B = `linkGbps`; what stays inside a node costs nothing here. `egressShaped`: links shaped on egress only, as
   * ringlab's tc shaping is.
   */
  lowerBoundSeconds(bytes: number, placement: Placement, linkGbps: number, egressShaped: boolean): number;
  /**
   * The bytes one rank sends per step over its probe's link (the worker's wireBytesPerStep), from the gradient's
   * bytes and the run's knobs; or why only a run of it can say.
   */
  wireBytesPerStep(gradientBytes: number, knobs: Knobs): number | { readonly missing: string };
  /** Ring all-reduces per step, for the latency term; absent: one per DDP bucket. */
  allReducesPerStep?(gradientBytes: number, knobs: Knobs): number;
  /** The share of its probe's exchange (over `ranks` ranks) that one training step pays; absent: all of it. */
  exchangeShare?(ranks: number): number;
}

/** --fp16-allreduce sends the ring's and the synchronous servers' buckets as float16: half the bytes. */
export function fp16Factor(knobs: Knobs): number {
  return knobs["fp16Allreduce"] === true ? 0.5 : 1;
}

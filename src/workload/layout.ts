/**
 * How a run's workers divide among pipeline stages (pp), data-parallel replicas (dpReplicate) and shards (dpShard),
 * and tensor-parallel groups (tp): the worker's docker/worker/ringlab_worker/parallel/dims.py, whose degrees multiply
 * to the world size. Which degrees a run's knobs ask for is its layout unit's rule (src/layouts/ dimsOf); these are
 * what a workload's traffic and memory take of them. Pure.
 */

export interface ParallelDims {
  readonly pp: number;
  readonly dpReplicate: number;
  readonly dpShard: number;
  readonly tp: number;
}

export type DimsResult =
  | { readonly ok: true; readonly dims: ParallelDims }
  | { readonly ok: false; readonly problem: string };

/** Replicas of the model that see different batches: global batch = this × batchSize. */
export function dataParallel(layout: ParallelDims): number {
  return layout.dpReplicate * layout.dpShard;
}

/** The blocks a pipeline stage holds: as even as they divide, earlier stages taking one more (the worker's split). */
export function stageBlocks(layers: number, stages: number, stage: number): number {
  return Math.floor(layers / stages) + (stage < layers % stages ? 1 : 0);
}

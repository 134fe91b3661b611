/**
 * How a run's workers divide among pipeline stages (pp), data-parallel replicas (dpReplicate) and shards (dpShard),
 * and tensor-parallel groups (tp): the worker's docker/worker/ringlab_worker/parallel/dims.py, for checking a campaign
 * and predicting its memory and traffic before anything starts. The two are kept the same by one table of cases that
 * both test suites read (test/fixtures/layout-dims.json). Pure.
 */
import { TRAIN_KNOBS } from "../config/registry.ts";

export interface ParallelDims {
  readonly pp: number;
  readonly dpReplicate: number;
  readonly dpShard: number;
  readonly tp: number;
}

export type DimsResult =
  | { readonly ok: true; readonly dims: ParallelDims }
  | { readonly ok: false; readonly problem: string };

const dims = (partial: Partial<ParallelDims>): DimsResult => ({
  ok: true,
  dims: { pp: 1, dpReplicate: 1, dpShard: 1, tp: 1, ...partial },
});

/** Replicas of the model that see different batches: global batch = this × batchSize. */
export function dataParallel(layout: ParallelDims): number {
  return layout.dpReplicate * layout.dpShard;
}

/**
 * The layout a run's knobs ask for on `workers` workers across `nodes` nodes, or why it cannot be: the worker's
 * dims_of, message for message.
 */
export function dimsOf(knobs: Readonly<Record<string, unknown>>, workers: number, nodes: number): DimsResult {
  const parallelism = String(knobs["parallelism"] ?? "ddp");
  const tensorDegree = typeof knobs["tensorDegree"] === "number" ? knobs["tensorDegree"] : undefined;
  const pipelineStages = typeof knobs["pipelineStages"] === "number" ? knobs["pipelineStages"] : undefined;
  const degree = (flag: string, value: number | undefined, fallback: number): number | string => {
    const chosen = value ?? fallback;
    return chosen < 1 || workers % chosen !== 0
      ? `${flag} ${chosen} does not divide the run's ${workers} workers`
      : chosen;
  };
  if ((parallelism === "ddp" || parallelism === "pipeline") && tensorDegree !== undefined && tensorDegree !== 1) {
    return {
      ok: false,
      problem: `tensorDegree with parallelism ${parallelism}: tensor parallelism goes with fsdp (FSDP x tensor, the 2-D layout torch supports) or parallelism tensor`,
    };
  }
  if (parallelism === "ddp") return dims({ dpReplicate: workers });
  if (parallelism === "fsdp") {
    const tp = degree("tensorDegree", tensorDegree, 1);
    if (typeof tp === "string") return { ok: false, problem: tp };
    if (knobs["fsdpSharding"] === "none") {
      return tp > 1
        ? { ok: false, problem: "fsdpSharding none with tensorDegree: the control shards nothing; use full" }
        : dims({ dpReplicate: workers });
    }
    return dims({ dpShard: workers / tp, tp });
  }
  if (parallelism === "tensor") {
    const tp = degree("tensorDegree", tensorDegree, workers);
    if (typeof tp === "string") return { ok: false, problem: tp };
    if (tp < workers) {
      return {
        ok: false,
        problem: `parallelism tensor with tensorDegree ${tp} of ${workers} workers: the other dimension would be data-parallel; use parallelism fsdp with tensorDegree ${tp} (FSDP x tensor, the 2-D layout torch supports)`,
      };
    }
    return dims({ tp });
  }
  if (parallelism === "pipeline") {
    const pp = degree("pipelineStages", pipelineStages, workers > 1 ? Math.max(nodes, 2) : 1);
    if (typeof pp === "string") return { ok: false, problem: pp };
    return dims({ pp, dpReplicate: workers / pp });
  }
  return { ok: false, problem: `unknown parallelism ${parallelism}` };
}

/**
 * Why a pipeline's micro-batches cannot run on `stages` stages at `batchSize`, or undefined: the worker's own checks
 * (parallel/pipeline.py), message for message, so that plan refuses the run before anything starts.
 */
export function pipelineProblem(
  knobs: Readonly<Record<string, unknown>>,
  batchSize: number,
  stages: number,
): string | undefined {
  if (String(knobs["parallelism"] ?? "ddp") !== "pipeline") return undefined;
  const microBatches = Number(knobs["microBatches"] ?? TRAIN_KNOBS.microBatches.default);
  if (batchSize % microBatches !== 0)
    return `batchSize ${batchSize} must be a multiple of microBatches ${microBatches}`;
  if (String(knobs["pipelineSchedule"] ?? TRAIN_KNOBS.pipelineSchedule.default) === "1f1b" && microBatches < stages) {
    return `pipelineSchedule 1f1b needs at least as many micro-batches as stages: microBatches ${microBatches} < ${stages} stages (torch's Schedule1F1B refuses it)`;
  }
  return undefined;
}

/** The blocks a pipeline stage holds: as even as they divide, earlier stages taking one more (the worker's split). */
export function stageBlocks(layers: number, stages: number, stage: number): number {
  return Math.floor(layers / stages) + (stage < layers % stages ? 1 : 0);
}

/**
 * A layout as degrees that compose (issue #69): tp × cp × pp × dp ranks, the data-parallel ones replicated or sharded
 * (ZeRO-0 to 3), a pipeline's schedule and virtual stages, micro-batches and gradient accumulation, checked in one
 * place against the cluster that would run it. The ranks lie in a mesh as pytorch/torchtitan's ParallelDims builds
 * its own, ["pp", "dp_replicate", "dp_shard", "cp", "tp"] with tp innermost, so that a tensor-parallel group
 * (all-reduces on every layer) stays inside a node and the data-parallel and pipeline groups cross nodes. Each group
 * says which nodes it spans, for the collectives on it to be timed on the tier they cross. A CPU campaign's knobs map
 * onto one through their layout unit (index.ts compositionOf). Pure.
 */

import type { MemoryTerms } from "../workload/memory.ts";
import type { ParallelDims } from "../workload/layout.ts";

/** The mesh's dimensions, outermost first (torchtitan's order). */
export const MESH_DIMENSIONS = ["pp", "dp_replicate", "dp_shard", "cp", "tp"] as const;
export type MeshDimension = (typeof MESH_DIMENSIONS)[number];

/**
 * What the data-parallel ranks shard (ZeRO's stages, Rajbhandari et al. 2020): nothing (DDP, ZeRO-0), the optimizer
 * state (ZeRO-1), the gradients too (ZeRO-2; FSDP's grad-op), the parameters too (ZeRO-3; FSDP's full).
 */
export const DP_SHARDINGS = ["none", "optimizer", "gradients", "full"] as const;
export type DataParallelSharding = (typeof DP_SHARDINGS)[number];

/**
 * GPipe (every forward, then every backward), 1F1B (one forward, one backward in turn) and interleaved 1F1B (each rank
 * holds `virtualStages` non-contiguous chunks of the model): Narayanan et al. 2021, "Efficient Large-Scale Language
 * Model Training on GPU Clusters Using Megatron-LM", §2.2.
 */
export const PIPELINE_SCHEDULES = ["gpipe", "1f1b", "interleaved-1f1b"] as const;
export type PipelineSchedule = (typeof PIPELINE_SCHEDULES)[number];

export interface Composition {
  /** Ranks that split each layer's matrices (Megatron's tensor parallelism). */
  readonly tp: number;
  /** Ranks that split each sequence (context parallelism); 1: none. */
  readonly cp: number;
  /** Pipeline stages. */
  readonly pp: number;
  /** Data-parallel ranks: replicas of the model that see different samples. */
  readonly dp: number;
  readonly dpSharding: DataParallelSharding;
  /**
   * Of the dp ranks, how many share one copy of the sharded state (FSDP's shard group); the rest replicate it (HSDP).
   * @default dp when dpSharding shards, 1 when it is none
   */
  readonly dpShard?: number;
  /** @default "1f1b" */
  readonly schedule?: PipelineSchedule;
  /** Model chunks per pipeline rank (interleaved-1f1b only). @default 1 */
  readonly virtualStages?: number;
  /** Samples in one micro-batch. */
  readonly microBatchSize: number;
  /** Micro-batches one pass pipelines (or, without a pipeline, runs one after another). @default 1 */
  readonly microBatches?: number;
  /** Passes whose gradients add up before the optimizer steps. @default 1 */
  readonly gradientAccumulation?: number;
  /**
   * A tensor-parallel group larger than a node's GPUs, its all-reduces on every layer over the network: allowed only
   * when said so. @default false
   */
  readonly allowCrossNodeTensor?: boolean;
}

/** Where the ranks run: `nodes` of `gpusPerNode` each, rank r on node ⌊r / gpusPerNode⌋. */
export interface RankPlacement {
  readonly nodes: number;
  readonly gpusPerNode: number;
}

/** Each mesh dimension's degree (dp split into its replicated and sharded parts). */
export function meshDegrees(composition: Composition): Readonly<Record<MeshDimension, number>> {
  const dpShard = dpShardOf(composition);
  return {
    pp: composition.pp,
    dp_replicate: composition.dp / dpShard,
    dp_shard: dpShard,
    cp: composition.cp,
    tp: composition.tp,
  };
}

function dpShardOf(composition: Composition): number {
  return composition.dpShard ?? (composition.dpSharding === "none" ? 1 : composition.dp);
}

/** Samples one data-parallel replica trains on per optimizer step. */
export function batchPerReplica(composition: Composition): number {
  return composition.microBatchSize * (composition.microBatches ?? 1) * (composition.gradientAccumulation ?? 1);
}

/** Samples the whole run trains on per optimizer step. */
export function globalBatch(composition: Composition): number {
  return composition.dp * batchPerReplica(composition);
}

/**
 * A pipeline's idle share of its step: its p − 1 warm-up and drain slots over all its slots. GPipe and 1F1B idle
 * (p−1)/(m+p−1); interleaving v chunks per rank shortens each of those slots to 1/v of a stage's, (p−1)/(v·m+p−1)
 * (Narayanan et al. 2021, §2.2.1-2.2.2: bubble time over ideal time (p−1)/m, and (1/v)·(p−1)/m interleaved).
 */
export function pipelineBubbleShare(stages: number, microBatches: number, virtualStages = 1): number {
  return (stages - 1) / (virtualStages * microBatches + stages - 1);
}

/** A composition's field at fault, and what is wrong with it and what would do. */
export interface CompositionProblem {
  readonly field: keyof Composition;
  readonly message: string;
}

/**
 * Everything wrong with a composition on `placement`, each naming the field, what is wrong and what would do; empty
 * when it can run. `modelBlocks`: the model's blocks, which the stages and their chunks cut up (unknown: unchecked).
 */
export function compositionProblems(
  composition: Composition,
  placement: RankPlacement,
  modelBlocks?: number,
): string[] {
  return compositionProblemsAt(composition, placement, modelBlocks).map((problem) => problem.message);
}

/** compositionProblems, each with the field a caller names (a command's option, a file's field). */
export function compositionProblemsAt(
  composition: Composition,
  placement: RankPlacement,
  modelBlocks?: number,
): CompositionProblem[] {
  const problems = degreeProblems(composition);
  if (problems.length > 0) return problems;
  return [
    ...worldProblems(composition, placement),
    ...tensorProblems(composition, placement),
    ...shardingProblems(composition),
    ...pipelineProblems(composition, modelBlocks),
  ];
}

function degreeProblems(composition: Composition): CompositionProblem[] {
  const counts: [keyof Composition, number | undefined][] = [
    ["tp", composition.tp],
    ["cp", composition.cp],
    ["pp", composition.pp],
    ["dp", composition.dp],
    ["dpShard", composition.dpShard],
    ["virtualStages", composition.virtualStages],
    ["microBatchSize", composition.microBatchSize],
    ["microBatches", composition.microBatches],
    ["gradientAccumulation", composition.gradientAccumulation],
  ];
  return counts
    .filter(([, value]) => value !== undefined && !(Number.isInteger(value) && value >= 1))
    .map(([field, value]) => ({
      field,
      message: `${field} ${String(value)}: a count of ranks or samples, a whole number of at least 1`,
    }));
}

function worldProblems(composition: Composition, placement: RankPlacement): CompositionProblem[] {
  const { tp, cp, pp, dp } = composition;
  const gpus = placement.nodes * placement.gpusPerNode;
  const ranks = tp * cp * pp * dp;
  if (ranks === gpus) return [];
  const others = tp * cp * pp;
  const hint =
    gpus % others === 0
      ? `; with tp ${tp} × cp ${cp} × pp ${pp}, dp ${gpus / others} fills it`
      : `; tp × cp × pp = ${others} does not divide ${gpus}: change one of them`;
  return [
    {
      // dp is what fills the GPUs the other degrees leave.
      field: "dp",
      message: `tp ${tp} × cp ${cp} × pp ${pp} × dp ${dp} = ${ranks} ranks, but the cluster has ${gpus} GPUs (${placement.nodes} nodes × ${placement.gpusPerNode}): the degrees must multiply to the GPU count${hint}`,
    },
  ];
}

function tensorProblems(composition: Composition, placement: RankPlacement): CompositionProblem[] {
  const { tp } = composition;
  const perNode = placement.gpusPerNode;
  if (tp > perNode && composition.allowCrossNodeTensor !== true) {
    return [
      {
        field: "tp",
        message: `tp ${tp} is larger than a node's ${perNode} GPUs: its collectives on every block would cross the network; keep tp at most ${perNode}, or set allowCrossNodeTensor (predict --cluster's --allow-cross-node-tensor) to mean it`,
      },
    ];
  }
  const aligned = tp <= perNode ? perNode % tp === 0 : tp % perNode === 0;
  return aligned
    ? []
    : [
        {
          field: "tp",
          message: `tp ${tp} and a node's ${perNode} GPUs: neither divides the other, so some tensor-parallel groups would straddle two nodes; choose a tp that ${tp <= perNode ? `divides ${perNode}` : `is a multiple of ${perNode}`}`,
        },
      ];
}

function shardingProblems(composition: Composition): CompositionProblem[] {
  const { dp, dpShard, dpSharding } = composition;
  if (dpShard === undefined) return [];
  if (dpSharding === "none" && dpShard > 1)
    return [
      {
        field: "dpShard",
        message: `dpShard ${dpShard} with dpSharding none: nothing is sharded; set dpSharding, or leave dpShard out`,
      },
    ];
  return dp % dpShard === 0
    ? []
    : [
        {
          field: "dpShard",
          message: `dpShard ${dpShard} does not divide dp ${dp}: the data-parallel ranks form shard groups of dpShard, replicated dp / dpShard times`,
        },
      ];
}

/**
 * torch.distributed.pipelining's own checks (schedules.py), so that a composition torch refuses is refused first, and
 * a pipeline that cuts the model into more chunks than it has blocks.
 */
function pipelineProblems(composition: Composition, modelBlocks: number | undefined): CompositionProblem[] {
  const { pp } = composition;
  const schedule = composition.schedule ?? "1f1b";
  const virtualStages = composition.virtualStages ?? 1;
  const microBatches = composition.microBatches ?? 1;
  const problem = (field: keyof Composition, message: string) => [{ field, message }];
  if (schedule !== "interleaved-1f1b" && virtualStages > 1)
    return problem(
      "virtualStages",
      `virtualStages ${virtualStages} with schedule ${schedule}: only interleaved-1f1b holds several chunks per rank`,
    );
  if (schedule === "interleaved-1f1b" && virtualStages < 2)
    return problem(
      "virtualStages",
      `virtualStages ${virtualStages} with schedule interleaved-1f1b: interleaving needs 2 or more chunks per rank; set virtualStages 2 or more, or use schedule 1f1b`,
    );
  if (pp === 1) return [];
  if (modelBlocks !== undefined && pp * virtualStages > modelBlocks)
    return problem(
      "pp",
      `pp ${pp} × virtualStages ${virtualStages} = ${pp * virtualStages} chunks of the model, but it has ${modelBlocks} blocks: a chunk holds one block at least`,
    );
  if (schedule === "1f1b" && microBatches < pp)
    return problem(
      "microBatches",
      `schedule 1f1b needs at least as many micro-batches as stages: microBatches ${microBatches} < pp ${pp} (torch's Schedule1F1B refuses it)`,
    );
  // torch's ScheduleInterleaved1F1B runs max(1, ⌊m/p⌋) rounds of equal size.
  const rounds = Math.max(1, Math.floor(microBatches / pp));
  if (schedule === "interleaved-1f1b" && microBatches % rounds !== 0)
    return problem(
      "microBatches",
      `schedule interleaved-1f1b runs microBatches in ${rounds} rounds of pp ${pp} or more, which ${microBatches} does not divide into (torch's ScheduleInterleaved1F1B refuses it); use a multiple of ${rounds}, or of pp`,
    );
  return [];
}

/** One group of a mesh dimension as the cluster places it: how many nodes it crosses and its ranks per node. */
export interface GroupSpan {
  readonly dimension: MeshDimension;
  /** Ranks in each group. */
  readonly size: number;
  /** The most nodes one group of this dimension spans (1: inside a node, on its own links). */
  readonly nodesSpanned: number;
  /** The fewest ranks a group has on one of its nodes (those share the node's links to the others). */
  readonly ranksPerNode: number;
}

/**
 * Every dimension of more than one rank, outermost first: its groups' size and the nodes they span on `placement`.
 * A collective on dimension d runs inside one group of it; where nodesSpanned is 1 it stays on the node's own links.
 */
export function groupSpans(composition: Composition, placement: RankPlacement): GroupSpan[] {
  const degrees = meshDegrees(composition);
  return MESH_DIMENSIONS.flatMap((dimension) =>
    degrees[dimension] < 2 ? [] : [{ dimension, ...meshGroupSpan(composition, placement, [dimension]) }],
  );
}

/**
 * The groups of several mesh dimensions flattened into one (torchtitan's dp_shard_cp: FSDP over the data-parallel and
 * context-parallel ranks together): their size, the most nodes one spans and the fewest ranks one has on a node.
 */
export function meshGroupSpan(
  composition: Composition,
  placement: RankPlacement,
  dimensions: readonly MeshDimension[],
): Omit<GroupSpan, "dimension"> {
  const degrees = meshDegrees(composition);
  const world = MESH_DIMENSIONS.reduce((product, dimension) => product * degrees[dimension], 1);
  // Each rank's coordinate along every dimension, tp innermost; a group is the ranks that differ only in `dimensions`.
  const coordinates = (rank: number) => {
    let rest = rank;
    const at = new Map<MeshDimension, number>();
    for (const dimension of [...MESH_DIMENSIONS].reverse()) {
      at.set(dimension, rest % degrees[dimension]);
      rest = Math.floor(rest / degrees[dimension]);
    }
    return at;
  };
  const groups = new Map<string, Map<number, number>>();
  for (let rank = 0; rank < world; rank++) {
    const at = coordinates(rank);
    const key = MESH_DIMENSIONS.filter((dimension) => !dimensions.includes(dimension))
      .map((dimension) => at.get(dimension))
      .join(",");
    const perNode = groups.get(key) ?? new Map<number, number>();
    const node = Math.floor(rank / placement.gpusPerNode);
    perNode.set(node, (perNode.get(node) ?? 0) + 1);
    groups.set(key, perNode);
  }
  const size = dimensions.reduce((product, dimension) => product * degrees[dimension], 1);
  const spans = [...groups.values()];
  return {
    size,
    nodesSpanned: Math.max(...spans.map((perNode) => perNode.size)),
    ranksPerNode: Math.min(...spans.flatMap((perNode) => [...perNode.values()])),
  };
}

/**
 * What a composition changes in a rank's memory (workload/memory.ts's seam), with the degrees the memory model divides
 * the model by: the data-parallel and context-parallel ranks share one shard group where dpSharding shards anything
 * (ZeRO-1's optimizer state too), else they are replicas. DDP keeps its gradient buckets where it sums the gradients
 * (ZeRO-0 and ZeRO-1, whose ZeroRedundancyOptimizer runs under DDP) over replicas, and where one rank holds the whole
 * model (ringlab's worker wraps it in DDP still). A pipeline's stage holds its micro-batches in flight.
 */
export function compositionMemory(composition: Composition): {
  readonly dims: ParallelDims;
  readonly terms: MemoryTerms;
} {
  const { tp, pp, dp, cp, dpSharding } = composition;
  const sharded = dpSharding !== "none";
  const dims = { pp, tp, dpReplicate: sharded ? 1 : dp * cp, dpShard: sharded ? dp * cp : 1 };
  const schedule = composition.schedule ?? "1f1b";
  const microBatches = pp > 1 ? (composition.microBatches ?? 1) : 1;
  return {
    dims,
    terms: {
      sharding: dpSharding,
      gradientBuckets: (dpSharding === "none" || dpSharding === "optimizer") && (dp * cp > 1 || (tp === 1 && pp === 1)),
      samplesInFlight: (batchSize, stage) =>
        pipelineSamplesInFlight(batchSize, microBatches, schedule === "gpipe" ? "gpipe" : "1f1b", pp, stage),
    },
  };
}

/**
 * Samples whose activations a pipeline's stage holds at the end of forward, of `batchSize` a replica cut into
 * `microBatches`: GPipe every micro-batch, 1F1B (and interleaved 1F1B) at most those of the stages from this one to the
 * last.
 */
export function pipelineSamplesInFlight(
  batchSize: number,
  microBatches: number,
  schedule: "gpipe" | "1f1b",
  stages: number,
  stage: number,
): number {
  return (batchSize / microBatches) * (schedule === "1f1b" ? Math.min(microBatches, stages - stage) : microBatches);
}

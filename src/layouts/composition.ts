/**
 * A layout as degrees that compose (issue #69): tp × cp × pp × dp ranks, the data-parallel ones replicated or sharded
 * (ZeRO-0 to 3), a pipeline's schedule and virtual stages, micro-batches and gradient accumulation, checked in one
 * place against the cluster that would run it. The ranks lie in a mesh as pytorch/torchtitan's ParallelDims builds
 * its own, ["pp", "dp_replicate", "dp_shard", "cp", "tp"] with tp innermost, so that a tensor-parallel group
 * (all-reduces on every layer) stays inside a node and the data-parallel and pipeline groups cross nodes. Each group
 * says which nodes it spans, for the collectives on it to be timed on the tier they cross. A CPU campaign's knobs map
 * onto one through their layout unit (index.ts compositionOf). Pure.
 */

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

/**
 * Everything wrong with a composition on `placement`, each naming the field, what is wrong and what would do; empty
 * when it can run.
 */
export function compositionProblems(composition: Composition, placement: RankPlacement): string[] {
  const problems = degreeProblems(composition);
  if (problems.length > 0) return problems;
  return [
    ...worldProblems(composition, placement),
    ...tensorProblems(composition, placement),
    ...shardingProblems(composition),
    ...pipelineProblems(composition),
  ];
}

function degreeProblems(composition: Composition): string[] {
  const counts: [string, number | undefined][] = [
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
    .map(([name, value]) => `${name} ${String(value)}: a count of ranks or samples, a whole number of at least 1`);
}

function worldProblems(composition: Composition, placement: RankPlacement): string[] {
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
    `tp ${tp} × cp ${cp} × pp ${pp} × dp ${dp} = ${ranks} ranks, but the cluster has ${gpus} GPUs (${placement.nodes} nodes × ${placement.gpusPerNode}): the degrees must multiply to the GPU count${hint}`,
  ];
}

function tensorProblems(composition: Composition, placement: RankPlacement): string[] {
  const { tp } = composition;
  const perNode = placement.gpusPerNode;
  if (tp > perNode && composition.allowCrossNodeTensor !== true) {
    return [
      `tp ${tp} is larger than a node's ${perNode} GPUs: its all-reduces on every layer would cross the network; keep tp at most ${perNode}, or set allowCrossNodeTensor to mean it`,
    ];
  }
  const aligned = tp <= perNode ? perNode % tp === 0 : tp % perNode === 0;
  return aligned
    ? []
    : [
        `tp ${tp} and a node's ${perNode} GPUs: neither divides the other, so some tensor-parallel groups would straddle two nodes; choose a tp that ${tp <= perNode ? `divides ${perNode}` : `is a multiple of ${perNode}`}`,
      ];
}

function shardingProblems(composition: Composition): string[] {
  const { dp, dpShard, dpSharding } = composition;
  if (dpShard === undefined) return [];
  if (dpSharding === "none" && dpShard > 1)
    return [`dpShard ${dpShard} with dpSharding none: nothing is sharded; set dpSharding, or leave dpShard out`];
  return dp % dpShard === 0
    ? []
    : [
        `dpShard ${dpShard} does not divide dp ${dp}: the data-parallel ranks form shard groups of dpShard, replicated dp / dpShard times`,
      ];
}

/** torch.distributed.pipelining's own checks (schedules.py), so that a composition torch refuses is refused first. */
function pipelineProblems(composition: Composition): string[] {
  const { pp } = composition;
  const schedule = composition.schedule ?? "1f1b";
  const virtualStages = composition.virtualStages ?? 1;
  const microBatches = composition.microBatches ?? 1;
  if (schedule !== "interleaved-1f1b" && virtualStages > 1)
    return [
      `virtualStages ${virtualStages} with schedule ${schedule}: only interleaved-1f1b holds several chunks per rank`,
    ];
  if (pp === 1) return [];
  if (schedule === "1f1b" && microBatches < pp)
    return [
      `schedule 1f1b needs at least as many micro-batches as stages: microBatches ${microBatches} < pp ${pp} (torch's Schedule1F1B refuses it)`,
    ];
  // torch's ScheduleInterleaved1F1B runs max(1, ⌊m/p⌋) rounds of equal size.
  const rounds = Math.max(1, Math.floor(microBatches / pp));
  if (schedule === "interleaved-1f1b" && microBatches % rounds !== 0)
    return [
      `schedule interleaved-1f1b runs microBatches in ${rounds} rounds of pp ${pp} or more, which ${microBatches} does not divide into (torch's ScheduleInterleaved1F1B refuses it); use a multiple of ${rounds}, or of pp`,
    ];
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
  const world = MESH_DIMENSIONS.reduce((product, dimension) => product * degrees[dimension], 1);
  return MESH_DIMENSIONS.flatMap((dimension, index) => {
    const size = degrees[dimension];
    if (size < 2) return [];
    const stride = MESH_DIMENSIONS.slice(index + 1).reduce((product, inner) => product * degrees[inner], 1);
    let nodesSpanned = 1;
    let ranksPerNode = size;
    for (let first = 0; first < world; first++) {
      // The group's first rank: its coordinate along this dimension is 0.
      if (Math.floor(first / stride) % size !== 0) continue;
      const perNode = new Map<number, number>();
      for (let member = 0; member < size; member++) {
        const node = Math.floor((first + member * stride) / placement.gpusPerNode);
        perNode.set(node, (perNode.get(node) ?? 0) + 1);
      }
      nodesSpanned = Math.max(nodesSpanned, perNode.size);
      ranksPerNode = Math.min(ranksPerNode, ...perNode.values());
    }
    return [{ dimension, size, nodesSpanned, ranksPerNode }];
  });
}

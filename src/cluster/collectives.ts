/**
 * A collective's time on a cluster's hierarchy (issue #69, item 2): NCCL's ring and tree as α-β per tier, inside a node
 * over NVLink/NVSwitch or PCIe, between nodes over the NICs. A group's ranks are laid out node by node (tensor parallel
 * innermost, as torchtitan's and Megatron's meshes are), so a group spanning N nodes with r ranks on each runs one ring
 * whose N crossings go out through those r ranks' NICs (one ring per rail where the NICs are one per GPU) and whose
 * other hops stay on the node's fabric; the slower tier sets the pace. Each tier runs at the share of its line rate
 * that nccl-tests' published bus bandwidths reach (src/catalogue/clusters/collectives.yaml), and pays NCCL's own
 * latencies (its tuning model, below). Pure.
 */
import { deviceNetworkGBps, nodeNetworkGBps, type Cluster, type NodeType, type Sourced } from "./description.ts";
import type { PublishedBusBandwidth } from "./schema.ts";

export type CollectiveOp = "all_reduce" | "all_gather" | "reduce_scatter" | "send";

/** Which ranks take part: how many, and how many of them share a node (the rest are on other nodes). */
export interface GroupSpan {
  readonly ranks: number;
  readonly ranksPerNode: number;
}

/**
 * Where a collective can hide (./overlap.ts): under forward, under backward, nowhere, or in a pipeline's steady state
 * (its fill and drain wait).
 */
export type OverlapWindow = "forward" | "backward" | "exposed" | "steady-state";

/** One collective of a step, on one group. */
export interface GroupCollective {
  /** What the step does with it, for people ("FSDP all-gather (forward)"). */
  readonly label: string;
  readonly op: CollectiveOp;
  /** One call's buffer: an all-reduce's S, an all-gather's gathered whole, a reduce-scatter's input, a send's. */
  readonly bytesPerCall: number;
  readonly calls: number;
  readonly span: GroupSpan;
  readonly overlap: OverlapWindow;
}

/** The share of its line rate each tier reaches, with where that comes from. */
export interface TierShares {
  readonly intraNode: Sourced;
  readonly interNode: Sourced;
  /** GB/s a node's inter-node traffic cannot pass, whatever its NICs (NCCL's socket transport: one TCP stream). */
  readonly interNodeCapGBps?: Sourced | undefined;
}

export interface CollectiveTime {
  readonly seconds: number;
  readonly algorithm: "ring" | "tree" | "direct";
  /** The tier that sets the pace: what to buy more of. */
  readonly bottleneck: "intra-node" | "inter-node";
}

/**
 * NCCL's latencies for the Simple protocol (the one large messages use), µs: NVIDIA/nccl src/graph/tuning.cc at
 * 01afd20a, baseLat and hwLat. A ring pays the base once and each step's hop; a tree pays 2 (ranks a node − 1) hops
 * inside and 2 log2(nodes) between.
 */
export const NCCL_LATENCY_US = {
  source: "NVIDIA/nccl src/graph/tuning.cc at 01afd20a: baseLat and hwLat, Simple protocol",
  ringBase: 8.4,
  ringHop: { nvswitch: 3.4, nvlink: 3.4, pcie: 5.7, loopback: 5.7, network: 9.6 },
  treeHop: { nvswitch: 28, nvlink: 28, pcie: 28, loopback: 28, network: 50 },
  /** NCCL's refinement of a tree's bandwidth against the ring's ("busBw*.9"). */
  treeBandwidthShare: 0.9,
} as const;

/** nccl-tests' busbw factor: the bytes each rank sends per byte of S. */
function busFactor(op: CollectiveOp, ranks: number): number {
  if (op === "send") return 1;
  return op === "all_reduce" ? (2 * (ranks - 1)) / ranks : (ranks - 1) / ranks;
}

/** NCCL's steps of a ring for an op: all-reduce 2(n − 1), all-gather and reduce-scatter n − 1. */
function ringSteps(op: CollectiveOp, ranks: number): number {
  return op === "all_reduce" ? 2 * (ranks - 1) : ranks - 1;
}

/** The seconds of all of a step's calls of one collective on the cluster, at the tiers' shares. */
export function collectiveTime(collective: GroupCollective, cluster: Cluster, shares: TierShares): CollectiveTime {
  const { ranks, ranksPerNode } = collective.span;
  const node = cluster.node;
  const nodes = Math.ceil(ranks / ranksPerNode);
  if (ranks < 2 || collective.calls === 0) return { seconds: 0, algorithm: "ring", bottleneck: "intra-node" };
  const intraGBps = node.intraNode.gbPerSecondPerDevicePerDirection * shares.intraNode.value;
  // The group's share of its node's NICs: its ranks' rails, or their share of the cards every worker sends over.
  const interGBps = Math.min(
    deviceNetworkGBps(node, workersPerNode(cluster)) * ranksPerNode * shares.interNode.value,
    shares.interNodeCapGBps?.value ?? Number.POSITIVE_INFINITY,
  );
  const perByte = busFactor(collective.op, ranks);
  const intraSeconds = ranksPerNode > 1 ? (perByte * collective.bytesPerCall) / (intraGBps * 1e9) : 0;
  const interSeconds = nodes > 1 ? (perByte * collective.bytesPerCall) / (interGBps * 1e9) : 0;
  const bandwidthSeconds = Math.max(intraSeconds, interSeconds);
  const bottleneck = interSeconds >= intraSeconds && nodes > 1 ? "inter-node" : "intra-node";
  if (collective.op === "send") {
    const hop = nodes > 1 ? NCCL_LATENCY_US.ringHop.network : NCCL_LATENCY_US.ringHop[node.intraNode.kind];
    return {
      seconds: collective.calls * ((NCCL_LATENCY_US.ringBase + hop) * 1e-6 + bandwidthSeconds),
      algorithm: "direct",
      bottleneck,
    };
  }
  const ring = ringLatencySeconds(collective.op, ranks, nodes, node) + bandwidthSeconds;
  // NCCL runs a tree for all-reduce only; it pays fewer hops between nodes at a tenth less bandwidth.
  const tree =
    collective.op === "all_reduce" && nodes > 1
      ? treeLatencySeconds(ranksPerNode, nodes, node) + bandwidthSeconds / NCCL_LATENCY_US.treeBandwidthShare
      : Number.POSITIVE_INFINITY;
  return {
    seconds: collective.calls * Math.min(ring, tree),
    algorithm: tree < ring ? "tree" : "ring",
    bottleneck,
  };
}

function ringLatencySeconds(op: CollectiveOp, ranks: number, nodes: number, node: NodeType): number {
  const steps = ringSteps(op, ranks);
  const interSteps = nodes > 1 ? ringSteps(op, nodes) : 0;
  const us =
    NCCL_LATENCY_US.ringBase +
    (steps - interSteps) * NCCL_LATENCY_US.ringHop[node.intraNode.kind] +
    interSteps * NCCL_LATENCY_US.ringHop.network;
  return us * 1e-6;
}

function treeLatencySeconds(ranksPerNode: number, nodes: number, node: NodeType): number {
  const us =
    2 *
    ((ranksPerNode - 1) * NCCL_LATENCY_US.treeHop[node.intraNode.kind] +
      Math.ceil(Math.log2(nodes)) * NCCL_LATENCY_US.treeHop.network);
  return us * 1e-6;
}

/** Workers a node runs: one per device of the node type. */
export function workersPerNode(cluster: Cluster): number {
  return cluster.node.devicesPerNode.value;
}

/** The published rows and the node types they ran on: what a tier's share is read from. */
export interface PublishedCollectives {
  readonly rows: readonly PublishedBusBandwidth[];
  readonly nodeTypes: ReadonlyMap<string, NodeType>;
}

/**
 * The share of each tier's line rate NCCL reaches on this node type: its own published rows (the row at the nearest
 * node count, its largest message; ring or an unstated algorithm: NVLink SHARP's busbw is no wire rate), else the
 * median over the catalogue's node types that have rows, said so.
 */
export function tierShares(node: NodeType, published: PublishedCollectives, nodes: number): TierShares {
  return {
    intraNode: shareOf(node, published, "intra-node", nodes),
    interNode: shareOf(node, published, "inter-node", nodes),
  };
}

type Tier = PublishedBusBandwidth["tier"];

function lineRateGBps(node: NodeType, tier: Tier): number {
  return tier === "intra-node" ? node.intraNode.gbPerSecondPerDevicePerDirection : nodeNetworkGBps(node);
}

function ownShare(
  node: NodeType,
  rows: readonly PublishedBusBandwidth[],
  tier: Tier,
  nodes: number,
): Sourced | undefined {
  const own = rows.filter((row) => row.tier === tier && row.node === node.name && row.algorithm !== "NVLS");
  const best = pickRow(own, nodes);
  if (best === undefined) return undefined;
  const lineRate = lineRateGBps(node, tier);
  return {
    value: Math.min(1, best.busbwGBps / lineRate),
    source: `busbw ${best.busbwGBps} GB/s of a ${lineRate} GB/s line rate: ${best.source}`,
  };
}

function shareOf(node: NodeType, published: PublishedCollectives, tier: Tier, nodes: number): Sourced {
  const own = ownShare(node, published.rows, tier, nodes);
  if (own !== undefined) return own;
  for (const sibling of published.nodeTypes.values()) {
    if (sibling.name === node.name || !sameTier(node, sibling, tier)) continue;
    const share = ownShare(sibling, published.rows, tier, nodes);
    if (share !== undefined)
      return { value: share.value, source: `${sibling.name}'s, the same ${tier} fabric: ${share.source}` };
  }
  const others = [...published.nodeTypes.values()].flatMap((other) => {
    const share = ownShare(other, published.rows, tier, nodes);
    return share === undefined ? [] : [{ name: other.name, share: share.value }];
  });
  if (others.length === 0)
    return { value: ASSUMED_SHARE, source: `assumed: no published ${tier} bus bandwidth at all` };
  const sorted = [...others].sort((a, b) => a.share - b.share);
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  return {
    value: median.share,
    source: `no published ${tier} bus bandwidth for ${node.name}: the median of the ${others.length} node types that have one (${median.name}'s, src/catalogue/clusters/collectives.yaml)`,
  };
}

/** Two node types whose tier is the same hardware: the same GPU on the same fabric, or the same NICs a GPU. */
function sameTier(a: NodeType, b: NodeType, tier: Tier): boolean {
  if (tier === "intra-node") {
    const gpu = (node: NodeType) => (node.device.kind === "gpu" ? node.device.gpu.name : "cpu");
    return (
      gpu(a) === gpu(b) &&
      a.intraNode.kind === b.intraNode.kind &&
      a.intraNode.gbPerSecondPerDevicePerDirection === b.intraNode.gbPerSecondPerDevicePerDirection
    );
  }
  const perDevice = (node: NodeType) => nodeNetworkGBps(node) / node.devicesPerNode.value;
  return a.nics.kind === b.nics.kind && a.nics.perGpu === b.nics.perGpu && perDevice(a) === perDevice(b);
}

/** Where no node type of the catalogue has a published row: NCCL's ring over H100 NVLink, 370 of 450 GB/s. */
const ASSUMED_SHARE = 0.8;

/** The row at the node count nearest the question's, its largest message (a sizeless peak only where none is sized). */
function pickRow(rows: readonly PublishedBusBandwidth[], nodes: number): PublishedBusBandwidth | undefined {
  if (rows.length === 0) return undefined;
  const distance = (row: PublishedBusBandwidth) => Math.abs(Math.log2((row.nodes ?? 1) / Math.max(1, nodes)));
  const nearest = Math.min(...rows.map(distance));
  const candidates = rows.filter((row) => distance(row) === nearest);
  return [...candidates].sort((a, b) => (b.messageBytes ?? 0) - (a.messageBytes ?? 0))[0];
}

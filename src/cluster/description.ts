/**
 * A cluster as the predictor sees it (issue #69, item 1): a node type (its devices, the fabric inside it, its NICs and
 * the network between nodes) and how many nodes. Every figure carries where it came from: a datasheet, a catalogue
 * entry, a user's cluster file, or "assumed: ..." where nothing states it. Catalogue entries are YAML under
 * src/catalogue/clusters/ (./schema.ts checks them, ./load.ts reads them); a local or AWS testbed's cluster is
 * derived in ./testbeds.ts. Pure.
 */

/** A figure and where it came from. */
export interface Sourced<T = number> {
  readonly value: T;
  readonly source: string;
}

/** The precisions a datasheet gives a dense peak for (tf32: an A100's or H100's fp32 matrices on tensor cores). */
export const TENSOR_PRECISIONS = ["fp32", "tf32", "bf16", "fp16", "fp8"] as const;
export type TensorPrecision = (typeof TENSOR_PRECISIONS)[number];

export interface GpuSpec {
  /** The catalogue's file name (gpus/<key>.yaml), or the inline GPU's name. */
  readonly key: string;
  readonly vendor: string;
  readonly name: string;
  /** Dense (not sparse) peak TFLOP/s per precision from the vendor's datasheet; none where no datasheet states them. */
  readonly denseTflops: Readonly<Partial<Record<TensorPrecision, Sourced>>>;
  readonly memoryGiB: Sourced;
  readonly memoryTBps?: Sourced;
}

/** What a worker runs on: a GPU of the catalogue, or a CPU node of the local testbed. */
export type Device = { readonly kind: "gpu"; readonly gpu: GpuSpec } | { readonly kind: "cpu" };

export const INTRA_NODE_KINDS = ["nvswitch", "nvlink", "pcie", "loopback"] as const;
export type IntraNodeKind = (typeof INTRA_NODE_KINDS)[number];

/** The fabric between a node's devices. */
export interface IntraNode {
  readonly kind: IntraNodeKind;
  readonly generation: string;
  /** GB/s (1e9 bytes) one device can send to the others at once, one direction. */
  readonly gbPerSecondPerDevicePerDirection: number;
  readonly source: string;
}

/** A node's network cards. */
export interface Nics {
  readonly count: number;
  readonly gbitPerNic: number;
  /**
   * Rails: each device has its own NIC(s), `count / devicesPerNode` of them, and NCCL builds one ring per rail. False:
   * the node's devices share the cards.
   */
  readonly perGpu: boolean;
  /** EFA, InfiniBand, RoCE, TCP. */
  readonly kind: string;
  readonly source: string;
}

/** The network between nodes. */
export interface Network {
  readonly topology: string;
  /** 1: full bisection; 2: the spine carries half of what the nodes can send. */
  readonly oversubscription: number;
  readonly source: string;
}

export interface NodeType {
  /** The catalogue's name (p5.48xlarge), a cluster file's path, or a testbed's description. */
  readonly name: string;
  readonly device: Device;
  /** Workers a node runs: one per GPU, or a local testbed's processes per node. */
  readonly devicesPerNode: Sourced;
  readonly intraNode: IntraNode;
  readonly nics: Nics;
  readonly network: Network;
}

export interface Cluster {
  readonly node: NodeType;
  readonly nodes: number;
}

/** Every worker of the cluster. */
export function workerCount(cluster: Cluster): number {
  return cluster.nodes * cluster.node.devicesPerNode.value;
}

/** GB/s all of a node's NICs carry together, one direction. */
export function nodeNetworkGBps(node: NodeType): number {
  return (node.nics.count * node.nics.gbitPerNic) / 8;
}

/**
 * GB/s one device's traffic off the node gets when `sending` of the node's devices send at once: its own rail's NICs
 * where the NICs are one per GPU (rails), else its share of the node's cards.
 */
export function deviceNetworkGBps(node: NodeType, sending: number): number {
  const devices = node.devicesPerNode.value;
  const total = nodeNetworkGBps(node);
  const share = node.nics.perGpu ? total / devices : total / Math.min(devices, Math.max(1, sending));
  return share / node.network.oversubscription;
}

/** The GPU's dense peak at a training precision: amp and fp16 on fp16 tensor cores; tf32 on tf32, else fp32's. */
export function peakTflops(gpu: GpuSpec, precision: string): Sourced | undefined {
  const order: Record<string, readonly TensorPrecision[]> = {
    fp32: ["fp32"],
    tf32: ["tf32", "fp32"],
    bf16: ["bf16"],
    fp16: ["fp16"],
    amp: ["fp16", "bf16"],
    fp8: ["fp8"],
  };
  for (const candidate of order[precision] ?? []) {
    const figure = gpu.denseTflops[candidate];
    if (figure !== undefined) return figure;
  }
  return undefined;
}

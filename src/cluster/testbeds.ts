/**
 * The clusters ringlab's own testbeds are: a local testbed is CPU nodes on one shaped link (each node's egress shaped
 * by tc, the processes inside a node on loopback); an AWS testbed is its instance type, the catalogue's node entry of
 * that name where there is one, else what src/catalogue/aws-instance-types.ts says of it (one network figure for the
 * node, a PCIe inside it, each said so). Pure: the catalogue is passed in.
 */
import { AWS_INSTANCE_TYPES, SOURCES, type InstanceTypeFacts } from "../catalogue/aws-instance-types.ts";
import { bandwidthGbps } from "../rules/bandwidth.ts";
import type { Cluster, GpuSpec, NodeType } from "./description.ts";
import type { ClusterCatalogue } from "./load.ts";

export interface LocalTestbedQuestion {
  readonly nodes: number;
  readonly processesPerNode: number;
  /** The campaign's rate ("1gbit"), or "unlimited". */
  readonly bandwidth: string;
}

/**
 * A local testbed: CPU nodes, its processes on loopback inside a node (not shaped: no figure bounds it), and one
 * shaped link out of each node. An unlimited link has no rate to predict from: undefined.
 */
export function localTestbedCluster(question: LocalTestbedQuestion): Cluster | undefined {
  const gbit = bandwidthGbps(question.bandwidth);
  if (gbit === null || gbit === undefined) return undefined;
  const node: NodeType = {
    name: `local testbed at ${question.bandwidth}`,
    device: { kind: "cpu" },
    devicesPerNode: { value: question.processesPerNode, source: "the campaign's processes per node" },
    intraNode: {
      kind: "loopback",
      generation: "",
      gbPerSecondPerDevicePerDirection: Number.POSITIVE_INFINITY,
      source: "loopback inside one container, not shaped",
    },
    nics: {
      count: 1,
      gbitPerNic: gbit,
      perGpu: false,
      kind: "veth shaped by tc",
      source: `the campaign's bandwidth ${question.bandwidth}, tc on each node's egress`,
    },
    network: { topology: "one Docker bridge", oversubscription: 1, source: "one Linux bridge on one machine" },
  };
  return { node, nodes: question.nodes };
}

/** The catalogue's GPU for an instance type's GPU model (aws-instance-types.ts), where the catalogue has it. */
function gpuOfInstanceType(facts: InstanceTypeFacts, catalogue: ClusterCatalogue): GpuSpec | undefined {
  const byModel: Record<string, string> = {
    "NVIDIA A10G": "a10g",
    "NVIDIA L40S": "l40s",
    "NVIDIA V100": "v100-sxm2-16gb",
    "NVIDIA A100": facts.gpuMemoryGiB > 40 ? "a100-sxm4-80gb" : "a100-sxm4-40gb",
    "NVIDIA H100": "h100-sxm5-80gb",
  };
  const key = facts.gpuModel === null ? undefined : byModel[facts.gpuModel];
  return key === undefined ? undefined : catalogue.gpus.get(key);
}

/**
 * An AWS testbed's node type: the catalogue's entry for the instance type, else the instance catalogue's figures (its
 * baseline rate as one card for the node; PCIe inside, assumed), else undefined with why.
 */
export function awsNodeType(
  instanceType: string,
  catalogue: ClusterCatalogue,
): NodeType | { readonly missing: string } {
  const entry = catalogue.nodes.get(instanceType);
  if (entry !== undefined) return entry.type;
  const facts = Object.hasOwn(AWS_INSTANCE_TYPES, instanceType) ? AWS_INSTANCE_TYPES[instanceType] : undefined;
  if (facts === undefined || facts.gpus === 0) {
    return { missing: `instance type ${instanceType} is not a GPU type of ringlab's catalogues` };
  }
  const gpu = gpuOfInstanceType(facts, catalogue);
  if (gpu === undefined) {
    return {
      missing: `${instanceType}'s ${facts.gpuModel} has no entry in src/catalogue/clusters/gpus/ (no datasheet figures): write a cluster file`,
    };
  }
  const where = `src/catalogue/aws-instance-types.ts, ${instanceType} (${SOURCES.baselineNetworkGbps[0]!.url})`;
  return {
    name: instanceType,
    device: { kind: "gpu", gpu },
    devicesPerNode: { value: facts.gpus, source: where },
    intraNode: {
      kind: "pcie",
      generation: "PCIe Gen4 x16",
      gbPerSecondPerDevicePerDirection: 32,
      source: "assumed: PCIe Gen4 x16 (about 32 GB/s each way); the instance catalogue says nothing of the fabric",
    },
    nics: {
      count: 1,
      gbitPerNic: facts.baselineNetworkGbps,
      perGpu: false,
      kind: facts.efa ? "EFA" : "TCP",
      source: `${where}: its baseline, the node's one figure`,
    },
    network: {
      topology: "unknown",
      oversubscription: 1,
      source: "assumed: full bisection within a cluster placement group",
    },
  };
}

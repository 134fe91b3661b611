/**
 * What a local testbed consists of: names, addresses and labels of its Docker network and node containers.
 * Pure, so `up`, `down`, `status` and the tests agree on every name.
 */
import type { LocalTestbed } from "../config/schema.ts";
import type { InventorySpec } from "../inventory.ts";
import type { TestbedPaths } from "./paths.ts";

/** Every container, network and volume of testbed X carries `ringlab.testbed=X`; `down` removes by it. */
export const TESTBED_LABEL = "ringlab.testbed";
export const NODE_IMAGE = "ringlab/node:latest";
/** Nodes get .10, .11, ... of the subnet; Docker keeps .1 for the gateway. */
const FIRST_NODE_HOST = 10;

export interface LocalNodePlan {
  readonly rank: number;
  /** Inventory name and hostname. */
  readonly name: string;
  readonly container: string;
  readonly ip: string;
}

export interface LocalTestbedPlan {
  readonly name: string;
  readonly network: string;
  readonly subnet: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly sharedDir: string;
  readonly nodes: readonly LocalNodePlan[];
}

export function nodeName(testbed: string, rank: number): string {
  return `${testbed}-node-${rank}`;
}

export function nodeContainerName(testbed: string, rank: number): string {
  return `ringlab-${testbed}-node-${rank}`;
}

export function planLocalTestbed(testbed: LocalTestbed, paths: TestbedPaths): LocalTestbedPlan {
  const nodes = Array.from({ length: testbed.nodes }, (_, rank) => ({
    rank,
    name: nodeName(testbed.name, rank),
    container: nodeContainerName(testbed.name, rank),
    ip: addressInSubnet(testbed.subnet, FIRST_NODE_HOST + rank),
  }));
  return {
    name: testbed.name,
    network: `ringlab-${testbed.name}`,
    subnet: testbed.subnet,
    labels: { [TESTBED_LABEL]: testbed.name },
    sharedDir: testbed.sharedDir ?? paths.sharedDir,
    nodes,
  };
}

export function localInventorySpec(plan: LocalTestbedPlan, paths: TestbedPaths, workerImage: string): InventorySpec {
  return {
    testbed: plan.name,
    target: "local",
    nodes: plan.nodes.map((node) => ({ name: node.name, rank: node.rank, sshAddress: node.ip, privateIp: node.ip, container: node.container })),
    sshUser: "root",
    sshPrivateKeyFile: paths.privateKey,
    knownHostsFile: paths.knownHosts,
    sharedStorage: "bind",
    sharedDir: plan.sharedDir,
    clusterCidr: plan.subnet,
    workerImage,
    workerImageSource: "present",
  };
}

/** The `offset`-th address of an IPv4 subnet; throws when the subnet is too small to hold it. */
export function addressInSubnet(cidr: string, offset: number): string {
  const [base, prefixText] = cidr.split("/");
  const prefix = Number(prefixText);
  const octets = base!.split(".").map(Number);
  const network = (((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0) & prefixMask(prefix);
  const size = 2 ** (32 - prefix);
  if (offset >= size - 1) {
    throw new Error(`subnet ${cidr} has ${size} addresses, too few for a node at offset ${offset}; use a larger subnet (e.g. /24)`);
  }
  const address = network + offset;
  return [24, 16, 8, 0].map((shift) => (address >>> shift) & 255).join(".");
}

function prefixMask(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

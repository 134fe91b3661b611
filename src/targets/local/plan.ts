/**
 * What a local testbed consists of: names, addresses and labels of its Docker network and node containers.
 * Pure, so `up`, `down`, `status` and the tests agree on every name.
 */
import { createHash } from "node:crypto";
import type { InventorySpec } from "../../testbed/inventory.ts";
import { addressInSubnet } from "../../rules/cidr.ts";
import { nodeContainerName, nodeName } from "../../rules/names.ts";
import type { TestbedPaths } from "../../testbed/paths.ts";
import type { LocalTestbedSpec } from "../../testbed/spec.ts";

/** Every container, network and volume of testbed X carries `ringlab.testbed=X`; `down` removes by it. */
export const TESTBED_LABEL = "ringlab.testbed";
/** Node containers and networks also carry their state folder's id, so `down --all` keeps to its own. */
export const STATE_DIR_LABEL = "ringlab.state-dir";
/** The state folder itself, so that a clash can name it (the id above is what filters use). */
export const STATE_PATH_LABEL = "ringlab.state-path";
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

export { addressInSubnet } from "../../rules/cidr.ts";
export { nodeContainerName, nodeName } from "../../rules/names.ts";

/** A short, stable id of a state folder (an absolute path) for the STATE_DIR_LABEL. */
export function stateDirId(stateDir: string): string {
  return createHash("sha256").update(stateDir).digest("hex").slice(0, 16);
}

export function planLocalTestbed(testbed: LocalTestbedSpec, stateDir: string): LocalTestbedPlan {
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
    labels: { [TESTBED_LABEL]: testbed.name, [STATE_DIR_LABEL]: stateDirId(stateDir), [STATE_PATH_LABEL]: stateDir },
    sharedDir: testbed.sharedDir,
    nodes,
  };
}

export function localInventorySpec(plan: LocalTestbedPlan, paths: TestbedPaths, workerImage: string): InventorySpec {
  return {
    testbed: plan.name,
    target: "local",
    nodes: plan.nodes.map((node) => ({
      name: node.name,
      rank: node.rank,
      sshAddress: node.ip,
      privateIp: node.ip,
      container: node.container,
    })),
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

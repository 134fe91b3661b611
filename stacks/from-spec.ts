/** The stack's props from a stored testbed spec (src/testbed/spec.ts): the one bridge between the two. */
import type { NodeHostKey } from "../src/rules/ssh-key.ts";
import type { AwsTestbedSpec } from "../src/testbed/spec.ts";
import type { TestbedStackProps } from "./testbed-stack.ts";

/** `hostKeys`: the nodes' host keys made for this spec (src/testbed/host-keys.ts), if any. */
export function stackPropsFromSpec(spec: AwsTestbedSpec, hostKeys?: readonly NodeHostKey[]): TestbedStackProps {
  return {
    ...(hostKeys === undefined ? {} : { hostKeys }),
    testbedName: spec.name,
    campaignName: spec.campaign,
    expiresAt: spec.expiresAt,
    userTags: spec.tags,
    region: spec.region,
    availabilityZone: spec.availabilityZone,
    nodeCount: spec.nodes,
    instanceType: spec.instanceType,
    ...(spec.ami === null ? {} : { ami: spec.ami }),
    rootVolumeGiB: spec.rootVolumeGiB,
    sshPublicKey: spec.sshPublicKey,
    sshUser: spec.sshUser,
    adminCidr: spec.adminCidr,
    allowSshFromAnywhere: spec.allowSshFromAnywhere,
    sshSourceMinPrefix: spec.sshSourceMinPrefix,
    vpcCidr: spec.vpcCidr,
    subnetCidr: spec.subnetCidr,
    sharedStorage: spec.sharedStorage,
    spot: spec.spot,
    efa: spec.efa,
    terraformState: spec.state,
    placementGroup: spec.placementGroup ?? true,
  };
}

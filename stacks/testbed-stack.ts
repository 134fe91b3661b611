import { resolve } from "node:path";
import type { Construct } from "constructs";
import { LocalBackend, S3Backend, TerraformOutput, TerraformStack } from "cdktf";
import { AwsProvider } from "@cdktf/provider-aws/lib/provider/index.js";
import { availabilityZoneOf, type AwsTestbed } from "../src/config/schema.ts";
import { ClusterNetwork } from "./constructs/cluster-network.ts";
import { ClusterNodes } from "./constructs/cluster-nodes.ts";
import { ClusterSecurityGroup } from "./constructs/cluster-security-group.ts";
import { EfsSharedStorage } from "./constructs/efs-shared-storage.ts";
import { testbedTags } from "./tags.ts";

export interface TestbedStackProps {
  /** The campaign's testbed section, as loaded (sshPublicKey read from its file). */
  readonly testbed: AwsTestbed;
  /** The campaign file's base name without extension: the `ringlab:campaign` tag. */
  readonly campaignName: string;
  /** When the testbed is created: `ringlab:expires-at` is this plus the testbed's ttlHours. */
  readonly createdAt: Date;
  /**
   * Where Terraform keeps the state when the testbed has no remote state.
   * @default `<working directory>/.ringlab/state/<testbed name>.tfstate`
   */
  readonly localStatePath?: string;
}

/** One entry of the `nodes` output, in rank order. */
export interface NodeOutput {
  readonly name: string;
  readonly role: "head" | "worker";
  readonly publicIp: string;
  readonly privateIp: string;
  readonly instanceType: string;
}

/** The names of the stack's outputs: the contract with whoever reads `cdktf output`. */
export const OUTPUT_NAMES = {
  nodes: "nodes",
  sharedStorageEndpoint: "sharedStorageEndpoint",
  sshUser: "sshUser",
} as const;

/**
 * An AWS testbed: network, security group, nodes and (for sharedStorage efs) an EFS file system.
 * Construct IDs: aws, network, security-group, cluster, shared-storage (efs only), and the outputs nodes,
 * sharedStorageEndpoint, sshUser.
 */
export class TestbedStack extends TerraformStack {
  constructor(scope: Construct, id: string, props: TestbedStackProps) {
    super(scope, id);
    const tb = props.testbed;
    if (tb.sshPublicKey === undefined) {
      throw new Error("TestbedStack: testbed.sshPublicKey is not set; load the campaign with loadCampaignFile");
    }
    const tags = testbedTags({
      testbedName: tb.name,
      campaignName: props.campaignName,
      createdAt: props.createdAt,
      ttlHours: tb.ttlHours,
      userTags: tb.tags,
    });

    new AwsProvider(this, "aws", { region: tb.region, defaultTags: [{ tags }] });
    if (tb.state.backend === "s3") {
      new S3Backend(this, { bucket: tb.state.bucket, key: tb.state.key, region: tb.state.region ?? tb.region, encrypt: true });
    } else {
      new LocalBackend(this, { path: props.localStatePath ?? resolve(".ringlab", "state", `${tb.name}.tfstate`) });
    }

    const network = new ClusterNetwork(this, "network", {
      name: tb.name,
      vpcCidr: tb.vpcCidr,
      subnetCidr: tb.subnetCidr,
      availabilityZone: availabilityZoneOf(tb),
    });
    const securityGroup = new ClusterSecurityGroup(this, "security-group", {
      name: tb.name,
      vpcId: network.vpc.id,
      adminCidr: tb.adminCidr,
      allowSshFromAnywhere: tb.allowSshFromAnywhere,
    });
    const cluster = new ClusterNodes(this, "cluster", {
      name: tb.name,
      nodeCount: tb.nodes,
      instanceType: tb.instanceType,
      ami: tb.ami,
      rootVolumeGiB: tb.rootVolumeGiB,
      subnetId: network.subnet.id,
      securityGroupId: securityGroup.securityGroup.id,
      sshPublicKey: tb.sshPublicKey,
      efa: tb.efa,
      spot: tb.spot,
      launchTags: tags,
    });
    const sharedStorageEndpoint = tb.sharedStorage === "efs"
      ? new EfsSharedStorage(this, "shared-storage", {
        name: tb.name,
        subnetId: network.subnet.id,
        securityGroupId: securityGroup.securityGroup.id,
      }).mountDnsName
      : cluster.head.instance.privateIp;

    const nodes: NodeOutput[] = cluster.nodes.map((node) => ({
      name: node.name,
      role: node.role,
      publicIp: node.instance.publicIp,
      privateIp: node.instance.privateIp,
      instanceType: tb.instanceType,
    }));
    new TerraformOutput(this, OUTPUT_NAMES.nodes, {
      value: nodes,
      description: "The nodes in rank order (node 0 is the head): name, role, publicIp, privateIp, instanceType",
    });
    new TerraformOutput(this, OUTPUT_NAMES.sharedStorageEndpoint, {
      value: sharedStorageEndpoint,
      description: tb.sharedStorage === "efs"
        ? "DNS name of the EFS mount target (mount with NFSv4.1)"
        : "Private IP of the head node, which exports the shared directory over NFS",
    });
    new TerraformOutput(this, OUTPUT_NAMES.sshUser, { value: tb.sshUser, description: "User for SSH to every node" });
  }
}

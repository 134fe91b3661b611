import type { Construct } from "constructs";
import { LocalBackend, S3Backend, TerraformOutput, TerraformStack } from "cdktf";
import { AwsProvider } from "@cdktf/provider-aws/lib/provider/index.js";
import { ClusterNetwork } from "./constructs/cluster-network.ts";
import { ClusterNodes } from "./constructs/cluster-nodes.ts";
import { ClusterSecurityGroup } from "./constructs/cluster-security-group.ts";
import { EfsSharedStorage } from "./constructs/efs-shared-storage.ts";
import { endpointOverride } from "./endpoints.ts";
import { testbedTags } from "./tags.ts";
import type { NodeHostKey } from "../src/rules/ssh-key.ts";

/** Where Terraform keeps the testbed's state: a local file (absolute path) or an S3 object (encrypted). */
export type TerraformStateProps =
  | { readonly backend: "local"; readonly path: string }
  | { readonly backend: "s3"; readonly bucket: string; readonly key: string; readonly region: string };

export interface TestbedStackProps {
  /** The testbed's name: prefixes resource names, the `ringlab:testbed` tag. */
  readonly testbedName: string;
  /** The campaign file's base name without extension: the `ringlab:campaign` tag. */
  readonly campaignName: string;
  /** ISO-8601 UTC time after which the testbed may be removed: the `ringlab:expires-at` tag. */
  readonly expiresAt: string;
  /**
   * The user's own tags on every resource.
   * @default no tags
   */
  readonly userTags?: Readonly<Record<string, string>>;
  readonly region: string;
  readonly availabilityZone: string;
  readonly nodeCount: number;
  readonly instanceType: string;
  /**
   * The AMI of every node.
   * @default the newest AWS Deep Learning Base GPU AMI, looked up at deploy time (see ClusterNodes)
   */
  readonly ami?: string;
  readonly rootVolumeGiB: number;
  /** OpenSSH public key text for the AMI's default user. */
  readonly sshPublicKey: string;
  /**
   * Each node's SSH host key, in rank order (ClusterNodesProps.hostKeys).
   * @default none: the nodes keep the AMI's keys
   */
  readonly hostKeys?: readonly NodeHostKey[];
  /** The user the outputs tell the inventory to log in as. */
  readonly sshUser: string;
  /** The only source of SSH to the nodes. */
  readonly adminCidr: string;
  /** @default false */
  readonly allowSshFromAnywhere?: boolean;
  /**
   * The widest SSH source accepted without allowSshFromAnywhere, as a prefix length.
   * @default 16 (see ClusterSecurityGroup)
   */
  readonly sshSourceMinPrefix?: number;
  readonly vpcCidr: string;
  readonly subnetCidr: string;
  readonly sharedStorage: "nfs" | "efs";
  /** @default false */
  readonly spot?: boolean;
  /** @default false */
  readonly efa?: boolean;
  /** Where Terraform keeps the state; a local path must be absolute (cdktf runs Terraform in its own folder). */
  readonly terraformState: TerraformStateProps;
  /**
   * Put the nodes in a cluster placement group.
   * @default true
   */
  readonly placementGroup?: boolean;
  /**
   * TESTS ONLY: send every AWS API call of the provider to this loopback URL (an emulator), with fake
   * credentials (stacks/endpoints.ts). stacks/main.ts sets it from RINGLAB_TEST_AWS_ENDPOINT after checking it.
   * @default undefined: AWS itself, with the standard credential chain
   */
  readonly testAwsEndpoint?: string;
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
    const tags = testbedTags({
      testbedName: props.testbedName,
      campaignName: props.campaignName,
      expiresAt: props.expiresAt,
      ...(props.userTags === undefined ? {} : { userTags: props.userTags }),
    });
    const override = props.testAwsEndpoint === undefined ? {} : endpointOverride(props.testAwsEndpoint);
    new AwsProvider(this, "aws", { region: props.region, defaultTags: [{ tags }], ...override });
    const state = props.terraformState;
    if (state.backend === "s3" && props.testAwsEndpoint !== undefined) {
      throw new Error(
        "TestbedStack: testAwsEndpoint works with the local state backend only (an S3 backend would reach AWS)",
      );
    }
    if (state.backend === "s3") {
      // Encrypted at rest; the bucket is the user's (versioning is theirs to turn on: README, .checkov.yaml).
      new S3Backend(this, { bucket: state.bucket, key: state.key, region: state.region, encrypt: true });
    } else {
      if (!state.path.startsWith("/"))
        throw new Error(`TestbedStack: terraformState.path "${state.path}" must be absolute`);
      new LocalBackend(this, { path: state.path });
    }
    const cluster = this.cluster(props, tags);
    this.outputs(props, cluster.nodes, cluster.sharedStorageEndpoint);
  }

  private cluster(props: TestbedStackProps, tags: Record<string, string>) {
    const name = props.testbedName;
    const network = new ClusterNetwork(this, "network", {
      name,
      vpcCidr: props.vpcCidr,
      subnetCidr: props.subnetCidr,
      availabilityZone: props.availabilityZone,
    });
    const securityGroup = new ClusterSecurityGroup(this, "security-group", {
      name,
      vpcId: network.vpc.id,
      adminCidr: props.adminCidr,
      allowSshFromAnywhere: props.allowSshFromAnywhere ?? false,
      ...(props.sshSourceMinPrefix === undefined ? {} : { sshSourceMinPrefix: props.sshSourceMinPrefix }),
    });
    const nodes = new ClusterNodes(this, "cluster", {
      name,
      nodeCount: props.nodeCount,
      instanceType: props.instanceType,
      ...(props.ami === undefined ? {} : { ami: props.ami }),
      rootVolumeGiB: props.rootVolumeGiB,
      subnetId: network.subnet.id,
      securityGroupId: securityGroup.securityGroup.id,
      sshPublicKey: props.sshPublicKey,
      ...(props.hostKeys === undefined ? {} : { hostKeys: props.hostKeys }),
      efa: props.efa ?? false,
      spot: props.spot ?? false,
      launchTags: tags,
      expiresAt: props.expiresAt,
      placementGroup: props.placementGroup ?? true,
    });
    const sharedStorageEndpoint =
      props.sharedStorage === "efs"
        ? new EfsSharedStorage(this, "shared-storage", {
            name,
            subnetId: network.subnet.id,
            securityGroupId: securityGroup.securityGroup.id,
          }).mountDnsName
        : nodes.head.instance.privateIp;
    return { nodes, sharedStorageEndpoint };
  }

  private outputs(props: TestbedStackProps, cluster: ClusterNodes, sharedStorageEndpoint: string): void {
    const nodes: NodeOutput[] = cluster.nodes.map((node) => ({
      name: node.name,
      role: node.role,
      publicIp: node.instance.publicIp,
      privateIp: node.instance.privateIp,
      instanceType: props.instanceType,
    }));
    new TerraformOutput(this, OUTPUT_NAMES.nodes, {
      value: nodes,
      description: "The nodes in rank order (node 0 is the head): name, role, publicIp, privateIp, instanceType",
    });
    new TerraformOutput(this, OUTPUT_NAMES.sharedStorageEndpoint, {
      value: sharedStorageEndpoint,
      description:
        props.sharedStorage === "efs"
          ? "DNS name of the EFS mount target (mount with NFSv4.1)"
          : "Private IP of the head node, which exports the shared directory over NFS",
    });
    new TerraformOutput(this, OUTPUT_NAMES.sshUser, {
      value: props.sshUser,
      description: "User for SSH to every node",
    });
  }
}

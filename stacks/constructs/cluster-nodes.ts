import { Construct } from "constructs";
import { Token } from "cdktf";
import { DataAwsAmi } from "@cdktf/provider-aws/lib/data-aws-ami/index.js";
import { Instance } from "@cdktf/provider-aws/lib/instance/index.js";
import { KeyPair } from "@cdktf/provider-aws/lib/key-pair/index.js";
import { LaunchTemplate } from "@cdktf/provider-aws/lib/launch-template/index.js";
import { PlacementGroup } from "@cdktf/provider-aws/lib/placement-group/index.js";
import { checkEfaInstanceType } from "../../src/catalogue/aws-instance-types.ts";
import { DEFAULTS } from "../../src/config/schema.ts";
import { checkAmiId, checkRootVolumeGiB } from "../../src/rules/ami.ts";
import { checkResourceName, nodeName, stackName } from "../../src/rules/names.ts";
import { checkNodeHostKey, checkSshPublicKey, type NodeHostKey } from "../../src/rules/ssh-key.ts";
import { nodeUserData } from "../user-data.ts";
import { TAG_KEYS } from "../tags.ts";

export type NodeRole = "head" | "worker";

export interface ClusterNodesProps {
  /** The testbed's name: nodes are called `<name>-node-<rank>`. */
  readonly name: string;
  /** How many instances; node 0 is the head, the others are workers. */
  readonly nodeCount: number;
  readonly instanceType: string;
  /**
   * The AMI of every node.
   * @default the newest x86_64 AMI whose name matches DEFAULTS.aws.amiNamePattern, owned by DEFAULTS.aws.amiOwner
   *   (the AWS Deep Learning Base GPU AMI), looked up at deploy time
   */
  readonly ami?: string;
  /** Size of each node's root volume (gp3, encrypted). */
  readonly rootVolumeGiB: number;
  readonly subnetId: string;
  readonly securityGroupId: string;
  /** OpenSSH public key text, installed for the AMI's default user. */
  readonly sshPublicKey: string;
  /**
   * Give each node an Elastic Fabric Adapter as its network interface; the instance type must support EFA.
   * @default false
   */
  readonly efa?: boolean;
  /**
   * Launch the nodes as one-time spot instances, terminated on interruption.
   * @default false
   */
  readonly spot?: boolean;
  /**
   * Tags for what the instances create at launch (root volumes, network interfaces, spot requests): the
   * provider's default tags do not reach them.
   * @default no tags
   */
  readonly launchTags?: Readonly<Record<string, string>>;
  /** ISO-8601 UTC time at which every node powers itself off, which terminates it (see stacks/expiry.ts). */
  readonly expiresAt: string;
  /**
   * Each node's own SSH host key, in rank order (src/testbed/host-keys.ts): given to the node in its user data
   * (the AMI's keys deleted), so that the controller can pin it before the first connection. The private halves
   * end up in the user data (readable through the instance metadata and EC2's DescribeInstanceAttribute).
   * @default none: the nodes keep the keys the AMI makes at first boot, trusted on first use
   */
  readonly hostKeys?: readonly NodeHostKey[];
  /**
   * Put the nodes in a cluster placement group (lowest latency, highest per-flow bandwidth). Off only where the
   * group cannot be had: an emulator without placement groups, or a zone short of capacity for one.
   * @default true
   */
  readonly placementGroup?: boolean;
}

export interface ClusterNode {
  readonly name: string;
  readonly role: NodeRole;
  readonly instance: Instance;
}

/** Containers on the node that use IMDSv2 are one network hop further away than the host. */
const METADATA_HOP_LIMIT = 2;

/**
 * The nodes of one testbed, in a cluster placement group (lowest latency, highest per-flow bandwidth) unless
 * `placementGroup` is false.
 *
 * The launch template holds what aws_instance cannot say itself: the primary network interface (an EFA one
 * when asked, with a public address) and tags for the interface and spot request created at launch. Everything
 * else is on the instances. Running nodes ignore later template versions: to change the interface type,
 * recreate the testbed.
 *
 * Each node powers itself off at `expiresAt`, and powering off terminates it (stacks/expiry.ts).
 *
 * Deliberate exceptions to checkov's checks (also in .checkov.yaml): public IPv4 addresses (CKV_AWS_88) are how
 * the operator and Ansible reach the nodes, with SSH open to adminCidr only; detailed monitoring (CKV_AWS_126)
 * is off: testbeds live hours, ringlab records its own measurements, and it would bill per node; a metadata hop
 * limit of 2 (CKV_AWS_341) lets containers on the node use IMDSv2, which stays required.
 *
 * Construct IDs: placement-group (only with `placementGroup`), key-pair, ami (data source, only without `ami`),
 * launch-template, node-0 .. node-<N-1>.
 */
/** What every node of the testbed shares. */
interface SharedNodeParts {
  readonly ami: string;
  readonly keyName: string;
  readonly placementGroup: string | undefined;
  readonly launchTemplate: LaunchTemplate;
}

export class ClusterNodes extends Construct {
  readonly nodes: readonly ClusterNode[];

  constructor(scope: Construct, id: string, props: ClusterNodesProps) {
    super(scope, id);
    validate(props);
    const placementGroup =
      (props.placementGroup ?? true)
        ? new PlacementGroup(this, "placement-group", { name: stackName(props.name), strategy: "cluster" })
        : undefined;
    const keyPair = new KeyPair(this, "key-pair", {
      keyName: stackName(props.name),
      publicKey: props.sshPublicKey,
    });
    const ami =
      props.ami ??
      new DataAwsAmi(this, "ami", {
        mostRecent: true,
        owners: [DEFAULTS.aws.amiOwner],
        filter: [
          { name: "name", values: [DEFAULTS.aws.amiNamePattern] },
          { name: "architecture", values: ["x86_64"] },
        ],
      }).id;
    const launchTemplate = this.createLaunchTemplate(props);
    this.nodes = Array.from({ length: props.nodeCount }, (_, rank) =>
      this.createNode(props, rank, {
        ami,
        keyName: keyPair.keyName,
        placementGroup: placementGroup?.name,
        launchTemplate,
      }),
    );
  }

  private createLaunchTemplate(props: ClusterNodesProps): LaunchTemplate {
    const launchTags = { ...props.launchTags };
    return new LaunchTemplate(this, "launch-template", {
      name: `${stackName(props.name)}-node`,
      description: `Network interface and launch-time tags of the nodes of testbed ${props.name}`,
      networkInterfaces: [
        {
          deviceIndex: 0,
          subnetId: props.subnetId,
          securityGroups: [props.securityGroupId],
          associatePublicIpAddress: "true",
          deleteOnTermination: "true",
          interfaceType: props.efa === true ? "efa" : undefined,
        },
      ],
      // The instances set the same; stated here too so that the template alone never allows IMDSv1.
      metadataOptions: { httpEndpoint: "enabled", httpTokens: "required", httpPutResponseHopLimit: METADATA_HOP_LIMIT },
      // EC2 refuses a tag specification without tags.
      tagSpecifications:
        Object.keys(launchTags).length === 0
          ? undefined
          : [
              { resourceType: "network-interface", tags: launchTags },
              ...(props.spot === true ? [{ resourceType: "spot-instances-request", tags: launchTags }] : []),
            ],
    });
  }

  private createNode(props: ClusterNodesProps, rank: number, shared: SharedNodeParts): ClusterNode {
    const name = nodeName(props.name, rank);
    const role: NodeRole = rank === 0 ? "head" : "worker";
    const instance = new Instance(this, `node-${rank}`, {
      ami: shared.ami,
      instanceType: props.instanceType,
      keyName: shared.keyName,
      placementGroup: shared.placementGroup,
      launchTemplate: { id: shared.launchTemplate.id, version: Token.asString(shared.launchTemplate.latestVersion) },
      rootBlockDevice: {
        volumeType: "gp3",
        volumeSize: props.rootVolumeGiB,
        encrypted: true,
        deleteOnTermination: true,
      },
      ebsOptimized: true,
      monitoring: false,
      instanceInitiatedShutdownBehavior: "terminate",
      userData: nodeUserData(props.expiresAt, props.hostKeys?.[rank]),
      metadataOptions: { httpEndpoint: "enabled", httpTokens: "required", httpPutResponseHopLimit: METADATA_HOP_LIMIT },
      instanceMarketOptions:
        props.spot === true
          ? {
              marketType: "spot",
              spotOptions: { spotInstanceType: "one-time", instanceInterruptionBehavior: "terminate" },
            }
          : undefined,
      volumeTags: { ...props.launchTags, Name: name },
      tags: { Name: name, [TAG_KEYS.role]: role },
      // A new template version (a later synth moves the expires-at tag in it) must not replace running nodes.
      lifecycle: { ignoreChanges: ["launch_template"] },
    });
    return { name, role, instance };
  }

  /** Node 0: runs the NFS server (sharedStorage nfs) and rank 0. */
  get head(): ClusterNode {
    return this.nodes[0]!;
  }
}

function validate(props: ClusterNodesProps): void {
  const fail = (message: string): never => {
    throw new Error(`ClusterNodes: ${message}`);
  };
  const check = (field: string, value: unknown, problem: string | undefined): void => {
    if (problem !== undefined) fail(`${field} ${JSON.stringify(value)}: ${problem}`);
  };
  check("name", props.name, checkResourceName(props.name));
  if (!Number.isInteger(props.nodeCount) || props.nodeCount < 1)
    fail(`nodeCount must be a whole number >= 1, got ${props.nodeCount}`);
  check("rootVolumeGiB", props.rootVolumeGiB, checkRootVolumeGiB(props.rootVolumeGiB));
  if (props.ami !== undefined) check("ami", props.ami, checkAmiId(props.ami));
  if (props.efa === true) check("efa", props.efa, checkEfaInstanceType(props.instanceType));
  if (Number.isNaN(Date.parse(props.expiresAt)))
    fail(`expiresAt ${JSON.stringify(props.expiresAt)}: expected an ISO-8601 time`);
  const keyProblem = checkSshPublicKey(props.sshPublicKey);
  if (keyProblem !== undefined) fail(`sshPublicKey: ${keyProblem}`);
  if (props.hostKeys !== undefined) {
    if (props.hostKeys.length !== props.nodeCount)
      fail(`hostKeys: ${props.hostKeys.length} keys for ${props.nodeCount} nodes`);
    props.hostKeys.forEach((key, rank) => {
      const problem = checkNodeHostKey(key);
      if (problem !== undefined) fail(`hostKeys[${rank}]: ${problem}`);
    });
  }
}

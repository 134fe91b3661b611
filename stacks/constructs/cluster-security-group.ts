import { Construct } from "constructs";
import { SecurityGroup } from "@cdktf/provider-aws/lib/security-group/index.js";
import { VpcSecurityGroupEgressRule } from "@cdktf/provider-aws/lib/vpc-security-group-egress-rule/index.js";
import { VpcSecurityGroupIngressRule } from "@cdktf/provider-aws/lib/vpc-security-group-ingress-rule/index.js";
import { checkSshSource, DEFAULT_SSH_SOURCE_MIN_PREFIX } from "../../src/rules/cidr.ts";
import { stackName } from "../../src/rules/names.ts";

export interface ClusterSecurityGroupProps {
  /** Prefix of the group's name. */
  readonly name: string;
  readonly vpcId: string;
  /** The only source allowed to reach the nodes over SSH, e.g. 203.0.113.7/32. */
  readonly adminCidr: string;
  /**
   * Accept an adminCidr wider than sshSourceMinPrefix, 0.0.0.0/0 included.
   * @default false
   */
  readonly allowSshFromAnywhere?: boolean;
  /**
   * The widest adminCidr accepted without allowSshFromAnywhere, as a prefix length.
   * @default DEFAULT_SSH_SOURCE_MIN_PREFIX (16)
   */
  readonly sshSourceMinPrefix?: number;
}

const NFS_PORT = 2049;
const SSH_PORT = 22;

/**
 * The one security group of all nodes (and of the EFS mount target).
 *
 * Rules, each its own resource so the self-references stay clean:
 * - SSH (22) in, only from adminCidr;
 * - all traffic in from and out to members of this group: NCCL/Gloo pick random ports, and EFA requires the
 *   group to allow all traffic to and from itself;
 * - NFS (2049) in from members only. The rule above already covers it; it is stated on its own so that NFS
 *   stays internal even if the all-traffic rule is narrowed one day. No rule admits NFS from any address range;
 * - all traffic out to the internet: packages, container images, datasets (a deliberate exception to checkov's
 *   CKV_AWS_382, also in .checkov.yaml: the campaign decides where images and data come from).
 *
 * Construct IDs: security-group, ssh-from-admin, all-from-cluster, nfs-from-cluster, all-to-cluster,
 * all-to-internet.
 */
export class ClusterSecurityGroup extends Construct {
  readonly securityGroup: SecurityGroup;

  constructor(scope: Construct, id: string, props: ClusterSecurityGroupProps) {
    super(scope, id);
    const sourceProblem = checkSshSource(props.adminCidr, {
      allowSshFromAnywhere: props.allowSshFromAnywhere,
      minPrefixLength: props.sshSourceMinPrefix ?? DEFAULT_SSH_SOURCE_MIN_PREFIX,
    });
    if (sourceProblem !== undefined)
      throw new Error(`ClusterSecurityGroup: adminCidr "${props.adminCidr}": ${sourceProblem}`);

    this.securityGroup = new SecurityGroup(this, "security-group", {
      name: `${stackName(props.name)}-cluster`,
      description: `ringlab testbed ${props.name}: SSH from the admin address, everything between members`,
      vpcId: props.vpcId,
      tags: { Name: `${props.name}-cluster` },
    });
    const groupId = this.securityGroup.id;

    new VpcSecurityGroupIngressRule(this, "ssh-from-admin", {
      securityGroupId: groupId,
      description: "SSH from the operator (adminCidr)",
      ipProtocol: "tcp",
      fromPort: SSH_PORT,
      toPort: SSH_PORT,
      cidrIpv4: props.adminCidr,
    });
    new VpcSecurityGroupIngressRule(this, "all-from-cluster", {
      securityGroupId: groupId,
      description: "All traffic from cluster members (collectives; EFA requires it)",
      ipProtocol: "-1",
      referencedSecurityGroupId: groupId,
    });
    new VpcSecurityGroupIngressRule(this, "nfs-from-cluster", {
      securityGroupId: groupId,
      description: "NFS from cluster members only (head node export or EFS mount target)",
      ipProtocol: "tcp",
      fromPort: NFS_PORT,
      toPort: NFS_PORT,
      referencedSecurityGroupId: groupId,
    });
    new VpcSecurityGroupEgressRule(this, "all-to-cluster", {
      securityGroupId: groupId,
      description: "All traffic to cluster members (collectives; EFA requires it)",
      ipProtocol: "-1",
      referencedSecurityGroupId: groupId,
    });
    new VpcSecurityGroupEgressRule(this, "all-to-internet", {
      securityGroupId: groupId,
      description: "Internet access for packages, container images and datasets",
      ipProtocol: "-1",
      cidrIpv4: "0.0.0.0/0",
    });
  }
}

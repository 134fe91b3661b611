import { Construct } from "constructs";
import { DefaultSecurityGroup } from "@cdktf/provider-aws/lib/default-security-group/index.js";
import { InternetGateway } from "@cdktf/provider-aws/lib/internet-gateway/index.js";
import { Route } from "@cdktf/provider-aws/lib/route/index.js";
import { RouteTable } from "@cdktf/provider-aws/lib/route-table/index.js";
import { RouteTableAssociation } from "@cdktf/provider-aws/lib/route-table-association/index.js";
import { Subnet } from "@cdktf/provider-aws/lib/subnet/index.js";
import { Vpc } from "@cdktf/provider-aws/lib/vpc/index.js";
import { checkSubnetCidr, checkVpcCidr } from "../../src/rules/cidr.ts";

export interface ClusterNetworkProps {
  /** Prefix of the resources' Name tags. */
  readonly name: string;
  /** IPv4 range of the VPC, /16 to /28 (VPC_PREFIX_LENGTH). */
  readonly vpcCidr: string;
  /** IPv4 range of the one subnet; must lie inside `vpcCidr`. */
  readonly subnetCidr: string;
  /** The zone of the subnet, e.g. us-east-1a: a cluster placement group lives in one zone. */
  readonly availabilityZone: string;
}

/**
 * A VPC with one public subnet: every node gets a public IPv4 address on launch and reaches the internet
 * through an internet gateway. The VPC's default security group is taken over with no rules (checkov
 * CKV2_AWS_12): nothing uses it, and nothing put in it by mistake can talk to anything.
 *
 * Deliberate exceptions (also in .checkov.yaml): public addresses on launch (CKV_AWS_130) are how the operator
 * reaches the nodes; no VPC flow logs (CKV2_AWS_11): a testbed lives hours, its only inbound path is SSH from
 * adminCidr, and flow logs would need a log group and an IAM role that outlive nothing but the bill.
 *
 * Construct IDs (changing one replaces the resource): vpc, default-security-group, subnet, internet-gateway,
 * route-table, default-route, route-table-association.
 */
export class ClusterNetwork extends Construct {
  readonly vpc: Vpc;
  readonly subnet: Subnet;

  constructor(scope: Construct, id: string, props: ClusterNetworkProps) {
    super(scope, id);
    const vpcProblem = checkVpcCidr(props.vpcCidr);
    if (vpcProblem !== undefined) throw new Error(`ClusterNetwork: vpcCidr "${props.vpcCidr}": ${vpcProblem}`);
    const subnetProblem = checkSubnetCidr(props.subnetCidr, props.vpcCidr);
    if (subnetProblem !== undefined)
      throw new Error(`ClusterNetwork: subnetCidr "${props.subnetCidr}": ${subnetProblem}`);
    if (props.availabilityZone.trim() === "") throw new Error("ClusterNetwork: availabilityZone must not be empty");

    // DNS hostnames and support let nodes resolve an EFS mount target's DNS name.
    this.vpc = new Vpc(this, "vpc", {
      cidrBlock: props.vpcCidr,
      enableDnsSupport: true,
      enableDnsHostnames: true,
      tags: { Name: props.name },
    });
    // No ingress or egress blocks: Terraform removes every rule AWS put in the default group.
    new DefaultSecurityGroup(this, "default-security-group", {
      vpcId: this.vpc.id,
      tags: { Name: `${props.name}-default-closed` },
    });
    this.subnet = new Subnet(this, "subnet", {
      vpcId: this.vpc.id,
      cidrBlock: props.subnetCidr,
      availabilityZone: props.availabilityZone,
      mapPublicIpOnLaunch: true,
      tags: { Name: `${props.name}-${props.availabilityZone}` },
    });
    const internetGateway = new InternetGateway(this, "internet-gateway", {
      vpcId: this.vpc.id,
      tags: { Name: props.name },
    });
    const routeTable = new RouteTable(this, "route-table", { vpcId: this.vpc.id, tags: { Name: props.name } });
    new Route(this, "default-route", {
      routeTableId: routeTable.id,
      destinationCidrBlock: "0.0.0.0/0",
      gatewayId: internetGateway.id,
    });
    new RouteTableAssociation(this, "route-table-association", {
      subnetId: this.subnet.id,
      routeTableId: routeTable.id,
    });
  }
}

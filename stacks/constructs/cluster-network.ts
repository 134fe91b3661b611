import { Construct } from "constructs";
import { InternetGateway } from "@cdktf/provider-aws/lib/internet-gateway/index.js";
import { Route } from "@cdktf/provider-aws/lib/route/index.js";
import { RouteTable } from "@cdktf/provider-aws/lib/route-table/index.js";
import { RouteTableAssociation } from "@cdktf/provider-aws/lib/route-table-association/index.js";
import { Subnet } from "@cdktf/provider-aws/lib/subnet/index.js";
import { Vpc } from "@cdktf/provider-aws/lib/vpc/index.js";

export interface ClusterNetworkProps {
  /** Prefix of the resources' Name tags. */
  readonly name: string;
  /** IPv4 range of the VPC, /16 to /28. */
  readonly vpcCidr: string;
  /** IPv4 range of the one subnet; must lie inside `vpcCidr`. */
  readonly subnetCidr: string;
  /** The zone of the subnet, e.g. us-east-1a: a cluster placement group lives in one zone. */
  readonly availabilityZone: string;
}

/**
 * A VPC with one public subnet: every node gets a public IPv4 address on launch and reaches the internet
 * through an internet gateway.
 *
 * Construct IDs (changing one replaces the resource): vpc, subnet, internet-gateway, route-table,
 * default-route, route-table-association.
 */
export class ClusterNetwork extends Construct {
  readonly vpc: Vpc;
  readonly subnet: Subnet;

  constructor(scope: Construct, id: string, props: ClusterNetworkProps) {
    super(scope, id);
    const vpcRange = parseCidr(props.vpcCidr, "vpcCidr");
    const subnetRange = parseCidr(props.subnetCidr, "subnetCidr");
    if (vpcRange.prefixLength < 16 || vpcRange.prefixLength > 28) {
      throw new Error(`ClusterNetwork: vpcCidr ${props.vpcCidr} must be between /16 and /28 (an AWS limit)`);
    }
    if (!contains(vpcRange, subnetRange)) {
      throw new Error(`ClusterNetwork: subnetCidr ${props.subnetCidr} must lie inside vpcCidr ${props.vpcCidr}`);
    }
    if (props.availabilityZone.trim() === "") throw new Error("ClusterNetwork: availabilityZone must not be empty");

    // DNS hostnames and support let nodes resolve an EFS mount target's DNS name.
    this.vpc = new Vpc(this, "vpc", {
      cidrBlock: props.vpcCidr,
      enableDnsSupport: true,
      enableDnsHostnames: true,
      tags: { Name: props.name },
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

interface Ipv4Range {
  readonly first: number;
  readonly prefixLength: number;
}

function parseCidr(cidr: string, field: string): Ipv4Range {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr);
  const octets = match ? match.slice(1, 5).map(Number) : [];
  const prefixLength = match ? Number(match[5]) : NaN;
  if (!match || octets.some((o) => o > 255) || prefixLength > 32) {
    throw new Error(`ClusterNetwork: ${field} "${cidr}" is not an IPv4 CIDR such as 10.78.0.0/16`);
  }
  const address = octets.reduce((acc, octet) => acc * 256 + octet, 0);
  const size = 2 ** (32 - prefixLength);
  if (address % size !== 0) {
    throw new Error(`ClusterNetwork: ${field} "${cidr}" has host bits set; expected the network address of the range`);
  }
  return { first: address, prefixLength };
}

function contains(outer: Ipv4Range, inner: Ipv4Range): boolean {
  const outerSize = 2 ** (32 - outer.prefixLength);
  return inner.prefixLength >= outer.prefixLength && inner.first >= outer.first && inner.first < outer.first + outerSize;
}

import { Testing } from "cdktf";
import { describe, expect, it } from "vitest";
import { ClusterNetwork, type ClusterNetworkProps } from "../../stacks/constructs/cluster-network.ts";
import { parse, resourcesOf } from "./fixtures.ts";

const props: ClusterNetworkProps = {
  name: "tb",
  vpcCidr: "10.78.0.0/16",
  subnetCidr: "10.78.1.0/24",
  availabilityZone: "eu-west-1b",
};

function synth(overrides: Partial<ClusterNetworkProps> = {}): string {
  return Testing.synthScope((scope) => {
    new ClusterNetwork(scope, "network", { ...props, ...overrides });
  });
}

describe("ClusterNetwork", () => {
  it("creates a VPC with DNS support (EFS mount target names resolve)", () => {
    expect(
      Testing.toHaveResourceWithProperties(synth(), "aws_vpc", {
        cidr_block: "10.78.0.0/16",
        enable_dns_support: true,
        enable_dns_hostnames: true,
      }),
    ).toBe(true);
  });

  it("creates one subnet in the chosen zone that gives nodes public addresses", () => {
    const json = parse(synth());
    const subnets = Object.values(resourcesOf(json, "aws_subnet"));
    expect(subnets).toHaveLength(1);
    expect(subnets[0]).toMatchObject({
      cidr_block: "10.78.1.0/24",
      availability_zone: "eu-west-1b",
      map_public_ip_on_launch: true,
    });
  });

  it("routes the subnet's internet traffic through an internet gateway", () => {
    const json = parse(synth());
    const [gatewayId] = Object.keys(resourcesOf(json, "aws_internet_gateway"));
    const [routeTableId] = Object.keys(resourcesOf(json, "aws_route_table"));
    const [subnetId] = Object.keys(resourcesOf(json, "aws_subnet"));
    expect(gatewayId && routeTableId && subnetId).toBeTruthy();
    expect(Object.values(resourcesOf(json, "aws_route"))).toEqual([
      expect.objectContaining({
        destination_cidr_block: "0.0.0.0/0",
        gateway_id: `\${aws_internet_gateway.${gatewayId}.id}`,
        route_table_id: `\${aws_route_table.${routeTableId}.id}`,
      }),
    ]);
    expect(Object.values(resourcesOf(json, "aws_route_table_association"))).toEqual([
      expect.objectContaining({
        subnet_id: `\${aws_subnet.${subnetId}.id}`,
        route_table_id: `\${aws_route_table.${routeTableId}.id}`,
      }),
    ]);
  });

  it("rejects a subnet outside the VPC", () => {
    expect(() => synth({ subnetCidr: "10.79.1.0/24" })).toThrow(
      /subnetCidr "10.79.1.0\/24": expected a range inside vpcCidr 10.78.0.0\/16/,
    );
    expect(() => synth({ vpcCidr: "10.78.0.0/24", subnetCidr: "10.78.0.0/16" })).toThrow(
      /expected a range inside vpcCidr/,
    );
  });

  it("rejects malformed ranges, VPC sizes AWS refuses and an empty zone", () => {
    expect(() => synth({ vpcCidr: "10.78.0.0" })).toThrow(/vpcCidr "10.78.0.0": expected an IPv4 CIDR/);
    expect(() => synth({ subnetCidr: "10.78.1.300/24" })).toThrow(/subnetCidr .*: expected an IPv4 CIDR/);
    expect(() => synth({ subnetCidr: "10.78.1.7/24" })).toThrow(/host bits set/);
    expect(() => synth({ vpcCidr: "10.0.0.0/8", subnetCidr: "10.78.1.0/24" })).toThrow(/between \/16 and \/28/);
    expect(() => synth({ availabilityZone: " " })).toThrow(/availabilityZone/);
  });
});

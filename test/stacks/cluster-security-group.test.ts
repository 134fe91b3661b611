import { Testing } from "cdktf";
import { describe, expect, it } from "vitest";
import {
  ClusterSecurityGroup,
  type ClusterSecurityGroupProps,
} from "../../stacks/constructs/cluster-security-group.ts";
import { parse, resourcesOf, type Block, type TerraformJson } from "./fixtures.ts";

const props: ClusterSecurityGroupProps = { name: "tb", vpcId: "vpc-0123456789abcdef0", adminCidr: "203.0.113.7/32" };

function synth(overrides: Partial<ClusterSecurityGroupProps> = {}): TerraformJson {
  return parse(
    Testing.synthScope((scope) => {
      new ClusterSecurityGroup(scope, "security-group", { ...props, ...overrides });
    }),
  );
}

function rules(json: TerraformJson): { ingress: Block[]; egress: Block[] } {
  return {
    ingress: Object.values(resourcesOf(json, "aws_vpc_security_group_ingress_rule")),
    egress: Object.values(resourcesOf(json, "aws_vpc_security_group_egress_rule")),
  };
}

/** Characters AWS accepts in security group rule descriptions. */
const RULE_DESCRIPTION = /^[a-zA-Z0-9 ._\-:/()#,@[\]+=;{}!$*]{1,255}$/;

describe("ClusterSecurityGroup", () => {
  const json = synth();
  const [groupId] = Object.keys(resourcesOf(json, "aws_security_group"));
  const self = `\${aws_security_group.${groupId}.id}`;
  const { ingress, egress } = rules(json);

  it("creates one group in the VPC, with its own rule resources and no inline rules", () => {
    const groups = Object.values(resourcesOf(json, "aws_security_group"));
    expect(groups).toHaveLength(1);
    expect(groups[0]).toMatchObject({ vpc_id: props.vpcId });
    expect(groups[0]).not.toHaveProperty("ingress");
    expect(groups[0]).not.toHaveProperty("egress");
    for (const rule of [...ingress, ...egress]) expect(rule["security_group_id"]).toBe(self);
  });

  it("admits SSH only from adminCidr", () => {
    const fromAddresses = ingress.filter((rule) => rule["cidr_ipv4"] !== undefined || rule["cidr_ipv6"] !== undefined);
    expect(fromAddresses).toEqual([
      expect.objectContaining({
        cidr_ipv4: "203.0.113.7/32",
        ip_protocol: "tcp",
        from_port: 22,
        to_port: 22,
      }),
    ]);
  });

  it("allows all traffic from and to the group itself, as EFA requires", () => {
    expect(ingress).toContainEqual(expect.objectContaining({ ip_protocol: "-1", referenced_security_group_id: self }));
    expect(egress).toContainEqual(expect.objectContaining({ ip_protocol: "-1", referenced_security_group_id: self }));
  });

  it("admits NFS (2049) from cluster members only", () => {
    const nfs = ingress.filter(
      (rule) =>
        rule["ip_protocol"] === "-1" || ((rule["from_port"] as number) <= 2049 && (rule["to_port"] as number) >= 2049),
    );
    expect(nfs.length).toBeGreaterThanOrEqual(1);
    for (const rule of nfs) {
      expect(rule).toMatchObject({ referenced_security_group_id: self });
      expect(rule).not.toHaveProperty("cidr_ipv4");
    }
    expect(ingress).toContainEqual(
      expect.objectContaining({
        ip_protocol: "tcp",
        from_port: 2049,
        to_port: 2049,
        referenced_security_group_id: self,
      }),
    );
  });

  it("lets nodes reach the internet for packages", () => {
    expect(egress).toContainEqual(expect.objectContaining({ ip_protocol: "-1", cidr_ipv4: "0.0.0.0/0" }));
  });

  it("describes every rule in characters AWS accepts", () => {
    expect(ingress.length + egress.length).toBe(5);
    for (const rule of [...ingress, ...egress]) expect(rule["description"]).toMatch(RULE_DESCRIPTION);
    expect(Object.values(resourcesOf(json, "aws_security_group"))[0]?.["description"]).toMatch(RULE_DESCRIPTION);
  });

  it("rejects an adminCidr that is not a CIDR, and ranges wider than /16 (0.0.0.0/0 too) unless allowed", () => {
    expect(() => synth({ adminCidr: "203.0.113.7" })).toThrow(/adminCidr "203.0.113.7": expected an IPv4 CIDR/);
    expect(() => synth({ adminCidr: "0.0.0.0/0" })).toThrow(/allowSshFromAnywhere/);
    expect(() => synth({ adminCidr: "0.0.0.0/1" })).toThrow(/opens SSH to 2147483648 addresses/);
    expect(() => synth({ adminCidr: "203.0.0.0/16" })).not.toThrow();
    expect(() => synth({ adminCidr: "203.0.0.0/24", sshSourceMinPrefix: 28 })).toThrow(/wider than \/28/);
    const open = rules(synth({ adminCidr: "0.0.0.0/0", allowSshFromAnywhere: true }));
    expect(open.ingress).toContainEqual(expect.objectContaining({ cidr_ipv4: "0.0.0.0/0", from_port: 22 }));
  });
});

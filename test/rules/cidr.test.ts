import { describe, expect, it } from "vitest";
import {
  addressInSubnet,
  checkIpv4Cidr,
  checkSshSource,
  checkSubnetCidr,
  checkVpcCidr,
  cidrContains,
  parseIpv4Cidr,
} from "../../src/rules/cidr.ts";

const range = (cidr: string) => {
  const parsed = parseIpv4Cidr(cidr);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.range;
};

describe("parseIpv4Cidr", () => {
  it("parses the network address and prefix length", () => {
    expect(range("10.78.1.0/24")).toEqual({ network: 10 * 2 ** 24 + 78 * 2 ** 16 + 256, prefixLength: 24 });
    expect(range("0.0.0.0/0")).toEqual({ network: 0, prefixLength: 0 });
    expect(range("255.255.255.255/32")).toEqual({ network: 2 ** 32 - 1, prefixLength: 32 });
  });

  it("refuses malformed text with an example", () => {
    for (const text of [
      "10.77.0.0",
      "203.0.113.7/33",
      "10.78.1.300/24",
      "10.0.0/8",
      "010.0.0.0/8",
      " 10.0.0.0/8",
      "10.0.0.0/8,0.0.0.0/0",
      "",
    ]) {
      expect(checkIpv4Cidr(text, { example: "203.0.113.7/32" }), text).toBe(
        "expected an IPv4 CIDR such as 203.0.113.7/32",
      );
    }
  });

  it("refuses host bits unless asked to clear them", () => {
    expect(checkIpv4Cidr("10.78.1.7/24")).toBe(
      "expected a network address with no host bits set, such as 10.78.1.0/24",
    );
    expect(parseIpv4Cidr("10.77.1.99/23", { allowHostBits: true })).toEqual({ ok: true, range: range("10.77.0.0/23") });
  });
});

describe("cidrContains, checkVpcCidr and checkSubnetCidr", () => {
  it("knows which ranges lie inside which", () => {
    expect(cidrContains(range("10.78.0.0/16"), range("10.78.1.0/24"))).toBe(true);
    expect(cidrContains(range("10.78.0.0/16"), range("10.79.1.0/24"))).toBe(false);
    expect(cidrContains(range("10.78.0.0/24"), range("10.78.0.0/16"))).toBe(false);
  });

  it("keeps VPCs to the sizes AWS accepts and subnets inside them", () => {
    expect(checkVpcCidr("10.0.0.0/8")).toMatch(/between \/16 and \/28/);
    expect(checkVpcCidr("10.78.0.0/16")).toBeUndefined();
    expect(checkSubnetCidr("10.79.1.0/24", "10.78.0.0/16")).toBe("expected a range inside vpcCidr 10.78.0.0/16");
    expect(checkSubnetCidr("10.78.1.0/24", "10.78.0.0/16")).toBeUndefined();
  });
});

describe("addressInSubnet", () => {
  it("counts from the network address, clearing host bits", () => {
    expect(addressInSubnet("10.77.0.0/24", 10)).toBe("10.77.0.10");
    expect(addressInSubnet("10.77.1.99/23", 300)).toBe("10.77.1.44");
  });

  it("refuses offsets past the last usable address", () => {
    expect(() => addressInSubnet("10.0.0.0/28", 15)).toThrow(/has 16 addresses, too few for a node at offset 15/);
    expect(() => addressInSubnet("not a cidr", 1)).toThrow(/expected an IPv4 CIDR/);
  });
});

describe("checkSshSource", () => {
  it("accepts a single address and ranges up to /16", () => {
    expect(checkSshSource("203.0.113.7/32")).toBeUndefined();
    expect(checkSshSource("203.0.0.0/16")).toBeUndefined();
  });

  it("refuses ranges wider than /16 by default: 0.0.0.0/0, 0.0.0.0/1 and /15", () => {
    expect(checkSshSource("0.0.0.0/0")).toMatch(/^0\.0\.0\.0\/0 opens SSH to the whole internet/);
    expect(checkSshSource("0.0.0.0/1")).toMatch(/^0\.0\.0\.0\/1 opens SSH to 2147483648 addresses, wider than \/16/);
    expect(checkSshSource("203.0.0.0/15")).toMatch(/wider than \/16.*allowSshFromAnywhere: true/);
  });

  it("accepts any range when allowSshFromAnywhere, and honours a configured limit", () => {
    expect(checkSshSource("0.0.0.0/0", { allowSshFromAnywhere: true })).toBeUndefined();
    expect(checkSshSource("203.0.0.0/15", { allowSshFromAnywhere: true })).toBeUndefined();
    expect(checkSshSource("203.0.113.0/24", { minPrefixLength: 28 })).toMatch(/wider than \/28/);
    expect(checkSshSource("203.0.0.0/12", { minPrefixLength: 8 })).toBeUndefined();
  });

  it("refuses anything wider than /8 without allowSshFromAnywhere, whatever the configured limit says", () => {
    expect(checkSshSource("0.0.0.0/0", { minPrefixLength: 0 })).toMatch(
      /^0\.0\.0\.0\/0 opens SSH to the whole internet, wider than \/8, the widest sshSourceMinPrefix can allow/,
    );
    expect(checkSshSource("10.0.0.0/7", { minPrefixLength: 4 })).toMatch(/wider than \/8.*allowSshFromAnywhere: true/);
    expect(checkSshSource("10.0.0.0/8", { minPrefixLength: 0 })).toBeUndefined();
    expect(checkSshSource("0.0.0.0/0", { minPrefixLength: 0, allowSshFromAnywhere: true })).toBeUndefined();
  });

  it("still refuses malformed text when allowSshFromAnywhere", () => {
    expect(checkSshSource("0.0.0.0", { allowSshFromAnywhere: true })).toMatch(/expected an IPv4 CIDR/);
  });
});

/**
 * IPv4 ranges: one parser for every CIDR in a campaign file and in the constructs, and the rule for who may
 * reach the nodes over SSH. Pure.
 */

export interface Ipv4Range {
  /** The first address as an unsigned 32-bit number (host bits cleared). */
  readonly network: number;
  readonly prefixLength: number;
}

export type ParsedCidr =
  | { readonly ok: true; readonly range: Ipv4Range }
  | { readonly ok: false; readonly problem: string };

export interface CidrOptions {
  /** Shown in the problem text. @default "10.0.0.0/16" */
  readonly example?: string;
  /** Accept an address with host bits set (10.77.1.99/23) and clear them. @default false */
  readonly allowHostBits?: boolean;
}

const CIDR_PATTERN = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

export function parseIpv4Cidr(text: string, options: CidrOptions = {}): ParsedCidr {
  const match = CIDR_PATTERN.exec(text);
  const octets = match ? match.slice(1, 5).map(Number) : [];
  const prefixLength = match ? Number(match[5]) : NaN;
  // Leading zeros (010.0.0.0) mean octal to some tools and decimal to others.
  const ambiguous = match?.slice(1, 6).some((part) => part.length > 1 && part.startsWith("0"));
  if (!match || ambiguous || octets.some((octet) => octet > 255) || prefixLength > 32) {
    return { ok: false, problem: `expected an IPv4 CIDR such as ${options.example ?? "10.0.0.0/16"}` };
  }
  const address = octets.reduce((acc, octet) => acc * 256 + octet, 0);
  const size = 2 ** (32 - prefixLength);
  const network = address - (address % size);
  if (network !== address && options.allowHostBits !== true) {
    return {
      ok: false,
      problem: `expected a network address with no host bits set, such as ${formatIpv4(network)}/${prefixLength}`,
    };
  }
  return { ok: true, range: { network, prefixLength } };
}

/** The problem with a CIDR text, or undefined: for schema refinements and props checks. */
export function checkIpv4Cidr(text: string, options: CidrOptions = {}): string | undefined {
  const parsed = parseIpv4Cidr(text, options);
  return parsed.ok ? undefined : parsed.problem;
}

export function rangeSize(range: Ipv4Range): number {
  return 2 ** (32 - range.prefixLength);
}

export function cidrContains(outer: Ipv4Range, inner: Ipv4Range): boolean {
  return (
    inner.prefixLength >= outer.prefixLength &&
    inner.network >= outer.network &&
    inner.network < outer.network + rangeSize(outer)
  );
}

export function formatIpv4(address: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(address / 2 ** shift) % 256).join(".");
}

/** The `offset`-th address of an IPv4 subnet; throws when the subnet is too small to hold it. */
export function addressInSubnet(cidr: string, offset: number): string {
  const parsed = parseIpv4Cidr(cidr, { allowHostBits: true });
  if (!parsed.ok) throw new Error(`subnet ${cidr}: ${parsed.problem}`);
  const size = rangeSize(parsed.range);
  // The last address is the broadcast address.
  if (offset >= size - 1) {
    throw new Error(
      `subnet ${cidr} has ${size} addresses, too few for a node at offset ${offset}; use a larger subnet (e.g. /24)`,
    );
  }
  return formatIpv4(parsed.range.network + offset);
}

/** AWS accepts VPC ranges from /16 to /28. */
export const VPC_PREFIX_LENGTH = { min: 16, max: 28 } as const;

export function checkVpcCidr(cidr: string): string | undefined {
  const parsed = parseIpv4Cidr(cidr, { example: "10.78.0.0/16" });
  if (!parsed.ok) return parsed.problem;
  const { prefixLength } = parsed.range;
  return prefixLength >= VPC_PREFIX_LENGTH.min && prefixLength <= VPC_PREFIX_LENGTH.max
    ? undefined
    : `expected a prefix length between /${VPC_PREFIX_LENGTH.min} and /${VPC_PREFIX_LENGTH.max} (an AWS limit)`;
}

/** A subnet must be a well-formed range inside its VPC's range; a malformed vpcCidr is reported on its own. */
export function checkSubnetCidr(subnetCidr: string, vpcCidr: string): string | undefined {
  const subnet = parseIpv4Cidr(subnetCidr, { example: "10.78.1.0/24" });
  if (!subnet.ok) return subnet.problem;
  const vpc = parseIpv4Cidr(vpcCidr);
  if (vpc.ok && !cidrContains(vpc.range, subnet.range)) return `expected a range inside vpcCidr ${vpcCidr}`;
  return undefined;
}

/** Sources wider than this are refused for SSH unless `allowSshFromAnywhere`: a /16 is one organisation's network. */
export const DEFAULT_SSH_SOURCE_MIN_PREFIX = 16;

export interface SshSourceOptions {
  /** @default false */
  readonly allowSshFromAnywhere?: boolean;
  /** The widest range accepted without allowSshFromAnywhere. @default DEFAULT_SSH_SOURCE_MIN_PREFIX */
  readonly minPrefixLength?: number;
}

/**
 * The widest SSH source any sshSourceMinPrefix lets through: a /8 is already 16 million addresses, and anything
 * wider (0.0.0.0/0 included) needs allowSshFromAnywhere, so lowering the limit can never open SSH to the world.
 */
export const SSH_SOURCE_PREFIX_FLOOR = 8;

/**
 * Who may reach the nodes' SSH port: a well-formed CIDR no wider than minPrefixLength (and never wider than
 * SSH_SOURCE_PREFIX_FLOOR, whatever minPrefixLength says), or anything when allowed.
 */
export function checkSshSource(cidr: string, options: SshSourceOptions = {}): string | undefined {
  const parsed = parseIpv4Cidr(cidr, { example: "203.0.113.7/32" });
  if (!parsed.ok) return parsed.problem;
  const asked = options.minPrefixLength ?? DEFAULT_SSH_SOURCE_MIN_PREFIX;
  const minPrefixLength = Math.max(asked, SSH_SOURCE_PREFIX_FLOOR);
  if (options.allowSshFromAnywhere === true || parsed.range.prefixLength >= minPrefixLength) return undefined;
  const reach = parsed.range.prefixLength === 0 ? "the whole internet" : `${rangeSize(parsed.range)} addresses`;
  const limit =
    asked >= SSH_SOURCE_PREFIX_FLOOR
      ? `/${minPrefixLength} (sshSourceMinPrefix)`
      : `/${SSH_SOURCE_PREFIX_FLOOR}, the widest sshSourceMinPrefix can allow`;
  return (
    `${cidr} opens SSH to ${reach}, wider than ${limit}; use your own address ` +
    "(e.g. 203.0.113.7/32) or set allowSshFromAnywhere: true if that is really meant"
  );
}

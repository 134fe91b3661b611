/** Link rates as tc writes them ("1gbit", "500mbit") or "unlimited". Pure. */

const RATE_PATTERN = /^(\d+(?:\.\d+)?)(kbit|mbit|gbit)$/;
const GBIT_PER_UNIT: Record<string, number> = { kbit: 1e-6, mbit: 1e-3, gbit: 1 };

/** Gbit/s of a rate, or null for "unlimited"; undefined when the text is not a rate. */
export function bandwidthGbps(rate: string): number | null | undefined {
  if (rate === "unlimited") return null;
  const match = RATE_PATTERN.exec(rate);
  if (!match) return undefined;
  const value = Number(match[1]) * GBIT_PER_UNIT[match[2]!]!;
  return value > 0 ? value : undefined;
}

export const BANDWIDTH_HELP = 'a tc rate such as "1gbit", "10gbit", "500mbit", or "unlimited"';

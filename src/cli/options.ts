/** Parsers for command-line option values: they reject bad input before anything starts. */
import { InvalidArgumentError } from "commander";
import { BANDWIDTH_HELP, bandwidthGbps } from "../rules/bandwidth.ts";
import { UsageError } from "../util/errors.ts";
import { checkSafePath, checkSafeWorkerArg } from "../rules/safe-text.ts";
import { SMALLEST_CPU_QUOTA } from "../testbed/cpu-quota.ts";

export function parsePositiveInt(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError("expected a positive whole number.");
  return value;
}

/** A positive number (GiB, ...) written as digits with at most one point: no exponent, no sign. */
export function parsePositiveNumber(text: string): number {
  const value = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(value > 0))
    throw new InvalidArgumentError("expected a positive number such as 0.85 or 16.");
  return value;
}

/**
 * A CPU quota in cores: a number in steps of 0.01, at least the smallest quota the kernel takes
 * (src/rules/cpu-quota-limits.ts).
 */
export function parseCpuQuota(text: string): number {
  const value = Number(text);
  if (!/^\d+(\.\d{1,2})?$/.test(text) || !(value >= SMALLEST_CPU_QUOTA)) {
    throw new InvalidArgumentError(
      `expected a number of cores such as 0.5 or 2 (at least ${SMALLEST_CPU_QUOTA}, in steps of 0.01).`,
    );
  }
  return value;
}

export function parseBandwidth(text: string): string {
  if (bandwidthGbps(text) === undefined) throw new InvalidArgumentError(`expected ${BANDWIDTH_HELP}.`);
  return text;
}

/** A folder or file path given on the command line: it reaches Ansible and Docker, so the path rule applies. */
export function parseSafePath(text: string): string {
  const problem = checkSafePath(text);
  if (problem !== undefined) throw new InvalidArgumentError(`${problem}.`);
  return text;
}

/** Worker arguments after `--`: each must pass the worker-argument rule (exit 2 naming the first that fails). */
export function checkedWorkerArgs(args: readonly string[]): string[] {
  for (const arg of args) {
    const problem = checkSafeWorkerArg(arg);
    if (problem !== undefined) throw new UsageError(`worker argument ${JSON.stringify(arg)}: ${problem}`);
  }
  return [...args];
}

/** The most node counts `ringlab predict` draws a curve over. */
export const MOST_PREDICTED_NODES = 1024;

/** Node counts: "1..64" (every count in between), or "1,2,4,8"; each 1 to MOST_PREDICTED_NODES. */
export function parseNodeCounts(text: string): number[] {
  const range = /^(\d+)\.\.(\d+)$/.exec(text);
  const counts =
    range !== null
      ? Array.from({ length: Math.max(0, Number(range[2]) - Number(range[1]) + 1) }, (_, i) => Number(range[1]) + i)
      : /^\d+(,\d+)*$/.test(text)
        ? text.split(",").map(Number)
        : [];
  if (counts.length === 0 || counts.some((n) => n < 1 || n > MOST_PREDICTED_NODES)) {
    throw new InvalidArgumentError(
      `expected node counts such as 1..64 or 1,2,4,8, each from 1 to ${MOST_PREDICTED_NODES}.`,
    );
  }
  return [...new Set(counts)].sort((a, b) => a - b);
}

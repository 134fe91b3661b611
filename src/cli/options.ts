/** Parsers for command-line option values: they reject bad input before anything starts. */
import { InvalidArgumentError } from "commander";
import { BANDWIDTH_HELP, bandwidthGbps } from "../bandwidth.ts";

export function parsePositiveInt(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError("expected a positive whole number.");
  return value;
}

export function parseBandwidth(text: string): string {
  if (bandwidthGbps(text) === undefined) throw new InvalidArgumentError(`expected ${BANDWIDTH_HELP}.`);
  return text;
}

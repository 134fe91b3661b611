/**
 * The campaign file's building blocks that each testbed target's own section (./<name>/target.ts) and the schema
 * (src/config/schema.ts) share: a field that must pass one of the shared rules (src/rules/), and the fields every
 * testbed has. Pure; with the target table, below the schema, which reads the sections from it.
 */
import { z } from "zod";
import { checkResourceName } from "../rules/names.ts";
import { checkSafePath, checkTagKey, checkTagValue } from "../rules/safe-text.ts";

/** testbed.maxNodes when the file sets none (why there is one: its description below). */
export const DEFAULT_MAX_NODES = 10;

/** Text that must pass one of the shared rules; the rule's problem becomes the field's message. */
export function ruled(check: (value: string) => string | undefined): z.ZodString {
  return z.string().superRefine((value, ctx) => {
    const problem = check(value);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });
}

export const safePath = () => ruled(checkSafePath);
export const nodeCount = z.int().min(1);
export const tags = z.record(ruled(checkTagKey), ruled(checkTagValue));

/**
 * The fields of every target's testbed section; their descriptions are the campaign file's reference (`ringlab
 * schema`).
 */
export const testbedCommon = {
  name: ruled(checkResourceName).describe(
    "Used in resource names and tags: lower case letters, digits and dashes, at most 24 characters.",
  ),
  nodes: nodeCount.describe(
    "Nodes the testbed has, which every run draws on: at least the largest of campaign.matrix.nodes.",
  ),
  maxNodes: z
    .int()
    .min(1)
    .max(1000)
    .default(DEFAULT_MAX_NODES)
    .describe(
      "The most nodes the file may ask for: a guard against a typo that would start many paid machines; raise it deliberately.",
    ),
};

/** Where a cross-field rule reports a problem: the path below the section it checks, and the message. */
export type IssueAt = (path: readonly (string | number)[], message: string) => void;

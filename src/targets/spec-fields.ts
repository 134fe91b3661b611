/**
 * The fields of every target's stored testbed spec (src/testbed/spec.ts), shared by each target's own spec schema
 * (src/targets/). A leaf.
 */
import { z } from "zod";

export const TESTBED_SPEC_SCHEMA = "ringlab.testbed-spec/v1";

export const isoTime = z
  .string()
  .refine((text) => !Number.isNaN(Date.parse(text)), { error: "expected an ISO-8601 time" });

export const specCommon = {
  schema: z.literal(TESTBED_SPEC_SCHEMA),
  name: z.string().min(1),
  nodes: z.int().min(1),
  /** The campaign file's name without extension: the `ringlab:campaign` tag. */
  campaign: z.string().min(1),
  createdAt: isoTime,
  workerImage: z.string().min(1),
};

/** The common fields' values, from a testbed section and the inputs of `up`. */
export function commonSpecOf(
  testbed: { readonly name: string; readonly nodes: number; readonly workerImage: string },
  inputs: { readonly campaign: string; readonly createdAt: Date },
) {
  return {
    schema: TESTBED_SPEC_SCHEMA,
    name: testbed.name,
    nodes: testbed.nodes,
    campaign: inputs.campaign,
    createdAt: inputs.createdAt.toISOString(),
    workerImage: testbed.workerImage,
  } as const;
}

/** Shared builders for the stack tests: a valid AWS testbed, its spec, and the synthesized JSON of its stack. */
import { Testing } from "cdktf";
import { validateCampaign, type Testbed } from "../../src/config/schema.ts";
import { resolveTestbedSpec, type AwsTestbedSpec } from "../../src/testbed/spec.ts";
import { stackPropsFromSpec } from "../../stacks/from-spec.ts";
import { TestbedStack, type TestbedStackProps } from "../../stacks/testbed-stack.ts";

type AwsTestbed = Extract<Testbed, { target: "aws" }>;

export const PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ9d0nbH3kq9TestKeyOnlyForRinglabTests ringlab-test";
export const CREATED_AT = new Date("2025-03-01T10:00:00Z");

/** A testbed as loadCampaignFile returns it: schema defaults applied, the public key read. */
export function awsTestbed(fields: Record<string, unknown> = {}): AwsTestbed {
  const result = validateCampaign({
    testbed: {
      target: "aws",
      name: "tb",
      nodes: 2,
      adminCidr: "203.0.113.7/32",
      sshPublicKey: PUBLIC_KEY,
      sshPrivateKeyFile: "/k/ringlab",
      ...fields,
    },
  });
  if (!result.ok) throw new Error(`invalid test testbed: ${JSON.stringify(result.problems)}`);
  if (result.value.testbed.target !== "aws") throw new Error("expected an aws testbed");
  return result.value.testbed;
}

export interface StackFixture {
  readonly stack: TestbedStack;
  /** Testing.synth output: what toHaveResourceWithProperties takes. */
  readonly synthesized: string;
  readonly json: TerraformJson;
}

/** The spec `ringlab up` would store for such a testbed, in state folder /state/testbeds/tb. */
export function awsSpec(fields: Record<string, unknown> = {}): AwsTestbedSpec {
  const spec = resolveTestbedSpec(awsTestbed(fields), {
    campaign: "scaling",
    testbedDir: "/state/testbeds/tb",
    createdAt: CREATED_AT,
  });
  if (spec.target !== "aws") throw new Error("expected an aws spec");
  return spec;
}

export function synthTestbed(
  fields: Record<string, unknown> = {},
  props: Partial<TestbedStackProps> = {},
): StackFixture {
  const spec = awsSpec(fields);
  const stack = new TestbedStack(Testing.app(), `ringlab-${spec.name}`, { ...stackPropsFromSpec(spec), ...props });
  const synthesized = Testing.synth(stack);
  return { stack, synthesized, json: JSON.parse(synthesized) as TerraformJson };
}

export type Block = Record<string, any>;

export interface TerraformJson {
  readonly resource?: Record<string, Record<string, Block>>;
  readonly data?: Record<string, Record<string, Block>>;
  readonly output?: Record<string, { value: unknown; description?: string }>;
  readonly provider?: Record<string, Block[]>;
  readonly terraform?: Block;
}

/** The resources of one type, by logical id. */
export function resourcesOf(json: TerraformJson, type: string): Record<string, Block> {
  return json.resource?.[type] ?? {};
}

/** Parses a construct's Testing.synthScope output. */
export function parse(synthesized: string): TerraformJson {
  return JSON.parse(synthesized) as TerraformJson;
}

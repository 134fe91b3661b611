/**
 * The tags every ringlab resource carries, so a sweeper can find what a testbed left behind and when it may go.
 */

export interface TestbedTagsProps {
  /** The testbed's name (`ringlab:testbed`). */
  readonly testbedName: string;
  /** The campaign file's base name without extension (`ringlab:campaign`). */
  readonly campaignName: string;
  /** When the testbed may be removed, ISO-8601 UTC (`ringlab:expires-at`), e.g. 2025-03-01T18:00:00Z. */
  readonly expiresAt: string;
  /** The user's own tags; they may not use the reserved `ringlab:` and `aws:` prefixes. */
  readonly userTags?: Readonly<Record<string, string>>;
}

export const TAG_KEYS = {
  testbed: "ringlab:testbed",
  campaign: "ringlab:campaign",
  expiresAt: "ringlab:expires-at",
  role: "ringlab:role",
} as const;

const RESERVED_PREFIXES = ["ringlab:", "aws:"];

export function testbedTags(props: TestbedTagsProps): Record<string, string> {
  if (Number.isNaN(Date.parse(props.expiresAt)))
    throw new Error(`testbedTags: expiresAt "${props.expiresAt}" is not an ISO-8601 time`);
  const userTags = props.userTags ?? {};
  for (const key of Object.keys(userTags)) {
    const prefix = RESERVED_PREFIXES.find((p) => key.toLowerCase().startsWith(p));
    if (prefix) throw new Error(`tags: key "${key}" uses the reserved prefix "${prefix}"; choose another key`);
  }
  return {
    ...userTags,
    [TAG_KEYS.testbed]: props.testbedName,
    [TAG_KEYS.campaign]: props.campaignName,
    [TAG_KEYS.expiresAt]: props.expiresAt,
  };
}

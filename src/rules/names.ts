/**
 * Names ringlab gives to what it creates, and the rule for names a user chooses. Pure: every caller (schema,
 * constructs, local testbed plan, inventory, CLI) derives a name here, so no two places spell it differently.
 */
import { basename, extname } from "node:path";

/** Testbed names end up in AWS resource names (32-character limits with prefixes) and Docker names. */
export const RESOURCE_NAME_MAX_LENGTH = 24;
const RESOURCE_NAME_PATTERN = /^[a-z]([a-z0-9-]{0,22}[a-z0-9])?$/;
const RESOURCE_NAME_RULE = `expected 1-${RESOURCE_NAME_MAX_LENGTH} lower-case letters, digits or dashes, starting with a letter and not ending with a dash (it names resources)`;

/** A testbed name: `testbed.name` in the file, `--testbed` on the command line. */
export function checkResourceName(name: string): string | undefined {
  return RESOURCE_NAME_PATTERN.test(name) ? undefined : RESOURCE_NAME_RULE;
}

/** Campaign names are a results directory and an AWS tag value, never a resource name, so longer is fine. */
export const CAMPAIGN_NAME_MAX_LENGTH = 64;
const CAMPAIGN_NAME_PATTERN = /^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$/;

/** A campaign's name: its file name without the extension. */
export function campaignNameOf(sourceFile: string): string {
  return basename(sourceFile, extname(sourceFile));
}

export function checkCampaignName(name: string): string | undefined {
  return CAMPAIGN_NAME_PATTERN.test(name)
    ? undefined
    : `expected 1-${CAMPAIGN_NAME_MAX_LENGTH} lower-case letters, digits or dashes, not starting or ending with a dash`;
}

/** Inventory name and hostname of a node. */
export function nodeName(testbed: string, rank: number): string {
  return `${testbed}-node-${rank}`;
}

/** The Docker container of a local testbed's node. */
export function nodeContainerName(testbed: string, rank: number): string {
  return `ringlab-${nodeName(testbed, rank)}`;
}

/** The cdktf stack of an AWS testbed; the outputs file is keyed by it. Also the local testbed's Docker network. */
export function stackName(testbed: string): string {
  return `ringlab-${testbed}`;
}

/**
 * The cdktf app (cdktf.json: "npx tsx stacks/main.ts"): synthesizes the stack `ringlab-<testbed name>` for the
 * AWS campaign file named by RINGLAB_CONFIG.
 *
 * RINGLAB_CREATED_AT (optional, ISO-8601) fixes the creation time behind the `ringlab:expires-at` tag, so that
 * synthesizing again for an existing testbed (deploy, destroy) does not move the tag; default: now.
 */
import { basename, extname } from "node:path";
import { App } from "cdktf";
import { loadCampaignFile } from "../src/config/load.ts";
import { ConfigError, EXIT, RinglabError, UsageError } from "../src/errors.ts";
import { TestbedStack } from "./testbed-stack.ts";

function main(): void {
  const configPath = process.env.RINGLAB_CONFIG;
  if (configPath === undefined || configPath.trim() === "") {
    throw new UsageError(
      "RINGLAB_CONFIG is not set; expected the path of an AWS campaign file, " +
        "e.g. RINGLAB_CONFIG=campaigns/aws-example.yaml npx cdktf synth",
    );
  }
  const campaign = loadCampaignFile(configPath);
  const testbed = campaign.testbed;
  if (testbed.target !== "aws") {
    throw new ConfigError(configPath, [{
      path: "testbed.target",
      message: `found "${testbed.target}", expected "aws": only AWS testbeds have a cdktf stack`,
    }]);
  }
  const props = {
    testbed,
    campaignName: basename(campaign.sourceFile, extname(campaign.sourceFile)),
    createdAt: createdAt(process.env.RINGLAB_CREATED_AT),
  };
  // The App creates its output directory: only once the input is known to be good.
  const app = new App();
  new TestbedStack(app, `ringlab-${testbed.name}`, props);
  app.synth();
}

function createdAt(text: string | undefined): Date {
  if (text === undefined || text === "") return new Date();
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) {
    throw new UsageError(`RINGLAB_CREATED_AT is "${text}"; expected an ISO-8601 time such as 2025-03-01T10:00:00Z`);
  }
  return date;
}

try {
  main();
} catch (error) {
  // Errors about the input are the user's to fix: their message is enough, a stack trace would bury it.
  const message = error instanceof Error ? error.message : String(error);
  console.error(`ringlab: cannot synthesize the testbed stack:\n${message}`);
  if (error instanceof RinglabError && error.hint) console.error(error.hint);
  process.exit(error instanceof RinglabError ? error.exitCode : EXIT.unexpected);
}

/** `ringlab plan <file>`: the runs a campaign expands to, in order, and what they will cost in time and money. */
import { availableParallelism } from "node:os";
import type { Command } from "commander";
import { estimateCampaign, type CampaignEstimate } from "../../campaign/estimate.ts";
import { campaignName, planCampaign, reshapeCount, type CampaignPlan } from "../../campaign/plan.ts";
import { loadCampaignFile, type Campaign } from "../../config/load.ts";
import { formatDuration, formatTable } from "../format.ts";
import type { CommandHost } from "../program.ts";

export function registerPlan(program: Command, host: CommandHost): void {
  program.command("plan")
    .description("print the runs a campaign file expands to, their order, and the estimated duration (and cost on AWS)")
    .argument("<campaign>", "campaign YAML file")
    .action(host.action((file: string) => {
      const campaign = loadCampaignFile(file, { readKeys: false });
      const plan = planCampaign(campaign, campaignName(campaign.sourceFile));
      const estimate = estimateCampaign(plan, campaign, { localCores: availableParallelism() });
      process.stdout.write(formatRuns(plan));
      process.stdout.write(`\n${formatSummary(plan, campaign, estimate)}\n`);
    }));
}

function formatRuns(plan: CampaignPlan): string {
  return formatTable(["#", "run", "job", "nodes", "bandwidth", "model", "batch"], plan.runs.map((run, index) => [
    String(index + 1), run.id, run.job, String(run.nodes), run.bandwidth ?? "-", run.model ?? "-", run.batchSize === undefined ? "-" : String(run.batchSize),
  ]));
}

function formatSummary(plan: CampaignPlan, campaign: Campaign, estimate: CampaignEstimate): string {
  const lines = [
    `${plan.runs.length} runs on ${plan.nodesToProvision} ${campaign.testbed.target} nodes; links reshaped ${reshapeCount(plan.runs)} times`,
    ...(plan.largestRunNodes < plan.nodesToProvision
      ? [`note: no run uses more than ${plan.largestRunNodes} nodes; testbed.nodes: ${plan.largestRunNodes} would leave none idle`]
      : []),
    `estimated duration: ${formatDuration(estimate.seconds)} (rough: see src/campaign/estimate.ts)`,
  ];
  if (estimate.instanceHours !== undefined) {
    lines.push(estimate.costUsd === undefined
      ? `estimated ${estimate.instanceHours.toFixed(1)} instance-hours; no list price known for this instance type`
      : `estimated cost: $${estimate.costUsd.toFixed(2)} (${estimate.instanceHours.toFixed(1)} instance-hours at $${estimate.hourlyPriceUsd} on demand${campaign.testbed.target === "aws" && campaign.testbed.spot ? "; spot is usually cheaper" : ""})`);
  }
  return lines.join("\n");
}

/** `ringlab campaign <file>`: the whole campaign, from up to down, resuming if rerun. */
import type { Command } from "commander";
import { runCampaign, type CampaignOutcome } from "../../campaign/execute.ts";
import { loadCampaignFile } from "../../config/load.ts";
import { EXIT } from "../../errors.ts";
import type { CommandHost } from "../program.ts";

export function registerCampaign(program: Command, host: CommandHost): void {
  program.command("campaign")
    .description("run a whole campaign: up, configure, every run of the matrix, results, report, down (resumes if rerun)")
    .argument("<campaign>", "campaign YAML file (see campaigns/)")
    .option("--keep", "keep the testbed afterwards (default: the file's `keep`, normally false)")
    .option("--results <dir>", "results directory (default: the file's campaign.resultsDir, else results/<campaign file name>)")
    .action(host.action(async (file: string, options: { keep?: boolean; results?: string }, command: Command) => {
      const campaign = loadCampaignFile(file);
      const ctx = host.contextFor(command, "campaign");
      const outcome = await runCampaign(ctx, campaign, {
        ...(options.keep === undefined ? {} : { keep: options.keep }),
        ...(options.results === undefined ? {} : { resultsDir: options.results }),
      });
      ctx.reporter.info(formatOutcome(outcome));
      if (outcome.teardown === "failed") return EXIT.toolFailed;
      if (outcome.failed > 0) return EXIT.runsFailed;
    }));
}

function formatOutcome(outcome: CampaignOutcome): string {
  const overhead = outcome.wallSeconds > 0 ? 100 * (1 - outcome.benchmarkSeconds / outcome.wallSeconds) : 0;
  return [
    `campaign finished: ${outcome.ok} ok, ${outcome.failed} failed, ${outcome.skipped} already done (of ${outcome.planned})`,
    `time: ${outcome.wallSeconds.toFixed(0)} s, of which ${outcome.benchmarkSeconds.toFixed(0)} s inside benchmark jobs (overhead ${overhead.toFixed(0)} %)`,
    `testbed: ${outcome.teardown === "done" ? "torn down" : outcome.teardown}`,
    `results: ${outcome.resultsDir} (report.html, report.md, runs.jsonl, summary.csv)`,
  ].join("\n");
}

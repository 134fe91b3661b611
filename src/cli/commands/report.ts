/** `ringlab report <dir>`: rewrite a results directory's report from its records. */
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { writeReport } from "../../report/index.ts";
import { ResultsStore } from "../../results/store.ts";
import { UsageError } from "../../util/errors.ts";
import { resultsFolderProblem } from "../../util/fs.ts";
import type { CommandHost } from "../host.ts";

export function registerReport(program: Command, host: CommandHost): void {
  program
    .command("report")
    .description("(re)write report.html and report.md of a results directory")
    .argument("<results-dir>", "e.g. results/local-smoke")
    .action(
      host.action(async (dir: string, _options: unknown, command: Command) => {
        const ctx = host.contextFor(command, "report");
        const resultsDir = resolve(dir);
        const problem = resultsFolderProblem(resultsDir);
        if (problem !== undefined)
          throw new UsageError(`results folder ${resultsDir}: ${problem}`, {
            hint: "copy it into a folder only you can write, and report there",
          });
        // A record file that cannot be read is named and left out, in the output and in the report itself.
        const leftOut: string[] = [];
        const store = ResultsStore.open(resultsDir, (message) => {
          leftOut.push(message);
          ctx.reporter.warn(message);
        });
        await ctx.reporter.step(`write the report of ${dir}`, () =>
          writeReport(resultsDir, store.records(), { leftOut }),
        );
        ctx.reporter.info(`wrote ${join(resultsDir, "report.html")} and report.md`);
      }),
    );
}

/** `ringlab report <dir>`: rewrite a results directory's report from its records. */
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { writeReport } from "../../report/index.ts";
import type { CommandHost } from "../program.ts";

export function registerReport(program: Command, host: CommandHost): void {
  program.command("report")
    .description("(re)write report.html and report.md of a results directory")
    .argument("<results-dir>", "e.g. results/local-smoke")
    .action(host.action(async (dir: string, _options: unknown, command: Command) => {
      const ctx = host.contextFor(command, "report");
      const resultsDir = resolve(dir);
      await ctx.reporter.step(`write the report of ${dir}`, () => writeReport(resultsDir));
      ctx.reporter.info(`wrote ${join(resultsDir, "report.html")} and report.md`);
    }));
}

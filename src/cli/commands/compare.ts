/**
 * `ringlab compare <A> <B>`: two campaigns' results side by side, with the ratio B / A and whether it is beyond the
 * noise.
 */
import { basename, join, resolve } from "node:path";
import type { Command } from "commander";
import { UsageError } from "../../util/errors.ts";
import { compareResults } from "../../report/compare.ts";
import { renderComparisonHtml, renderComparisonMarkdown } from "../../report/compare-render.ts";
import type { RunRecord } from "../../results/record.ts";
import { ResultsStore, type Warn } from "../../results/store.ts";
import { writeFileAtomic, writableDirProblem } from "../../util/fs.ts";
import { parseSafePath } from "../options.ts";
import type { CommandHost } from "../host.ts";

export function registerCompare(program: Command, host: CommandHost): void {
  program
    .command("compare")
    .description(
      "compare two results directories configuration by configuration (B / A with a 95% interval) into an HTML page and its markdown",
    )
    .argument("<results-a>", "the reference, e.g. results/before")
    .argument("<results-b>", "compared with A, e.g. results/after")
    .option(
      "--out <file>",
      "the HTML page; the markdown goes beside it as .md (default: <results-b>/compare-<name of A>.html)",
      parseSafePath,
    )
    .action(
      host.action((dirA: string, dirB: string, options: { out?: string }, command: Command) => {
        const ctx = host.contextFor(command, "compare");
        const warn: Warn = (message) => ctx.reporter.warn(message);
        const a = { name: basename(resolve(dirA)), records: recordsOf(dirA, warn) };
        const b = { name: basename(resolve(dirB)), records: recordsOf(dirB, warn) };
        const html = resolve(options.out ?? join(dirB, `compare-${a.name}.html`));
        const markdown = html.replace(/\.html?$/i, "") + ".md";
        const problem = writableDirProblem(resolve(html, ".."));
        if (problem !== undefined)
          throw new UsageError(`--out ${html}: ${problem}`, {
            hint: "pick a file in a folder you can write with --out FILE",
          });
        const comparison = compareResults(a, b);
        writeFileAtomic(html, renderComparisonHtml(comparison, new Date()));
        writeFileAtomic(markdown, renderComparisonMarkdown(comparison));
        const beyond = comparison.matched.filter((row) => row.beyondNoise === true).length;
        ctx.reporter.info(
          `${comparison.matched.length} configurations on both sides (${beyond} beyond the noise), ` +
            `${comparison.onlyInA.length} only in A, ${comparison.onlyInB.length} only in B; wrote ${html} and ${markdown}`,
        );
      }),
    );
}

/** A side's records; a folder without any is bad input, named, since a comparison against nothing says nothing. */
function recordsOf(dir: string, warn: Warn): readonly RunRecord[] {
  const store = ResultsStore.open(resolve(dir), warn);
  if (store.records().length === 0) {
    throw new UsageError(`no run records in ${store.paths.runsDir}: nothing to compare in results directory ${dir}`, {
      hint: "pass the results directories of two campaigns that have run (results/<campaign>)",
    });
  }
  return store.records();
}

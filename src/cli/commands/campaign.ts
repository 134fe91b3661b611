/** `ringlab campaign <file>`: the whole campaign, from up to down, resuming if rerun. */
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { Option, type Command } from "commander";
import { resultsDirFor, runCampaign, type CampaignOutcome } from "../../campaign/execute.ts";
import { loadAnyCampaignFile, type AnyLoadedCampaignFile } from "../../config/load.ts";
import type { Context } from "../../context/context.ts";
import { EXIT, UsageError } from "../../util/errors.ts";
import { reportData } from "../../analysis/data.ts";
import { defaultCalibrationFile, loadCalibration } from "../../predict/store.ts";
import { flagTally, reportFlags, type Flag } from "../../report/suspect-figures.ts";
import { ResultsStore } from "../../results/store.ts";
import { UNSTEADY_SHIFT } from "../../results/steadiness.ts";
import { gapOf, targetOf, type Target } from "../../targets/index.ts";
import { resolveCpuQuota } from "../../testbed/cpu-quota.ts";
import { DEFAULT_BUSY_THRESHOLD } from "../../testbed/host-load.ts";
import { resultsLockFile, withLock } from "../../testbed/lock.ts";
import { withTestbedLock } from "../../testbed/testbed.ts";
import { resultsFolderProblem } from "../../util/fs.ts";
import { parseSafePath } from "../options.ts";
import type { CommandHost } from "../host.ts";

export function registerCampaign(program: Command, host: CommandHost): void {
  program
    .command("campaign")
    .description(
      "run a whole campaign: up, configure, every run of the matrix, results, report, down (resumes if rerun)",
    )
    .argument(
      "<campaign>",
      "campaign YAML file (see campaigns/); on a Kubernetes cluster (testbed.target: kubernetes) each run is a Job there",
    )
    .option("--keep", "keep the testbed afterwards (default: the file's `keep`, normally false)")
    .option(
      "--results <dir>",
      "results directory (default: the file's campaign.resultsDir, else results/<campaign file name>)",
      parseSafePath,
    )
    .option(
      "--rerun-flagged",
      'also run again the runs of earlier invocations whose measurement was disturbed (flagged "machine busy" or "unsteady run" in the report)',
    )
    .option(
      "--no-rerun-disturbed",
      `local testbed: do not run again, at the end, the runs during which other work took more than ${percentOf(DEFAULT_BUSY_THRESHOLD)} ` +
        `of the machine or whose steps changed speed by more than ${percentOf(UNSTEADY_SHIFT)} (default: once; not when more than a quarter changed speed, a warm-up too short)`,
    )
    .addOption(
      new Option(
        "--no-rerun-busy",
        "the same as --no-rerun-disturbed (its name before unsteady runs were rerun too)",
      ).hideHelp(),
    )
    .option(
      "--calibration <file-or-results-dir>",
      "predict every training run before it runs and save it for the report to score " +
        "(default: <state-dir>/calibration.json when there is one; see `ringlab calibrate`)",
      parseSafePath,
    )
    .action(
      host.action(async (file: string, options: CampaignCliOptions, command: Command) => {
        const campaign = loadAnyCampaignFile(file);
        const target = targetOf(campaign.testbed);
        const machineCores = availableParallelism();
        // A quota the machine cannot give is bad input: refused (exit 2) before the testbed is touched.
        resolveCpuQuota(campaign, machineCores);
        const ctx = host.contextFor(command, "campaign");
        warnIgnored(ctx, target, options);
        // Read before anything starts: a corrupt calibration is bad input (exit 2), not a surprise after the testbed is
        // up.
        const calibrationFile = options.calibration ?? defaultCalibrationFile(ctx.stateDir);
        const predicts = gapOf(target, "predictions") === undefined;
        const calibration =
          predicts && (options.calibration !== undefined || existsSync(calibrationFile))
            ? {
                calibration: loadCalibration(calibrationFile, (message) => ctx.reporter.warn(message)),
                from: resolve(calibrationFile),
              }
            : undefined;
        return lockedCampaign(ctx, campaign, options.results, (resultsDir) =>
          runCampaign(ctx, campaign, {
            resultsDir,
            machineCores,
            ...rerunChoices(options),
            ...(calibration === undefined ? {} : { calibration }),
            ...(options.keep === undefined ? {} : { keep: options.keep }),
          }),
        );
      }),
    );
}

/** What commander gives the campaign command's action. */
export interface CampaignCliOptions {
  readonly keep?: boolean;
  readonly results?: string;
  readonly rerunFlagged?: boolean;
  /** false with --no-rerun-disturbed, or with its older name --no-rerun-busy (rerunBusy). */
  readonly rerunDisturbed: boolean;
  readonly rerunBusy: boolean;
  readonly calibration?: string;
}

/**
 * The reruns a campaign does: disturbed runs of this invocation unless either --no-rerun-* says not, and with
 * --rerun-flagged those of earlier ones.
 */
export function rerunChoices(options: Pick<CampaignCliOptions, "rerunFlagged" | "rerunDisturbed" | "rerunBusy">): {
  rerunDisturbed: boolean;
  redoDisturbed: boolean;
} {
  return { rerunDisturbed: options.rerunDisturbed && options.rerunBusy, redoDisturbed: options.rerunFlagged === true };
}

function percentOf(share: number): string {
  return `${Math.round(share * 100)} %`;
}

/**
 * Runs a campaign holding its testbed's and its results folder's locks (a second campaign on either would remove
 * the first one's workers or mix its records), then says how it went; returns the exit code.
 */
async function lockedCampaign(
  ctx: Context,
  campaign: AnyLoadedCampaignFile,
  results: string | undefined,
  run: (resultsDir: string) => Promise<CampaignOutcome>,
): Promise<number> {
  const resultsDir = resultsDirFor(campaign, results);
  const problem = resultsFolderProblem(resultsDir);
  if (problem !== undefined)
    throw new UsageError(`results folder ${resultsDir}: ${problem}`, {
      hint: "pick a folder only you can write with --results DIR",
    });
  const outcome = await withTestbedLock(ctx, campaign.testbed.name, () =>
    withLock(
      resultsLockFile(resultsDir),
      `results folder ${resultsDir}`,
      (m) => ctx.reporter.warn(m),
      () => run(resultsDir),
    ),
  );
  ctx.reporter.info(formatOutcome(outcome, flagsOf(outcome.resultsDir)));
  return exitCodeOf(outcome);
}

/**
 * The options the campaign's target cannot serve (a Kubernetes campaign's runs' objects are always deleted), each said
 * with why.
 */
function warnIgnored(ctx: Context, target: Target, options: Pick<CampaignCliOptions, "keep" | "calibration">): void {
  const ignored = [
    ...(options.keep === true ? [{ option: "--keep", why: gapOf(target, "keep") }] : []),
    ...(options.calibration !== undefined ? [{ option: "--calibration", why: gapOf(target, "predictions") }] : []),
  ];
  for (const { option, why } of ignored)
    if (why !== undefined) ctx.reporter.warn(`${option}: a ${target.title} campaign ignores it (${why})`);
}

/** 4 when teardown failed, 5 when a run's latest record is not ok (a disturbed run's rerun included), else 0. */
export function exitCodeOf(outcome: CampaignOutcome): number {
  if (outcome.teardown === "failed") return EXIT.toolFailed;
  if (outcome.failed > 0 || outcome.notRun > 0 || outcome.rerun.failed > 0) return EXIT.runsFailed;
  return EXIT.ok;
}

/**
 * The report's flags, from the records the campaign left in the results folder (the report was drawn from the
 * same). A record file that cannot be read was named while the campaign ran, so it is left out quietly here.
 */
function flagsOf(resultsDir: string): Flag[] {
  const records = ResultsStore.open(resultsDir, () => {}).records();
  return reportFlags(reportData(records), records);
}

/**
 * The campaign's closing lines. Its time is split three ways, so that a first campaign's image builds (or a cloud
 * deploy) do not read as overhead of every run. The report's flags are counted by kind, so that nobody quotes a
 * flagged number without having seen the flag; nothing is said when there are none.
 */
export function formatOutcome(outcome: CampaignOutcome, flags: readonly Pick<Flag, "kind">[]): string {
  const share = (seconds: number) =>
    `${outcome.wallSeconds > 0 ? ((100 * seconds) / outcome.wallSeconds).toFixed(0) : 0} %`;
  const rest = Math.max(0, outcome.wallSeconds - outcome.benchmarkSeconds - outcome.upSeconds);
  return [
    `campaign finished: ${outcome.ok} ok, ${outcome.failed} failed, ${outcome.alreadyDone} already done` +
      `${outcome.notRun > 0 ? `, ${outcome.notRun} not run (a node was lost; rerun to do them)` : ""} (of ${outcome.planned})`,
    ...(outcome.rerun.runs === 0
      ? []
      : [
          `${outcome.rerun.runs} run${outcome.rerun.runs === 1 ? "" : "s"} done again because ${outcome.rerun.runs === 1 ? "its" : "their"} measurement was disturbed (machine busy or unsteady run` +
            `${outcome.rerun.stillDisturbed > 0 ? `; ${outcome.rerun.stillDisturbed} disturbed again: find what else runs on this machine, see report.md's Flags` : ""})` +
            `${outcome.rerun.failed > 0 ? `; ${outcome.rerun.failed} of them failed or could not run this time, and that record is now the run's: rerun the campaign to do ${outcome.rerun.failed === 1 ? "it" : "them"}` : ""}`,
        ]),
    ...(flags.length === 0 ? [] : [`${flags.length} flagged: ${flagTally(flags)} (see report.md, Flags)`]),
    `time: ${outcome.wallSeconds.toFixed(0)} s`,
    `  ${outcome.benchmarkSeconds.toFixed(0)} s inside benchmark jobs (${share(outcome.benchmarkSeconds)})`,
    `  ${outcome.upSeconds.toFixed(0)} s bringing the testbed up (${share(outcome.upSeconds)}; image builds or the cloud deploy included)`,
    `  ${rest.toFixed(0)} s the rest of the orchestration (${share(rest)}: configure, shaping, starting and collecting runs, teardown)`,
    `testbed: ${outcome.teardown === "done" ? "torn down" : outcome.teardown}`,
    `results: ${outcome.resultsDir} (report.html, report.md, runs.jsonl, summary.csv)`,
  ].join("\n");
}

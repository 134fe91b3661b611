/**
 * The CLI entry: wires commands to the testbed and campaign modules, and is the only place that turns errors
 * into messages and exit codes.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { BANDWIDTH_HELP, bandwidthGbps } from "../bandwidth.ts";
import { loadCampaignFile } from "../config/load.ts";
import type { Context } from "../context.ts";
import { EXIT, RinglabError, ToolError, UsageError } from "../errors.ts";
import { ConsoleReporter } from "../reporter.ts";
import { logsDir } from "../testbed/paths.ts";
import { currentTestbedName, loadRecord, requireRecord } from "../testbed/record.ts";
import { configure, down, downAllLocal, status, up } from "../testbed/testbed.ts";
import { JOBS, runOnce, type Job } from "../runner.ts";
import { runCampaign } from "../campaign/execute.ts";
import { campaignName, planCampaign, reshapeCount } from "../campaign/plan.ts";
import { estimateCampaign } from "../campaign/estimate.ts";
import { writeReport } from "../report/index.ts";
import { awsInventory, renderInventory } from "../inventory.ts";
import { writeFileAtomic } from "../util/fs.ts";

const REPO_DIR = fileURLToPath(new URL("../..", import.meta.url));

interface GlobalOptions {
  readonly stateDir: string;
  readonly verbose: boolean;
}

export async function main(argv: readonly string[]): Promise<number> {
  const interruption = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (interruption.signal.aborted) {
      process.stderr.write(`\n${signal} again: exiting now; run \`ringlab down <testbed name or campaign file>\` to remove what is left\n`);
      process.exit(EXIT.interrupted);
    }
    process.stderr.write(`\n${signal}: stopping; cleaning up (press Ctrl-C again to exit at once)\n`);
    interruption.abort(signal);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  let logFile: string | undefined;
  const contextFor = (command: Command, verb: string): Context => {
    const global = command.optsWithGlobals() as GlobalOptions;
    const stateDir = resolve(global.stateDir);
    logFile = join(logsDir(stateDir), `${new Date().toISOString().replace(/[:.]/g, "-")}-${verb}.log`);
    mkdirSync(logsDir(stateDir), { recursive: true });
    return { repoDir: REPO_DIR, stateDir, reporter: new ConsoleReporter(global.verbose), logFile, signal: interruption.signal };
  };

  const program = buildProgram(contextFor);
  try {
    await program.parseAsync(argv);
    return interruption.signal.aborted ? EXIT.interrupted : (program.getOptionValue("exitCode") as number | undefined) ?? EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.badInput;
    if (interruption.signal.aborted) {
      process.stderr.write("interrupted\n");
      return EXIT.interrupted;
    }
    return reportError(error, logFile);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

function reportError(error: unknown, logFile: string | undefined): number {
  if (error instanceof RinglabError) {
    process.stderr.write(`error: ${error.message}\n`);
    if (error instanceof ToolError && error.details.outputTail) {
      process.stderr.write(`${error.details.outputTail.split("\n").slice(-15).map((line) => `  | ${line}`).join("\n")}\n`);
    }
    if (error.hint !== undefined) process.stderr.write(`hint: ${error.hint}\n`);
    if (logFile !== undefined && existsSync(logFile)) process.stderr.write(`full log: ${logFile}\n`);
    return error.exitCode;
  }
  process.stderr.write(`error: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  if (logFile !== undefined && existsSync(logFile)) process.stderr.write(`full log: ${logFile}\n`);
  return EXIT.unexpected;
}

type ContextFactory = (command: Command, verb: string) => Context;

function buildProgram(contextFor: ContextFactory): Command {
  const program = new Command("ringlab")
    .description("Measure how distributed training scales across nodes and networks: up, configure, run, report, down.")
    .option("--state-dir <dir>", "where testbed state and logs are kept", process.env["RINGLAB_STATE_DIR"] ?? ".ringlab")
    .option("-v, --verbose", "show the output of docker, ansible and cdktf as it happens (always kept in the log file)", false)
    .exitOverride()
    .showHelpAfterError("(run with --help for usage)")
    .addHelpText("after", `
Exit codes: 0 ok; 1 an unexpected error (a bug: please report it with the log); 2 bad input (nothing was
started); 3 a missing prerequisite (Docker, Ansible, terraform); 4 a tool failed, a node does not answer
(status) or teardown failed; 5 a run failed (run) or some runs failed (campaign); 130 interrupted.

Typical session:
  ringlab up campaigns/local-smoke.yaml
  ringlab configure
  ringlab run --nodes 2 --bandwidth 1gbit --job allreduce
  ringlab down`);

  program.command("campaign")
    .description("run a whole campaign: up, configure, every run of the matrix, results, report, down (resumes if rerun)")
    .argument("<campaign>", "campaign YAML file (see campaigns/)")
    .option("--keep", "keep the testbed afterwards (default: the file's `keep`, normally false)")
    .option("--results <dir>", "results directory (default: the file's campaign.resultsDir, else results/<campaign file name>)")
    .action(async (file: string, options: { keep?: boolean; results?: string }, command: Command) => {
      const campaign = loadCampaignFile(file);
      const ctx = contextFor(command, "campaign");
      const outcome = await runCampaign(ctx, campaign, {
        ...(options.keep === undefined ? {} : { keep: options.keep }),
        ...(options.results === undefined ? {} : { resultsDir: options.results }),
      });
      const overhead = outcome.wallSeconds > 0 ? 100 * (1 - outcome.benchmarkSeconds / outcome.wallSeconds) : 0;
      ctx.reporter.info([
        `campaign finished: ${outcome.ok} ok, ${outcome.failed} failed, ${outcome.skipped} already done (of ${outcome.planned})`,
        `time: ${outcome.wallSeconds.toFixed(0)} s, of which ${outcome.benchmarkSeconds.toFixed(0)} s inside benchmark jobs (overhead ${overhead.toFixed(0)} %)`,
        `testbed: ${outcome.teardown === "done" ? "torn down" : outcome.teardown}`,
        `results: ${outcome.resultsDir} (report.html, report.md, runs.jsonl, summary.csv)`,
      ].join("\n"));
      if (outcome.teardown === "failed") program.setOptionValue("exitCode", EXIT.toolFailed);
      else if (outcome.failed > 0) program.setOptionValue("exitCode", EXIT.runsFailed);
    });

  program.command("plan")
    .description("print the runs a campaign file expands to, their order, and the estimated duration (and cost on AWS)")
    .argument("<campaign>", "campaign YAML file")
    .action((file: string) => {
      const campaign = loadCampaignFile(file, { readKeys: false });
      const plan = planCampaign(campaign, campaignName(campaign.sourceFile));
      const estimate = estimateCampaign(plan, campaign, { localCores: availableParallelism() });
      process.stdout.write(formatTable(["#", "run", "job", "nodes", "bandwidth", "model", "batch"], plan.runs.map((run, index) => [
        String(index + 1), run.id, run.job, String(run.nodes), run.bandwidth ?? "-", run.model ?? "-", run.batchSize === undefined ? "-" : String(run.batchSize),
      ])));
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
      process.stdout.write(`\n${lines.join("\n")}\n`);
    });

  program.command("report")
    .description("(re)write report.html and report.md of a results directory")
    .argument("<results-dir>", "e.g. results/local-smoke")
    .action(async (dir: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command, "report");
      await ctx.reporter.step(`write the report of ${dir}`, () => writeReport(resolve(dir)));
      ctx.reporter.info(`wrote ${join(resolve(dir), "report.html")} and report.md`);
    });

  program.command("up")
    .description("create the testbed a campaign file describes (local: node containers; aws: cdktf deploy) and remember it")
    .argument("<campaign>", "campaign YAML file")
    .action(async (file: string, _options: unknown, command: Command) => {
      const campaign = loadCampaignFile(file);
      const ctx = contextFor(command, "up");
      const record = await up(ctx, campaign);
      ctx.reporter.info(`testbed ${record.name} is up: ${record.nodes.length} ${record.target} nodes; inventory ${record.inventory}`);
      ctx.reporter.info("next: ringlab configure");
    });

  program.command("configure")
    .description("make every node ready (ansible/site.yml): hosts, SSH trust, GPU driver, shared storage, Docker, worker image, no leftover workers")
    .option("--testbed <name>", "testbed to act on (default: the last one brought up)")
    .action(async (options: { testbed?: string }, command: Command) => {
      const ctx = contextFor(command, "configure");
      const record = requireRecord(ctx.stateDir, options.testbed);
      const result = await configure(ctx, record);
      ctx.reporter.info(result.changed === 0
        ? `configured ${record.nodes.length} nodes: no changes (already configured)`
        : `configured ${record.nodes.length} nodes: ${result.changed} changes`);
    });

  program.command("run")
    .description("run one benchmark job on the first N nodes at a link bandwidth, and print its result")
    .option("--testbed <name>", "testbed to act on (default: the last one brought up)")
    .requiredOption("--nodes <n>", "how many nodes take part (the first N by rank)", parsePositiveInt)
    .option("--bandwidth <rate>", `egress limit on every node's cluster link: ${BANDWIDTH_HELP}`, parseBandwidth, "unlimited")
    .addOption(new Option("--job <job>", "train: data-parallel training; allreduce: bandwidth probe").choices(JOBS).default("allreduce"))
    .option("--timeout <seconds>", "give up on the run after this long", parsePositiveInt, 600)
    .option("--out <dir>", "where the run's result and logs go", "results/adhoc")
    .argument("[worker-args...]", "passed to the worker after `--`, e.g. -- --model tiny --batch-size 32 (see docker/worker/README.md)")
    .action(async (workerArgs: string[], options: { testbed?: string; nodes: number; bandwidth: string; job: string; timeout: number; out: string }, command: Command) => {
      const ctx = contextFor(command, "run");
      const record = requireRecord(ctx.stateDir, options.testbed);
      if (options.nodes > record.nodes.length) {
        throw new UsageError(`--nodes ${options.nodes} is more than testbed ${record.name} has (${record.nodes.length})`);
      }
      const outcome = await runOnce(ctx, record, {
        nodes: options.nodes,
        bandwidth: options.bandwidth,
        job: options.job as Job,
        workerArgs,
        timeoutSeconds: options.timeout,
        outDir: resolve(options.out),
      });
      process.stdout.write(`${outcome.summary}\n`);
      if (outcome.status !== "ok") program.setOptionValue("exitCode", EXIT.runsFailed);
    });

  program.command("inventory")
    .description("write the Ansible inventory of an AWS testbed deployed with `cdktf deploy`, from `cdktf output --outputs-file` JSON")
    .argument("<campaign>", "the AWS campaign file the stack was deployed from")
    .requiredOption("--outputs <file>", "the JSON written by `npx cdktf output --outputs-file <file>`")
    .option("-o, --out <file>", "where to write the inventory", "inventory.yml")
    .action((file: string, options: { outputs: string; out: string }) => {
      const campaign = loadCampaignFile(file, { readKeys: false });
      if (campaign.testbed.target !== "aws") {
        throw new UsageError(`${file} describes a ${campaign.testbed.target} testbed; \`ringlab up\` writes its inventory itself`);
      }
      let outputs: unknown;
      try {
        outputs = JSON.parse(readFileSync(options.outputs, "utf8"));
      } catch (error) {
        throw new UsageError(`cannot read ${options.outputs}: ${(error as Error).message}`, { hint: "write it with: npx cdktf output --outputs-file <file>" });
      }
      const knownHosts = join(dirname(resolve(options.out)), "known_hosts");
      let inventory;
      try {
        inventory = awsInventory(outputs, campaign.testbed, knownHosts);
      } catch (error) {
        throw new UsageError(`${options.outputs}: ${(error as Error).message}`);
      }
      writeFileAtomic(resolve(options.out), renderInventory(inventory));
      process.stderr.write(`wrote ${options.out}: ${Object.keys(inventory.all.children.workers.hosts).length + 1} nodes; next: ANSIBLE_CONFIG=ansible/ansible.cfg ansible-playbook -i ${options.out} ansible/site.yml\n`);
    });

  program.command("status")
    .description("show the current testbed's nodes and whether they answer over SSH")
    .option("--testbed <name>", "testbed to show (default: the last one brought up)")
    .action(async (options: { testbed?: string }, command: Command) => {
      const ctx = contextFor(command, "status");
      const record = requireRecord(ctx.stateDir, options.testbed);
      const nodes = await status(ctx, record);
      process.stdout.write(`testbed ${record.name} (${record.target}), created ${record.createdAt}, inventory ${record.inventory}\n`);
      process.stdout.write(formatTable(["node", "rank", "address", ...(record.target === "local" ? ["container"] : []), "ssh"],
        nodes.map((n) => [n.name, String(n.rank), n.address, ...(n.running === undefined ? [] : [n.running ? "running" : "stopped"]), n.sshAnswers ? "ok" : "NO ANSWER"])));
      if (nodes.some((n) => !n.sshAnswers)) program.setOptionValue("exitCode", EXIT.toolFailed);
    });

  program.command("down")
    .description("remove a testbed and everything it created; safe to repeat; also removes leftovers of crashed runs")
    .argument("[testbed]", "testbed name or its campaign file (default: the last one brought up)")
    .option("--all", "local target: remove every ringlab container, network and volume on this machine", false)
    .action(async (which: string | undefined, options: { all: boolean }, command: Command) => {
      const ctx = contextFor(command, "down");
      if (options.all) {
        const removed = await downAllLocal(ctx);
        ctx.reporter.info(`removed ${removed.containers.length} containers, ${removed.networks.length} networks, ${removed.volumes.length} volumes`);
        return;
      }
      const { name, target, campaignFile, known } = resolveDownTarget(ctx.stateDir, which);
      const result = await down(ctx, name, target, campaignFile);
      if (result.removed !== undefined) {
        const { containers, networks, volumes } = result.removed;
        ctx.reporter.info(containers.length + networks.length + volumes.length === 0
          ? `nothing left of testbed ${name}${known ? "" : " here (for an AWS testbed, pass its campaign file: ringlab down <campaign.yaml>)"}`
          : `removed testbed ${name}: ${containers.length} containers, ${networks.length} networks, ${volumes.length} volumes`);
      } else {
        ctx.reporter.info(`destroyed AWS testbed ${name}`);
      }
    });

  return program;
}

/** `down` accepts a name, a campaign file, or nothing (the current testbed). */
function resolveDownTarget(stateDir: string, which: string | undefined): { name: string; target: "local" | "aws"; campaignFile?: string; known: boolean } {
  if (which !== undefined && /\.ya?ml$/.test(which)) {
    const campaign = loadCampaignFile(which, { readKeys: false });
    return { name: campaign.testbed.name, target: campaign.testbed.target, campaignFile: campaign.sourceFile, known: true };
  }
  const name = which ?? currentTestbedName(stateDir);
  if (name === undefined) {
    throw new UsageError("no testbed is up here", { hint: "name one (ringlab down NAME), pass its campaign file, or use --all" });
  }
  const record = loadRecord(stateDir, name);
  // Without a record the testbed may still have local leftovers: remove them by label.
  return record === undefined
    ? { name, target: "local", known: false }
    : { name, target: record.target, campaignFile: record.campaignFile, known: true };
}

function parsePositiveInt(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError("expected a positive whole number.");
  return value;
}

function parseBandwidth(text: string): string {
  if (bandwidthGbps(text) === undefined) throw new InvalidArgumentError(`expected ${BANDWIDTH_HELP}.`);
  return text;
}

function formatDuration(seconds: number): string {
  const minutes = Math.round(seconds / 60);
  return minutes < 90 ? `${minutes} min` : `${(minutes / 60).toFixed(1)} h`;
}

export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n") + "\n";
}

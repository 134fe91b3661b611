/** `ringlab run`: one benchmark job on the first N nodes of a testbed, at one link bandwidth. */
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { InvalidArgumentError, Option, type Command } from "commander";
import { BANDWIDTH_HELP } from "../../rules/bandwidth.ts";
import { MOST_PROCESSES_PER_NODE } from "../../config/schema.ts";
import { EXIT, UsageError } from "../../util/errors.ts";
import {
  DEFAULT_LAUNCHER,
  LAUNCHER_NAMES,
  LAUNCHERS,
  recordedLauncher,
  type LauncherName,
} from "../../launchers/index.ts";
import { JOBS, runOnce, type Job } from "../../runner/runner.ts";
import { gapOf, targetOf, targetsThatCan } from "../../targets/index.ts";
import { planCpuQuota } from "../../testbed/cpu-quota.ts";
import { isConfiguredFor, requireRecord, type TestbedRecord } from "../../testbed/record.ts";
import { withTestbedLock } from "../../testbed/testbed.ts";
import { resultsFolderProblem } from "../../util/fs.ts";
import { checkedWorkerArgs, parseBandwidth, parseCpuQuota, parsePositiveInt, parseSafePath } from "../options.ts";
import type { CommandHost } from "../host.ts";
import { out } from "../../util/output.ts";

interface RunOptions {
  readonly testbed?: string;
  readonly nodes: number;
  readonly bandwidth: string;
  readonly job: Job;
  readonly timeout: number;
  readonly out: string;
  readonly cpus?: number;
  readonly processesPerNode?: number;
  readonly launcher: LauncherName;
}

export function registerRun(program: Command, host: CommandHost): void {
  program
    .command("run")
    .description("run one benchmark job on the first N nodes at a link bandwidth, and print its result")
    .option("--testbed <name>", "testbed to act on (default: the last one brought up)")
    .requiredOption("--nodes <n>", "how many nodes take part (the first N by rank)", parsePositiveInt)
    .option(
      "--bandwidth <rate>",
      `egress limit on every node's cluster link: ${BANDWIDTH_HELP}`,
      parseBandwidth,
      "unlimited",
    )
    .addOption(
      new Option("--job <job>", "train: data-parallel training; allreduce: bandwidth probe")
        .choices(JOBS)
        .default("allreduce"),
    )
    .option("--timeout <seconds>", "give up on the run after this long", parsePositiveInt, 600)
    .option("--out <dir>", "where the run's result and logs go", parseSafePath, "results/adhoc")
    .option(
      "--cpus <cores>",
      "local testbed: run every worker process under this CPU quota, as a campaign's testbed.cpusPerNode does (default: no quota)",
      parseCpuQuota,
    )
    .option(
      "--processes-per-node <n>",
      `worker processes on each node, at most ${MOST_PROCESSES_PER_NODE} (default: one per GPU on GPU nodes, one on CPU nodes)`,
      parseProcessesPerNode,
    )
    .addOption(
      new Option(
        "--launcher <launcher>",
        LAUNCHER_NAMES.map((name) => `${name}: ${LAUNCHERS[name].summary}`).join("; "),
      )
        .choices(LAUNCHER_NAMES)
        .default(DEFAULT_LAUNCHER),
    )
    .argument(
      "[worker-args...]",
      "passed to the worker after `--`, e.g. -- --model tiny --batch-size 32 (see docker/worker/README.md)",
    )
    .action(
      host.action(async (workerArgs: string[], options: RunOptions, command: Command) => {
        const args = checkedWorkerArgs(workerArgs);
        const ctx = host.contextFor(command, "run");
        const problem = resultsFolderProblem(resolve(options.out));
        if (problem !== undefined)
          throw new UsageError(`--out ${options.out}: ${problem}`, { hint: "pick a folder only you can write" });
        const record = requireRecord(ctx.stateDir, options.testbed);
        if (options.nodes > record.nodes.length) {
          throw new UsageError(
            `--nodes ${options.nodes} is more than testbed ${record.name} has (${record.nodes.length})`,
          );
        }
        checkLauncher(record, options.launcher, args);
        if (options.cpus !== undefined)
          checkCpus(record, options.nodes * (options.processesPerNode ?? 1), options.cpus);
        const outcome = await withTestbedLock(ctx, record.name, () =>
          runOnce(ctx, record, {
            nodes: options.nodes,
            bandwidth: options.bandwidth,
            job: options.job,
            workerArgs: args,
            timeoutSeconds: options.timeout,
            outDir: resolve(options.out),
            ...(options.cpus === undefined ? {} : { cpusPerNode: options.cpus }),
            ...(options.processesPerNode === undefined ? {} : { processesPerNode: options.processesPerNode }),
            ...recordedLauncher(options.launcher),
          }),
        );
        out(`${outcome.summary}\n`);
        if (outcome.status !== "ok") return EXIT.runsFailed;
      }),
    );
}

/** The launcher takes these worker arguments, and the testbed was configured for it. */
function checkLauncher(record: TestbedRecord, name: LauncherName, workerArgs: readonly string[]): void {
  const launcher = LAUNCHERS[name];
  const refusal = launcher.refuses?.(workerArgs);
  if (refusal !== undefined) throw new UsageError(refusal.message, { hint: refusal.hint });
  if (!isConfiguredFor(record, name) && launcher.setup !== undefined) {
    throw new UsageError(`--launcher ${name} needs testbed ${record.name} to be ${launcher.setup.makes}`, {
      hint: `run \`ringlab configure --${launcher.setup.option}\` first`,
    });
  }
}

function parseProcessesPerNode(text: string): number {
  const value = parsePositiveInt(text);
  if (value > MOST_PROCESSES_PER_NODE)
    throw new InvalidArgumentError(`at most ${MOST_PROCESSES_PER_NODE} processes per node`);
  return value;
}

/**
 * A quota applies where the target holds workers to one ("cpu-quota": local), and all the run's worker processes at
 * once must fit this machine.
 */
function checkCpus(record: TestbedRecord, workers: number, cpus: number): void {
  const noQuota = gapOf(targetOf(record), "cpu-quota");
  if (noQuota !== undefined) {
    const where = targetsThatCan("cpu-quota")
      .map((target) => target.name)
      .join(" or ");
    throw new UsageError(
      `--cpus applies to the ${where} testbed only; ${record.name} is on ${record.target}, ${noQuota}`,
    );
  }
  const plan = planCpuQuota({ cores: availableParallelism(), nodes: workers, requested: cpus });
  if (!plan.ok) throw new UsageError(`--cpus ${cpus}: ${plan.problem}`);
}

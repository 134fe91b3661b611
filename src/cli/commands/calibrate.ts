/**
 * `ringlab calibrate <results dir>...`: what earlier campaigns measured, kept for `plan` to predict runs before they
 * run.
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import { describeSource, overlapLabel, splitLabel } from "../../predict/calibration.ts";
import { describeMemoryEntry } from "../../predict/memory.ts";
import { calibrateInto, defaultCalibrationFile } from "../../predict/store.ts";
import { parseSafePath } from "../options.ts";
import type { CommandHost } from "../host.ts";
import { out } from "../../util/output.ts";

export function registerCalibrate(program: Command, host: CommandHost): void {
  program
    .command("calibrate")
    .description(
      "merge what campaigns measured (each single-node baseline's compute, each tensor-parallel group's and pipeline's step over an unshaped link, each probe's link fit, the overlap its shaped training runs showed per layout and node count) into a calibration that `ringlab plan` predicts runs from",
    )
    .argument(
      "<results-dirs...>",
      "results folders of campaigns that ran (results/<campaign>); a later one's entries replace an earlier one's",
    )
    .option(
      "--out <file>",
      "the calibration file (default: <state-dir>/calibration.json, which plan and campaign read)",
      parseSafePath,
    )
    .action(
      host.action((dirs: string[], options: { out?: string }, command: Command) => {
        const ctx = host.contextFor(command, "calibrate");
        const file = resolve(options.out ?? defaultCalibrationFile(ctx.stateDir));
        const calibration = calibrateInto(file, dirs, (message) => ctx.reporter.warn(message));
        for (const entry of calibration.compute) {
          const workload = Object.entries(entry.workload ?? {})
            .map(([knob, value]) => ` ${knob}=${String(value)}`)
            .join("");
          out(
            `compute ${entry.model} batch ${entry.batchSize} ${entry.precision}${entry.channelsLast === true ? " channels-last" : ""}${workload}${entry.cpusPerNode === null ? "" : ` at ${entry.cpusPerNode} cores`}: ` +
              `t_c ${entry.computeSeconds.mean.toFixed(3)} ± ${entry.computeSeconds.halfWidth95.toFixed(3)} s (${describeSource(entry.source)})\n`,
          );
        }
        for (const entry of calibration.splitSteps) {
          out(
            `split step ${entry.model} batch ${entry.batchSize} ${entry.precision}, ${splitLabel(entry)} of ${entry.nodes} nodes × ${entry.processesPerNode}, unshaped` +
              `${entry.cpusPerNode === null ? "" : ` at ${entry.cpusPerNode} cores`}: ${entry.stepSeconds.mean.toFixed(3)} ± ${entry.stepSeconds.halfWidth95.toFixed(3)} s a step (${describeSource(entry.source)})\n`,
          );
        }
        for (const entry of calibration.links) {
          out(
            `link ${entry.bandwidth}, ${entry.nodes} nodes × ${entry.processesPerNode}, ${entry.reduction}${entry.collective === undefined ? "" : `, ${entry.collective}`}: α ${(entry.alphaSeconds * 1e3).toFixed(2)} ms, ` +
              `β as ${(8 / entry.betaSecondsPerByte / 1e9).toFixed(3)} Gbit/s, R² ${entry.rSquared.toFixed(4)} (${describeSource(entry.source)})\n`,
          );
        }
        for (const entry of calibration.overlap) {
          const { mean, halfWidth95, points } = entry.share;
          out(
            `overlap ${overlapLabel(entry)}${entry.cpusPerNode === null ? "" : ` at ${entry.cpusPerNode} cores`}: ` +
              `φ ${mean.toFixed(2)} ± ${halfWidth95.toFixed(2)} over ${points} point${points === 1 ? "" : "s"}` +
              `${mean < 0 ? " (slower than the no-overlap model: predicted as no overlap)" : mean > 1 ? " (faster than full overlap allows: predicted as full overlap)" : ""} (${describeSource(entry.source)})\n`,
          );
        }
        for (const entry of calibration.memory) {
          out(
            `memory ${entry.device}${entry.parallelism === undefined ? "" : ` ${entry.parallelism}`}${entry.cpusPerNode === null ? "" : ` at ${entry.cpusPerNode} cores`}: ${describeMemoryEntry(entry)}\n`,
          );
        }
        ctx.reporter.info(
          `calibration ${file}: ${calibration.compute.length} compute entries, ${calibration.splitSteps.length} split steps (tensor or pipeline), ${calibration.links.length} links, ${calibration.overlap.length} overlap shares, ` +
            `${calibration.memory.length} memory fits`,
        );
      }),
    );
}

/**
 * `ringlab predict`: a training configuration's throughput and scaling efficiency over node counts nobody has to run,
 * from a calibration (`ringlab calibrate`): the model plan and the report use, and where communication starts to take
 * longer than compute.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Option, type Command } from "commander";
import { MODELS } from "../../config/registry.ts";
import { UsageError } from "../../errors.ts";
import { isPrediction, predictTraining, type RunPrediction } from "../../predict/predict.ts";
import { defaultCalibrationFile, loadCalibration } from "../../predict/store.ts";
import { REDUCTIONS } from "../../results/cost-model.ts";
import { formatTable } from "../format.ts";
import { parseBandwidth, parseCpuQuota, parseNodeCounts, parsePositiveInt, parseSafePath } from "../options.ts";
import type { CommandHost } from "../host.ts";

interface PredictOptions {
  readonly model: string;
  readonly batch: number;
  readonly bandwidth: string;
  readonly nodes: number[];
  readonly processesPerNode: number;
  readonly reduction: string;
  readonly cpus?: number;
  readonly calibration?: string;
  readonly format: string;
}

export function registerPredict(program: Command, host: CommandHost): void {
  program.command("predict")
    .description("predict a training configuration's throughput and scaling efficiency over node counts from a calibration, and where communication overtakes compute")
    .addOption(new Option("--model <model>", "the model").choices([...MODELS]).makeOptionMandatory())
    .requiredOption("--batch <n>", "batch size per worker", parsePositiveInt)
    .requiredOption("--bandwidth <rate>", "the link, as a campaign's bandwidth (1gbit, 300mbit, unlimited)", parseBandwidth)
    .option("--nodes <counts>", "node counts: 1..64 or 1,2,4,8 (at most 1024)", parseNodeCounts, parseNodeCounts("1..10"))
    .option("--processes-per-node <p>", "worker processes per node", parsePositiveInt, 1)
    .addOption(new Option("--reduction <reduction>", "how gradients are summed").choices([...REDUCTIONS]).default("ring"))
    .option("--cpus <cores>", "the CPU quota per worker the calibration was measured at (local testbed; default: the calibration's, when it has one for this model and batch)", parseCpuQuota)
    .option("--calibration <file-or-results-dir>", "default: <state-dir>/calibration.json (see `ringlab calibrate`)", parseSafePath)
    .option("--format <format>", "text, or json for scripts", "text")
    .action(host.action((options: PredictOptions, command: Command) => {
      if (options.format !== "text" && options.format !== "json") throw new UsageError(`--format ${JSON.stringify(options.format)}: expected text or json`);
      const file = options.calibration ?? defaultCalibrationFile(resolve(String(command.optsWithGlobals()["stateDir"])));
      if (options.calibration === undefined && !existsSync(file)) {
        throw new UsageError(`no calibration at ${file}: predict needs what earlier campaigns measured`, { hint: "make one with `ringlab calibrate <results dir>...`, or pass --calibration" });
      }
      const calibration = loadCalibration(file, (message) => process.stderr.write(`warning: ${message}\n`));
      const quotas = [...new Set(calibration.compute.filter((entry) => entry.model === options.model && entry.batchSize === options.batch).map((entry) => entry.cpusPerNode))];
      if (options.cpus === undefined && quotas.length > 1) {
        throw new UsageError(`the calibration has ${options.model} at batch ${options.batch} under several CPU quotas (${quotas.map((q) => q ?? "none").join(", ")})`, { hint: "pick one with --cpus" });
      }
      const cpus = options.cpus ?? quotas[0] ?? undefined;
      const curve = options.nodes.map((nodes) => predictTraining({
        runId: `${nodes} node${nodes === 1 ? "" : "s"}`, model: options.model, batchSize: options.batch, nodes, processesPerNode: options.processesPerNode,
        bandwidth: nodes * options.processesPerNode === 1 ? null : options.bandwidth, knobs: { reduction: options.reduction },
      }, cpus, calibration));
      const missing = curve.find((point) => !isPrediction(point));
      if (missing !== undefined && !isPrediction(missing)) throw new UsageError(`cannot predict: ${missing.missing}`);
      const points = curve.filter(isPrediction);
      const overtakes = options.nodes.find((_, index) => points[index]!.allReduceSeconds > points[index]!.computeSeconds);
      if (options.format === "json") {
        process.stdout.write(`${JSON.stringify({ calibration: resolve(file), cpusPerNode: cpus ?? null, nodes: options.nodes, points, communicationOvertakesComputeAtNodes: overtakes ?? null }, null, 2)}\n`);
        return;
      }
      process.stdout.write(formatCurve(options, points, resolve(file), overtakes));
    }));
}

function formatCurve(options: PredictOptions, points: readonly RunPrediction[], file: string, overtakes: number | undefined): string {
  const pct = (value: number) => `${(value * 100).toFixed(1)}%`;
  const rows = points.map((point, index) => {
    const nodes = options.nodes[index]!;
    return [String(nodes), String(nodes * options.processesPerNode), point.computeSeconds.toFixed(4), point.allReduceSeconds.toFixed(4), point.stepSeconds.toFixed(4),
      point.imagesPerSecond.toFixed(1), pct(point.scalingEfficiency.value), pct(point.fullOverlapEfficiency)];
  });
  const last = options.nodes[options.nodes.length - 1]!;
  // One line per source, not per node count: "derived ... for 4 nodes", "... for 5 nodes" say the same.
  const sources = [...new Set(points.flatMap((point) => [point.sources.compute, point.sources.link.replace(/ for \d+ nodes$/, " for the other node counts")]))];
  return [
    `${options.model} at batch ${options.batch} per worker, ${options.bandwidth}, ${options.reduction}, ${options.processesPerNode} process${options.processesPerNode === 1 ? "" : "es"} per node; from ${file} (no overlap; full overlap is the most it can reach):`,
    formatTable(["nodes", "workers", "t_c (s)", "t_ar (s)", "step (s)", "img/s", "efficiency", "full overlap"], rows).trimEnd(),
    overtakes === undefined ? `communication stays below compute up to ${last} nodes` : `communication takes longer than compute from ${overtakes} nodes on (t_ar > t_c)`,
    ...sources.map((source) => `source: ${source}`),
    "",
  ].join("\n");
}

/**
 * `ringlab plan <file>`: the runs a campaign expands to, in order, and what they will cost in time and money.
 * Exits 2 when a check of the plan fails (a run that cannot fit the GPU's memory), after printing the plan.
 */
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { availableParallelism } from "node:os";
import type { Command } from "commander";
import { estimateCampaign, type CampaignEstimate, type EstimateOptions } from "../../campaign/estimate.ts";
import { checkGpuMemory } from "../../campaign/gpu-memory.ts";
import { memoryConstantsFor, memoryLimitOf, memoryRun, planProblems, type MemoryLimit } from "../../campaign/fits.ts";
import { checkLinkDrive } from "../../campaign/link-drive.ts";
import { isMemoryPrediction, predictMemory, type MemoryConstants } from "../../predict/memory.ts";
import { MODEL_KIND, type Model } from "../../config/registry.ts";
import { EXIT, UsageError } from "../../util/errors.ts";
import { campaignName, planCampaign, reshapeCount, type CampaignPlan } from "../../campaign/plan.ts";
import {
  isKubernetesCampaign,
  loadAnyCampaignFile,
  type LoadedCampaignFile,
  type LoadedKubernetesCampaignFile,
} from "../../config/load.ts";
import { isPrediction, predictRun, type MissingInput, type RunPrediction } from "../../predict/predict.ts";
import { rateUnit } from "../../results/worker-result.ts";
import { predictionContextFor, PUBLISHED_ONLY } from "../../predict/inputs.ts";
import { defaultCalibrationFile, loadCalibration } from "../../predict/store.ts";
import { targetOf } from "../../targets/index.ts";
import { resolveCpuQuota } from "../../testbed/cpu-quota.ts";
import { parseSafePath } from "../options.ts";
import { formatDuration, formatTable } from "../format.ts";
import type { CommandHost } from "../host.ts";
import { err, out } from "../../util/output.ts";

export function registerPlan(program: Command, host: CommandHost): void {
  program
    .command("plan")
    .description("print the runs a campaign file expands to, their order, and the estimated duration (and cost on AWS)")
    .argument("<campaign>", "campaign YAML file")
    .option(
      "--calibration <file-or-results-dir>",
      "predict every training run from this calibration (`ringlab calibrate`'s file, or a results folder); " +
        "default: <state-dir>/calibration.json when there is one",
      parseSafePath,
    )
    .option("--format <format>", "text, or json for scripts (the runs, their predictions and the estimate)", "text")
    .action(
      host.action((file: string, options: { calibration?: string; format: string }, command: Command) => {
        if (options.format !== "text" && options.format !== "json")
          throw new UsageError(`--format ${JSON.stringify(options.format)}: expected text or json`);
        const campaign = loadAnyCampaignFile(file, { readKeys: false });
        if (isKubernetesCampaign(campaign)) return planOnKubernetes(campaign, options.format);
        const plan = planCampaign(campaign, campaignName(campaign.sourceFile));
        const cpusPerNode = resolveCpuQuota(campaign, availableParallelism());
        const calibrationFile =
          options.calibration ?? defaultCalibrationFile(resolve(String(command.optsWithGlobals()["stateDir"])));
        const calibration =
          options.calibration !== undefined || existsSync(calibrationFile)
            ? loadCalibration(calibrationFile, (message) => err(`warning: ${message}\n`))
            : undefined;
        const predictFrom = predictionContextFor(campaign, cpusPerNode, calibration);
        const from = calibration === undefined ? PUBLISHED_ONLY : resolve(calibrationFile);
        const predictions =
          predictFrom === undefined
            ? []
            : plan.runs.map((run) => predictRun(run, predictFrom)).filter((p) => p !== null);
        // Steps as a calibration predicts them: its own machine's measurements. Published-only predictions stay out
        // (GPU figures, not this testbed's).
        const predictedStepSeconds =
          calibration === undefined
            ? undefined
            : new Map(predictions.filter(isPrediction).map((prediction) => [prediction.runId, prediction.stepSeconds]));
        const estimate = estimateCampaign(plan, campaign, {
          localCores: availableParallelism(),
          ...tarballSize(campaign),
          ...(predictedStepSeconds === undefined ? {} : { predictedStepSeconds }),
        });
        const warnings = checkLinkDrive(plan, cpusPerNode);
        const constants = memoryConstantsFor(campaign, cpusPerNode, calibration);
        const problems = [...checkGpuMemory(plan, campaign), ...planProblems(plan, campaign, constants)];
        const memory = memoryRows(plan, constants);
        if (options.format === "json") {
          out(
            `${JSON.stringify({ runs: plan.runs, predictions, memory, calibration: calibration === undefined ? null : resolve(calibrationFile), predictedFrom: predictions.length === 0 ? null : from, estimate, warnings, problems }, null, 2)}\n`,
          );
          return problems.length === 0 ? EXIT.ok : EXIT.badInput;
        }
        out(formatRuns(plan));
        out(`\n${formatSummary(plan, campaign, estimate, cpusPerNode)}\n`);
        if (predictions.length > 0) out(`\n${formatPredictions(predictions, from)}`);
        const layoutSources = Object.entries(constants.layouts ?? {})
          .filter(([layout]) => plan.runs.some((run) => run.knobs.parallelism === layout))
          .map(([layout, own]) => `; ${layout} across workers: ${own.source}`)
          .join("");
        if (memory.length > 0)
          out(`\n${formatMemory(memory, memoryLimitOf(campaign), `${constants.source}${layoutSources}`)}`);
        if (warnings.length > 0) err(`\n${warnings.map((warning) => `warning: ${warning}`).join("\n")}\n`);
        if (problems.length === 0) return EXIT.ok;
        err(`\n${problems.map((problem) => `problem: ${problem}`).join("\n")}\n`);
        return EXIT.badInput;
      }),
    );
}

/**
 * A Kubernetes campaign's runs, each a Job on the user's cluster. No duration, cost or prediction: ringlab does not
 * know the cluster's machines (a nodeSelector names them only for the scheduler).
 */
async function planOnKubernetes(campaign: LoadedKubernetesCampaignFile, format: string): Promise<number> {
  const plan = planCampaign(campaign, campaignName(campaign.sourceFile));
  const { testbed } = campaign;
  if (format === "json") {
    out(`${JSON.stringify({ runs: plan.runs, predictions: [], estimate: null, warnings: [] }, null, 2)}\n`);
    return EXIT.ok;
  }
  out(formatRuns(plan));
  out(
    `\n${plan.runs.length} runs, each a Job of up to ${plan.nodesToProvision} pods in namespace ${testbed.namespace} ` +
      `(context ${testbed.context ?? "the kubeconfig's current one"}), ${testbed.gpusPerPod} GPU${testbed.gpusPerPod === 1 ? "" : "s"} per pod; ` +
      `each run ends within ${formatDuration(plan.runTimeoutSeconds)} (runTimeoutSeconds). No duration, cost or prediction: ringlab does not know the cluster's machines.\n` +
      "ringlab campaign runs them; ringlab manifests writes them for kubectl apply -f.\n",
  );
  await printKubernetesSecurity(plan, testbed);
  return EXIT.ok;
}

/**
 * What Pod Security level the runs' pods need and why (stdout), and where their NetworkPolicy cannot apply (a warning).
 */
async function printKubernetesSecurity(
  plan: CampaignPlan,
  testbed: LoadedKubernetesCampaignFile["testbed"],
): Promise<void> {
  // Loaded here, not with the command line: kubernetes-models is half the modules a start would otherwise load.
  const { campaignPodSecurity, networkPolicyWarning, podSecurityLine } = await import(
    "../../targets/kubernetes/manifests.ts"
  );
  out(`${podSecurityLine(campaignPodSecurity(plan.runs, testbed, plan.name, plan.runTimeoutSeconds))}\n`);
  const unguarded = networkPolicyWarning(testbed);
  if (unguarded !== undefined) err(`\nwarning: ${unguarded}\n`);
}

/** The tarball's size for the upload estimate, when the file is here already. */
function tarballSize(campaign: LoadedCampaignFile): Pick<EstimateOptions, "workerImageTarballBytes"> {
  const tarball = targetOf(campaign.testbed).estimate?.workerImageTarball?.(campaign.testbed);
  if (tarball === undefined) return {};
  try {
    return { workerImageTarballBytes: statSync(tarball).size };
  } catch {
    return {};
  }
}

function formatRuns(plan: CampaignPlan): string {
  return formatTable(
    ["#", "run", "job", "nodes", "bandwidth", "model", "batch"],
    plan.runs.map((run, index) => [
      String(index + 1),
      `${run.id}${run.conditional ? " ?" : ""}`,
      run.job,
      run.processesPerNode === undefined ? String(run.nodes) : `${run.nodes}×${run.processesPerNode}`,
      run.bandwidth ?? "-",
      run.model ?? "-",
      run.batchSize === undefined ? "-" : String(run.batchSize),
    ]),
  );
}

function formatSummary(
  plan: CampaignPlan,
  campaign: LoadedCampaignFile,
  estimate: CampaignEstimate,
  cpusPerNode: number | undefined,
): string {
  const conditional = plan.runs.filter((run) => run.conditional).length;
  const lines = [
    `${plan.runs.length} runs${conditional === 0 ? "" : ` (${conditional} of them only while their configuration's interval is wider than the target; marked ?)`} on ${plan.nodesToProvision} ${campaign.testbed.target} nodes; links reshaped ${reshapeCount(plan.runs)} times`,
    ...(cpusPerNode === undefined
      ? []
      : [
          plan.runs.every((run) => (run.processesPerNode ?? 1) === 1)
            ? `every node's worker runs under a CPU quota of ${cpusPerNode} cores (testbed.cpusPerNode)`
            : `every worker process runs under a CPU quota of ${cpusPerNode} cores (testbed.cpusPerNode; a node running P processes gets P × that)`,
        ]),
    ...(plan.largestRunNodes < plan.nodesToProvision
      ? [
          `note: no run uses more than ${plan.largestRunNodes} nodes; testbed.nodes: ${plan.largestRunNodes} would leave none idle`,
        ]
      : []),
    estimate.fewestSeconds === undefined
      ? `estimated duration: ${formatDuration(estimate.seconds)} (${estimateBasis(estimate)})`
      : `estimated duration: ${formatDuration(estimate.fewestSeconds)} if every configuration is within ±${(plan.repeatUntil!.halfWidth * 100).toFixed(1)} % after ${plan.repeatUntil!.minRepeats} repeats, ` +
        `up to ${formatDuration(estimate.seconds)} if each takes ${plan.repeatUntil!.maxRepeats} (${estimateBasis(estimate)})`,
    ...formatImageDelivery(estimate),
  ];
  if (estimate.instanceHours !== undefined) {
    const priceNote = targetOf(campaign.testbed).estimate?.priceNote?.(campaign.testbed);
    lines.push(
      estimate.costUsd === undefined
        ? `estimated ${estimate.instanceHours.toFixed(1)} instance-hours; no list price known for this instance type`
        : `estimated cost: $${estimate.costUsd.toFixed(2)} (${estimate.instanceHours.toFixed(1)} instance-hours at $${estimate.hourlyPriceUsd} on demand${priceNote === undefined ? "" : `; ${priceNote}`})`,
    );
  }
  return lines.join("\n");
}

/** What the duration rests on: the calibration's predicted steps where it gave them, else coarse figures. */
function estimateBasis(estimate: CampaignEstimate): string {
  const predicted = estimate.predictedSteps;
  if (predicted === undefined || predicted.runs === 0) return "rough: see src/campaign/estimate.ts";
  return (
    `the steps of ${predicted.runs === predicted.of ? "every training run" : `${predicted.runs} of ${predicted.of} training runs`} as the calibration predicts them; ` +
    "the rest rough: see src/campaign/estimate.ts"
  );
}

function formatImageDelivery(estimate: CampaignEstimate): string[] {
  const delivery = estimate.imageDelivery;
  switch (delivery.source) {
    case "present":
      return [];
    case "build":
      return [
        `worker image: built on every node on NVIDIA's PyTorch base (about ${formatDuration(delivery.seconds)}, included)`,
      ];
    case "registry":
      return [
        `worker image: pulled from its registry by every node (about ${formatDuration(delivery.seconds)}, included)`,
      ];
    case "tarball":
      return [
        `worker image: tarball upload of ${(delivery.uploadBytes! / 1e9).toFixed(0)} GB takes about ${formatDuration(delivery.seconds)} ` +
          `(${delivery.assumption}; included); without workerImageTarball the nodes build the image themselves`,
      ];
  }
}

/** Every training run's predicted throughput and efficiency, the sources numbered below the table. */
export function formatPredictions(predictions: readonly (RunPrediction | MissingInput)[], from: string): string {
  const sources: string[] = [];
  const sourceNumber = (text: string) => {
    if (!sources.includes(text)) sources.push(text);
    return `[${sources.indexOf(text) + 1}]`;
  };
  const made = predictions.filter(isPrediction);
  const missing = predictions.filter((prediction): prediction is MissingInput => !isPrediction(prediction));
  const pct = (value: number) => `${(value * 100).toFixed(1)}%`;
  // The rate in the runs' unit (tok/s for a language model); a campaign of both kinds says it on every row.
  const units = [...new Set(made.map((prediction) => prediction.unit))];
  const rate = (prediction: RunPrediction) =>
    `${prediction.throughput.toFixed(1)}${units.length === 1 ? "" : ` ${rateUnit(prediction.unit)}`}`;
  const table =
    made.length === 0
      ? ""
      : formatTable(
          [
            "run",
            units.length === 1 ? `predicted ${rateUnit(units[0]!)}` : "predicted rate",
            "efficiency (95% interval)",
            "φ",
            "no overlap",
            "full overlap",
            "compute",
            "link",
            "overlap",
          ],
          made.map((prediction) => [
            prediction.runId,
            rate(prediction),
            `${pct(prediction.scalingEfficiency.value)} (${pct(prediction.scalingEfficiency.low)}-${pct(prediction.scalingEfficiency.high)})`,
            prediction.overlapShare.toFixed(2),
            pct(prediction.noOverlapEfficiency),
            pct(prediction.fullOverlapEfficiency),
            sourceNumber(prediction.sources.compute),
            sourceNumber(prediction.sources.link),
            sourceNumber(prediction.sources.overlap),
          ]),
        );
  return (
    [
      `predicted from ${from} (φ: the share of the all-reduce hidden behind compute, as far as compute allows; no overlap and full overlap are the bounds):`,
      ...(table === "" ? [] : [table.trimEnd()]),
      ...sources.map((text, index) => `[${index + 1}] ${text}`),
      ...missing.map((entry) => `${entry.runId}: no prediction: ${entry.missing}`),
    ].join("\n") + "\n"
  );
}

interface MemoryRow {
  readonly configuration: string;
  /**
   * Predicted peak of the largest rank over its baseline, and of one node (launcher and every process's baseline), in
   * bytes.
   */
  readonly rankBytes: number;
  readonly nodeBytes: number;
}

/**
 * The memory model's prediction for every training configuration of a language model (image models have the GPU check
 * alone).
 */
function memoryRows(plan: CampaignPlan, constants: MemoryConstants): MemoryRow[] {
  const rows = new Map<string, MemoryRow>();
  for (const run of plan.runs) {
    if (
      run.job !== "train" ||
      run.model === undefined ||
      MODEL_KIND[run.model as Model] !== "language" ||
      rows.has(run.configuration)
    )
      continue;
    const prediction = predictMemory(memoryRun(run), constants);
    if (isMemoryPrediction(prediction))
      rows.set(run.configuration, {
        configuration: run.configuration,
        rankBytes: prediction.rankBytes,
        nodeBytes: prediction.nodeBytes,
      });
  }
  return [...rows.values()];
}

function formatMemory(rows: readonly MemoryRow[], limit: MemoryLimit | undefined, source: string): string {
  const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(2);
  const fits = (row: MemoryRow) =>
    limit === undefined ? "-" : (limit.per === "node" ? row.nodeBytes : row.rankBytes) <= limit.bytes ? "yes" : "NO";
  const table = formatTable(
    ["configuration", "GiB per rank", "GiB per node", "fits"],
    rows.map((row) => [row.configuration, gib(row.rankBytes), gib(row.nodeBytes), fits(row)]),
  );
  return `Peak memory predicted before the run (per rank: the largest rank's peak over its process's baseline; per node: its launcher and every process)${limit === undefined ? "" : `, against ${gib(limit.bytes)} GiB per ${limit.per} (${limit.what})`}; ${source}:\n${table}`;
}

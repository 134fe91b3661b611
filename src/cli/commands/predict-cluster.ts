/**
 * `ringlab predict --cluster NAME|FILE`: a training step on a GPU cluster of the catalogue (src/catalogue/clusters/)
 * or of one's own cluster file, before renting it: one layout's step at each node count, or with --recommend every
 * `tp × pp × dp` layout that fits, fastest first. The options are checked here (exit 2 naming the option); the
 * predictor is src/cluster/.
 */
import { clusterCatalogue, resolveNodeType } from "../../cluster/load.ts";
import type { Cluster, NodeType } from "../../cluster/description.ts";
import { layoutProblems, type LayoutDegrees } from "../../cluster/groups.ts";
import type { DataParallelSharding, PipelineSchedule } from "../../layouts/composition.ts";
import { MEMORY_SOURCE, peakBytesPerGpu } from "../../cluster/memory.ts";
import { layoutName, recommendLayouts, type LayoutRecommendation } from "../../cluster/recommend.ts";
import { predictClusterStep, type ClusterPrediction, type ClusterQuestion } from "../../cluster/step.ts";
import { clusterWorkload, type ClusterWorkload } from "../../cluster/workload.ts";
import { UsageError } from "../../util/errors.ts";
import { out } from "../../util/output.ts";
import { formatTable } from "../format.ts";

export interface ClusterOptions {
  readonly cluster: string;
  readonly nodes: readonly number[];
  readonly model: string;
  readonly batch?: number;
  readonly bandwidth?: string;
  readonly sequenceLength?: number;
  readonly precision: string;
  /** The optimizer, where the command line named one (else AdamW for a language model, SGD for an image model). */
  readonly optimizer?: string;
  readonly tp?: number;
  readonly pp?: number;
  readonly dp?: number;
  readonly cp?: number;
  readonly dpSharding?: DataParallelSharding;
  readonly schedule?: PipelineSchedule;
  readonly virtualStages?: number;
  readonly microBatches?: number;
  readonly gradientAccumulation?: number;
  readonly checkpointing?: "none" | "selective" | "full";
  readonly gpuThroughput?: number;
  readonly allowCrossNodeTensor: boolean;
  readonly recommend: boolean;
  readonly format: string;
}

/** The flags of the other mode that mean nothing here: exit 2 rather than ignored. */
function checkClusterOptions(options: ClusterOptions): void {
  if (options.model === undefined) throw new UsageError("--model: required with --cluster");
  if (options.bandwidth !== undefined) {
    throw new UsageError(
      "--bandwidth with --cluster: the cluster's NICs set the link (its catalogue entry or cluster file); write a cluster file for another rate",
    );
  }
  if (options.recommend && [options.tp, options.pp, options.dp, options.cp].some((degree) => degree !== undefined)) {
    throw new UsageError("--recommend tries every tp × pp × dp itself: leave out --tp, --pp, --dp and --cp");
  }
}

/** `predict --cluster`: prints one layout's step at each node count, or the ranked layouts. */
export function predictOnCluster(options: ClusterOptions): void {
  checkClusterOptions(options);
  const node = resolveNodeType(options.cluster);
  const catalogue = clusterCatalogue();
  const published = {
    rows: catalogue.collectives,
    nodeTypes: new Map([...catalogue.nodes].map(([name, entry]) => [name, entry.type])),
  };
  const workload = clusterWorkload(options.model, options.sequenceLength, options.checkpointing ?? "none");
  if ("missing" in workload) throw new UsageError(`--model: ${workload.missing}`);
  const optimizer = options.optimizer ?? (workload.kind === "language" ? "adamw" : "sgd");
  const ask = (nodes: number, layout: LayoutDegrees): ClusterQuestion => ({
    cluster: { node, nodes },
    workload,
    layout,
    microSamples: options.batch ?? 1,
    gradientAccumulation: options.gradientAccumulation ?? 1,
    precision: options.precision,
    optimizer,
    published,
    ...(options.gpuThroughput === undefined
      ? {}
      : {
          measured: {
            samplesPerSecond: options.gpuThroughput,
            unit: workload.kind === "language" ? "tokens/s" : "images/s",
            source: "--gpu-throughput",
          },
        }),
  });
  if (options.recommend) {
    const tables = options.nodes.map((nodes) => ({
      nodes,
      rows: recommendLayouts(
        ask(nodes, layoutOf(options, { node, nodes }, workload)),
        options.model,
        options.sequenceLength,
      ),
    }));
    // What compute misses (a GPU without figures) is every layout's: said once.
    const missing = tables.flatMap(({ rows }) => rows).find((row) => "missing" in row.prediction)?.prediction;
    if (missing !== undefined && "missing" in missing) throw new UsageError(`cannot predict: ${missing.missing}`);
    out(
      options.format === "json"
        ? `${JSON.stringify({ cluster: node.name, memory: MEMORY_SOURCE, tables }, null, 2)}\n`
        : formatRecommendations(options, node, tables),
    );
    return;
  }
  const points = options.nodes.map((nodes) => {
    const layout = layoutOf(options, { node, nodes }, workload);
    const prediction = predictClusterStep(ask(nodes, layout));
    if ("missing" in prediction) throw new UsageError(`cannot predict: ${prediction.missing}`);
    const peak = peakBytesPerGpu({
      model: options.model,
      layout,
      microSamples: options.batch ?? 1,
      sequence: options.sequenceLength,
      precision: options.precision,
      optimizer,
      activationCheckpointing: options.checkpointing ?? "none",
    });
    return { nodes, layout, prediction, peakBytesPerGpu: peak };
  });
  out(
    options.format === "json"
      ? `${JSON.stringify({ cluster: node.name, memory: MEMORY_SOURCE, points }, null, 2)}\n`
      : formatPoints(options, node, points),
  );
}

/** The layout the options ask for on this cluster, its defaults filled in, or exit 2 naming the option at fault. */
function layoutOf(options: ClusterOptions, cluster: Cluster, workload: ClusterWorkload): LayoutDegrees {
  const gpus = cluster.nodes * cluster.node.devicesPerNode.value;
  const tp = options.tp ?? 1;
  const pp = options.pp ?? 1;
  const cp = options.cp ?? 1;
  const schedule = options.schedule ?? "1f1b";
  const layout: LayoutDegrees = {
    tp,
    pp,
    cp,
    dp: options.dp ?? Math.max(1, Math.floor(gpus / (tp * pp * cp))),
    dpSharding: options.dpSharding ?? (workload.kind === "language" ? "full" : "none"),
    pipelineSchedule: schedule,
    virtualStages: options.virtualStages ?? (schedule === "interleaved-1f1b" ? 2 : 1),
    microBatches: options.microBatches ?? pp,
  };
  const layers = workload.kind === "language" ? workload.layers : undefined;
  const problems = layoutProblems(
    layout,
    gpus,
    cluster.node.devicesPerNode.value,
    layers,
    options.allowCrossNodeTensor,
  );
  if (problems.length > 0) {
    const flag = (field: string) => `--${field.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
    throw new UsageError(problems.map((problem) => `${flag(problem.field)}: ${problem.message}`).join("\n"), {
      hint: `on ${cluster.nodes} node${cluster.nodes === 1 ? "" : "s"} of ${cluster.node.name}`,
    });
  }
  return layout;
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`;
const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);

function unitOf(prediction: ClusterPrediction): string {
  return `${prediction.unit}/s per GPU`;
}

function formatPoints(
  options: ClusterOptions,
  node: NodeType,
  points: readonly { nodes: number; layout: LayoutDegrees; prediction: ClusterPrediction; peakBytesPerGpu: number }[],
): string {
  const first = points[0]!.prediction;
  const rows = points.map(({ nodes, layout, prediction, peakBytesPerGpu: peak }) => [
    String(nodes),
    String(prediction.gpus),
    layoutName(layout),
    gib(peak),
    prediction.computeSeconds.toFixed(3),
    prediction.exposedCommunicationSeconds.toFixed(3),
    prediction.stepSeconds.toFixed(3),
    prediction.perGpu.predicted.toFixed(0),
    `${prediction.perGpu.noOverlap.toFixed(0)}-${prediction.perGpu.fullOverlap.toFixed(0)}`,
    pct(prediction.scalingEfficiency.predicted),
  ]);
  const last = points[points.length - 1]!.prediction;
  const collectives = last.collectives.map((collective) => [
    collective.label,
    `${collective.span.ranks} (${collective.span.ranksPerNode} a node)`,
    collective.algorithm,
    collective.bottleneck,
    collective.seconds.toFixed(4),
    collective.exposedSeconds.toFixed(4),
  ]);
  return [
    `${options.model} on ${node.name}, batch ${options.batch ?? 1} per replica and micro-batch, ${options.precision}; compute ${first.computeBasis}:`,
    formatTable(
      [
        "nodes",
        "GPUs",
        "layout",
        "GiB a GPU",
        "compute (s)",
        "exposed comm (s)",
        "step (s)",
        unitOf(first),
        "no-full overlap",
        "efficiency",
      ],
      rows,
    ).trimEnd(),
    "",
    `collectives at ${points[points.length - 1]!.nodes} node(s), a step:`,
    formatTable(["collective", "ranks", "algorithm", "bottleneck", "seconds", "exposed"], collectives).trimEnd(),
    "",
    `source: compute (${first.computeBasis}): ${first.sources.compute}`,
    `source: inside a node, ${pct(last.sources.intraNode.value)} of the line rate: ${last.sources.intraNode.source}`,
    `source: between nodes, ${pct(last.sources.interNode.value)} of the line rate: ${last.sources.interNode.source}`,
    `source: overlap: ${first.sources.overlap}`,
    `source: memory: ${MEMORY_SOURCE}`,
    "",
  ].join("\n");
}

function formatRecommendations(
  options: ClusterOptions,
  node: NodeType,
  tables: readonly { nodes: number; rows: readonly LayoutRecommendation[] }[],
): string {
  const lines = [
    `${options.model} on ${node.name}, ${options.batch ?? 1} sample(s) a GPU per step, ${options.precision}; every tp × pp × dp, those that fit first, fastest first:`,
  ];
  const sources = new Set<string>([`memory: ${MEMORY_SOURCE}`]);
  const unit =
    tables[0]?.rows[0]?.prediction && "unit" in tables[0].rows[0].prediction
      ? tables[0].rows[0].prediction.unit
      : "samples";
  for (const { nodes, rows } of tables) {
    const capacity = node.device.kind === "gpu" ? node.device.gpu.memoryGiB.value : undefined;
    lines.push(
      "",
      `${nodes} node${nodes === 1 ? "" : "s"} × ${node.devicesPerNode.value} GPUs${capacity === undefined ? "" : ` (${capacity} GiB each)`}:`,
      formatTable(
        ["layout", "GiB a GPU", "step (s)", `${unit} /s a GPU`, "no-full overlap", "efficiency"],
        rows
          .filter((row) => row.fits)
          .map((row) => {
            const prediction = row.prediction as ClusterPrediction;
            sources.add(
              `compute (${prediction.computeBasis}): ${prediction.sources.compute.replace(/ for width \d+.*?, sequence/, ", sequence")}`,
            );
            return [
              row.name,
              gib(row.peakBytesPerGpu),
              prediction.stepSeconds.toFixed(3),
              prediction.perGpu.predicted.toFixed(0),
              `${prediction.perGpu.noOverlap.toFixed(0)}-${prediction.perGpu.fullOverlap.toFixed(0)}`,
              pct(prediction.scalingEfficiency.predicted),
            ];
          }),
      ).trimEnd(),
    );
    const over = rows.filter((row) => !row.fits);
    if (over.length > 0) {
      const least = Math.min(...over.map((row) => row.peakBytesPerGpu));
      lines.push(`${over.length} more layouts do not fit (the least of them needs ${gib(least)} GiB a GPU)`);
    }
    if (rows.every((row) => !row.fits)) lines.push("none fits: more nodes, a smaller micro-batch or checkpointing");
  }
  lines.push("", ...[...sources].slice(0, 6).map((source) => `source: ${source}`), "");
  return lines.join("\n");
}

/**
 * `predict --cluster ... --recommend`: every `tp × pp × dp` layout of the cluster's GPUs (tensor parallel inside a
 * node, each data-parallel sharding, a pipeline under 1F1B with one or two micro-batches a stage and under interleaved
 * 1F1B with two virtual stages), at one global batch (the question's micro-batch on every GPU, as pure data parallelism
 * would run it: a replica of tp × pp GPUs takes tp × pp of them), its peak memory per GPU (./memory.ts), and those that
 * fit ranked by predicted throughput. Pure.
 */
import { DP_SHARDINGS } from "../layouts/composition.ts";
import { layoutProblems, type LayoutDegrees } from "./groups.ts";
import { peakBytesPerGpu } from "./memory.ts";
import { predictClusterStep, type ClusterPrediction, type ClusterQuestion } from "./step.ts";
import { workerCount } from "./description.ts";

export interface LayoutRecommendation {
  readonly layout: LayoutDegrees;
  readonly name: string;
  readonly peakBytesPerGpu: number;
  readonly fits: boolean;
  readonly prediction: ClusterPrediction | { readonly missing: string };
}

/** A layout as people write it: "tp 8 × pp 2 × dp 8, FSDP (full), 1F1B × 4". */
export function layoutName(layout: LayoutDegrees): string {
  const degrees = `tp ${layout.tp} × pp ${layout.pp} × dp ${layout.dp}${layout.cp > 1 ? ` × cp ${layout.cp}` : ""}`;
  const sharding = layout.dpSharding === "none" ? "replicated" : `ZeRO-${DP_SHARDINGS.indexOf(layout.dpSharding)}`;
  const pipeline =
    layout.pp < 2
      ? ""
      : `, ${layout.pipelineSchedule}${layout.virtualStages > 1 ? ` v${layout.virtualStages}` : ""} × ${layout.microBatches}`;
  return `${degrees}, ${sharding}${pipeline}`;
}

function divisors(n: number): number[] {
  return Array.from({ length: n }, (_, index) => index + 1).filter((d) => n % d === 0);
}

/** Every layout worth asking about on the question's cluster: degrees that multiply to its GPUs, tp inside a node. */
export function candidateLayouts(question: ClusterQuestion): LayoutDegrees[] {
  const gpus = workerCount(question.cluster);
  const perNode = question.cluster.node.devicesPerNode.value;
  const layers = question.workload.kind === "language" ? question.workload.layers : 1;
  const layouts: LayoutDegrees[] = [];
  for (const tp of divisors(gpus).filter(
    (tp) => tp <= perNode && (question.workload.kind === "language" || tp === 1),
  )) {
    for (const pp of divisors(gpus / tp).filter(
      (pp) => pp <= layers && (question.workload.kind === "language" || pp === 1),
    )) {
      const dp = gpus / (tp * pp);
      const base = { tp, pp, dp, cp: 1, pipelineSchedule: "1f1b" as const, virtualStages: 1, microBatches: 1 };
      const shardings = dp > 1 ? DP_SHARDINGS : (["none"] as const);
      for (const dpSharding of shardings) {
        if (pp === 1) {
          layouts.push({ ...base, dpSharding });
          continue;
        }
        for (const microBatches of [pp, 2 * pp]) layouts.push({ ...base, dpSharding, microBatches });
        if (layers % (2 * pp) === 0) {
          layouts.push({
            ...base,
            dpSharding,
            microBatches: pp,
            pipelineSchedule: "interleaved-1f1b",
            virtualStages: 2,
          });
        }
      }
    }
  }
  return layouts.filter((layout) => layoutProblems(layout, gpus, perNode, layers, false).length === 0);
}

/** Each candidate's memory and prediction: those that fit first, fastest first; then those that do not. */
export function recommendLayouts(
  question: ClusterQuestion,
  model: string,
  sequence: number | undefined,
): LayoutRecommendation[] {
  const gpu = question.cluster.node.device.kind === "gpu" ? question.cluster.node.device.gpu : undefined;
  const capacity = (gpu?.memoryGiB.value ?? Number.POSITIVE_INFINITY) * 2 ** 30;
  const checkpointing = question.workload.kind === "language" ? question.workload.activationCheckpointing : "none";
  const globalBatch = question.microSamples * workerCount(question.cluster);
  const atGlobalBatch = candidateLayouts(question).flatMap((layout) => {
    const microSamples = globalBatch / layout.dp / layout.microBatches;
    return Number.isInteger(microSamples) ? [{ layout, microSamples }] : [];
  });
  const rows = atGlobalBatch.map(({ layout, microSamples }) => {
    const peak = peakBytesPerGpu({
      model,
      layout,
      microSamples,
      sequence,
      precision: question.precision,
      optimizer: question.optimizer,
      activationCheckpointing: checkpointing,
    });
    return {
      layout,
      name: layoutName(layout),
      peakBytesPerGpu: peak,
      fits: peak <= capacity,
      prediction: predictClusterStep({ ...question, layout, microSamples }),
    };
  });
  const throughput = (row: LayoutRecommendation) => ("missing" in row.prediction ? 0 : row.prediction.perGpu.predicted);
  return rows.sort((a, b) => Number(b.fits) - Number(a.fits) || throughput(b) - throughput(a));
}

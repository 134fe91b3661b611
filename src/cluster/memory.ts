/**
 * One GPU's peak memory under a `tp × pp × dp` layout: src/workload/memory.ts's model (PyTorch's FSDP2 mixed-precision
 * recipe for the model states, Korthikanti et al.'s activations), asked in its own terms. The seam between the cluster
 * predictor and the memory model: nothing is counted here. Pure.
 */
import { memoryTermsOf } from "../layouts/index.ts";
import { rankMemory } from "../workload/memory.ts";
import type { LayoutDegrees } from "./groups.ts";

export interface LayoutMemoryQuestion {
  readonly model: string;
  readonly layout: LayoutDegrees;
  /** Samples a replica computes per micro-batch. */
  readonly microSamples: number;
  readonly sequence: number | undefined;
  readonly precision: string;
  readonly optimizer: string;
  readonly activationCheckpointing: "none" | "selective" | "full";
}

export const MEMORY_SOURCE =
  "src/workload/memory.ts: PyTorch's FSDP2 mixed-precision recipe for the model states, Korthikanti et al.'s activations; the tensors alone, without the allocator's reserve";

/** The largest peak over the pipeline's stages, in bytes (the tensors alone: a GPU's allocator adds its reserve). */
export function peakBytesPerGpu(question: LayoutMemoryQuestion): number {
  const { layout } = question;
  const sharded = layout.dpSharding !== "none";
  const parallelism =
    layout.pp > 1 ? "pipeline" : sharded ? "fsdp" : layout.tp > 1 && layout.dp === 1 ? "tensor" : "ddp";
  const knobs = {
    parallelism,
    precision: question.precision,
    optimizer: question.optimizer,
    activationCheckpointing: question.activationCheckpointing,
    microBatches: layout.microBatches,
    pipelineSchedule: layout.pipelineSchedule === "gpipe" ? "gpipe" : "1f1b",
    // Context parallelism gives each rank a cp-th of every sequence.
    ...(question.sequence === undefined ? {} : { sequenceLength: question.sequence / layout.cp }),
  };
  const dims = {
    pp: layout.pp,
    tp: layout.tp,
    dpReplicate: sharded ? 1 : layout.dp * layout.cp,
    dpShard: sharded ? layout.dp * layout.cp : 1,
  };
  const stages = rankMemory(
    { model: question.model, batchSize: question.microSamples * layout.microBatches, knobs, dims, recipe: "pytorch" },
    { ...memoryTermsOf(knobs, dims), sharding: layout.dpSharding },
  );
  return Math.max(...stages.map((stage) => stage.peak));
}

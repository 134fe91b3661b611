/**
 * One GPU's peak memory under a `tp × pp × dp` layout: src/workload/memory.ts's model (PyTorch's FSDP2 mixed-precision
 * recipe for the model states, Korthikanti et al.'s activations), asked with the layout's terms as composition.ts
 * gives them. The seam between the cluster predictor and the memory model: nothing is counted here. Pure.
 */
import { compositionMemory } from "../layouts/composition.ts";
import { rankMemory } from "../workload/memory.ts";
import { compositionOfLayout, type LayoutDegrees } from "./groups.ts";

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
  const { dims, terms } = compositionMemory(compositionOfLayout(layout, question.microSamples));
  const knobs = {
    precision: question.precision,
    optimizer: question.optimizer,
    activationCheckpointing: question.activationCheckpointing,
    // Context parallelism gives each rank a cp-th of every sequence.
    ...(question.sequence === undefined ? {} : { sequenceLength: question.sequence / layout.cp }),
  };
  const batchSize = question.microSamples * layout.microBatches;
  const stages = rankMemory({ model: question.model, batchSize, knobs, dims, recipe: "pytorch" }, terms);
  return Math.max(...stages.map((stage) => stage.peak));
}

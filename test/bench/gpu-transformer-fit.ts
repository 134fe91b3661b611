/**
 * The memory model's largest gpt2-xl-shaped model (more layers) that fits a card at batch 1 in bf16 with AdamW: what
 * test/bench/gpu-transformer-predict.ts wrote before the runs, and test/bench/gpu-transformer.test.ts recomputes.
 */
import { ASSUMED_MEMORY, isMemoryPrediction, predictMemory, type MemoryPrediction } from "../../src/predict/memory.ts";

export interface ConfigRun {
  readonly name: string;
  readonly model: string;
  readonly batchSize: number;
  readonly knobs: Record<string, unknown>;
}

/**
 * What a process can fill with tensors: the card less the CUDA context and libraries (about 1 GiB), and 5 % for the
 * caching allocator's blocks.
 */
export function usableCardBytes(cardBytes: number): number {
  return (cardBytes - 2 ** 30) * 0.95;
}

/** The memory model's peak of a run on a GPU (no calibration of the GPU: the tensors alone, ASSUMED_MEMORY.cuda). */
export function predictedPeak(run: ConfigRun): MemoryPrediction {
  const prediction = predictMemory(
    { model: run.model, batchSize: run.batchSize, nodes: 1, knobs: { optimizer: "adamw", ...run.knobs } },
    ASSUMED_MEMORY.cuda,
  );
  if (!isMemoryPrediction(prediction)) throw new Error(`${run.name}: ${prediction.problem}`);
  return prediction;
}

export const xl = (layers: number): ConfigRun => ({
  name: `gpt2-xl-layers${layers}-bf16-b1`,
  model: "gpt2-xl",
  batchSize: 1,
  knobs: { precision: "bf16", layers },
});

/**
 * The largest layer count whose run fits the usable part of the card, and the first whose tensors alone the model puts
 * past the whole card, to show the edge.
 */
export function largestFit(cardBytes: number): { readonly layers: number; readonly past: number } {
  let layers = 48;
  while (predictedPeak(xl(layers + 1)).rankBytes <= usableCardBytes(cardBytes)) layers++;
  let past = layers + 1;
  while (predictedPeak(xl(past)).rankBytes <= cardBytes) past++;
  return { layers, past };
}

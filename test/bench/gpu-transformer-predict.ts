/**
 * The memory model's prediction of every GPU transformer run (test/bench/gpu/transformer-configs.json), written before
 * the runs: each run's peak allocated memory (the tensors; no calibration of the GPU exists, so the model's bytes
 * alone, ASSUMED_MEMORY.cuda), its parts, and the largest gpt2-xl-shaped model (more layers) that fits the card at
 * batch 1 in bf16 with AdamW (its tensors within 95 % of the card less 1 GiB for CUDA's context), with the first the
 * model puts past the whole card, both appended as runs.
 *
 *   npx tsx test/bench/gpu-transformer-predict.ts <card folder> <GPU memory bytes>
 *   e.g. npx tsx test/bench/gpu-transformer-predict.ts test/bench/gpu/nvidia-h200 150109880320
 *
 * test/bench/gpu-transformer.py runs what the file lists and writes the measured beside it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ASSUMED_MEMORY } from "../../src/predict/memory.ts";
import { parameterCount } from "../../src/workload/transformer.ts";
import { shapeOf } from "../../src/config/registry.ts";
import { largestFit, predictedPeak, usableCardBytes, xl, type ConfigRun } from "./gpu-transformer-fit.ts";

const [folder, memoryText] = process.argv.slice(2);
if (folder === undefined || memoryText === undefined)
  throw new Error("usage: gpu-transformer-predict.ts <card folder> <GPU memory bytes>");
const cardBytes = Number(memoryText);
const configs = JSON.parse(readFileSync(join(import.meta.dirname, "gpu", "transformer-configs.json"), "utf8")) as {
  steps: Record<string, number>;
  runs: ConfigRun[];
};
const constants = ASSUMED_MEMORY.cuda;
const usableBytes = usableCardBytes(cardBytes);
const { layers, past } = largestFit(cardBytes);
const runs = [...configs.runs, xl(layers), xl(past)];

const out = {
  schema: "ringlab.gpu-transformer-predictions/v1",
  madeAt: new Date().toISOString(),
  cardBytes,
  usableBytes,
  constants: constants.source,
  largestFit: {
    model: "gpt2-xl",
    layers,
    parameters: parameterCount(shapeOf("gpt2-xl", { layers })!),
    predictedToFail: past,
  },
  steps: configs.steps,
  runs: runs.map((run) => {
    const prediction = predictedPeak(run);
    const parts = prediction.perRank[0]!.parts;
    return { ...run, knobs: { optimizer: "adamw", ...run.knobs }, predictedPeakBytes: prediction.rankBytes, parts };
  }),
};
writeFileSync(join(folder, "transformer-predictions.json"), `${JSON.stringify(out, null, 2)}\n`);
console.log(
  `${runs.length} runs predicted; largest gpt2-xl shape that fits at batch 1: ${layers} layers (${(out.largestFit.parameters / 1e9).toFixed(2)} G parameters)`,
);
for (const run of out.runs)
  console.log(`${run.name.padEnd(34)} ${(run.predictedPeakBytes / 2 ** 30).toFixed(2).padStart(8)} GiB`);

/**
 * The model as the cluster predictor needs it, from the registry's one description (src/workload/transformer.ts): a
 * language model's width, blocks, key/value width, parameters and training FLOPs per token at the run's sequence; an
 * image model's parameters. Pure.
 */
import { MODEL_KIND, PARAMETER_COUNT, type Model, shapeOf } from "../config/registry.ts";
import { parameterCount, trainingFlopsPerToken, type ActivationCheckpointing } from "../workload/transformer.ts";
import type { ImageCompute, LanguageCompute } from "./compute.ts";

export type ClusterWorkload = (LanguageCompute | ImageCompute) & { readonly parameters: number };

export function clusterWorkload(
  model: string,
  sequence: number | undefined,
  activationCheckpointing: ActivationCheckpointing,
): ClusterWorkload | { readonly missing: string } {
  if (!Object.hasOwn(MODEL_KIND, model)) return { missing: `model ${JSON.stringify(model)} is not in the registry` };
  if (MODEL_KIND[model as Model] === "image") {
    return { kind: "image", model, parameters: PARAMETER_COUNT[model as Model] };
  }
  const shape = shapeOf(model, sequence === undefined ? {} : { sequenceLength: sequence })!;
  return {
    kind: "language",
    width: shape.width,
    layers: shape.layers,
    kvWidth: (shape.kvHeads * shape.width) / shape.heads,
    ffnWidth: shape.ffnWidth,
    sequence: shape.sequenceLength,
    parameters: parameterCount(shape),
    flopsPerToken: trainingFlopsPerToken(shape, shape.sequenceLength),
    activationCheckpointing,
  };
}

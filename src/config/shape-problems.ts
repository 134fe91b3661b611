/**
 * What is wrong with a language model's shape as a run asks for it, before anything starts: the worker's own checks
 * (docker/worker/ringlab_worker/cli.py shape_problems), message for message, so that a campaign file is refused with
 * the knob named (exit 2) instead of every node's worker refusing it. Pure.
 */
import {
  LANGUAGE_SHAPE,
  LAYOUTS,
  type Parallelism,
  shapeOf,
  TIED_EMBEDDINGS_REFUSED,
  TRAIN_KNOBS,
  type TransformerShape,
} from "./registry.ts";

export interface ShapeProblem {
  /** The knob to change. */
  readonly knob: string;
  readonly message: string;
}

/**
 * Each thing wrong with the shape `knobs` ask of `model` on `tp` tensor-parallel ranks: a sequence past the model's
 * positions, a width its heads do not divide, key and value heads that do not divide the heads (or any on a gpt2
 * model), a tensor degree that does not divide both, a tied head on a layout that cannot hold one (registry.json
 * layouts' refusesTiedEmbeddings: a pipeline's). None for an image model.
 */
export function shapeProblems(model: string, knobs: Readonly<Record<string, unknown>>, tp = 1): ShapeProblem[] {
  const registered = (LANGUAGE_SHAPE as Readonly<Record<string, TransformerShape>>)[model];
  const shape = shapeOf(model, knobs);
  if (registered === undefined || shape === undefined) return [];
  const problems: ShapeProblem[] = [];
  if (shape.sequenceLength > shape.maxPositions) {
    const positions = shape.family === "gpt2" ? "learned positions" : "positions (its trained context)";
    problems.push({
      knob: "sequenceLength",
      message: `sequenceLength ${shape.sequenceLength} is more than ${model}'s ${shape.maxPositions} ${positions}: set it to ${shape.maxPositions} or less`,
    });
  }
  if (shape.width % shape.heads !== 0)
    problems.push({ knob: "width", message: `width ${shape.width} must be a multiple of heads ${shape.heads}` });
  if (typeof knobs["kvHeads"] === "number" && shape.family === "gpt2") {
    problems.push({
      knob: "kvHeads",
      message: `kvHeads with ${model}: a gpt2 model gives every query head its own key and value head; grouped-query attention is the llama models' (llama-nano, llama-micro, ...)`,
    });
    return problems;
  }
  if (shape.heads % shape.kvHeads !== 0) {
    problems.push({
      knob: "kvHeads",
      message: `kvHeads ${shape.kvHeads} must divide heads ${shape.heads} (each key and value head serves as many query heads)`,
    });
  } else if (tp > 1 && (shape.heads % tp !== 0 || shape.kvHeads % tp !== 0)) {
    problems.push({
      knob: "tensorDegree",
      message: `tensorDegree ${tp} must divide ${model}'s ${shape.heads} heads and ${shape.kvHeads} key and value heads (each rank computes whole heads, and the query heads that share them): choose a divisor of both`,
    });
  }
  const layout = String(knobs["parallelism"] ?? TRAIN_KNOBS.parallelism.default) as Parallelism;
  const untiedOnly = TIED_EMBEDDINGS_REFUSED[layout];
  if (untiedOnly !== undefined && shape.tiedEmbeddings) {
    problems.push({
      knob: "parallelism",
      message: `parallelism ${layout} with ${model}: ${untiedOnly}; use an untied model, or ${orList(TIED_LAYOUTS)}`,
    });
  }
  return problems;
}

/** The layouts that train a model with tied embeddings. */
const TIED_LAYOUTS = LAYOUTS.filter((layout) => TIED_EMBEDDINGS_REFUSED[layout] === undefined);

/** "a, b or c". */
function orList(items: readonly string[]): string {
  return items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`;
}

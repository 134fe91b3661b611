/**
 * Peak memory of one worker process's training step, by layout (issue #52): the analytic part of ringlab's memory
 * model. Pure.
 *
 * What a rank holds (ZeRO's accounting, Rajbhandari et al. 2020, in fp32 as the worker trains: 4 bytes a number):
 *   parameters      its own: all of them (ddp, fsdp none), 1/dpShard (fsdp), 1/tp of each block's matrices (tensor),
 *                   its stage's (pipeline);
 *   gradients       as many; DDP keeps a second copy in its buckets (ddp, and a replicated pipeline stage);
 *   optimizer       SGD with momentum one number per parameter, AdamW two (on the rank's own parameters);
 *   gathered        FSDP's whole parameters for the unit it computes (full: the root and one block, or 1 + prefetch
 * blocks; grad-op: every unit from forward to backward) and their gradients before the reduce-scatter;
 * activations what autograd keeps for backward, per token in flight (src/catalogue/transformer-activations.json, a
 *                   census of the worker's own model): b × s tokens, a pipeline stage's micro-batches in flight
 *                   (GPipe: all m; 1F1B: at most the stages from it to the last), split by tp inside the blocks;
 *   transient       at the start of backward, the loss's two gradients over the vocabulary (last stage): the gradient
 *                   of its log-softmax output and of the logits, 4 bytes a number each, beside the saved log-softmax;
 *   casts           under bf16 or amp autocast, the 16-bit copy of every matrix the rank multiplies by (2 bytes a
 *                   number), made in forward and kept for backward.
 * The step's peak is the state that lives through the step plus the larger of what forward leaves (activations and
 * the loss's gradient) and what backward builds up (the gradients), since backward frees activations as it makes
 * gradients. What the process adds on top (the allocator's caches, threads, communication buffers) is the calibration's
 * affine fit from single-node runs (src/predict/memory.ts): peak = overhead + scale × this.
 *
 * Image models have no census: their activations are their planning figure in the worker's registry (registry.json:
 * planning.activationMibPerImage) and FSDP's gathered unit is counted as the whole model (an upper bound).
 */
import census from "../catalogue/transformer-activations.json" with { type: "json" };
import { LANGUAGE_SHAPE, NATIVE_IMAGE_SIZE, PARAMETER_COUNT, PLANNING, type Model } from "../config/registry.ts";
import { stageBlocks, type ParallelDims } from "./layout.ts";
import { blockParameters, shapeOf, type TransformerShape } from "./transformer.ts";

const BYTES = 4;
const MIB = 2 ** 20;
/**
 * Of a block's activations per token (16 widths in fp32), those tensor parallelism splits: q, k, v, the attention's
 * output and its copy, the MLP's two 4h tensors (13 of 17 widths); the LayerNorms' and the residual's stay whole.
 */
const TENSOR_SPLIT_SHARE = 13 / 17;

export interface MemoryQuestion {
  readonly model: string;
  /** Samples per data-parallel replica and step (the worker's --batch-size). */
  readonly batchSize: number;
  readonly knobs: Readonly<Record<string, unknown>>;
  readonly dims: ParallelDims;
}

/** One rank's bytes by part (before the calibration's overhead and scale). */
export interface RankMemory {
  /** The pipeline stage (0 without a pipeline): ranks of one stage hold the same. */
  readonly stage: number;
  readonly parameters: number;
  readonly gradients: number;
  readonly buckets: number;
  readonly optimizer: number;
  readonly gathered: number;
  readonly activations: number;
  readonly transient: number;
  readonly casts: number;
  /** What lives through the step + max(forward's activations and transient, backward's gradients). */
  readonly peak: number;
}

interface Parts {
  /** Numbers of the rank's own parameters, and of the model's largest FSDP unit gathered at once. */
  readonly own: number;
  readonly whole: number;
  readonly gatheredUnit: number;
  /** Activation bytes per token in flight, and the loss's gradient per token (last stage). */
  readonly activationPerToken: number;
  readonly transientPerToken: number;
  /** Numbers of the matrices this rank multiplies by (what autocast copies to 16 bits). */
  readonly matrices: number;
}

/**
 * What a layout changes in a rank's memory, as its unit (src/layouts/) says: the seam between the layouts and this
 * model.
 */
export interface MemoryTerms {
  /**
   * The rank's parameters, gradients and optimizer state sharded over dpShard, and what it gathers of them: "full",
   * one unit at a time (ZeRO-3); "grad-op", the whole from forward to backward (ZeRO-2); "none", no sharding.
   */
  readonly sharding: "none" | "full" | "grad-op";
  /** DDP's second copy of the gradients, in its buckets. */
  readonly gradientBuckets: boolean;
  /** Samples whose activations the rank of `stage` holds at the end of forward, of `batchSize` per replica. */
  samplesInFlight(batchSize: number, stage: number): number;
}

/**
 * The rank's memory at every pipeline stage (one entry without a pipeline); `terms`: its layout unit's (src/layouts/
 * memoryTermsOf).
 */
export function rankMemory(question: MemoryQuestion, terms: MemoryTerms): RankMemory[] {
  return Array.from({ length: question.dims.pp }, (_, stage) => stageMemory(question, terms, stage));
}

function stageMemory(question: MemoryQuestion, terms: MemoryTerms, stage: number): RankMemory {
  const { knobs, dims } = question;
  const parts = languageParts(question, stage) ?? imageParts(question);
  const sharded = terms.sharding !== "none";
  const parameters = BYTES * (sharded ? parts.own / dims.dpShard : parts.own);
  const gradients = parameters;
  const buckets = terms.gradientBuckets ? gradients : 0;
  const optimizer = parameters * optimizerNumbers(knobs);
  const gathered = !sharded ? 0 : BYTES * (terms.sharding === "grad-op" ? parts.whole : parts.gatheredUnit);
  const perSample = shapeOf(question.model, knobs)?.sequenceLength ?? 1;
  const tokens = terms.samplesInFlight(question.batchSize, stage) * perSample;
  const activations = tokens * parts.activationPerToken;
  const transient = tokens * parts.transientPerToken;
  const casts = knobs["precision"] === "bf16" || knobs["precision"] === "amp" ? 2 * parts.matrices : 0;
  // Backward's gradients: the rank's whole (unsharded) gradients, or under FSDP its shards and one unit's whole.
  const backward = sharded ? gradients + BYTES * parts.gatheredUnit : gradients;
  const peak = parameters + buckets + optimizer + gathered + Math.max(activations + transient + casts, backward);
  return { stage, parameters, gradients, buckets, optimizer, gathered, activations, transient, casts, peak };
}

function optimizerNumbers(knobs: Readonly<Record<string, unknown>>): number {
  if (knobs["optimizer"] === "adamw") return 2;
  return typeof knobs["momentum"] === "number" && knobs["momentum"] > 0 ? 1 : 0;
}

function languageParts(question: MemoryQuestion, stage: number): Parts | undefined {
  const shape = shapeOf(question.model, question.knobs);
  if (shape === undefined) return undefined;
  const { pp, tp } = question.dims;
  const positions = (LANGUAGE_SHAPE as Readonly<Record<string, TransformerShape>>)[question.model]!.sequenceLength;
  const h = shape.width;
  // A block under tensor parallelism: its matrices and their column biases split, the row biases and LayerNorms whole.
  const block = tp === 1 ? blockParameters(shape) : (12 * h * h + 7 * h) / tp + 6 * h;
  const embeddings = shape.vocab * h + positions * h;
  const final = 2 * h + h * shape.vocab;
  const first = stage === 0;
  const last = stage === pp - 1;
  const own = stageBlocks(shape.layers, pp, stage) * block + (first ? embeddings : 0) + (last ? final : 0);
  const whole = shape.layers * block + embeddings + final;
  const prefetch = typeof question.knobs["fsdpPrefetch"] === "number" ? question.knobs["fsdpPrefetch"] : 0;
  const blocks = stageBlocks(shape.layers, pp, stage);
  // A block's matrices (q, k, v, the projections, the MLP's two layers: 12h², split by tp), and the head's (last
  // stage).
  const matrices = (blocks * (12 * h * h)) / tp + (last ? h * shape.vocab : 0);
  return {
    own,
    whole,
    gatheredUnit: embeddings + final + (1 + prefetch) * block,
    activationPerToken: languageActivationPerToken(shape, question.knobs, blocks, tp, first, last),
    transientPerToken: last ? 2 * BYTES * shape.vocab : 0,
    matrices,
  };
}

/** Bytes autograd keeps per token on a rank with `blocks` blocks (the census, split by tensor parallelism). */
export function languageActivationPerToken(
  shape: TransformerShape,
  knobs: Readonly<Record<string, unknown>>,
  blocks: number,
  tp: number,
  first: boolean,
  last: boolean,
): number {
  const coefficients = knobs["precision"] === "bf16" || knobs["precision"] === "amp" ? census.bf16 : census.fp32;
  const perBlock =
    coefficients.layersTimesWidth * shape.width * (1 - TENSOR_SPLIT_SHARE + TENSOR_SPLIT_SHARE / tp) +
    (coefficients.layersTimesHeads * shape.heads) / tp;
  // Checkpointed blocks keep their input (fp32) and compute one block's activations again in backward at a time.
  const kept = knobs["activationCheckpointing"] === true ? blocks * BYTES * shape.width + perBlock : blocks * perBlock;
  return (
    kept +
    (first ? coefficients.constant : 0) +
    (last ? coefficients.width * shape.width + coefficients.vocab * shape.vocab : 0)
  );
}

function imageParts(question: MemoryQuestion): Parts {
  const model = question.model as Model;
  const parameters = PARAMETER_COUNT[model];
  const imageSize =
    typeof question.knobs["imageSize"] === "number" ? question.knobs["imageSize"] : NATIVE_IMAGE_SIZE[model]!;
  const precision = question.knobs["precision"] === "amp" || question.knobs["precision"] === "bf16" ? "amp" : "fp32";
  // Every image model of the registry has its figure (src/config/registry.ts does not load without it); a model the
  // registry does not know has none, nor a parameter count or image size.
  const perImage =
    (PLANNING[model]?.activationMibPerImage[precision] ?? 0) * MIB * (imageSize / NATIVE_IMAGE_SIZE[model]!) ** 2;
  // The image models' census (planning.activationMibPerImage) was taken under autocast: its 16-bit weight copies are in
  // it.
  return {
    own: parameters,
    whole: parameters,
    gatheredUnit: parameters,
    activationPerToken: perImage,
    transientPerToken: 0,
    matrices: 0,
  };
}

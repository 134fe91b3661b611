/**
 * Peak memory of one worker process's training step, by layout (issues #52, #68): the analytic part of ringlab's
 * memory model. Pure.
 *
 * What a rank holds, term by term:
 *   model states    parameters, gradients (and DDP's buckets), master weights, optimizer state, FSDP's gathered units
 *                   and their gradients, autocast's 16-bit weight copies: ./model-states.ts, one recipe per framework
 *                   (ringlab's worker, PyTorch's FSDP2 mixed-precision policy, the ZeRO paper, DeepSpeed), on the
 *                   rank's own parameters: all of them (ddp), its shard (fsdp), 1/tp of each block's matrices (tensor),
 *                   its stage's (pipeline);
 *   activations     what forward keeps for backward, per token in flight (./activations.ts: Korthikanti et al.'s
 *                   terms for each family's block, checked against a census of the worker's model): b × s tokens, a
 *                   pipeline stage's micro-batches in flight (GPipe: all m; 1F1B: at most the stages from it to the
 *                   last), split by tp inside the blocks; under checkpointing, what its mode keeps, and one block's
 *                   recomputed tensors while its backward runs;
 *   transient       at the start of backward, the loss's two gradients over the vocabulary (last stage), fp32.
 * The step's peak is what lives through the step plus the larger of what forward leaves (activations, the loss's
 * gradients, autocast's copies) and what backward builds up (the gradients), since backward frees activations as it
 * makes gradients. What the process adds on top (the allocator's caches, threads, communication buffers) is the
 * calibration's affine fit (src/predict/memory.ts): peak = overhead + scale × this.
 *
 * Image models: their activations are their planning figure in the worker's registry (registry.json:
 * planning.activationMibPerImage) and FSDP's gathered unit is counted as the whole model (an upper bound).
 */
import { NATIVE_IMAGE_SIZE, PARAMETER_COUNT, PLANNING, type Model, shapeOf } from "../config/registry.ts";
import { type ActivationStorage, lossGradientBytes, stageActivationBytes } from "./activations.ts";
import { stageBlocks, type ParallelDims } from "./layout.ts";
import type { DataParallelSharding } from "../layouts/composition.ts";
import { STATE_RECIPES, type StateBytes, type StateRecipeName } from "./model-states.ts";
import {
  blockMatrixWeights,
  blockParametersPerTensorRank,
  checkpointingOf,
  parameterParts,
  type TransformerShape,
} from "./transformer.ts";

const MIB = 2 ** 20;
const SIXTEEN_BIT = new Set(["bf16", "fp16", "amp"]);

export interface MemoryQuestion {
  readonly model: string;
  /** Samples per data-parallel replica and step (the worker's --batch-size). */
  readonly batchSize: number;
  readonly knobs: Readonly<Record<string, unknown>>;
  readonly dims: ParallelDims;
  /** Whose accounting of the model states (default: ringlab's worker). */
  readonly recipe?: StateRecipeName;
  /** A shape given outright (a published case's), instead of the registry's model with the knobs'. */
  readonly shape?: TransformerShape;
}

/** One rank's bytes by part (before the calibration's overhead and scale). */
export interface RankMemory extends StateBytes {
  /** The pipeline stage (0 without a pipeline): ranks of one stage hold the same. */
  readonly stage: number;
  readonly activations: number;
  readonly transient: number;
  /** What lives through the step + max(forward's activations, transient and casts, backward's gradients). */
  readonly peak: number;
}

interface Parts {
  /** Numbers of the rank's own parameters, and of the model's largest FSDP unit gathered at once. */
  readonly own: number;
  readonly gatheredUnit: number;
  /** Activation bytes per token in flight, and the loss's gradients per token (last stage). */
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
  /** What the data-parallel ranks shard (ZeRO's stages): nothing, the optimizer state, the gradients too, all. */
  readonly sharding: DataParallelSharding;
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
  const parts = languageParts(question, terms, stage) ?? imageParts(question);
  const { sharding } = terms;
  const states = STATE_RECIPES[question.recipe ?? "worker"].bytes({
    parameters: parts.own,
    // The ranks that share one copy of the sharded states (ZeRO-1's optimizer, FSDP's shard group): dpShard.
    shards: dims.dpShard,
    sharding,
    sixteenBit: SIXTEEN_BIT.has(String(knobs["precision"])),
    optimizerNumbers: optimizerNumbers(knobs),
    gatheredUnit: parts.gatheredUnit,
    matrices: parts.matrices,
    ddpBuckets: terms.gradientBuckets,
    offload: "none",
  });
  const tokens = terms.samplesInFlight(question.batchSize, stage) * (shapeAsked(question)?.sequenceLength ?? 1);
  const activations = tokens * parts.activationPerToken;
  const transient = tokens * parts.transientPerToken;
  const lives = states.parameters + states.buckets + states.master + states.optimizer + states.gathered;
  const backward = states.gradients + states.gatheredGradients;
  const peak = lives + Math.max(activations + transient + states.casts, backward);
  return { stage, ...states, activations, transient, peak };
}

function optimizerNumbers(knobs: Readonly<Record<string, unknown>>): number {
  if (knobs["optimizer"] === "adamw") return 2;
  return typeof knobs["momentum"] === "number" && knobs["momentum"] > 0 ? 1 : 0;
}

function shapeAsked(question: MemoryQuestion): TransformerShape | undefined {
  return question.shape ?? shapeOf(question.model, question.knobs);
}

/**
 * How a run stores its activations: the worker, DDP and ZeRO-1 (fp32 weights) under autocast; PyTorch's FSDP2 policy
 * casts the weights themselves to 16 bits, and with them every activation.
 */
function storageOf(question: MemoryQuestion, terms: MemoryTerms): ActivationStorage {
  if (!SIXTEEN_BIT.has(String(question.knobs["precision"]))) return "fp32";
  const policy = question.recipe !== undefined && question.recipe !== "worker";
  const fsdp = terms.sharding === "gradients" || terms.sharding === "full";
  return policy && (fsdp || question.recipe !== "pytorch") ? "16-bit" : "autocast";
}

function languageParts(question: MemoryQuestion, terms: MemoryTerms, stage: number): Parts | undefined {
  const shape = shapeAsked(question);
  if (shape === undefined) return undefined;
  const { pp, tp } = question.dims;
  // A block under tensor parallelism: its matrices and their column biases split, the row biases and norms whole.
  const block = blockParametersPerTensorRank(shape, tp);
  const { embeddings, final } = parameterParts(shape);
  const first = stage === 0;
  const last = stage === pp - 1;
  const blocks = stageBlocks(shape.layers, pp, stage);
  const own = blocks * block + (first ? embeddings : 0) + (last ? final : 0);
  const prefetch = typeof question.knobs["fsdpPrefetch"] === "number" ? question.knobs["fsdpPrefetch"] : 0;
  // A block's matrices (split by tp), and the head's (last stage).
  const matrices = (blocks * blockMatrixWeights(shape)) / tp + (last ? shape.width * shape.vocab : 0);
  const activations = stageActivationBytes(shape, storageOf(question, terms), checkpointingOf(question.knobs), {
    blocks,
    tp,
    first,
    last,
  });
  return {
    own,
    gatheredUnit: embeddings + final + (1 + prefetch) * block,
    activationPerToken: activations.kept + activations.recomputed,
    transientPerToken: last ? lossGradientBytes(shape) : 0,
    matrices,
  };
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
    gatheredUnit: parameters,
    activationPerToken: perImage,
    transientPerToken: 0,
    matrices: 0,
  };
}

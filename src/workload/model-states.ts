/**
 * Model states per rank: parameters, gradients, optimizer state and master weights, by how a framework keeps them
 * under each data-parallel sharding (ZeRO's stages: none, optimizer, gradients, full). One recipe per framework, in a
 * table, each term with the source of its formula. Pure.
 *
 * Numbers below: Ψ the parameters a rank would hold unsharded (its pipeline stage, its share of tensor-parallel
 * matrices), N the ranks the states are sharded over, k the optimizer's fp32 numbers per parameter (AdamW 2, SGD with
 * momentum 1), U the parameters gathered at once under full sharding (an FSDP unit, DeepSpeed's largest layer).
 */

import type { DataParallelSharding } from "../layouts/composition.ts";

export const OFFLOADS = ["none", "optimizer", "parameters-and-optimizer"] as const;
export type Offload = (typeof OFFLOADS)[number];

export interface StateQuestion {
  /** Ψ. */
  readonly parameters: number;
  /** N. */
  readonly shards: number;
  readonly sharding: DataParallelSharding;
  /** Under a 16-bit precision (bf16, fp16, amp). */
  readonly sixteenBit: boolean;
  /** k. */
  readonly optimizerNumbers: number;
  /** U: gathered at once under full sharding. */
  readonly gatheredUnit: number;
  /** Weights of the matrices a rank multiplies by: what autocast copies to 16 bits. */
  readonly matrices: number;
  /** DDP keeps its gradient buckets beside the gradients (gradient_as_bucket_view off, its default). */
  readonly ddpBuckets: boolean;
  readonly offload: Offload;
}

/** A rank's model states in bytes, by term; gathered and its gradients live from a unit's forward to its backward. */
export interface StateBytes {
  readonly parameters: number;
  readonly gradients: number;
  readonly buckets: number;
  /** fp32 master weights kept apart from the 16-bit parameters the model computes with. */
  readonly master: number;
  readonly optimizer: number;
  /** Whole parameters gathered for the units computing (FSDP's all-gather output, DeepSpeed's largest layer). */
  readonly gathered: number;
  /** In backward, the gathered unit's whole gradients before they are reduced (and their reduce-type copy). */
  readonly gatheredGradients: number;
  /** autocast's 16-bit copies of the weights, made in forward and kept for backward. */
  readonly casts: number;
}

export interface StateRecipe {
  /** Where its formulas come from. */
  readonly source: string;
  /** The shardings it has a formula for. */
  readonly shardings: readonly DataParallelSharding[];
  /** Whether it needs a 16-bit precision (a mixed-precision recipe) and knows CPU offload. */
  readonly sixteenBitOnly: boolean;
  readonly offloads: readonly Offload[];
  readonly bytes: (question: StateQuestion) => StateBytes;
}

const NOTHING: StateBytes = {
  parameters: 0,
  gradients: 0,
  buckets: 0,
  master: 0,
  optimizer: 0,
  gathered: 0,
  gatheredGradients: 0,
  casts: 0,
};

/** fp32 weights trained as they are, or under autocast: what torch does without a mixed-precision policy. */
function fp32Weights(question: StateQuestion): StateBytes {
  const { parameters: psi, shards: n, sharding, optimizerNumbers: k } = question;
  const sharded = sharding === "gradients" || sharding === "full";
  const own = sharded ? psi / n : psi;
  return {
    ...NOTHING,
    parameters: 4 * own,
    gradients: 4 * own,
    buckets: question.ddpBuckets && !sharded ? 4 * psi : 0,
    optimizer: (4 * k * psi) / (sharding === "none" ? 1 : n),
    gathered: sharding === "full" ? 4 * question.gatheredUnit : sharding === "gradients" ? 4 * psi : 0,
    gatheredGradients: sharded ? 4 * question.gatheredUnit : 0,
    casts: question.sixteenBit ? 2 * question.matrices : 0,
  };
}

export const STATE_RECIPES = {
  /**
   * ringlab's worker: fp32 weights, torch.autocast for bf16 and amp, FSDP2 (fully_shard) without a mixed-precision
   * policy, so its all-gathers and gradients are fp32; DDP's buckets a second copy of the gradients.
   */
  worker: {
    source: "ringlab's worker (docker/worker/ringlab_worker/parallel/): fp32 weights, autocast, FSDP2 without a policy",
    shardings: ["none", "gradients", "full"],
    sixteenBitOnly: false,
    offloads: ["none"],
    bytes: fp32Weights,
  },
  /**
   * PyTorch as torchtitan trains: a 16-bit precision through FSDP2's MixedPrecisionPolicy (param_dtype 16-bit,
   * reduce_dtype fp32): the sharded parameters are the fp32 master (4Ψ/N), their gradients fp32 shards (4Ψ/N), AdamW's
   * state on the shards (4kΨ/N); the units computing are gathered in 16 bits (2U, FSDP_SHARD_GRAD_OP: the whole 2Ψ),
   * and a unit's backward makes its 16-bit gradients and their fp32 copy for the reduce-scatter (6U). DDP (none) and
   * ZeRO-1 (ZeroRedundancyOptimizer) keep fp32 weights under autocast, as the worker does.
   */
  pytorch: {
    source:
      "PyTorch FSDP2 MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) as torchtitan sets it " +
      "(torch/distributed/fsdp/_fully_shard/_fsdp_param.py); DDP with torch.autocast",
    shardings: ["none", "optimizer", "gradients", "full"],
    sixteenBitOnly: false,
    offloads: ["none"],
    bytes: (question) => {
      const sharded = question.sharding === "gradients" || question.sharding === "full";
      if (!question.sixteenBit || !sharded) return fp32Weights(question);
      const own = question.parameters / question.shards;
      return {
        ...NOTHING,
        parameters: 4 * own,
        gradients: 4 * own,
        optimizer: 4 * question.optimizerNumbers * own,
        gathered: 2 * (question.sharding === "full" ? question.gatheredUnit : question.parameters),
        gatheredGradients: (2 + 4) * question.gatheredUnit,
      };
    },
  },
  /**
   * The ZeRO paper's accounting (Rajbhandari et al. 2019, arXiv 1910.02054, section 3.1 and Table 1): mixed-precision
   * training keeps 16-bit parameters (2Ψ) and gradients (2Ψ) and K = 4 + 4k bytes of optimizer state per parameter
   * (fp32 master weights and AdamW's momentum and variance: K = 12); P_os divides K by N, P_os+g the gradients too,
   * P_os+g+p everything: (2 + 2 + K)Ψ, 2Ψ + 2Ψ + KΨ/N, 2Ψ + (2 + K)Ψ/N, (2 + 2 + K)Ψ/N.
   */
  "zero-paper": {
    source: "Rajbhandari et al. 2019 (arXiv 1910.02054), section 3.1 and Table 1",
    shardings: ["none", "optimizer", "gradients", "full"],
    sixteenBitOnly: true,
    offloads: ["none"],
    bytes: ({ parameters: psi, shards: n, sharding, optimizerNumbers: k }) => ({
      ...NOTHING,
      parameters: (2 * psi) / (sharding === "full" ? n : 1),
      gradients: (2 * psi) / (sharding === "gradients" || sharding === "full" ? n : 1),
      master: (4 * psi) / (sharding === "none" ? 1 : n),
      optimizer: (4 * k * psi) / (sharding === "none" ? 1 : n),
    }),
  },
  /**
   * DeepSpeed's implementation as its memory estimators count it (docs/code-docs/source/memory.rst, "Memory
   * Requirements"; estimate_zero2_model_states_mem_needs in deepspeed/runtime/zero/stage_1_and_2.py and
   * estimate_zero3_model_states_mem_needs in stage3.py): ZeRO-2 keeps the 16-bit parameters and gradients whole (4Ψ)
   * and 16Ψ/N of fp32 state (master weights, gradients, Adam's two); offloading the optimizer leaves the 16-bit
   * parameters (2Ψ). ZeRO-3 keeps 18Ψ/N (the 16-bit parameters' shard too) and the largest layer's 16-bit parameters
   * and gradients gathered (4U); offloading the optimizer leaves 2Ψ/N + 4U, offloading both 4U.
   */
  deepspeed: {
    source:
      "DeepSpeed docs/code-docs/source/memory.rst and its estimate_zero2/zero3_model_states_mem_needs " +
      "(deepspeed/runtime/zero/stage_1_and_2.py, stage3.py)",
    shardings: ["gradients", "full"],
    sixteenBitOnly: true,
    offloads: ["none", "optimizer", "parameters-and-optimizer"],
    bytes: ({ parameters: psi, shards: n, sharding, optimizerNumbers: k, gatheredUnit: u, offload }) => {
      const onGpu = (bytes: number, offloaded: boolean) => (offloaded ? 0 : bytes);
      const fp32State = offload !== "none";
      if (sharding === "gradients") {
        return {
          ...NOTHING,
          parameters: 2 * psi,
          gradients: onGpu(2 * psi + (4 * psi) / n, fp32State),
          master: onGpu((4 * psi) / n, fp32State),
          optimizer: onGpu((4 * k * psi) / n, fp32State),
        };
      }
      return {
        ...NOTHING,
        parameters: onGpu((2 * psi) / n, offload === "parameters-and-optimizer"),
        gradients: onGpu((4 * psi) / n, fp32State),
        master: onGpu((4 * psi) / n, fp32State),
        optimizer: onGpu((4 * k * psi) / n, fp32State),
        gathered: 2 * u,
        gatheredGradients: 2 * u,
      };
    },
  },
} as const satisfies Readonly<Record<string, StateRecipe>>;

export type StateRecipeName = keyof typeof STATE_RECIPES;
export const STATE_RECIPE_NAMES = Object.keys(STATE_RECIPES) as StateRecipeName[];

/** Why a recipe has no formula for the question, or undefined. */
export function stateProblem(name: StateRecipeName, question: StateQuestion): string | undefined {
  const recipe: StateRecipe = STATE_RECIPES[name];
  if (!recipe.shardings.includes(question.sharding))
    return `${name} has no formula for dpSharding ${question.sharding} (it has ${recipe.shardings.join(", ")})`;
  if (recipe.sixteenBitOnly && !question.sixteenBit)
    return `${name} counts mixed-precision training: a 16-bit precision (bf16, fp16, amp)`;
  if (!recipe.offloads.includes(question.offload))
    return `${name} has no formula for offload ${question.offload} (it has ${recipe.offloads.join(", ")})`;
  return undefined;
}

/** Everything but the activations and autocast's copies: what ZeRO's paper and DeepSpeed call model states. */
export function modelStateBytes(bytes: StateBytes): number {
  return (
    bytes.parameters +
    bytes.gradients +
    bytes.buckets +
    bytes.master +
    bytes.optimizer +
    bytes.gathered +
    bytes.gatheredGradients
  );
}

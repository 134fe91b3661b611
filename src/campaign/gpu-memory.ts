/**
 * Whether a training run fits in one GPU's memory, for `ringlab plan`. Pure. An estimate, not a measurement: it
 * flags configurations that cannot fit (batch 96 of ResNet-101 in fp32 on a 16 GB T4) before instances are paid
 * for, and leaves a margin rather than promise that a configuration near the limit fits.
 *
 * Memory of one training step = a fixed part (CUDA context, cuDNN/cuBLAS handles and workspaces, the caching
 * allocator's slack) + the model state (fp32 weights, gradients, DDP's gradient buckets; with amp also the fp16
 * weight copies autocast keeps) + the input batch + the activations autograd keeps for the backward pass, per image,
 * times a peak factor for what the backward pass holds at once on top of them (activation gradients).
 */
import { instanceTypeFacts } from "../catalogue/aws-instance-types.ts";
import { MODEL_KIND, NATIVE_IMAGE_SIZE, PARAMETER_COUNT, planningOf } from "../config/registry.ts";
import type { CampaignFile, Model } from "../config/schema.ts";
import { targetOf } from "../targets/index.ts";
import type { CampaignPlan } from "./plan.ts";

export type Precision = "fp32" | "amp";

/**
 * The worker's default image sizes (its registry, docker/worker/ringlab_worker/registry.json: each model's imageSize).
 */
export { NATIVE_IMAGE_SIZE };

/** Backward-pass peak over the saved activations: activation gradients and temporaries (an allowance, not measured). */
const PEAK_OVER_SAVED = 1.25;
/** CUDA context (~300-500 MiB), cuDNN/cuBLAS workspaces and allocator slack. */
const FIXED_OVERHEAD_GIB = 1.5;
/** Share of the nominal memory a process gets (ECC and the driver take the rest: a 16 GB T4 shows 15 GiB). */
const USABLE_FRACTION = 0.93;

const MIB = 2 ** 20;
const GIB = 2 ** 30;

/**
 * Estimated peak GPU memory of one worker's training step, in GiB. An image model's activations per image, at its
 * native image size in fp32 and in amp (16-bit activations where autocast runs an operation in 16 bits), are its
 * planning figure in the worker's registry (registry.json: planning.activationMibPerImage), so a new model brings its
 * own. They were measured with test/bench/activation-memory.py on the build machine (the worker's models, torch 1.13 /
 * torchvision 0.14, saved_tensors_hooks; amp as autocast to bfloat16 on the CPU, 2 bytes like float16 on a GPU), not
 * yet checked against torch.cuda.max_memory_allocated on a GPU: PEAK_OVER_SAVED and FIXED_OVERHEAD_GIB are
 * allowances from experience, not measurements.
 */
export function trainingMemoryGiB(
  model: Model,
  batchSize: number,
  precision: Precision,
  imageSize = NATIVE_IMAGE_SIZE[model]!,
): number {
  const parameters = PARAMETER_COUNT[model];
  // fp32 weights, gradients and DDP's bucket copy of the gradients; amp adds autocast's fp16 weight copies.
  const modelStateBytes = parameters * (4 + 4 + 4 + (precision === "amp" ? 2 : 0));
  const pixels = (imageSize / NATIVE_IMAGE_SIZE[model]!) ** 2;
  const activationBytes =
    batchSize * planningOf(model).activationMibPerImage[precision] * MIB * pixels * PEAK_OVER_SAVED;
  const inputBytes = batchSize * 3 * imageSize * imageSize * 4;
  return FIXED_OVERHEAD_GIB + (modelStateBytes + activationBytes + inputBytes) / GIB;
}

/** GiB one process can use on a GPU of this nominal size. */
export function usableGpuMemoryGiB(nominalGiB: number): number {
  return nominalGiB * USABLE_FRACTION;
}

/**
 * One line per training configuration of the plan that would not fit the instance type's GPU. None where the target
 * rents no nodes by instance type (the local testbed runs on CPU) or for an instance type the catalogue does not know.
 */
export function checkGpuMemory(plan: CampaignPlan, file: CampaignFile): string[] {
  const instanceType = targetOf(file.testbed).instanceTypeOf?.(file.testbed);
  if (instanceType === undefined) return [];
  const facts = instanceTypeFacts(instanceType);
  if (facts === undefined || facts.gpus === 0) return [];
  const available = usableGpuMemoryGiB(facts.gpuMemoryGiB);
  const problems = new Map<string, string>();
  for (const run of plan.runs) {
    // Language models: their layouts' memory model (src/predict/memory.ts) answers for them. Every image model is
    // checked: its activation figure is required by the registry, not looked up and skipped when absent.
    if (run.job !== "train" || MODEL_KIND[run.model!] !== "image") continue;
    const precision = (run.knobs.precision ?? "fp32") as Precision;
    const imageSize = run.knobs.imageSize === undefined ? undefined : Number(run.knobs.imageSize);
    const key = `${run.model}/${run.batchSize}/${precision}/${imageSize ?? "native"}`;
    const needed = trainingMemoryGiB(run.model!, run.batchSize!, precision, imageSize);
    if (needed <= available || problems.has(key)) continue;
    const size = imageSize === undefined ? "" : ` at ${imageSize} px`;
    const remedy = precision === "fp32" ? "use precision amp, a smaller batch size, or" : "use a smaller batch size or";
    problems.set(
      key,
      `${run.model} at batch ${run.batchSize} in ${precision}${size} needs about ${needed.toFixed(1)} GiB of GPU memory, ` +
        `more than the ${available.toFixed(1)} GiB of one ${facts.gpuModel} (${instanceType}); ${remedy} an instance type with more GPU memory`,
    );
  }
  return [...problems.values()];
}

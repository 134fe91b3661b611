/**
 * What a run's software did beyond its layout and precision (issue #69, part 2), each from a source, one entry each:
 *   - torch.compile: a published gain on the step's compute (fitted, said below);
 *   - Float8 linears (torchao.float8): each linear's three GEMMs at the datasheet's fp8 peak instead of its bf16 one,
 *     plus the casts to float8 as bytes over HBM bandwidth, torchao's own roofline (roofline_utils.py);
 *   - asynchronous tensor parallelism: the tensor-parallel collectives hidden under the matrix products they feed
 *     (torchtitan's async TP decomposes them into the GEMMs) instead of exposed;
 *   - the transport NCCL's inter-node traffic ran over: NCCL's socket transport with one socket a ring carries what
 *     one TCP stream does, whatever the NIC's rate.
 * A measured single-GPU throughput already holds its run's software: compile and Float8 change only a compute figure
 * derived from the published efficiency. Pure.
 */
import type { GroupCollective } from "./collectives.ts";
import type { ComputeAnswer, LanguageCompute } from "./compute.ts";
import { peakTflops, type GpuSpec, type Sourced } from "./description.ts";

export const FLOAT8_RECIPES = ["none", "tensorwise", "rowwise"] as const;
export type Float8Recipe = (typeof FLOAT8_RECIPES)[number];

/**
 * nccl-ib: NCCL over InfiniBand verbs (InfiniBand, RoCE); nccl-efa: over AWS EFA (aws-ofi-nccl); nccl-socket: NCCL's
 * socket transport over TCP, one socket a ring (NCCL before 2.5, which had no NCCL_NSOCKS_PERTHREAD).
 */
export const TRANSPORTS = ["nccl-ib", "nccl-efa", "nccl-socket"] as const;
export type Transport = (typeof TRANSPORTS)[number];

export interface RunSoftware {
  readonly compile: boolean;
  readonly float8: Float8Recipe;
  readonly asyncTensorParallel: boolean;
  /** Absent: what the cluster's NICs run natively (verbs on InfiniBand and RoCE, EFA on EFA). */
  readonly transport?: Transport | undefined;
}

export const PLAIN_SOFTWARE: RunSoftware = { compile: false, float8: "none", asyncTensorParallel: false };

/**
 * torch.compile's gain on forward and backward. FITTED on one in-sample pair of the published set: torchtitan's
 * Table 1 (benchmarks/llama3_h100_202412_torchtitan.md at b5bcd76c), Llama 3.1 8B FSDP on 8 H100, 5,762 tokens/s eager
 * and 6,667 compiled (cases torchtitan-llama3.1-8b-fsdp-8h100 and torchtitan-llama3.1-8b-fsdp-compile-8h100). No
 * held-out case was used. It lies inside the 10-23 % MFU gain IBM and Meta publish for compile on Llama 7B-70B
 * (pytorch.org/blog/maximizing-training-throughput). One factor for every model and GPU: compile fuses the
 * memory-bound element-wise kernels, whose share of a step differs by width and HBM bandwidth, which this ignores.
 */
export const COMPILE_SPEEDUP: Sourced = {
  value: 6667 / 5762,
  source:
    "fitted on torchtitan's Table 1 pair (8 H100, Llama 3.1 8B FSDP: 5,762 eager, 6,667 compiled; in-sample cases " +
    "torchtitan-llama3.1-8b-fsdp-8h100 and -compile-8h100), inside IBM's and Meta's published 10-23 % (pytorch.org/blog/maximizing-training-throughput)",
};

/**
 * torchao's Float8 roofline (pytorch/ao torchao/testing/training/roofline_utils.py at 36027d82): a GEMM reaches 78 % of
 * the datasheet peak of its dtype ("based on experimental observation with sample large inputs"), a cast kernel 92 % of
 * the HBM bandwidth; the bytes each cast moves per element of the tensor it casts, by the tensor's role.
 */
export const FLOAT8_ROOFLINE = {
  source: "pytorch/ao torchao/testing/training/roofline_utils.py at 36027d82d (get_tensor_memory_traffic_ovhd_s)",
  achievableGemmShare: 0.78,
  achievableMemoryShare: 0.92,
  /** Bytes moved per element: amax (read bf16), then the cast (read bf16, write float8 row- and column-major). */
  castBytesPerElement: {
    tensorwise: { input: 2 + 2 + 2, weight: 2 + 3 + 3, gradOutput: 2 + 2 + 2 },
    rowwise: { input: 5 + 3, weight: 3 + 4 + 3, gradOutput: 5 + 3 },
  },
} as const;

/** torchtitan's selective per-op checkpointing recomputes every other matrix product; full recomputes all. */
const RECOMPUTED_FORWARD_SHARE = { none: 0, selective: 0.5, full: 1 } as const;

/** A block's linears as (in, out) on one tensor-parallel rank: column-parallel split outputs, row-parallel inputs. */
export function blockLinears(workload: LanguageCompute, tp: number): readonly (readonly [number, number])[] {
  const { width, kvWidth, ffnWidth } = workload;
  return [
    [width, width / tp], // query
    [width, kvWidth / tp], // key
    [width, kvWidth / tp], // value
    [width / tp, width], // attention output
    [width, ffnWidth / tp], // gate
    [width, ffnWidth / tp], // up
    [ffnWidth / tp, width], // down
  ];
}

export interface Float8Question {
  readonly gpu: GpuSpec;
  readonly workload: LanguageCompute;
  readonly recipe: Exclude<Float8Recipe, "none">;
  readonly tensorParallel: number;
  /** Tokens one GPU computes in the step over its blocks' share (samples per GPU × sequence, as compute.ts counts). */
  readonly tokensPerGpu: number;
  /** Tokens of one call of a linear (one micro-batch on this rank): the weight's cast is paid once a call. */
  readonly tokensPerCall: number;
}

/**
 * Seconds Float8 saves in a step: each block linear's bf16 GEMMs less its fp8 GEMMs and its casts (forward GEMMs and
 * the input's and weight's casts again where checkpointing recomputes them); the output head stays bf16 (torchtitan's
 * filter). Negative where the casts cost more than the GEMMs save; NaN where the datasheet lacks a peak or bandwidth.
 */
export function float8SavedSeconds(question: Float8Question): number {
  const { gpu, workload, recipe } = question;
  const bf16 = peakTflops(gpu, "bf16")?.value ?? Number.NaN;
  const fp8 = peakTflops(gpu, "fp8")?.value ?? Number.NaN;
  const bytesPerSecond = (gpu.memoryTBps?.value ?? Number.NaN) * 1e12 * FLOAT8_ROOFLINE.achievableMemoryShare;
  const gemmSeconds = (flops: number, tflops: number) => flops / (tflops * 1e12 * FLOAT8_ROOFLINE.achievableGemmShare);
  const forwardRuns = 1 + RECOMPUTED_FORWARD_SHARE[workload.activationCheckpointing];
  const cast = FLOAT8_ROOFLINE.castBytesPerElement[recipe];
  let perToken = 0;
  for (const [inputs, outputs] of blockLinears(workload, question.tensorParallel)) {
    const gemmFlops = 2 * inputs * outputs;
    const saved = (forwardRuns + 2) * (gemmSeconds(gemmFlops, bf16) - gemmSeconds(gemmFlops, fp8));
    const castBytes =
      forwardRuns * (cast.input * inputs + (cast.weight * inputs * outputs) / question.tokensPerCall) +
      cast.gradOutput * outputs;
    perToken += saved - castBytes / bytesPerSecond;
  }
  return perToken * workload.layers * question.tokensPerGpu;
}

/** Where compile and Float8 change a compute figure derived from the published efficiency, the figure they give. */
export function computeWithSoftware(
  answer: ComputeAnswer,
  software: RunSoftware,
  float8: Omit<Float8Question, "recipe"> | undefined,
): ComputeAnswer | { readonly missing: string } {
  if (answer.basis !== "published efficiency") return answer;
  let seconds = answer.seconds;
  const notes: string[] = [];
  if (software.compile) {
    seconds /= COMPILE_SPEEDUP.value;
    notes.push(`torch.compile ×${COMPILE_SPEEDUP.value.toFixed(3)} (${COMPILE_SPEEDUP.source})`);
  }
  if (software.float8 !== "none" && float8 !== undefined) {
    const saved = float8SavedSeconds({ ...float8, recipe: software.float8 });
    if (Number.isNaN(saved)) {
      return {
        missing: `Float8 needs the ${float8.gpu.name}'s fp8 and bf16 peaks and HBM bandwidth (its catalogue entry)`,
      };
    }
    seconds -= saved;
    notes.push(
      `Float8 ${software.float8} linears ${(1e3 * saved).toFixed(1)} ms less a step (${FLOAT8_ROOFLINE.source})`,
    );
  }
  return notes.length === 0 ? answer : { ...answer, seconds, source: `${answer.source}; ${notes.join("; ")}` };
}

/**
 * Asynchronous tensor parallelism: each tensor-parallel collective runs under the matrix product it feeds, forward
 * (2 all-gathers and 2 reduce-scatters a block) under forward, the rest (backward's and any recomputation's) under
 * backward; without it they stay exposed.
 */
export function withAsyncTensorParallel(
  collectives: readonly GroupCollective[],
  software: RunSoftware,
  forwardCallsPerOp: number,
): GroupCollective[] {
  if (!software.asyncTensorParallel) return [...collectives];
  return collectives.flatMap((collective) => {
    const forwardCalls = Math.min(collective.calls, forwardCallsPerOp);
    return [
      {
        ...collective,
        label: `${collective.label} (async, forward)`,
        calls: forwardCalls,
        overlap: "forward" as const,
      },
      {
        ...collective,
        label: `${collective.label} (async, backward)`,
        calls: collective.calls - forwardCalls,
        overlap: "backward" as const,
      },
    ].filter((entry) => entry.calls > 0);
  });
}

/**
 * NCCL's socket transport with one socket a ring: a ring's inter-node bandwidth is what one TCP stream carries.
 * NVIDIA/nccl#209 (cswinter, 2019-04-20): NCCL 2.3.7 over TCP between two nodes on a 32 Gbit/s network, one ring
 * (NCCL_MIN_NRINGS=1), 2.06 GB/s (NCCL 2.4.2: 1.85); the title figure, "not more than 60 % of wire speed".
 * Those were 2019 cloud hosts, not Horovod's 2017 servers: the stream's rate on another host's CPU is assumed equal.
 */
export const SOCKET_RING_GBPS: Sourced = {
  value: 2.06,
  source:
    "NVIDIA/nccl#209 (cswinter, 2019-04-20): NCCL 2.3.7 over TCP, 2 nodes on 32 Gbit/s, one ring: 2.06 GB/s; " +
    "assumed the same on other hosts (one TCP stream, one CPU thread)",
};

/** The cap a transport puts on a group's inter-node bandwidth (GB/s a node), or none. */
export function interNodeCap(software: RunSoftware): Sourced | undefined {
  return software.transport === "nccl-socket" ? SOCKET_RING_GBPS : undefined;
}

/**
 * What a run's software does to a predicted step (src/cluster/software.ts): torch.compile, Float8 linears, async tensor
 * parallelism and NCCL's socket transport, each through the code `predict --case` runs.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { predictCaseThroughput, type ThroughputCase } from "../../src/cluster/case-throughput.ts";
import { clusterWorkload } from "../../src/cluster/workload.ts";
import { clusterCatalogue } from "../../src/cluster/load.ts";
import {
  COMPILE_SPEEDUP,
  FLOAT8_ROOFLINE,
  float8SavedSeconds,
  SOCKET_RING_GBPS,
  type Float8Question,
} from "../../src/cluster/software.ts";
import type { LanguageCompute } from "../../src/cluster/compute.ts";

const PUBLISHED = fileURLToPath(new URL("../bench/data/published/", import.meta.url));

function predicted(file: ThroughputCase) {
  const answer = predictCaseThroughput(file, PUBLISHED);
  if ("missing" in answer) throw new Error(answer.missing);
  return answer.prediction;
}

/** torchtitan's Llama 3.1 8B FSDP row on one Grand Teton node, as its case gives it. */
const llama8b: ThroughputCase = {
  cluster: "meta-grand-teton-h100",
  nodes: 1,
  model: "llama3.1-8b",
  layout: { dp: 8, dpSharding: "full", tp: 1, pp: 1, cp: 1 },
  batch: { micro: 2, sequence: 8192 },
  precision: "bf16",
  optimizer: "adamw",
  activationCheckpointing: "selective",
};

const language = clusterWorkload("llama3.1-8b", 8192, "selective") as LanguageCompute;
const h100 = clusterCatalogue().gpus.get("h100-sxm5-80gb")!;

describe("torch.compile", () => {
  it("shortens the compute derived from the published efficiency by the published gain, and nothing else", () => {
    const eager = predicted(llama8b);
    const compiled = predicted({ ...llama8b, compile: true });
    expect(compiled.computeSeconds).toBeCloseTo(eager.computeSeconds / COMPILE_SPEEDUP.value, 9);
    expect(compiled.optimizerSeconds).toBe(eager.optimizerSeconds);
    expect(compiled.sources.compute).toContain("torch.compile");
  });

  it("leaves a measured single-GPU throughput alone: the run it was measured on had its own software", () => {
    const dgx1: ThroughputCase = {
      cluster: "dgx-1-v100",
      nodes: 1,
      model: "resnet50",
      layout: { dp: 8, dpSharding: "none", tp: 1, pp: 1, cp: 1 },
      batch: { micro: 256 },
      precision: "amp",
      optimizer: "sgd",
      activationCheckpointing: "none",
      inputs: { gpuThroughput: { value: 1200, unit: "images/s", source: "DLE README, 1 GPU" } },
    };
    expect(predicted({ ...dgx1, compile: true }).computeSeconds).toBe(predicted(dgx1).computeSeconds);
  });
});

describe("Float8 linears (torchao's roofline)", () => {
  const question = (overrides: Partial<Float8Question> = {}): Float8Question => ({
    gpu: h100,
    workload: language,
    recipe: "tensorwise",
    tensorParallel: 1,
    tokensPerGpu: 2 * 8192,
    tokensPerCall: 2 * 8192,
    ...overrides,
  });

  it("saves each block linear's GEMMs at the fp8 peak, less the casts over HBM, as torchao's roofline counts them", () => {
    // One block of Llama 3.1 8B, one token, by hand: its 7 linears (in, out), selective checkpointing's half forward.
    const linears = [
      [4096, 4096],
      [4096, 1024],
      [4096, 1024],
      [4096, 4096],
      [4096, 14336],
      [4096, 14336],
      [14336, 4096],
    ];
    const gemm = (flops: number, tflops: number) => flops / (0.78 * tflops * 1e12);
    let perToken = 0;
    for (const [k, n] of linears) {
      const flops = 2 * k! * n!;
      perToken += 3.5 * (gemm(flops, 989.4) - gemm(flops, 1978.9));
      perToken -= (1.5 * (6 * k! + (8 * k! * n!) / 16384) + 6 * n!) / (0.92 * 3.35e12);
    }
    expect(float8SavedSeconds(question())).toBeCloseTo(perToken * 32 * 16384, 9);
    expect(FLOAT8_ROOFLINE.achievableGemmShare).toBe(0.78);
  });

  it("costs more than it saves on small matrices (torchao: speedup below 1 for small shapes)", () => {
    const small = { ...language, width: 256, kvWidth: 64, ffnWidth: 1024 };
    expect(float8SavedSeconds(question({ workload: small }))).toBeLessThan(0);
    expect(float8SavedSeconds(question())).toBeGreaterThan(0);
  });

  it("speeds a compiled step on the H200 by what it saves, and says where the figure comes from", () => {
    const whitefiber: ThroughputCase = {
      ...llama8b,
      cluster: "clusters/whitefiber-h200.yaml",
      nodes: 4,
      layout: { ...llama8b.layout, dp: 32 },
      compile: true,
    };
    const bf16 = predicted(whitefiber);
    const float8 = predicted({ ...whitefiber, float8: "tensorwise" });
    const h200 = clusterCatalogue().gpus.get("h200-sxm-141gb")!;
    const saved = float8SavedSeconds(question({ gpu: h200 }));
    expect(float8.computeSeconds).toBeCloseTo(bf16.computeSeconds - saved, 9);
    expect(float8.sources.compute).toContain("roofline_utils.py");
  });
});

describe("asynchronous tensor parallelism", () => {
  const twoD: ThroughputCase = {
    cluster: "meta-grand-teton-h100",
    nodes: 32,
    model: "llama3.1-70b",
    layout: { dp: 32, dpSharding: "full", tp: 8, pp: 1, cp: 1 },
    batch: { micro: 16, sequence: 8192 },
    precision: "bf16",
    optimizer: "adamw",
    activationCheckpointing: "full",
  };

  it("hides the tensor-parallel collectives under forward and backward, where synchronous TP waits for them", () => {
    const tensorOnes = (prediction: ReturnType<typeof predicted>) =>
      prediction.collectives.filter((collective) => collective.label.startsWith("tensor-parallel"));
    const sync = predicted(twoD);
    const async = predicted({ ...twoD, asyncTensorParallel: true });
    const total = (list: ReturnType<typeof tensorOnes>) => list.reduce((sum, entry) => sum + entry.seconds, 0);
    const exposed = (list: ReturnType<typeof tensorOnes>) => list.reduce((sum, entry) => sum + entry.exposedSeconds, 0);
    expect(exposed(tensorOnes(sync))).toBeCloseTo(total(tensorOnes(sync)), 9);
    expect(total(tensorOnes(async))).toBeCloseTo(total(tensorOnes(sync)), 9);
    expect(new Set(tensorOnes(async).map((entry) => entry.overlap))).toEqual(new Set(["forward", "backward"]));
    expect(exposed(tensorOnes(async))).toBeLessThan(total(tensorOnes(async)) / 4);
    expect(async.stepSeconds).toBeLessThan(sync.stepSeconds);
  });
});

describe("NCCL's socket transport", () => {
  /** Horovod's VGG-16 on 4 servers × 4 Pascal GPUs, one 25 Gbit/s NIC a server. */
  const vgg: ThroughputCase = {
    cluster: "horovod-pascal-roce25",
    nodes: 4,
    model: { parameters: 138357544 },
    layout: { dp: 16, dpSharding: "none", tp: 1, pp: 1, cp: 1 },
    batch: { micro: 64 },
    precision: "fp32",
    optimizer: "sgd",
    activationCheckpointing: "none",
    inputs: { gpuThroughput: { value: 130.9, unit: "images/s", source: "Horovod README, single GPU" } },
  };

  it("carries a node's ring at one TCP stream's rate over a NIC faster than that, where verbs run at the NIC's share", () => {
    const allReduce = (prediction: ReturnType<typeof predicted>) => prediction.collectives[0]!;
    const tcp = allReduce(predicted({ ...vgg, transport: "nccl-socket" }));
    const rdma = allReduce(predicted({ ...vgg, transport: "nccl-ib" }));
    expect(allReduce(predicted(vgg)).seconds).toBe(rdma.seconds);
    // The ring's bus bytes (2 × 15/16 of the fp32 gradients) at 2.06 GB/s, plus NCCL's latencies.
    const busBytes = ((2 * 15) / 16) * 138357544 * 4;
    expect(tcp.seconds).toBeGreaterThan(busBytes / (SOCKET_RING_GBPS.value * 1e9));
    expect(tcp.seconds).toBeLessThan(1.01 * (busBytes / (SOCKET_RING_GBPS.value * 1e9)));
    expect(tcp.seconds).toBeGreaterThan(1.3 * rdma.seconds);
  });
});

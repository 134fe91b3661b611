/**
 * Where an AWS prediction's inputs come from when no calibration has them: published figures, the catalogue, or said to
 * be assumed.
 */
import { describe, expect, it } from "vitest";
import { PARAMETER_COUNT, PLANNING } from "../../src/config/registry.ts";
import { mergeCalibrations, type Calibration, type ComputeEntry } from "../../src/predict/calibration.ts";
import { parseCampaign } from "../../src/config/load.ts";
import {
  ASSUMED_HALF_WIDTH,
  computeInput,
  predictionContextFor,
  linkInput,
  ONE_FIGURE_HALF_WIDTH,
  type ComputeInput,
  type InputQuestion,
  type LinkInput,
  type Missing,
} from "../../src/predict/inputs.ts";

const question = (overrides: Partial<InputQuestion> = {}): InputQuestion => ({
  model: "resnet50",
  batchSize: 64,
  nodes: 2,
  bandwidth: "1gbit",
  precision: "fp32",
  reduction: "ring",
  ...overrides,
});

const measuredOn = (deviceModel: string, computeSeconds: number): ComputeEntry => ({
  model: "resnet50",
  batchSize: 64,
  precision: "fp32",
  device: "cuda",
  deviceModel,
  cpusPerNode: null,
  computeSeconds: { mean: computeSeconds, halfWidth95: 0.001, repeats: 3 },
  gradientBytes: 1e8,
  source: { kind: "measured", resultsDir: "results/p3", date: "2026-11-20" },
});
const calibrationWith = (...compute: ComputeEntry[]): Calibration => ({
  schema: "ringlab.calibration/v3",
  compute,
  splitSteps: [],
  links: [],
  overlap: [],
  memory: [],
});

describe("compute for an AWS run", () => {
  it("takes the published figures' per-image mean for the instance type's GPU, their spread as the interval, and cites each", () => {
    // p3: V100; ResNet-50 AMP is published at 1200 img/s (NVIDIA) and 833 img/s (Lambda).
    const input = computeInput(question({ precision: "amp" }), { instanceType: "p3.2xlarge" }) as ComputeInput;
    const mean = (1 / 1200 + 1 / 833) / 2;
    expect(input.seconds.mean).toBeCloseTo(64 * mean, 12);
    expect(input.seconds.halfWidth95).toBeCloseTo(64 * (1 / 833 - mean), 12);
    expect(input.gradientBytes).toBe(PARAMETER_COUNT.resnet50 * 4);
    expect(input.source).toMatch(
      /^published: NVIDIA V100, resnet50 amp: 1200 img\/s at batch 256 .*NVIDIA\/DeepLearningExamples\/blob\/729963dd\/.*; 833 img\/s at batch 256 .*lambdal\/deeplearning-benchmark/,
    );
    expect(input.source).toMatch(/the throughput is an upper bound$/);
  });

  it("gives one published figure a stated ±30 %", () => {
    const input = computeInput(question(), { instanceType: "p5.48xlarge" }) as ComputeInput;
    expect(input.seconds.mean).toBeCloseTo(64 / 1895, 12);
    expect(input.seconds.halfWidth95).toBeCloseTo((ONE_FIGURE_HALF_WIDTH * 64) / 1895, 12);
    expect(input.source).toContain("one figure, ±30 % stated");
  });

  it("says a T4's figure is assumed, with ±50 %: nobody publishes T4 training throughput", () => {
    const input = computeInput(question({ model: "resnet101", precision: "amp" }), {
      instanceType: "g4dn.4xlarge",
    }) as ComputeInput;
    expect(input.seconds.mean).toBeCloseTo(64 / PLANNING.resnet101!.t4Fp32ImagesPerSecond, 12);
    expect(input.seconds.halfWidth95).toBeCloseTo(
      (ASSUMED_HALF_WIDTH * 64) / PLANNING.resnet101!.t4Fp32ImagesPerSecond,
      12,
    );
    expect(input.source).toMatch(/^assumed: .*no published T4 training figure was found; the fp32 figure for amp/);
  });

  it("does not guess for a GPU or model without a measured or published figure, and says how to measure it", () => {
    expect(computeInput(question(), { instanceType: "g5.xlarge" })).toEqual({
      missing:
        "no measured or published compute for resnet50 at batch 64 (fp32 on an NVIDIA A10G): run its single-node baseline (a campaign with nodes: [1] on g5.xlarge) and add its results with `ringlab calibrate`",
    });
    expect(
      (computeInput(question({ model: "resnet152" }), { instanceType: "p4d.24xlarge" }) as Missing).missing,
    ).toMatch(/^no measured or published compute for resnet152 /);
  });

  it("scales the GPU's published ResNet-50 figure by the model's throughput over ResNet-50's that ringlab measured, and says so", () => {
    // Nobody publishes ResNet-101 in PyTorch; the H100's ResNet-50 AMP figure is 2791 img/s (Lambda); ringlab's
    // H200 benchmark measured ResNet-101 at 3598.9 and ResNet-50 at 5714.1 img/s, batch 256, AMP.
    const input = computeInput(question({ model: "resnet101", precision: "amp" }), {
      instanceType: "p5.48xlarge",
    }) as ComputeInput;
    const ratio = 3598.9 / 5714.1;
    expect(input.seconds.mean).toBeCloseTo(64 / (2791 * ratio), 12);
    expect(input.seconds.halfWidth95).toBeCloseTo((ONE_FIGURE_HALF_WIDTH * 64) / (2791 * ratio), 12);
    expect(input.gradientBytes).toBe(PARAMETER_COUNT.resnet101 * 4);
    expect(input.source).toMatch(
      /^scaled: NVIDIA H100's published resnet50 amp figures, 2791 img\/s \(H100 80GB SXM5 \(Lambda Cloud\); https:\/\/github\.com\/lambdal\/.*\), times 0\.630, resnet101's throughput over resnet50's \(3598\.9 \/ 5714\.1 img\/s at batch 256 on an NVIDIA H200, measured by ringlab's GPU benchmark on 2026-11-26 \(test\/bench\/gpu\/nvidia-h200\/results\.json\)\); one figure, ±30 % stated;/,
    );
    // Where a model has a published figure of its own (Inception-v3 on an A100, in TensorFlow), that is used.
    expect(
      (computeInput(question({ model: "inception_v3" }), { instanceType: "p4d.24xlarge" }) as ComputeInput).source,
    ).toMatch(/^published: NVIDIA A100, inception_v3 fp32/);
  });

  it("prefers the user's own measurement on that GPU, and never one from another GPU (an L40S is not an L4)", () => {
    const calibration = calibrationWith(measuredOn("Tesla V100-SXM2-16GB", 0.2), measuredOn("NVIDIA L40S", 0.1));
    expect(computeInput(question(), { instanceType: "p3.2xlarge", calibration })).toMatchObject({
      seconds: { mean: 0.2 },
      source: expect.stringMatching(
        /^measured in results\/p3 on 2026-11-20 \(resnet50 at batch 64 on Tesla V100-SXM2-16GB, 3 repeats\)$/,
      ),
    });
    expect(computeInput(question(), { instanceType: "g6.xlarge", calibration })).toMatchObject({
      missing: expect.stringContaining("on an NVIDIA L4)"),
    });
  });

  it("keeps runs of the channels-last layout apart from NCHW ones, in the calibration and in what a question takes", () => {
    // NHWC trained ResNet-50 AMP twice as fast on an H200: one layout's compute is no estimate of the other's.
    const nchw = measuredOn("NVIDIA H200", 0.04);
    const nhwc: ComputeEntry = { ...measuredOn("NVIDIA H200", 0.02), channelsLast: true };
    const merged = mergeCalibrations([calibrationWith(nchw), calibrationWith(nhwc)]);
    expect(merged.compute).toHaveLength(2);
    expect(computeInput(question(), { calibration: merged })).toMatchObject({ seconds: { mean: 0.04 } });
    expect(computeInput(question({ channelsLast: true }), { calibration: merged })).toMatchObject({
      seconds: { mean: 0.02 },
    });
    expect(computeInput(question({ channelsLast: true }), { calibration: calibrationWith(nchw) })).toMatchObject({
      missing: expect.stringMatching(/^no measured compute/),
    });
  });

  it("does not guess which GPU an instance type outside the catalogue, or without a GPU, has; nor which of two GPUs a calibration means", () => {
    expect(computeInput(question(), { instanceType: "c5n.9xlarge" })).toMatchObject({
      missing: expect.stringMatching(/^instance type c5n\.9xlarge is not a GPU type of ringlab's catalogue/),
    });
    expect(
      computeInput(question(), {
        instanceType: "x9.huge",
        calibration: calibrationWith(measuredOn("Tesla V100-SXM2-16GB", 0.2)),
      }),
    ).toMatchObject({ missing: expect.stringContaining("x9.huge") });
    const twoGpus = calibrationWith(measuredOn("Tesla V100-SXM2-16GB", 0.2), measuredOn("NVIDIA A100-SXM4-40GB", 0.1));
    expect(computeInput(question(), { calibration: twoGpus })).toMatchObject({
      missing: expect.stringMatching(
        /measured on Tesla V100-SXM2-16GB and NVIDIA A100-SXM4-40GB: say which with --instance-type$/,
      ),
    });
    expect(computeInput(question(), { calibration: twoGpus, instanceType: "p4d.24xlarge" })).toMatchObject({
      seconds: { mean: 0.1 },
    });
  });

  it("finds nothing without an instance type or a calibration (the local testbed)", () => {
    expect(computeInput(question(), { cpusPerNode: 1 })).toMatchObject({
      missing: expect.stringMatching(/^no measured compute for resnet50 at batch 64 \(fp32, 1 cores per worker\)/),
    });
  });
});

describe("the link of an AWS run", () => {
  it("is the shaped rate, or the instance type's baseline where that is lower, with α = 0 said to be assumed", () => {
    const shaped = linkInput(question({ bandwidth: "1gbit" }), { instanceType: "g4dn.xlarge" }) as LinkInput;
    expect(shaped.betaSecondsPerByte).toBeCloseTo(8 / 1e9, 20);
    expect(shaped.alphaSeconds).toBe(0);
    expect(shaped.source).toMatch(
      /^catalogue: g4dn\.xlarge sustains 5 Gbit\/s \(https:\/\/docs\.aws\.amazon\.com\/.*\), the link shaped to 1gbit; assumed: the all-reduce reaches the full 1 Gbit\/s and α = 0/,
    );
    // g4dn.xlarge bursts to 25 Gbit/s but sustains 5: the baseline, not the burst.
    expect(
      (linkInput(question({ bandwidth: "10gbit" }), { instanceType: "g4dn.xlarge" }) as LinkInput).betaSecondsPerByte,
    ).toBeCloseTo(8 / 5e9, 20);
  });

  it("is not guessed for an unshaped link (flows, placement and EFA decide it) nor for another reduction than the ring", () => {
    expect(linkInput(question({ bandwidth: "unlimited" }), { instanceType: "p4d.24xlarge" })).toMatchObject({
      missing: expect.stringMatching(/^no probe of the unshaped link between p4d\.24xlarge nodes/),
    });
    expect(linkInput(question({ reduction: "parameter-server" }), { instanceType: "p4d.24xlarge" })).toMatchObject({
      missing: expect.stringMatching(/^no probe of parameter-server at 1gbit on p4d\.24xlarge/),
    });
  });

  it("takes a probe measured on the same instance type only: another type's unshaped link is another network", () => {
    const probe = {
      bandwidth: "unlimited",
      nodes: 2,
      processesPerNode: 1,
      reduction: "ring",
      cpusPerNode: null,
      alphaSeconds: 1e-4,
      betaSecondsPerByte: 8 / 4e9,
      rSquared: 0.99,
      source: { kind: "measured" as const, resultsDir: "results/g4dn", date: "2026-11-20" },
    };
    const calibration: Calibration = {
      schema: "ringlab.calibration/v3",
      compute: [],
      splitSteps: [],
      links: [{ ...probe, instanceType: "g4dn.4xlarge" }],
      overlap: [],
      memory: [],
    };
    expect(
      linkInput(question({ bandwidth: "unlimited" }), { instanceType: "g4dn.4xlarge", calibration }),
    ).toMatchObject({ betaSecondsPerByte: 8 / 4e9, source: "measured in results/g4dn on 2026-11-20 (2-node probe)" });
    expect(
      linkInput(question({ bandwidth: "unlimited" }), { instanceType: "p4d.24xlarge", calibration }),
    ).toMatchObject({ missing: expect.stringContaining("p4d.24xlarge") });
    // Nor a local testbed's probe (no instance type) for an AWS question.
    expect(
      linkInput(question({ bandwidth: "unlimited" }), {
        instanceType: "g4dn.4xlarge",
        calibration: { ...calibration, links: [probe] },
      }),
    ).toMatchObject({ missing: expect.any(String) });
  });

  it("has none for one worker, and no figure for the link inside one node", () => {
    expect(linkInput(question({ nodes: 1, bandwidth: null }), { instanceType: "p3.2xlarge" })).toBeNull();
    expect(
      linkInput(question({ nodes: 1, processesPerNode: 8, bandwidth: null }), { instanceType: "p3.16xlarge" }),
    ).toMatchObject({ missing: expect.stringMatching(/^no probe of the link in one node/) });
  });
});

describe("what a campaign's runs are predicted from", () => {
  const campaign = (testbed: string) =>
    parseCampaign(
      `testbed: ${testbed}\ncampaign:\n  matrix: {nodes: [1, 2], model: small, batchSize: 8, bandwidth: 1gbit}\n`,
      "c.yaml",
      "/c/c.yaml",
      { readKeys: false },
    );
  const aws = campaign(
    "{target: aws, name: t, nodes: 2, instanceType: p3.2xlarge, adminCidr: 203.0.113.7/32, sshPublicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2 me@host, sshPrivateKeyFile: /k}",
  );
  const local = campaign("{target: local, name: t, nodes: 2}");
  const calibration = calibrationWith();

  it("is the instance type on AWS, with a calibration or without (a campaign then saves predictions.json anyway)", () => {
    expect(predictionContextFor(aws, undefined, undefined)).toEqual({ instanceType: "p3.2xlarge" });
    expect(predictionContextFor(aws, undefined, calibration)).toEqual({ instanceType: "p3.2xlarge", calibration });
  });

  it("is only a calibration on the local testbed: without one there is nothing to predict from", () => {
    expect(predictionContextFor(local, 0.5, undefined)).toBeUndefined();
    expect(predictionContextFor(local, 0.5, calibration)).toEqual({ calibration, cpusPerNode: 0.5 });
  });
});

import { describe, expect, it } from "vitest";
import {
  allReduceSeconds,
  fitAlphaBeta,
  overlappedStepSeconds,
  overlapShare,
  predictHierarchicalStep,
  predictTrainingStep,
  type ProbeSample,
} from "../../src/results/comm-model.ts";

/** 1 Gbit/s is 1.25e8 bytes/s, so β = 8e-9 s per byte. */
const ONE_GBIT_BETA = 8e-9;
const SIZES = [4096, 65_536, 1_048_576, 16_777_216, 67_108_864];

/** Exact ring times for a known α and β. */
function exactSamples(alphaSeconds: number, betaSecondsPerByte: number, ranks: number): ProbeSample[] {
  return SIZES.map((sizeBytes) => ({
    sizeBytes,
    timeSeconds: 2 * (ranks - 1) * alphaSeconds + ((2 * (ranks - 1)) / ranks) * sizeBytes * betaSecondsPerByte,
  }));
}

describe("fitAlphaBeta", () => {
  it("recovers α and β from exact ring times, with R² = 1 and the link rate in Gbit/s", () => {
    for (const ranks of [2, 3, 4]) {
      const fit = fitAlphaBeta(exactSamples(1e-4, ONE_GBIT_BETA, ranks), ranks)!;
      expect(fit.alphaSeconds).toBeCloseTo(1e-4, 9);
      expect(fit.betaSecondsPerByte / ONE_GBIT_BETA).toBeCloseTo(1, 9);
      expect(fit.effectiveGbps).toBeCloseTo(1, 9);
      expect(fit.rSquared).toBeCloseTo(1, 12);
      expect(fit.samples).toBe(SIZES.length);
    }
  });

  it("gives R² below 1 for noisy times, by the textbook formula", () => {
    // t = 1, 2, 2 at S = 0, 1, 2: least squares t = 7/6 + S/2; residuals -1/6, 1/3, -1/6; SS_res = 1/6, SS_tot = 2/3.
    const fit = fitAlphaBeta(
      [
        { sizeBytes: 0, timeSeconds: 1 },
        { sizeBytes: 1, timeSeconds: 2 },
        { sizeBytes: 2, timeSeconds: 2 },
      ],
      2,
    )!;
    expect(fit.rSquared).toBeCloseTo(1 - 1 / 6 / (2 / 3), 12);
    expect(fit.alphaSeconds).toBeCloseTo(7 / 6 / 2, 12);
    expect(fit.betaSecondsPerByte).toBeCloseTo(0.5, 12);
  });

  it("refits through the origin rather than report a negative latency", () => {
    // t = 2S - 1 exactly would need α < 0; through the origin, b = Σ S·t / Σ S² = (1·1 + 2·3) / (1 + 4) = 7/5.
    const fit = fitAlphaBeta(
      [
        { sizeBytes: 1, timeSeconds: 1 },
        { sizeBytes: 2, timeSeconds: 3 },
      ],
      2,
    )!;
    expect(fit.alphaSeconds).toBe(0);
    expect(fit.betaSecondsPerByte).toBeCloseTo(7 / 5, 12);
  });

  it("fits nothing from one message size or one rank", () => {
    expect(
      fitAlphaBeta(
        [
          { sizeBytes: 4096, timeSeconds: 1 },
          { sizeBytes: 4096, timeSeconds: 2 },
        ],
        2,
      ),
    ).toBeNull();
    expect(fitAlphaBeta(exactSamples(1e-4, ONE_GBIT_BETA, 2), 1)).toBeNull();
  });
});

describe("predictTrainingStep", () => {
  it("works the 3-node example by hand: 1e8 gradient bytes, 25 MiB buckets, α = 0.1 ms, 1 Gbit/s, t_c = 0.5 s", () => {
    const prediction = predictTrainingStep(
      { alphaSeconds: 1e-4, betaSecondsPerByte: ONE_GBIT_BETA },
      { computeSeconds: 0.5, gradientBytes: 1e8, ranks: 3 },
    );
    // ceil(1e8 / 26 214 400) = 4 buckets; Σ t_ar = 4 buckets · 4 steps · 1e-4 s + 4/3 · 1e8 B · 8e-9 s/B = 0.0016 +
    // 1.0666… s.
    expect(prediction.buckets).toBe(4);
    expect(prediction.allReduceSeconds).toBeCloseTo(1.0682666667, 9);
    expect(prediction.noOverlapStepSeconds).toBeCloseTo(1.5682666667, 9);
    expect(prediction.fullOverlapStepSeconds).toBeCloseTo(1.0682666667, 9);
    expect(prediction.noOverlapEfficiency).toBeCloseTo(0.3188233294, 9);
    expect(prediction.fullOverlapEfficiency).toBeCloseTo(0.4680479281, 9);
  });

  it("charges the latency once per bucket: a smaller bucket cap costs more steps", () => {
    const fit = { alphaSeconds: 1e-3, betaSecondsPerByte: ONE_GBIT_BETA };
    const oneBucket = predictTrainingStep(fit, { computeSeconds: 1, gradientBytes: 1e8, ranks: 2, bucketCapMb: 100 });
    const manyBuckets = predictTrainingStep(fit, { computeSeconds: 1, gradientBytes: 1e8, ranks: 2, bucketCapMb: 1 });
    expect(oneBucket.buckets).toBe(1);
    expect(manyBuckets.buckets).toBe(96);
    expect(manyBuckets.allReduceSeconds - oneBucket.allReduceSeconds).toBeCloseTo(95 * 2 * 1e-3, 12);
  });

  it("predicts full efficiency when compute hides all communication, and agrees with allReduceSeconds for one bucket", () => {
    const fit = { alphaSeconds: 1e-5, betaSecondsPerByte: ONE_GBIT_BETA / 10 };
    const prediction = predictTrainingStep(fit, { computeSeconds: 2, gradientBytes: 1e7, ranks: 4 });
    expect(prediction.fullOverlapEfficiency).toBe(1);
    expect(prediction.allReduceSeconds).toBeCloseTo(allReduceSeconds(fit, 1e7, 4), 15);
  });
});

describe("predictHierarchicalStep", () => {
  const network = { alphaSeconds: 1e-4, betaSecondsPerByte: 8 / 25e9 };
  const nvlink = { alphaSeconds: 1e-5, betaSecondsPerByte: 8 / 2400e9 };
  const input = { computeSeconds: 0.1, gradientBytes: 100e6, bucketCapMb: 100 };

  it("adds the ring inside the node (G ranks) and the ring between nodes (N ranks, the node's whole gradient through its network)", () => {
    const step = predictHierarchicalStep(nvlink, network, { ...input, nodes: 4, perNode: 8 });
    // 100e6 bytes in 100 MiB buckets: one bucket, each level's latency once.
    expect(step.allReduceSeconds).toBeCloseTo(
      allReduceSeconds(nvlink, 100e6, 8) + allReduceSeconds(network, 100e6, 4),
      12,
    );
    // A free link inside the node leaves the flat ring over the nodes.
    const free = predictHierarchicalStep({ alphaSeconds: 0, betaSecondsPerByte: 0 }, network, {
      ...input,
      nodes: 4,
      perNode: 8,
    });
    expect(free.allReduceSeconds).toBeCloseTo(
      predictTrainingStep(network, { ...input, ranks: 4 }).allReduceSeconds,
      12,
    );
  });

  it("beats one ring over every GPU on the network when the node's own link is fast: 2(N−1) latencies instead of 2(NG−1)", () => {
    const twoLevel = predictHierarchicalStep(nvlink, network, { ...input, nodes: 64, perNode: 8 });
    const flat = predictTrainingStep(network, { ...input, ranks: 512 });
    expect(twoLevel.allReduceSeconds).toBeLessThan(flat.allReduceSeconds);
    expect(twoLevel.noOverlapEfficiency).toBeGreaterThan(flat.noOverlapEfficiency);
  });
});

describe("the overlap share", () => {
  it("is what the measured step saved against the no-overlap model, as a share of min(t_c, t_ar); applying it gives the step back", () => {
    expect(overlapShare(0.3, 0.1, 0.38)).toBeCloseTo(0.2, 12);
    expect(overlappedStepSeconds(0.3, 0.1, 0.2)).toBeCloseTo(0.38, 12);
    // Clamped to the bounds: no faster than full overlap, no slower than none.
    expect(overlappedStepSeconds(0.3, 0.1, 1.5)).toBeCloseTo(0.3, 12);
    expect(overlappedStepSeconds(0.3, 0.1, -0.5)).toBeCloseTo(0.4, 12);
  });
});

describe("predictTrainingStep's allReduces", () => {
  it("charges each all-reduce of a step its 2(N-1)·α, a fraction of one too (local SGD's one per period)", () => {
    const fit = { alphaSeconds: 1e-3, betaSecondsPerByte: 0 };
    expect(
      predictTrainingStep(fit, { computeSeconds: 1, gradientBytes: 1e6, ranks: 3, allReduces: 0.5 }).allReduceSeconds,
    ).toBeCloseTo(0.5 * 4 * 1e-3, 15);
  });
});

import { describe, expect, it } from "vitest";
import { meanWithInterval, quantile } from "../../src/results/statistics.ts";

describe("mean with interval", () => {
  it("mean with a Student-t 95% interval", () => {
    const stats = meanWithInterval([10, 12, 14]);
    expect(stats.mean).toBe(12);
    // sd 2, n 3: 4.303 · 2 / sqrt(3)
    expect(stats.halfWidth95).toBeCloseTo(4.9687, 3);
    expect(meanWithInterval([5])).toEqual({ mean: 5, halfWidth95: 0, n: 1, median: 5, coefficientOfVariation: null });
  });

  it("the median and the coefficient of variation beside the mean: odd and even counts, none for one sample", () => {
    // (10, 12, 14): sample sd 2, CV 2 / 12. (14, 10, 30, 12) sorted 10, 12, 14, 30: median (12 + 14) / 2 = 13,
    // mean 16.5, deviations -6.5, -4.5, -2.5, 13.5: sample variance (42.25 + 20.25 + 6.25 + 182.25) / 3 = 251 / 3.
    expect(meanWithInterval([14, 10, 12])).toMatchObject({
      median: 12,
      coefficientOfVariation: expect.closeTo(2 / 12, 12),
    });
    const even = meanWithInterval([14, 10, 30, 12]);
    expect(even.median).toBe(13);
    expect(even.coefficientOfVariation).toBeCloseTo(Math.sqrt(251 / 3) / 16.5, 12);
    expect(meanWithInterval([0, 0]).coefficientOfVariation).toBeNull();
    expect(meanWithInterval([]).coefficientOfVariation).toBeNull();
  });
});

describe("quantile", () => {
  it("interpolates quartiles between order statistics", () => {
    expect([quantile([100, 101, 102, 103], 0.25), quantile([100, 101, 102, 103], 0.75), quantile([7], 0.25)]).toEqual([
      100.75, 102.25, 7,
    ]);
  });
});

/**
 * The GPU allocator's reserved memory over its allocated peak (src/predict/memory.ts, CUDA_RESERVED), recomputed from
 * the records of ringlab's language-model runs on one H200 (test/bench/gpu/nvidia-h200/transformer-records/), which
 * kept both peaks: the figures test/bench/README.md gives ("Published memory").
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { affineFit, CUDA_RESERVED } from "../../src/predict/memory.ts";

const FOLDER = "test/bench/gpu/nvidia-h200/transformer-records";
const GIB = 2 ** 30;
const ranks = readdirSync(FOLDER).flatMap((file) => {
  const rank = JSON.parse(readFileSync(join(FOLDER, file), "utf8")).metrics?.memory?.perRank?.[0];
  return rank?.peakReservedBytes === undefined
    ? []
    : [{ allocated: rank.peakBytes - rank.baselineBytes, reserved: rank.peakReservedBytes - rank.baselineBytes }];
});

describe("the GPU allocator's reserve (test/bench/README.md)", () => {
  it("is 0.81 GiB + 1.033 × the peak allocated, fitted over the 16 H200 runs, worst 7.3 %", () => {
    expect(ranks).toHaveLength(16);
    const fit = affineFit(
      ranks.map((rank) => rank.allocated),
      ranks.map((rank) => rank.reserved),
    );
    expect([(fit.overhead / GIB).toFixed(2), fit.scale.toFixed(3)]).toEqual(["0.81", "1.033"]);
    expect([CUDA_RESERVED.overheadBytes / GIB, CUDA_RESERVED.scale]).toEqual([0.81, 1.033]);
    const worst = Math.max(
      ...ranks.map((rank) => Math.abs(fit.overhead + fit.scale * rank.allocated - rank.reserved) / rank.reserved),
    );
    expect((100 * worst).toFixed(1)).toBe("7.3");
  });
});

/**
 * The campaign side's layout degrees against the worker's (docker/worker/ringlab_worker/parallel/dims.py): one table
 * of cases, test/fixtures/layout-dims.json, that test/worker/test_parallel_units.py runs through the worker too.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { dimsOf } from "../../src/layouts/index.ts";
import { dataParallel, stageBlocks, type ParallelDims } from "../../src/workload/layout.ts";

const { cases } = JSON.parse(readFileSync("test/fixtures/layout-dims.json", "utf8")) as {
  cases: { knobs: Record<string, unknown>; workers: number; nodes: number; dims: ParallelDims | null }[];
};

describe("layout degrees", () => {
  it.each(cases.map((entry) => [JSON.stringify(entry.knobs), entry.workers, entry.nodes, entry] as const))(
    "%s on %i workers, %i nodes",
    (_knobs, workers, nodes, entry) => {
      const result = dimsOf(entry.knobs, workers, nodes);
      if (entry.dims === null) {
        expect(result.ok).toBe(false);
      } else {
        expect(result).toEqual({ ok: true, dims: entry.dims });
        expect(entry.dims.pp * dataParallel(entry.dims) * entry.dims.tp).toBe(workers);
      }
    },
  );

  it("names the knob and the workers when it refuses", () => {
    expect(dimsOf({ parallelism: "pipeline", pipelineStages: 3 }, 4, 2)).toEqual({
      ok: false,
      problem: "pipelineStages 3 does not divide the run's 4 workers",
    });
  });

  it("cuts blocks into stages as even as they divide, earlier stages taking one more", () => {
    expect([0, 1, 2].map((stage) => stageBlocks(7, 3, stage))).toEqual([3, 2, 2]);
    expect([0, 1].map((stage) => stageBlocks(4, 2, stage))).toEqual([2, 2]);
  });
});

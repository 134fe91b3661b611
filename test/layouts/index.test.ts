/**
 * The layout units (src/layouts/): one per registry layout, each answering what the planner, the predictions and the
 * report ask of a layout; and no module outside src/layouts/ branching on a layout's name (it asks the table).
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LAYOUTS, TRAIN_KNOBS } from "../../src/config/registry.ts";
import {
  dimsOf,
  layoutCandidates,
  layoutLabel,
  memoryTermsOf,
  runLayoutProblem,
  splitLabel,
  stepShapeOf,
  stepTraffic,
  sumsWithReduction,
} from "../../src/layouts/index.ts";

const gpt = { sequenceLength: 64, layers: 6, width: 384, heads: 12 } as const;

describe("layout units", () => {
  it("has a unit for every layout of the registry, and parallelism takes exactly those", () => {
    expect(TRAIN_KNOBS.parallelism.choices).toEqual(LAYOUTS);
    for (const parallelism of LAYOUTS) {
      const layout = dimsOf({ parallelism }, 1, 1);
      expect(layout, parallelism).toEqual({ ok: true, dims: { pp: 1, dpReplicate: 1, dpShard: 1, tp: 1 } });
      expect(layoutLabel({ parallelism }).startsWith(parallelism)).toBe(true);
    }
    expect(dimsOf({ parallelism: "zero-bubble" }, 2, 2)).toEqual({
      ok: false,
      problem: "unknown parallelism zero-bubble",
    });
  });

  it("names a configuration as the report and recommend do", () => {
    expect(layoutLabel({})).toBe("ddp");
    expect(layoutLabel({ parallelism: "fsdp" })).toBe("fsdp full");
    expect(layoutLabel({ parallelism: "fsdp", fsdpSharding: "grad-op", tensorDegree: 2 })).toBe(
      "fsdp grad-op × tensor 2",
    );
    expect(layoutLabel({ parallelism: "tensor" })).toBe("tensor");
    expect(layoutLabel({ parallelism: "pipeline", pipelineSchedule: "1f1b", microBatches: 6 })).toBe(
      "pipeline 1f1b, 6 micro-batches",
    );
    expect(splitLabel({ parallelism: "tensor" }, 3, 3, true)).toBe("tensor over 3 workers");
    expect(splitLabel({ parallelism: "pipeline", pipelineSchedule: "gpipe", microBatches: 3 }, 1, 2, true)).toBe(
      "pipeline gpipe ×3 over 2 stages",
    );
  });

  it("sums with the run's reduction on DDP only; every other layout has collectives of its own", () => {
    expect(LAYOUTS.filter((parallelism) => sumsWithReduction({ parallelism }))).toEqual(["ddp"]);
    expect(sumsWithReduction({})).toBe(true);
  });

  it("refuses before anything starts what the worker would: degrees that do not divide, a pipeline's micro-batches", () => {
    expect(runLayoutProblem({ parallelism: "pipeline", pipelineStages: 3 }, 4, 2, 6)).toBe(
      "pipelineStages 3 does not divide the run's 4 workers",
    );
    expect(runLayoutProblem({ parallelism: "pipeline", microBatches: 4 }, 2, 2, 6)).toBe(
      "batchSize 6 must be a multiple of microBatches 4",
    );
    expect(runLayoutProblem({ parallelism: "pipeline", pipelineSchedule: "1f1b", microBatches: 2 }, 3, 3, 6)).toBe(
      "pipelineSchedule 1f1b needs at least as many micro-batches as stages: microBatches 2 < 3 stages (torch's Schedule1F1B refuses it)",
    );
    expect(runLayoutProblem({ parallelism: "fsdp", tensorDegree: 2 }, 4, 2, 6)).toBeUndefined();
  });

  it("gives each layout's collectives, memory terms and step shape", () => {
    const knobs = (layout: Record<string, unknown>) => ({ ...gpt, ...layout });
    const on = (layout: Record<string, unknown>, workers: number, nodes = workers) => {
      const result = dimsOf(knobs(layout), workers, nodes);
      if (!result.ok) throw new Error(result.problem);
      return result.dims;
    };
    const traffic = (layout: Record<string, unknown>, workers: number, nodes = workers) =>
      stepTraffic({ model: "gpt-mini", batchSize: 6, knobs: knobs(layout), dims: on(layout, workers, nodes) }).map(
        (collective) => [collective.op, collective.ranks],
      );
    expect(traffic({}, 3)).toEqual([["all_reduce", 3]]);
    expect(traffic({ parallelism: "fsdp" }, 3)).toEqual([
      ["all_gather", 3],
      ["reduce_scatter", 3],
    ]);
    expect(traffic({ parallelism: "fsdp", tensorDegree: 2 }, 4)).toEqual([
      ["all_gather", 2],
      ["reduce_scatter", 2],
      ["all_reduce", 2],
    ]);
    expect(traffic({ parallelism: "tensor" }, 3)).toEqual([["all_reduce", 3]]);
    // Two stages of two replicas each: sends between the stages, each stage's gradients all-reduced over its replicas.
    expect(traffic({ parallelism: "pipeline" }, 4, 2)).toEqual([
      ["send", 2],
      ["all_reduce", 2],
    ]);

    const fsdp = memoryTermsOf({ parallelism: "fsdp", fsdpSharding: "grad-op" }, on({ parallelism: "fsdp" }, 2));
    expect([fsdp.sharding, fsdp.gradientBuckets]).toEqual(["gradients", false]);
    const pipeline = { parallelism: "pipeline", pipelineSchedule: "1f1b", microBatches: 6 };
    const stages = memoryTermsOf(pipeline, on(pipeline, 3));
    // 1F1B holds at most the micro-batches of the stages from this one to the last: 3, 2 and 1 of 6, a sample each.
    expect([0, 1, 2].map((stage) => stages.samplesInFlight(6, stage))).toEqual([3, 2, 1]);
    expect(stages.gradientBuckets).toBe(false);
    expect(memoryTermsOf(pipeline, on(pipeline, 6, 3)).gradientBuckets).toBe(true);

    expect(stepShapeOf("gpt-mini", knobs({}), on({}, 2))).toEqual({});
    expect(
      stepShapeOf("gpt-mini", knobs({ parallelism: "tensor" }), on({ parallelism: "tensor" }, 2)).tensor?.degree,
    ).toBe(2);
    expect(stepShapeOf("gpt-mini", knobs(pipeline), on(pipeline, 3)).pipeline).toMatchObject({
      stages: 3,
      microBatches: 6,
    });
  });

  it("lays a workload out every way recommend tries, in the registry's order, each named by its label", () => {
    const names = layoutCandidates({ model: "gpt-mini", batchSize: 6, knobs: gpt, workers: 2, nodes: 2 }).map(
      (candidate) => candidate.name,
    );
    expect(names).toEqual([
      "ddp",
      "fsdp full",
      "fsdp grad-op",
      "tensor",
      "pipeline gpipe, 2 micro-batches",
      "pipeline 1f1b, 2 micro-batches",
      "pipeline gpipe, 3 micro-batches",
      "pipeline 1f1b, 3 micro-batches",
      "pipeline gpipe, 6 micro-batches",
      "pipeline 1f1b, 6 micro-batches",
    ]);
  });
});

describe("layout names", () => {
  it("only src/layouts/ branches on a layout's name; the rest asks the table", () => {
    const names = LAYOUTS.join("|");
    const branch = new RegExp(
      `[!=]==\\s*["'](?:${names})["']|["'](?:${names})["']\\s*[!=]==|\\bcase\\s+["'](?:${names})["']\\s*:`,
      "g",
    );
    const offending = sourceFiles("src")
      .filter((file) => !file.startsWith("src/layouts/"))
      .flatMap((file) => (readFileSync(file, "utf8").match(branch) ?? []).map((found) => `${file}: ${found}`));
    expect(offending).toEqual([]);
  });
});

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => `${dir}/${file}`);
}

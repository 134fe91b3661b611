/**
 * One step on any layout (src/results/layout-model.ts): each collective's ring time, tensor parallelism's split, a
 * pipeline's slots.
 */
import { describe, expect, it } from "vitest";
import { allReduceSeconds } from "../../src/results/comm-model.ts";
import { collectiveSeconds, computeOfStep, predictLayoutStep } from "../../src/results/layout-model.ts";

const link = { alphaSeconds: 1e-4, betaSecondsPerByte: 1e-9 };

describe("a layout's step", () => {
  it("times an all-reduce as the ring model does, and an all-gather or reduce-scatter as half of it", () => {
    const bytes = 8e6;
    expect(collectiveSeconds({ op: "all_reduce", bytes, calls: 1, ranks: 4 }, link)).toBeCloseTo(
      allReduceSeconds(link, bytes, 4),
      12,
    );
    expect(collectiveSeconds({ op: "all_gather", bytes, calls: 1, ranks: 4 }, link)).toBeCloseTo(
      allReduceSeconds(link, bytes, 4) / 2,
      12,
    );
    expect(collectiveSeconds({ op: "reduce_scatter", bytes, calls: 1, ranks: 4 }, link)).toBeCloseTo(
      allReduceSeconds(link, bytes, 4) / 2,
      12,
    );
    // A send: one step of its bytes on one link; one rank alone sends nothing.
    expect(collectiveSeconds({ op: "send", bytes, calls: 2, ranks: 2 }, link)).toBeCloseTo(2 * 1e-4 + bytes * 1e-9, 12);
    expect(collectiveSeconds({ op: "all_reduce", bytes, calls: 1, ranks: 1 }, link)).toBe(0);
  });

  it("pays the latency once per call and the bandwidth once for the bytes of all calls", () => {
    const one = collectiveSeconds({ op: "all_gather", bytes: 1e6, calls: 1, ranks: 3 }, link);
    const ten = collectiveSeconds({ op: "all_gather", bytes: 1e6, calls: 10, ranks: 3 }, link);
    expect(ten - one).toBeCloseTo(9 * 2 * link.alphaSeconds, 12);
  });

  it("divides the split share of a tensor-parallel step's compute by the degree, and adds its all-reduces", () => {
    const step = predictLayoutStep({
      computeSeconds: 1,
      collectives: [{ op: "all_reduce", bytes: 1e6, calls: 8, ranks: 2 }],
      linkOf: () => link,
      overlapShare: 0,
      tensor: { degree: 2, splitShare: 0.9 },
    });
    expect(step.computeSeconds).toBeCloseTo(1 - 0.9 / 2, 12);
    expect(step.stepSeconds).toBeCloseTo(step.computeSeconds + 8 * 2 * 1e-4 + 1e6 * 1e-9, 12);
  });

  it("runs a pipeline's m micro-batches in m + p − 1 slots of its slowest stage, each with two messages across a boundary", () => {
    const sends = { op: "send" as const, bytes: 8 * 1e5, calls: 8, ranks: 2 };
    const step = predictLayoutStep({
      computeSeconds: 4,
      collectives: [sends],
      linkOf: () => link,
      overlapShare: 0,
      pipeline: { stages: 3, microBatches: 4, slowestStageShare: 0.4 },
    });
    expect(step.bubbleShare).toBeCloseTo(2 / 6, 12);
    expect(step.computeSeconds).toBeCloseTo(6 * (4 / 4) * 0.4, 12);
    expect(step.communicationSeconds).toBeCloseTo(6 * 2 * (1e-4 + 1e5 * 1e-9), 12);
    // One stage: the whole compute in m slots, nothing sent.
    const alone = predictLayoutStep({
      computeSeconds: 4,
      collectives: [],
      linkOf: () => link,
      overlapShare: 0,
      pipeline: { stages: 1, microBatches: 4, slowestStageShare: 1 },
    });
    expect(alone.stepSeconds).toBeCloseTo(4, 12);
  });

  it("takes φ of the smaller of compute and collectives off a tensor or pipeline step, as off DDP's", () => {
    const collectives = [{ op: "all_reduce" as const, bytes: 1e6, calls: 8, ranks: 2 }];
    const tensor = (overlapShare: number) =>
      predictLayoutStep({
        computeSeconds: 1,
        collectives,
        linkOf: () => link,
        overlapShare,
        tensor: { degree: 2, splitShare: 0.9 },
      });
    expect(tensor(0.5).stepSeconds).toBeCloseTo(tensor(0).stepSeconds - 0.5 * tensor(0).communicationSeconds, 12);
    const sends = [{ op: "send" as const, bytes: 8 * 1e5, calls: 8, ranks: 2 }];
    const pipeline = (overlapShare: number) =>
      predictLayoutStep({
        computeSeconds: 4,
        collectives: sends,
        linkOf: () => link,
        overlapShare,
        pipeline: { stages: 3, microBatches: 4, slowestStageShare: 0.4 },
      });
    expect(pipeline(0).stepSeconds).toBeCloseTo(pipeline(0).computeSeconds + pipeline(0).communicationSeconds, 12);
    expect(pipeline(1).stepSeconds).toBeCloseTo(pipeline(1).computeSeconds, 12);
    expect(pipeline(0.25).stepSeconds).toBeCloseTo(
      pipeline(0).stepSeconds - 0.25 * pipeline(0).communicationSeconds,
      12,
    );
  });

  it("gives back the compute of a measured step from its collectives and φ, on either side of compute = collectives", () => {
    for (const [compute, communication] of [
      [1, 0.3],
      [0.2, 0.5],
    ] as const) {
      for (const phi of [0, 0.4, 0.9]) {
        const step = compute + communication - phi * Math.min(compute, communication);
        expect(computeOfStep(step, communication, phi)).toBeCloseTo(compute, 12);
      }
    }
  });
});

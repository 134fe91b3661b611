import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { REDUCTIONS } from "../../src/config/registry.ts";
import {
  allReducesPerStep,
  exchangeShare,
  isReduction,
  reductionLowerBoundSeconds,
  wireBytesPerStep,
} from "../../src/reductions/index.ts";

describe("the reduction units", () => {
  it("are one module per reduction of the registry, named after it, and no other", () => {
    const modules = readdirSync("src/reductions")
      .filter((file) => !["index.ts", "unit.ts"].includes(file))
      .map((file) => file.replace(/\.ts$/, ""));
    expect(modules.sort()).toEqual([...REDUCTIONS].sort());
  });

  it("each bound an exchange on two nodes and nothing on one, and say what a step sends or why only a run can", () => {
    for (const reduction of REDUCTIONS) {
      expect(reductionLowerBoundSeconds(reduction, 1e8, { nodes: 1, processesPerNode: 2 }, 1, true), reduction).toBe(0);
      expect(
        reductionLowerBoundSeconds(reduction, 1e8, { nodes: 2, processesPerNode: 1 }, 1, true),
        reduction,
      ).toBeGreaterThan(0);
      const wire = wireBytesPerStep(reduction, 1e8, {});
      expect(typeof wire === "number" ? wire > 0 && wire <= 1e8 : wire.missing.length > 0, reduction).toBe(true);
    }
    expect(isReduction("ring") && !isReduction("tree")).toBe(true);
  });

  it("send the gradient, halved by fp16Allreduce where it applies; local SGD the parameters once per period; PowerSGD only after a run", () => {
    expect(wireBytesPerStep("ring", 1e8, {})).toBe(1e8);
    expect(wireBytesPerStep("ring", 1e8, { fp16Allreduce: true })).toBe(5e7);
    expect(wireBytesPerStep("parameter-server", 1e8, { fp16Allreduce: true })).toBe(5e7);
    expect(wireBytesPerStep("sharded-parameter-server", 1e8, { fp16Allreduce: true })).toBe(5e7);
    expect(wireBytesPerStep("local-sgd", 1e8, { localSgdPeriod: 8 })).toBe(1e8 / 8);
    expect(wireBytesPerStep("local-sgd", 1e8, {})).toBe(1e8 / 4); // the registry's default period
    expect(wireBytesPerStep("async-parameter-server", 1e8, {})).toBe(1e8);
    expect(wireBytesPerStep("powersgd", 1e8, {})).toEqual({ missing: expect.stringMatching(/a run of it records/) });
  });

  it("count PowerSGD's three all-reduces per DDP bucket of the whole gradient and local SGD's one per period; nothing to say for the others", () => {
    expect(allReducesPerStep("powersgd", 100 * 1024 * 1024, {})).toBe(12);
    expect(allReducesPerStep("powersgd", 100 * 1024 * 1024, { bucketCapMb: 100 })).toBe(3);
    expect(allReducesPerStep("local-sgd", 1e8, { localSgdPeriod: 8 })).toBe(1 / 8);
    expect(allReducesPerStep("ring", 1e8, {})).toBeUndefined();
  });

  it("let a training step pay all of its probe's exchange but for the asynchronous server's share", () => {
    expect(exchangeShare("ring", 4)).toBe(1);
    expect(exchangeShare("async-parameter-server", 4)).toBe(3 / 4);
    expect(exchangeShare("async-parameter-server", 2)).toBe(1);
  });
});

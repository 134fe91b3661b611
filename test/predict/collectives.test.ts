/**
 * The probe of a layout's own collectives (probe.collective: all-gather, reduce-scatter, sendrecv, as nccl-tests'
 * all_gather_perf, reduce_scatter_perf and sendrecv_perf): each fitted with its own ring shape, kept apart in the
 * report and the calibration, and used for the layout's prediction in place of the all-reduce's α and β, saying so.
 */
import { describe, expect, it } from "vitest";
import { calibrationFromRecords, type Calibration, type ComputeEntry } from "../../src/predict/calibration.ts";
import { predictTraining, type RunPrediction } from "../../src/predict/predict.ts";
import { reportData } from "../../src/analysis/data.ts";
import { computeWorkload } from "../../src/workload/transformer.ts";
import { probeRecord } from "../report/fixtures/records.ts";

const sizes = [1 << 20, 1 << 22, 1 << 24];
// 3 nodes at 1gbit: the all-reduce's bus bandwidth 0.9 Gbit/s, the all-gather's 0.45 (a slower collective on the same
// link).
const probes = [
  probeRecord({ nodes: 3, bandwidth: "1gbit", busbw: sizes.map((size) => [size, 0.9] as const) }),
  probeRecord({
    nodes: 3,
    bandwidth: "1gbit",
    collective: "all-gather",
    busbw: sizes.map((size) => [size, 0.45] as const),
  }),
];

describe("probing a layout's collectives", () => {
  it("fits each collective with its own steps and share, and labels it", () => {
    const data = reportData(probes);
    expect(data.probes.map((probe) => [probe.collective, probe.runIds])).toEqual([
      ["all-reduce", ["allreduce-n3-1gbit-r1"]],
      ["all-gather", ["allreduce-n3-1gbit-all-gather-r1"]],
    ]);
    // Bus bandwidth is the rate one link carries whatever the collective: β = 8 / busbw for both.
    expect(data.probes[0]!.fit!.betaSecondsPerByte).toBeCloseTo(8 / 0.9e9, 18);
    expect(data.probes[1]!.fit!.betaSecondsPerByte).toBeCloseTo(8 / 0.45e9, 18);
  });

  it("keeps the collective in the calibration, apart from the all-reduce's link", () => {
    const calibration = calibrationFromRecords(probes, "results/collectives");
    expect(calibration.links.map((link) => [link.collective ?? "all-reduce", link.bandwidth, link.nodes])).toEqual([
      ["all-reduce", "1gbit", 3],
      ["all-gather", "1gbit", 3],
    ]);
  });

  it("times FSDP's all-gathers on their own probe and its reduce-scatters on the all-reduce's, saying which", () => {
    const knobs = {
      optimizer: "adamw",
      precision: "fp32",
      sequenceLength: 64,
      layers: 4,
      width: 512,
      heads: 8,
    } as const;
    const compute: ComputeEntry = {
      model: "gpt-mini",
      batchSize: 4,
      precision: "fp32",
      workload: computeWorkload("gpt-mini", { ...knobs, parallelism: "ddp" })!,
      device: "cpu",
      deviceModel: "a CPU",
      cpusPerNode: null,
      computeSeconds: { mean: 1.3, halfWidth95: 0.05, repeats: 3 },
      gradientBytes: 52e6,
      source: { kind: "measured", resultsDir: "results/cal", date: "2026-11-27" },
    };
    const probed = calibrationFromRecords(probes, "results/collectives");
    const withGather: Calibration = { ...probed, compute: [compute] };
    const without: Calibration = {
      ...withGather,
      links: withGather.links.filter((link) => link.collective === undefined),
    };
    const question = {
      runId: "fsdp",
      model: "gpt-mini",
      batchSize: 4,
      nodes: 3,
      bandwidth: "1gbit",
      knobs: { ...knobs, parallelism: "fsdp", sharding: "full" },
    };
    const own = predictTraining(question, { calibration: withGather }) as RunPrediction;
    const derived = predictTraining(question, { calibration: without }) as RunPrediction;
    expect(own.sources.link).toMatch(
      /\(3-node probe\); all-gather: measured in results\/collectives .*\(3-node probe\); reduce-scatter derived from the ring all-reduce's α and β \(no probe of it\)$/,
    );
    expect(derived.sources.link).toMatch(
      /; all-gather, reduce-scatter derived from the ring all-reduce's α and β \(no probe of them\)$/,
    );
    // The all-gathers at half the rate: more time on the link than with the all-reduce's α and β.
    expect(own.allReduceSeconds).toBeGreaterThan(derived.allReduceSeconds);
  });
});

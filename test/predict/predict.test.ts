/** Calibrations made from a campaign's records, and the predictions plan makes from them. */
import { describe, expect, it } from "vitest";
import { planCampaign } from "../../src/campaign/plan.ts";
import { parseCampaign } from "../../src/config/load.ts";
import {
  calibrationFromRecords,
  CALIBRATION_SCHEMA,
  mergeCalibrations,
  parseCalibration,
  type Calibration,
} from "../../src/predict/calibration.ts";
import {
  isPrediction,
  predictRun,
  predictTraining,
  type MissingInput,
  type RunPrediction,
} from "../../src/predict/predict.ts";
import { allReduceSeconds, predictHierarchicalStep, predictTrainingStep } from "../../src/results/comm-model.ts";
import type { HostLoad } from "../../src/results/record.ts";
import { probeRecord, scalingCampaign, trainRecord } from "../report/fixtures/records.ts";

const calibration = calibrationFromRecords(scalingCampaign(), "results/earlier");

const plannedRuns = (matrix: string, train = "") =>
  planCampaign(
    parseCampaign(
      `testbed: {target: aws, name: t, nodes: 8, adminCidr: 203.0.113.7/32, sshPublicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2 me@host, sshPrivateKeyFile: /k}\ncampaign:\n  matrix: ${matrix}\n${train}  probe: {enabled: false}\n`,
      "c.yaml",
      "/c/c.yaml",
      { readKeys: false },
    ),
    "c",
  ).runs;

describe("a calibration from a campaign's results", () => {
  it("keeps each baseline's compute per step (batch / one worker's throughput) and each probe's alpha-beta fit, naming where they came from", () => {
    // The resnet50 baseline: 100 and 110 img/s on one worker, batch 64.
    const compute = calibration.compute.find((entry) => entry.model === "resnet50")!;
    expect(compute.computeSeconds.mean).toBeCloseTo(64 / 105, 12);
    expect(compute.computeSeconds.repeats).toBe(2);
    // Two repeats 10 img/s apart: ± 12.706 × 5 img/s around 105, carried to t_c in proportion.
    expect(compute.computeSeconds.halfWidth95).toBeCloseTo((64 / 105) * ((12.706 * 5) / 105), 6);
    expect(compute).toMatchObject({
      batchSize: 64,
      precision: "fp32",
      cpusPerNode: null,
      gradientBytes: 1e8,
      source: { kind: "measured", resultsDir: "results/earlier" },
    });
    // resnet152 has no single-node run: no compute entry for it, rather than a guess.
    expect(calibration.compute.map((entry) => entry.model)).toEqual(["resnet50"]);
    expect(calibration.links).toHaveLength(1);
    expect(calibration.links[0]).toMatchObject({
      bandwidth: "1gbit",
      nodes: 2,
      processesPerNode: 1,
      reduction: "ring",
    });
    expect(calibration.links[0]!.betaSecondsPerByte).toBeGreaterThan(0);
  });

  it("takes no link from a probe through Open MPI: DDP sums through torch.distributed", () => {
    const withMpi = calibrationFromRecords(
      [
        ...scalingCampaign(),
        probeRecord({
          nodes: 2,
          bandwidth: "1gbit",
          library: "mpi",
          busbw: [
            [4096, 0.5],
            [67_108_864, 0.99],
          ],
        }),
      ],
      "results/earlier",
    );
    expect(withMpi.links).toEqual(calibration.links);
  });

  it("merges calibrations, a later entry replacing an earlier one of the same key", () => {
    const later = calibrationFromRecords([trainRecord({ nodes: 1, throughput: 128 })], "results/later");
    const merged = mergeCalibrations([calibration, later]);
    expect(merged.compute).toHaveLength(1);
    expect(merged.compute[0]!.computeSeconds.mean).toBeCloseTo(0.5, 12);
    expect(merged.compute[0]!.source).toMatchObject({ resultsDir: "results/later" });
    expect(merged.links).toEqual(calibration.links);
    // A tensor group's step is kept through a merge, a later one of the same key replacing it.
    const step = {
      model: "gpt-mini",
      batchSize: 4,
      precision: "fp32",
      workload: { layers: 4 },
      nodes: 2,
      processesPerNode: 1,
      tensorDegree: 2,
      device: "cpu",
      deviceModel: "test CPU",
      cpusPerNode: 0.5,
      stepSeconds: { mean: 1, halfWidth95: 0, repeats: 1 },
      source: { kind: "derived" as const, how: "a test" },
    };
    const withStep = (mean: number) => ({
      ...later,
      splitSteps: [{ ...step, stepSeconds: { ...step.stepSeconds, mean } }],
    });
    expect(
      mergeCalibrations([withStep(1), calibration, withStep(2)]).splitSteps.map((entry) => entry.stepSeconds.mean),
    ).toEqual([2]);
  });

  it("reads back what it wrote, and refuses another version or a field that does not fit, saying how to make one", () => {
    expect(parseCalibration(JSON.parse(JSON.stringify(calibration)))).toEqual({ calibration });
    // A file written before ringlab fitted the overlap reads as one without.
    const { overlap: _, ...older } = calibration;
    expect(parseCalibration(JSON.parse(JSON.stringify(older)))).toEqual({
      calibration: { ...calibration, overlap: [] },
    });
    // ... and one written before ringlab measured tensor groups' steps as one without.
    const { splitSteps: __, ...beforeSplit } = calibration;
    expect(parseCalibration(JSON.parse(JSON.stringify(beforeSplit)))).toEqual({
      calibration: { ...calibration, splitSteps: [] },
    });
    expect(parseCalibration({ ...calibration, schema: "ringlab.calibration/v9" })).toEqual({
      problem: `it is a ringlab.calibration/v9 file; this ringlab reads ${CALIBRATION_SCHEMA}: make it again with \`ringlab calibrate <results dir>...\``,
    });
    const broken = { ...calibration, links: [{ ...calibration.links[0], betaSecondsPerByte: -1 }] };
    expect(parseCalibration(broken)).toMatchObject({
      problem: expect.stringMatching(/^not a ringlab.calibration\/v3 file at links.0.betaSecondsPerByte: /),
    });
  });
});

describe("predicting a planned run", () => {
  const predict = (run: ReturnType<typeof plannedRuns>[number], with_: Calibration = calibration) =>
    predictRun(run, { calibration: with_ });

  it("puts t_c and the probe's all-reduce into one step: throughput over every worker and the efficiency without overlap", () => {
    const [run] = plannedRuns("{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 1gbit}");
    const prediction = predict(run!, { ...calibration, overlap: [] }) as RunPrediction;
    const link = calibration.links[0]!;
    const computeSeconds = 64 / 105;
    // 1e8 bytes in DDP's 25 MiB buckets: 4 buckets, each paying 2(N-1)·α; the bandwidth term once.
    const buckets = Math.ceil(1e8 / (25 * 1024 * 1024));
    const expected = computeSeconds + allReduceSeconds(link, 1e8, 2) + (buckets - 1) * 2 * link.alphaSeconds;
    expect(prediction.stepSeconds).toBeCloseTo(expected, 9);
    expect(prediction.throughput).toBeCloseTo((2 * 64) / expected, 6);
    expect(prediction.scalingEfficiency.value).toBeCloseTo(computeSeconds / expected, 9);
    expect(prediction.scalingEfficiency.low).toBeLessThan(prediction.scalingEfficiency.value);
    expect(prediction.scalingEfficiency.high).toBeGreaterThan(prediction.scalingEfficiency.value);
    expect(prediction.sources.compute).toBe(
      "measured in results/earlier on 2025-05-01 (resnet50 at batch 64 on test CPU, 2 repeats)",
    );
    expect(prediction.sources.link).toBe("measured in results/earlier on 2025-05-01 (2-node probe)");
    expect(prediction.overlapShare).toBe(0);
    expect(prediction.noOverlapEfficiency).toBeCloseTo(prediction.scalingEfficiency.value, 12);
    expect(prediction.sources.overlap).toMatch(
      /^assumed: no overlap \(φ = 0\): no shaped training run of ring, 1 per node measured it; the run can be faster, up to the full-overlap figure/,
    );
  });

  it("takes α and β of another node count's probe at the same link, and says the figure is derived", () => {
    const run = plannedRuns("{nodes: 4, model: resnet50, batchSize: 64, bandwidth: 1gbit}")[0]!;
    const prediction = predict(run) as RunPrediction;
    expect(prediction.sources.link).toBe(
      "derived: α and β of the 2-node probe at 1gbit (measured in results/earlier on 2025-05-01) for 4 nodes",
    );
    expect(prediction.scalingEfficiency.value).toBeLessThan(
      (predict(plannedRuns("{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 1gbit}")[0]!) as RunPrediction)
        .scalingEfficiency.value,
    );
  });

  it("halves the bytes when the gradients travel as fp16", () => {
    const [plain] = plannedRuns("{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 1gbit}");
    const [half] = plannedRuns(
      "{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 1gbit}",
      "  train: {fp16Allreduce: true}\n",
    );
    const a = predict(plain!) as RunPrediction;
    const b = predict(half!) as RunPrediction;
    expect(b.stepSeconds).toBeLessThan(a.stepSeconds);
  });

  it("does not guess: a run without measured compute or without a probe of its link says what is missing and how to get it", () => {
    const [noCompute] = plannedRuns("{nodes: 2, model: resnet101, batchSize: 64, bandwidth: 1gbit}");
    expect((predict(noCompute!) as MissingInput).missing).toBe(
      "no measured compute for resnet101 at batch 64 (fp32): run its single-node baseline " +
        "(a campaign with nodes: [1]) and add its results with `ringlab calibrate`",
    );
    // An unlimited link: no shaped rate to scale a probe's β to.
    const [noLink] = plannedRuns("{nodes: 2, model: resnet50, batchSize: 64, bandwidth: unlimited}");
    expect((predict(noLink!) as MissingInput).missing).toMatch(
      /^no probe of the link unlimited \(ring, 1 per node\): run the all-reduce probe there/,
    );
    // A local campaign's quota must match the calibration's: compute at 0.5 cores says nothing of 0.37.
    expect(
      predictRun(plannedRuns("{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 1gbit}")[0]!, {
        calibration,
        cpusPerNode: 0.37,
      }),
    ).toMatchObject({ missing: expect.stringContaining("0.37 cores per worker") });
    expect(isPrediction(predict(plannedRuns("{nodes: 1, model: resnet50, batchSize: 64, bandwidth: 1gbit}")[0]!))).toBe(
      true,
    );
    // Probes predict nothing.
    expect(predictRun({ ...noLink!, job: "allreduce" }, { calibration })).toBeNull();
  });
});

describe("the overlap of the all-reduce with backward, fitted", () => {
  const run2 = plannedRuns("{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 1gbit}")[0]!;
  const withShare = (mean: number, halfWidth95: number, nodes = 2): Calibration => ({
    ...calibration,
    overlap: [
      {
        nodes,
        processesPerNode: 1,
        reduction: "ring",
        cpusPerNode: null,
        share: { mean, halfWidth95, points: 3 },
        source: { kind: "measured", resultsDir: "results/earlier", date: "2025-05-01" },
      },
    ],
  });

  it("fits φ per node count from the shaped training points: the share of min(t_c, Σ t_ar) their measured step saved", () => {
    // One shaped point with a probe: resnet50 on 2 nodes at 1gbit, 150 and 160 img/s against a 105 img/s baseline.
    expect(calibration.overlap).toHaveLength(1);
    const entry = calibration.overlap[0]!;
    expect(entry).toMatchObject({
      nodes: 2,
      processesPerNode: 1,
      reduction: "ring",
      cpusPerNode: null,
      share: { points: 1, halfWidth95: 0 },
      source: { resultsDir: "results/earlier" },
    });
    const computeSeconds = 64 / 105;
    const allReduce = predictTrainingStep(calibration.links[0]!, {
      computeSeconds,
      gradientBytes: 1e8,
      ranks: 2,
    }).allReduceSeconds;
    const measuredStep = computeSeconds / (155 / 210);
    expect(entry.share.mean).toBeCloseTo(
      (computeSeconds + allReduce - measuredStep) / Math.min(computeSeconds, allReduce),
      9,
    );
    // 10gbit had no probe and resnet152 no baseline: neither says anything of the overlap.
  });

  it("takes φ off the no-overlap step, between the bounds, with an interval that holds t_c's and φ's", () => {
    const none = predictRun(run2, { calibration: withShare(0, 0) }) as RunPrediction;
    const some = predictRun(run2, { calibration: withShare(0.4, 0.1) }) as RunPrediction;
    const hidden = 0.4 * Math.min(some.computeSeconds, some.allReduceSeconds);
    expect(some.stepSeconds).toBeCloseTo(none.stepSeconds - hidden, 12);
    expect(some.overlapShare).toBe(0.4);
    expect(some.scalingEfficiency.value).toBeGreaterThan(some.noOverlapEfficiency);
    expect(some.scalingEfficiency.value).toBeLessThan(some.fullOverlapEfficiency);
    expect(some.noOverlapEfficiency).toBeCloseTo(none.scalingEfficiency.value, 12);
    // φ's interval widens the efficiency's beyond t_c's alone.
    const tight = predictRun(run2, { calibration: withShare(0.4, 0) }) as RunPrediction;
    expect(some.scalingEfficiency.high - some.scalingEfficiency.low).toBeGreaterThan(
      tight.scalingEfficiency.high - tight.scalingEfficiency.low,
    );
    expect(some.sources.overlap).toBe(
      "overlap φ 0.40 ± 0.10 over 3 2-node training points, measured in results/earlier on 2025-05-01",
    );
    // A φ past 1 (a step faster than full overlap allows) predicts full overlap, not faster.
    const past = predictRun(run2, { calibration: withShare(1.3, 0) }) as RunPrediction;
    expect(past.overlapShare).toBe(1);
    expect(past.scalingEfficiency.value).toBeCloseTo(past.fullOverlapEfficiency, 12);
  });

  it("takes another node count's φ, said so, and none for one node", () => {
    const run4 = plannedRuns("{nodes: 4, model: resnet50, batchSize: 64, bandwidth: 1gbit}")[0]!;
    expect((predictRun(run4, { calibration: withShare(0.4, 0.1) }) as RunPrediction).sources.overlap).toBe(
      "derived: overlap φ 0.40 ± 0.10 over 3 2-node training points, measured in results/earlier on 2025-05-01, for 4 nodes",
    );
    const one = predictRun(plannedRuns("{nodes: 1, model: resnet50, batchSize: 64, bandwidth: 1gbit}")[0]!, {
      calibration: withShare(0.4, 0.1),
    }) as RunPrediction;
    expect([one.overlapShare, one.scalingEfficiency.value, one.sources.overlap]).toEqual([0, 1, "no link (one node)"]);
  });
});

describe("strategies that send fewer bytes", () => {
  it("predicts local SGD from the ring's probe with the gradient once per period, and leaves PowerSGD to its run's report", () => {
    const ring = predictRun(plannedRuns("{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 1gbit}")[0]!, {
      calibration: { ...calibration, overlap: [] },
    }) as RunPrediction;
    const local = predictRun(
      plannedRuns(
        "{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 1gbit}",
        "  train: {reduction: local-sgd, localSgdPeriod: 4}\n",
      )[0]!,
      { calibration: { ...calibration, overlap: [] } },
    ) as RunPrediction;
    const link = calibration.links[0]!;
    // A quarter of the bytes, and one all-reduce's latency every 4 steps.
    expect(local.allReduceSeconds).toBeCloseTo(
      predictTrainingStep(link, { computeSeconds: 64 / 105, gradientBytes: 1e8 / 4, ranks: 2, allReduces: 1 / 4 })
        .allReduceSeconds,
      12,
    );
    expect(local.sources.link).toBe(ring.sources.link);
    expect(local.scalingEfficiency.value).toBeGreaterThan(ring.scalingEfficiency.value);
    const powersgd = predictRun(
      plannedRuns(
        "{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 1gbit}",
        "  train: {reduction: powersgd}\n",
      )[0]!,
      { calibration },
    ) as MissingInput;
    expect(powersgd.missing).toMatch(
      /^PowerSGD's bytes per step follow from the model's matrix shapes, which a run of it records/,
    );
  });
});

describe("a hierarchical all-reduce, on paper", () => {
  it("takes the network from the one-process-per-node probe and the link inside a node from a probe of one node, before a stated rate", () => {
    const inOneNode = {
      bandwidth: "in one node",
      nodes: 1,
      processesPerNode: 2,
      reduction: "ring",
      cpusPerNode: null,
      alphaSeconds: 1e-4,
      betaSecondsPerByte: 8 / 10e9,
      rSquared: 1,
      source: { kind: "measured" as const, resultsDir: "results/one-node", date: "2025-05-02" },
    };
    const withProbe: Calibration = { ...calibration, links: [...calibration.links, inOneNode], overlap: [] };
    const question = {
      runId: "q",
      model: "resnet50",
      batchSize: 64,
      nodes: 2,
      processesPerNode: 2,
      bandwidth: "1gbit",
      knobs: {},
      hierarchical: true,
    };
    const prediction = predictTraining(question, {
      calibration: withProbe,
      intraNodeBandwidth: "2400gbit",
    }) as RunPrediction;
    // Without the probe, the stated rate: α = 0, β = 8 / 2400 Gbit/s.
    const stated = predictTraining(question, { calibration, intraNodeBandwidth: "2400gbit" }) as RunPrediction;
    expect(stated.sources.link).toMatch(/; inside a node: stated \(--intra-node-bandwidth 2400gbit\); assumed: α = 0$/);
    expect(stated.allReduceSeconds).toBeCloseTo(
      predictHierarchicalStep({ alphaSeconds: 0, betaSecondsPerByte: 8 / 2400e9 }, calibration.links[0]!, {
        computeSeconds: 64 / 105,
        gradientBytes: 1e8,
        nodes: 2,
        perNode: 2,
      }).allReduceSeconds,
      12,
    );
    expect(prediction.sources.link).toBe(
      "between nodes: measured in results/earlier on 2025-05-01 (2-node probe); inside a node: measured in results/one-node on 2025-05-02 (probe of 2 processes in one node)",
    );
    expect(prediction.allReduceSeconds).toBeCloseTo(
      predictHierarchicalStep(inOneNode, calibration.links[0]!, {
        computeSeconds: 64 / 105,
        gradientBytes: 1e8,
        nodes: 2,
        perNode: 2,
      }).allReduceSeconds,
      12,
    );
    // Without the probe or a stated rate: missing, saying how to get it.
    expect((predictTraining(question, { calibration }) as MissingInput).missing).toMatch(
      /^no figure for the link between 2 processes inside a node: probe it \(a campaign with nodes: \[1\], processesPerNode: 2/,
    );
  });
});

describe("deriving what the calibration did not measure, said so", () => {
  const predict = (matrix: string) => predictRun(plannedRuns(matrix)[0]!, { calibration });

  it("takes another batch size's compute per sample outside the measured batches: batch 32 from batch 64's", () => {
    const prediction = predict("{nodes: 1, model: resnet50, batchSize: 32, bandwidth: 1gbit}") as RunPrediction;
    expect(prediction.computeSeconds).toBeCloseTo(32 / 105, 12);
    expect(prediction.sources.compute).toMatch(
      /^derived: batch 64's compute per sample, at batch 32; measured in results\/earlier on \S+ \(resnet50 at batch 64 on .*\)$/,
    );
  });

  it("between two measured batches, the straight line through them (a fixed part a step and a part a sample), not one's compute per sample", () => {
    // Batch 64 at 0.6 s a step, batch 128 at 1.0 s: 0.2 s fixed and 6.25 ms a sample, so batch 96 at 0.8 s (per sample
    // from 64: 0.9 s).
    const compute = calibration.compute[0]!;
    const two: Calibration = {
      ...calibration,
      compute: [
        { ...compute, computeSeconds: { ...compute.computeSeconds, mean: 0.6, halfWidth95: 0.02 } },
        { ...compute, batchSize: 128, computeSeconds: { ...compute.computeSeconds, mean: 1.0, halfWidth95: 0.04 } },
      ],
    };
    const prediction = predictTraining(
      { runId: "b96", model: "resnet50", batchSize: 96, nodes: 1, bandwidth: null, knobs: {} },
      { calibration: two },
    ) as RunPrediction;
    expect(prediction.computeSeconds).toBeCloseTo(0.8, 12);
    expect(prediction.sources.compute).toMatch(
      /^derived: a straight line through batch 64's and 128's compute \(a fixed part a step and a part a sample\), at batch 96; measured in/,
    );
    // Past the largest measured batch: the nearest one's compute per sample.
    expect(
      (
        predictTraining(
          { runId: "b256", model: "resnet50", batchSize: 256, nodes: 1, bandwidth: null, knobs: {} },
          { calibration: two },
        ) as RunPrediction
      ).computeSeconds,
    ).toBeCloseTo(2.0, 12);
  });

  it("scales the nearest shaped rate's β by the rates, keeping its α: 500mbit from the 1gbit probe", () => {
    const link = calibration.links[0]!;
    const derived = predict("{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 500mbit}") as RunPrediction;
    expect(derived.allReduceSeconds).toBeCloseTo(
      predictTrainingStep(
        { alphaSeconds: link.alphaSeconds, betaSecondsPerByte: link.betaSecondsPerByte * 2 },
        { computeSeconds: 64 / 105, gradientBytes: 1e8, ranks: 2 },
      ).allReduceSeconds,
      12,
    );
    expect(derived.sources.link).toMatch(
      /^derived: α and β of the 2-node probe at 1gbit \(measured in results\/earlier on .*\), β scaled by 1gbit\/500mbit for 2 nodes at 500mbit/,
    );
  });

  it("never scales up past the fastest rate probed (where the CPU may set the pace instead)", () => {
    expect(predict("{nodes: 2, model: resnet50, batchSize: 64, bandwidth: 3gbit}")).toMatchObject({
      missing: expect.stringMatching(/^no probe of the link 3gbit/),
    });
  });
});

describe("a disturbed run", () => {
  const steps = (n: number, seconds: number) => Array.from({ length: n }, () => seconds);
  // Repeat 1's latest attempt ran its first 7 steps at 0.8 s, the rest at 0.5 s; its earlier attempt (another
  // fingerprint, say) ran at 0.4 s. Either would move t_c away from repeat 2's 0.5 s.
  const unsteady = {
    ...trainRecord({ nodes: 1, throughput: 102.4, stepSeconds: [...steps(7, 0.8), ...steps(13, 0.5)] }),
    attempt: 2,
  };
  const earlier = { ...trainRecord({ nodes: 1, throughput: 160, stepSeconds: steps(20, 0.4) }), attempt: 1 };
  const steady = trainRecord({ nodes: 1, repeat: 2, throughput: 128, stepSeconds: steps(20, 0.5) });

  it("is left out of the calibration, all its attempts, saying which and why; a steady repeat still calibrates", () => {
    const warnings: string[] = [];
    const calibrated = calibrationFromRecords([earlier, unsteady, steady], "r", (message) => warnings.push(message));
    expect(calibrated.compute).toHaveLength(1);
    expect(calibrated.compute[0]!.computeSeconds).toMatchObject({ mean: 0.5, repeats: 1 });
    expect(warnings).toEqual([
      "r: 1 disturbed run left out (train-resnet50-b64-n1-r1: unsteady run; the report's Flags say how): " +
        "`ringlab campaign --rerun-flagged` runs it again, or, where most runs changed speed, raise numWarmupBatches",
    ]);
  });

  it("leaves out a run during which the machine was busy the same way", () => {
    const warnings: string[] = [];
    const busy = {
      ...trainRecord({ nodes: 1, throughput: 64, stepSeconds: steps(20, 1) }),
      hostLoad: { busy: true } as HostLoad,
    };
    const calibrated = calibrationFromRecords([busy, steady], "r", (message) => warnings.push(message));
    expect(calibrated.compute[0]!.computeSeconds).toMatchObject({ mean: 0.5, repeats: 1 });
    expect(warnings).toEqual([
      expect.stringMatching(/^r: 1 disturbed run left out \(train-resnet50-b64-n1-r1: machine busy;/),
    ]);
  });
});

describe("a probe that determines no link", () => {
  it("leaves a probe of one size out of the calibration, saying why", () => {
    const warnings: string[] = [];
    const lone = calibrationFromRecords(
      [probeRecord({ nodes: 2, bandwidth: "1gbit", busbw: [[4096, 0.2]] })],
      "r",
      (message) => warnings.push(message),
    );
    expect(lone.links).toEqual([]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^r: probe 1gbit, 2 nodes × 1, ring gives no link: 1 message size\(s\), a line needs two; probe larger messages/,
      ),
    ]);
  });

  it("leaves out a probe whose small message took longer than its large one (a stall in 2 iterations), naming the knobs", () => {
    // 4 KiB in 0.33 s, 1 MiB in 9 ms: the line through them falls, which no link does.
    const warnings: string[] = [];
    const stalled = calibrationFromRecords(
      [
        probeRecord({
          nodes: 2,
          bandwidth: "1gbit",
          busbw: [
            [4096, 0.0001],
            [1_048_576, 0.9],
          ],
        }),
      ],
      "r",
      (message) => warnings.push(message),
    );
    expect(stalled.links).toEqual([]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /times do not grow with the message size up to 1048576 bytes.*campaign\.probe\.maxBytes, campaign\.probe\.iters/,
      ),
    ]);
  });
});

import type { RunRecord } from "../../src/results/record.ts";
import { describe, expect, it } from "vitest";
import {
  probeLinkLabel,
  reportData,
  reportMeta,
  type ScalingPoint,
  type TrainingConfig,
} from "../../src/analysis/data.ts";
import { probeRecord, scalingCampaign, trainRecord } from "../report/fixtures/records.ts";
import { renderHtml, renderMarkdown } from "../../src/report/render.ts";
import { libraryComparisons } from "../../src/report/libraries.ts";
import { predictTrainingStep } from "../../src/results/comm-model.ts";

/** Student's t quantiles for 1 and 2 degrees of freedom, the repeats in the fixture. */
const T1 = 12.706;
const T2 = 4.303;
const COMPUTE_SECONDS = 64 / 105;

function config(configs: readonly TrainingConfig[], label: string): TrainingConfig {
  const found = configs.find((c) => c.label === label);
  if (found === undefined) throw new Error(`no configuration ${label} among ${configs.map((c) => c.label).join(", ")}`);
  return found;
}

function point(c: TrainingConfig, bandwidth: string, nodes: number): ScalingPoint {
  const found = c.series.find((s) => s.bandwidth === bandwidth)?.points.find((p) => p.nodes === nodes);
  if (found === undefined) throw new Error(`no ${nodes}-node point at ${bandwidth} in ${c.label}`);
  return found;
}

describe("reportData: training series", () => {
  const data = reportData(scalingCampaign());
  const resnet50 = config(data.training, "resnet50 · batch 64");

  it("averages the single-node repeats into the baseline, with a Student-t interval", () => {
    expect(resnet50.baseline).not.toBeNull();
    expect(resnet50.baseline!.throughput.mean).toBe(105);
    // sd of (100, 110) = √50, standard error 5
    expect(resnet50.baseline!.throughput.halfWidth95).toBeCloseTo(T1 * 5, 9);
    expect(resnet50.baseline!.throughput.n).toBe(2);
    expect(resnet50.baseline!.throughputPerWorker).toBe(105);
    expect(resnet50.baseline!.runIds).toEqual(["train-resnet50-b64-n1-r1", "train-resnet50-b64-n1-r2"]);
  });

  it("gives every point and baseline its median and coefficient of variation (sample std / mean) over the repeats", () => {
    // Baseline (100, 110): sample sd √50; 10gbit at 2 nodes (200, 206, 212): sample sd 6.
    expect(resnet50.baseline!.throughput.median).toBe(105);
    expect(resnet50.baseline!.throughput.coefficientOfVariation).toBeCloseTo(Math.sqrt(50) / 105, 12);
    expect(point(resnet50, "10gbit", 2).throughput.median).toBe(206);
    expect(point(resnet50, "10gbit", 2).throughput.coefficientOfVariation).toBeCloseTo(6 / 206, 12);
    // One slow repeat of four drags the mean, not the median: (100, 101, 103, 120) has mean 106, median 102,
    // deviations -6, -5, -3, 14, so sample variance 266 / 3 and a Student-t half-width with 3 degrees of freedom.
    const skewed = reportData(
      [100, 120, 101, 103].map((throughput, i) => trainRecord({ nodes: 2, repeat: i + 1, throughput })),
    );
    const throughput = skewed.training[0]!.series[0]!.points[0]!.throughput;
    expect(throughput.mean).toBe(106);
    expect(throughput.median).toBe(102);
    expect(throughput.coefficientOfVariation).toBeCloseTo(Math.sqrt(266 / 3) / 106, 12);
    expect(throughput.halfWidth95).toBeCloseTo((3.182 * Math.sqrt(266 / 3)) / 2, 9);
  });

  it("says per point whether its interval came within the campaign's repeatUntil target, and shows it beside n", () => {
    const target = { halfWidth: 0.05, minRepeats: 2, maxRepeats: 4 };
    const withTarget = (record: RunRecord): RunRecord => ({
      ...record,
      params: { ...record.params, repeatUntil: target },
    });
    const records = [
      // Baseline 100 and 100.4: t = 12.706 × 0.2 = 2.5 img/s, within ±5 %.
      ...[100, 100.4].map((throughput, i) => withTarget(trainRecord({ nodes: 1, repeat: i + 1, throughput }))),
      // 2 nodes at 150, 170, 160, 140: ± 20.5 img/s, wider than ±5 % after 4 (maxRepeats).
      ...[150, 170, 160, 140].map((throughput, i) => withTarget(trainRecord({ nodes: 2, repeat: i + 1, throughput }))),
    ];
    const [config] = reportData(records).training;
    expect(config!.baseline!.throughput.precisionTarget).toEqual({ halfWidth: 0.05, reached: true });
    expect(config!.series[0]!.points[0]!.throughput.precisionTarget).toEqual({ halfWidth: 0.05, reached: false });
    const markdown = renderMarkdown(reportData(records), reportMeta(records, new Date()), []);
    expect(markdown).toContain("| none (baseline) | 1 | 100.2 ± 2.5 | 2 (±5.0%: reached) |");
    expect(markdown).toContain("| 1gbit | 2 | 155.0 ± 20.5 | 4 (±5.0%: not reached) |");
    // Without repeatUntil, n alone.
    expect(
      reportData([trainRecord({ nodes: 1, throughput: 100 })]).training[0]!.baseline!.throughput.precisionTarget,
    ).toBeUndefined();
  });

  it("gives one series per link, slowest first, each with its multi-node points in node order", () => {
    expect(resnet50.series.map((s) => s.bandwidth)).toEqual(["1gbit", "10gbit"]);
    expect(resnet50.series.map((s) => s.linkGbps)).toEqual([1, 10]);
    expect(resnet50.series.map((s) => s.points.map((p) => p.nodes))).toEqual([
      [2, 4],
      [2, 4],
    ]);
  });

  it("compares each point with n × the single-node throughput", () => {
    const twoNodes = point(resnet50, "1gbit", 2);
    expect(twoNodes.throughput.mean).toBe(155);
    expect(twoNodes.idealThroughput).toBe(210);
    expect(twoNodes.scalingEfficiency).toBeCloseTo(155 / 210, 12);
    expect(point(resnet50, "10gbit", 4).scalingEfficiency).toBeCloseTo(402 / 420, 12);
  });

  it("puts the ring cost model next to the measurement: t_c, t_ar, both ceilings and the throughput they allow", () => {
    const twoNodes = point(resnet50, "1gbit", 2);
    expect(twoNodes.computeSecondsPerStep).toBeCloseTo(COMPUTE_SECONDS, 12);
    // 2(N-1)/N · S/B = 1 · 1e8 B / 1.25e8 B/s
    expect(twoNodes.allReduceLowerBoundSeconds).toBeCloseTo(0.8, 12);
    expect(twoNodes.efficiencyCeiling!.noOverlap).toBeCloseTo(COMPUTE_SECONDS / (COMPUTE_SECONDS + 0.8), 12);
    expect(twoNodes.efficiencyCeiling!.perfectOverlap).toBeCloseTo(COMPUTE_SECONDS / 0.8, 12);
    expect(twoNodes.throughputCeiling!.noOverlap).toBeCloseTo((210 * COMPUTE_SECONDS) / (COMPUTE_SECONDS + 0.8), 9);

    const fourNodesFast = point(resnet50, "10gbit", 4);
    // 1.5 · 1e8 / 1.25e9
    expect(fourNodesFast.allReduceLowerBoundSeconds).toBeCloseTo(0.12, 12);
    expect(fourNodesFast.efficiencyCeiling!.perfectOverlap).toBe(1);
  });

  it("has no interval for one repeat but keeps the worker's spread over iterations, and uses Student's t over three", () => {
    expect(point(resnet50, "1gbit", 4).throughput).toEqual({
      mean: 200,
      halfWidth95: 0,
      n: 1,
      median: 200,
      coefficientOfVariation: null,
      iterationSpread95: 8,
    });
    const threeRepeats = point(resnet50, "10gbit", 2).throughput;
    expect(threeRepeats.mean).toBe(206);
    // sd of (200, 206, 212) = 6
    expect(threeRepeats.halfWidth95).toBeCloseTo((T2 * 6) / Math.sqrt(3), 9);
    expect(threeRepeats.n).toBe(3);
  });

  it("leaves failed repeats out of the measurement", () => {
    const fourNodesFast = point(resnet50, "10gbit", 4);
    expect(fourNodesFast.runIds).toEqual(["train-resnet50-b64-n4-10gbit-r1", "train-resnet50-b64-n4-10gbit-r2"]);
    expect(fourNodesFast.throughput.mean).toBe(402);
  });

  it("without a single-node run says nothing about efficiency but still bounds the all-reduce", () => {
    const resnet152 = config(data.training, "resnet152 · batch 32");
    expect(resnet152.baseline).toBeNull();
    const twoNodes = point(resnet152, "1gbit", 2);
    expect(twoNodes.throughput).toEqual({
      mean: 40,
      halfWidth95: 0,
      n: 1,
      median: 40,
      coefficientOfVariation: null,
      iterationSpread95: 2,
    });
    expect(twoNodes.idealThroughput).toBeNull();
    expect(twoNodes.scalingEfficiency).toBeNull();
    expect(twoNodes.computeSecondsPerStep).toBeNull();
    expect(twoNodes.efficiencyCeiling).toBeNull();
    expect(twoNodes.throughputCeiling).toBeNull();
    expect(twoNodes.allReduceLowerBoundSeconds).toBeCloseTo(1.92, 12);
  });

  it("names a strategy's knob only on the configurations that set it (not \"powersgdRank=undefined\" on the ring's)", () => {
    const strategies: Record<string, string | number>[] = [
      { reduction: "ring" },
      { reduction: "powersgd", powersgdRank: 1 },
      { reduction: "powersgd", powersgdRank: 4 },
    ];
    const records = strategies.map((knobs) => trainRecord({ nodes: 2, bandwidth: "1gbit", throughput: 150, knobs }));
    expect(
      reportData(records)
        .training.map((c) => c.label)
        .sort(),
    ).toEqual([
      "resnet50 · batch 64 · powersgdRank=1 · reduction=powersgd",
      "resnet50 · batch 64 · powersgdRank=4 · reduction=powersgd",
      "resnet50 · batch 64 · reduction=ring",
    ]);
  });

  it("halves the all-reduce bytes when gradients travel as fp16, and names the knob that tells panels apart", () => {
    const records = [false, true].flatMap((fp16Allreduce) => [
      trainRecord({ nodes: 1, throughput: 100, knobs: { fp16Allreduce } }),
      trainRecord({ nodes: 2, bandwidth: "1gbit", throughput: 150, knobs: { fp16Allreduce } }),
    ]);
    const { training } = reportData(records);
    expect(training.map((c) => c.label)).toEqual([
      "resnet50 · batch 64 · fp16Allreduce=false",
      "resnet50 · batch 64 · fp16Allreduce=true",
    ]);
    expect(point(training[0]!, "1gbit", 2).allReduceLowerBoundSeconds).toBeCloseTo(0.8, 12);
    expect(point(training[1]!, "1gbit", 2).allReduceBytes).toBe(5e7);
    expect(point(training[1]!, "1gbit", 2).allReduceLowerBoundSeconds).toBeCloseTo(0.4, 12);
  });

  it("an unlimited link has no lower bound and so no ceiling, but efficiency is still measured", () => {
    const { training } = reportData([
      trainRecord({ nodes: 1, throughput: 100 }),
      trainRecord({ nodes: 2, bandwidth: "unlimited", throughput: 190 }),
    ]);
    const series = training[0]!.series[0]!;
    expect(series.bandwidth).toBe("unlimited");
    expect(series.linkGbps).toBeNull();
    expect(series.points[0]!.scalingEfficiency).toBeCloseTo(0.95, 12);
    expect(series.points[0]!.allReduceLowerBoundSeconds).toBeNull();
    expect(series.points[0]!.efficiencyCeiling).toBeNull();
  });
});

describe("reportData: probe, failures, counts", () => {
  const data = reportData(scalingCampaign());

  it("averages bus bandwidth per message size over the repeats and compares the largest with the link", () => {
    expect(data.probes).toHaveLength(1);
    const probe = data.probes[0]!;
    expect(probe).toMatchObject({ bandwidth: "1gbit", linkGbps: 1, nodes: 2, workers: 2 });
    expect(probe.rows.map((row) => row.sizeBytes)).toEqual([4096, 67_108_864]);
    const largest = probe.rows[1]!;
    expect(largest.busBandwidthGbps.mean).toBeCloseTo(0.92, 12);
    // sd of (0.9, 0.94) = 0.02·√2, standard error 0.02
    expect(largest.busBandwidthGbps.halfWidth95).toBeCloseTo(T1 * 0.02, 9);
    // two ranks: busbw = algbw
    expect(largest.algorithmBandwidthGbps).toBeCloseTo(0.92, 12);
    expect(probe.largestSizeLinkFraction).toBeCloseTo(0.92, 12);
  });

  it("has no link share for a probe over an unlimited link", () => {
    const { probes } = reportData([probeRecord({ nodes: 4, bandwidth: "unlimited", busbw: [[1024, 3]] })]);
    expect(probes[0]!.largestSizeLinkFraction).toBeNull();
  });

  it("lists every failed run with its error and logs directory, and counts runs", () => {
    expect(data.runCounts).toEqual({ total: 14, ok: 13, failed: 1, doneAgain: 0 });
    expect(data.failures).toEqual([
      {
        runId: "train-resnet50-b64-n4-10gbit-r3",
        attempts: 1,
        job: "train",
        nodes: 4,
        bandwidth: "10gbit",
        model: "resnet50",
        batchSize: 64,
        error: "rendezvous timed out after 120 s <node3>",
        logsDir: "logs/train-resnet50-b64-n4-10gbit-r3",
      },
    ]);
  });

  it("is empty, not NaN, without records", () => {
    expect(reportData([])).toEqual({
      runCounts: { total: 0, ok: 0, failed: 0, doneAgain: 0 },
      training: [],
      probes: [],
      failures: [],
      realData: [],
    });
  });
});

describe("reportData: the model fitted from the probe", () => {
  const data = reportData(scalingCampaign());

  it("fits α-β to each probe series; two message sizes fit exactly", () => {
    const fit = data.probes[0]!.fit!;
    expect(fit.samples).toBe(2);
    expect(fit.rSquared).toBeCloseTo(1, 12);
    // At 64 MiB the mean time is mean(8·2^26 / 0.9e9, 8·2^26 / 0.94e9) s on 2 ranks, where t = 2α + S·β.
    const time64MiB = ((8 * 2 ** 26) / 0.9e9 + (8 * 2 ** 26) / 0.94e9) / 2;
    expect(2 * fit.alphaSeconds + 2 ** 26 * fit.betaSecondsPerByte).toBeCloseTo(time64MiB, 12);
  });

  it("predicts every training point that has a probe at its link and node count, and gives the error in points", () => {
    const resnet50 = data.training.find((config) => config.model === "resnet50")!;
    const [oneGbit, tenGbit] = resnet50.series;
    const point = oneGbit!.points.find((p) => p.nodes === 2)!;
    const prediction = point.prediction!;
    // 1e8 gradient bytes in 25 MiB buckets: ceil(1e8 / 26 214 400) = 4.
    expect(prediction.buckets).toBe(4);
    expect(prediction.efficiency.noOverlap).toBeCloseTo(
      point.computeSecondsPerStep! / (point.computeSecondsPerStep! + prediction.allReduceSeconds),
      12,
    );
    expect(prediction.errorPoints.noOverlap).toBeCloseTo(100 * (155 / 210 - prediction.efficiency.noOverlap), 9);
    expect(prediction.throughput.perfectOverlap).toBeCloseTo(210 * prediction.efficiency.perfectOverlap, 9);
    // No probe at 4 nodes or at 10gbit: no prediction rather than one borrowed from another link.
    expect(oneGbit!.points.find((p) => p.nodes === 4)!.prediction).toBeNull();
    expect(tenGbit!.points.every((p) => p.prediction === null)).toBe(true);
  });
});

describe("reportData: reductions", () => {
  // 4 nodes at 1 Gbit/s, 1e8 gradient bytes: ring bound 1.2 s, parameter server 4 · 0.8 s = 3.2 s (egress-shaped).
  const records = ["ring", "parameter-server"].flatMap((reduction) => [
    trainRecord({ nodes: 1, throughput: 100, knobs: { reduction } }),
    trainRecord({ nodes: 4, throughput: reduction === "ring" ? 300 : 150, knobs: { reduction } }),
    probeRecord({
      nodes: 4,
      bandwidth: "1gbit",
      reduction: reduction === "ring" ? undefined : reduction,
      busbw:
        reduction === "ring"
          ? [
              [2 ** 20, 0.5],
              [2 ** 26, 0.9],
            ]
          : [
              [2 ** 20, 0.2],
              [2 ** 26, 0.3],
            ],
    }),
  ]);
  const data = reportData(records);

  it("keeps one probe series per reduction and labels them apart", () => {
    expect(data.probes.map((probe) => [probe.reduction, probeLinkLabel(probe)])).toEqual([
      ["ring", "1gbit"],
      ["parameter-server", "1gbit, parameter-server"],
    ]);
  });

  it("bounds each point with its reduction's model and predicts it from the probe of the same reduction", () => {
    const ring = point(config(data.training, "resnet50 · batch 64 · reduction=ring"), "1gbit", 4);
    const server = point(config(data.training, "resnet50 · batch 64 · reduction=parameter-server"), "1gbit", 4);
    expect([ring.reduction, server.reduction]).toEqual(["ring", "parameter-server"]);
    expect(ring.allReduceLowerBoundSeconds).toBeCloseTo(1.2, 12);
    expect(server.allReduceLowerBoundSeconds).toBeCloseTo(3.2, 12);
    // The server's probe is slower, so its fitted model predicts a slower all-reduce.
    expect(server.prediction!.allReduceSeconds).toBeGreaterThan(2 * ring.prediction!.allReduceSeconds);
  });

  it("takes runs without the knob (older records) for ring", () => {
    const old = reportData([trainRecord({ nodes: 1, throughput: 100 }), trainRecord({ nodes: 2, throughput: 150 })]);
    expect(old.training[0]!.series[0]!.points[0]!.reduction).toBe("ring");
  });
});

describe("reportData: strategies that send fewer bytes over the ring's link", () => {
  // 3 nodes at 1 Gbit/s; ring sends the whole 1e8-byte gradient, PowerSGD 2e6 bytes of factors, local SGD 1e8 / 4.
  const records = [
    ...["ring", "powersgd", "local-sgd"].map((reduction) =>
      trainRecord({ nodes: 1, throughput: 100, knobs: { reduction } }),
    ),
    trainRecord({ nodes: 3, throughput: 120, knobs: { reduction: "ring" }, wireBytesPerStep: 1e8 }),
    trainRecord({ nodes: 3, throughput: 270, knobs: { reduction: "powersgd" }, wireBytesPerStep: 2e6 }),
    trainRecord({ nodes: 3, throughput: 220, knobs: { reduction: "local-sgd" }, wireBytesPerStep: 2.5e7 }),
    probeRecord({
      nodes: 3,
      bandwidth: "1gbit",
      busbw: [
        [2 ** 20, 0.5],
        [2 ** 26, 0.9],
      ],
    }),
  ];
  const data = reportData(records);
  const at = (reduction: string) =>
    point(config(data.training, `resnet50 · batch 64 · reduction=${reduction}`), "1gbit", 3);

  it("bounds and predicts each from the ring's probe with the bytes the worker says it sent", () => {
    expect(data.probes.map((probe) => probe.reduction)).toEqual(["ring"]);
    expect([at("ring").allReduceBytes, at("powersgd").allReduceBytes, at("local-sgd").allReduceBytes]).toEqual([
      1e8, 2e6, 2.5e7,
    ]);
    // The ring's bound on 3 ranks, 2(N-1)/N · S/B, for each strategy's S.
    expect(at("powersgd").allReduceLowerBoundSeconds).toBeCloseTo(((4 / 3) * 2e6 * 8) / 1e9, 12);
    const fit = data.probes[0]!.fit!;
    // Local SGD: one flat all-reduce every 4 steps (the default period); PowerSGD: three per DDP bucket of the whole
    // gradient.
    expect(at("local-sgd").prediction!.allReduceSeconds).toBeCloseTo(
      predictTrainingStep(fit, { computeSeconds: COMPUTE_SECONDS, gradientBytes: 2.5e7, ranks: 3, allReduces: 1 / 4 })
        .allReduceSeconds,
      12,
    );
    expect(at("powersgd").prediction!.allReduceSeconds).toBeCloseTo(
      predictTrainingStep(fit, { computeSeconds: COMPUTE_SECONDS, gradientBytes: 2e6, ranks: 3, allReduces: 3 * 4 })
        .allReduceSeconds,
      12,
    );
    expect(at("powersgd").prediction!.efficiency.noOverlap).toBeGreaterThan(
      at("local-sgd").prediction!.efficiency.noOverlap,
    );
    expect(at("local-sgd").prediction!.efficiency.noOverlap).toBeGreaterThan(
      at("ring").prediction!.efficiency.noOverlap,
    );
  });
});

describe("reportData: the communication library", () => {
  // The same 2-node link summed by torch.distributed (Gloo) and by Open MPI; the training runs use Gloo.
  const records = [
    trainRecord({ nodes: 1, throughput: 100 }),
    trainRecord({ nodes: 2, throughput: 150 }),
    probeRecord({
      nodes: 2,
      bandwidth: "1gbit",
      busbw: [
        [2 ** 20, 0.6],
        [2 ** 26, 0.95],
      ],
    }),
    probeRecord({
      nodes: 2,
      bandwidth: "1gbit",
      library: "mpi",
      busbw: [
        [2 ** 20, 0.8],
        [2 ** 26, 0.9],
      ],
    }),
  ];
  const data = reportData(records);

  it("keeps one probe series per library, labelled apart, and predicts training from torch.distributed's only", () => {
    expect(data.probes.map((probe) => [probe.library, probe.backend, probeLinkLabel(probe)])).toEqual([
      ["torch", "gloo", "1gbit"],
      ["mpi", "gloo", "1gbit, Open MPI"],
    ]);
    expect(data.probes[1]!.libraryVersion).toBe("Open MPI v4.1.4, package: Debian OpenMPI");
    const gloo = data.probes[0]!.fit!;
    expect(point(config(data.training, "resnet50 · batch 64"), "1gbit", 2).prediction!.allReduceSeconds).toBeCloseTo(
      predictTrainingStep(gloo, { computeSeconds: COMPUTE_SECONDS, gradientBytes: 1e8, ranks: 2 }).allReduceSeconds,
      12,
    );
  });

  it("says which library gets closer to the link, by how much, and which starts a step sooner", () => {
    const [sentence] = libraryComparisons(data.probes);
    expect(sentence).toMatch(
      /^1gbit, 2 nodes: torch\.distributed \(gloo\) moves its bytes at 8\/β = [\d.]+ Gbit\/s \([\d.]+ % of the link\) and pays α = \d+ µs per ring step; Open MPI moves/,
    );
    expect(sentence).toMatch(
      /torch\.distributed \(gloo\) gets closer to the link, by [\d.]+ % in large messages; Open MPI starts a step sooner, which small messages feel\.$/,
    );
    expect(renderMarkdown(data, reportMeta(records, new Date("2025-05-02T00:00:00Z")), [])).toContain(sentence);
    // Without both libraries on a link there is nothing to compare.
    expect(libraryComparisons(reportData(records.slice(0, 3)).probes)).toEqual([]);
  });

  it("sets each library's rate against iperf3's one TCP stream on the same link, where the probe measured it", () => {
    const withReference = reportData([
      probeRecord({
        nodes: 2,
        bandwidth: "1gbit",
        repeat: 1,
        referenceGbps: 0.95,
        busbw: [
          [2 ** 20, 0.6],
          [2 ** 26, 0.95],
        ],
      }),
      probeRecord({
        nodes: 2,
        bandwidth: "1gbit",
        repeat: 2,
        referenceGbps: 0.96,
        busbw: [
          [2 ** 20, 0.6],
          [2 ** 26, 0.95],
        ],
      }),
      probeRecord({
        nodes: 2,
        bandwidth: "1gbit",
        library: "mpi",
        busbw: [
          [2 ** 20, 0.8],
          [2 ** 26, 0.9],
        ],
      }),
    ]);
    expect(withReference.probes[0]!.referenceGbps).toMatchObject({ mean: 0.955, n: 2 });
    expect(withReference.probes[1]!.referenceGbps).toBeNull();
    const [sentence] = libraryComparisons(withReference.probes);
    // Like against like: the bus bandwidth of the largest message (64 MiB: 0.95 and 0.9 Gbit/s) against iperf3's 0.955.
    expect(sentence).toMatch(
      /iperf3's one TCP stream on the same link just before: 0\.955 Gbit\/s, the most any library can move; the bus bandwidth at 64 MiB reaches of it torch\.distributed \(gloo\) 99\.5 %, Open MPI 94\.2 %\.$/,
    );
    // The reference alone, without Open MPI's probe, still gets its sentence.
    expect(
      libraryComparisons(
        reportData([
          probeRecord({
            nodes: 2,
            bandwidth: "1gbit",
            referenceGbps: 0.95,
            busbw: [
              [2 ** 20, 0.6],
              [2 ** 26, 0.95],
            ],
          }),
        ]).probes,
      ),
    ).toEqual([
      expect.stringMatching(
        /^1gbit, 2 nodes: torch\.distributed \(gloo\) moves its bytes .* iperf3's one TCP stream on the same link just before: 0\.950 Gbit\/s/,
      ),
    ]);
  });

  it("takes a probe result without the field (older records) for torch.distributed", () => {
    expect(
      reportData([
        probeRecord({
          nodes: 2,
          bandwidth: "1gbit",
          busbw: [
            [4096, 0.1],
            [2 ** 20, 0.9],
          ],
        }),
      ]).probes[0]!.library,
    ).toBe("torch");
  });
});

describe("reportMeta", () => {
  it("names the campaign and testbed and spans the first start to the last end", () => {
    const records = [
      trainRecord({ nodes: 1, throughput: 100, startedAt: "2025-05-02T08:00:00.000Z" }),
      trainRecord({ nodes: 2, throughput: 150, startedAt: "2025-05-01T09:00:00.000Z" }),
    ];
    expect(reportMeta(records, new Date("2025-05-03T00:00:00Z"))).toEqual({
      campaign: "scaling-test",
      testbed: "lab (local)",
      firstStartedAt: "2025-05-01T09:00:00.000Z",
      lastEndedAt: "2025-05-02T08:01:00.000Z",
      generatedAt: "2025-05-03T00:00:00.000Z",
      sharedMachine: true,
      cpusPerNode: [],
      severalProcessesPerNode: false,
      leftOut: [],
    });
  });

  it("says when the runs were Slurm jobs, or ran under mpirun", () => {
    const slurm = (record: RunRecord): RunRecord => ({ ...record, params: { ...record.params, launcher: "slurm" } });
    expect(reportMeta([slurm(trainRecord({ nodes: 1, throughput: 100 }))], new Date()).testbed).toBe(
      "lab (local, runs as Slurm jobs)",
    );
    const mpi = (record: RunRecord): RunRecord => ({ ...record, params: { ...record.params, launcher: "mpi" } });
    expect(reportMeta([mpi(trainRecord({ nodes: 1, throughput: 100 }))], new Date()).testbed).toBe(
      "lab (local, runs under mpirun)",
    );
  });

  it("names the CPU quota the runs had; local runs under a quota no longer count as sharing the machine", () => {
    const quota = (record: RunRecord, cpusPerNode: number): RunRecord => ({
      ...record,
      params: { ...record.params, cpusPerNode },
    });
    const meta = reportMeta(
      [quota(trainRecord({ nodes: 1, throughput: 100 }), 0.5), quota(trainRecord({ nodes: 2, throughput: 150 }), 0.5)],
      new Date(),
    );
    expect(meta.cpusPerNode).toEqual([0.5]);
    expect(meta.sharedMachine).toBe(false);
  });

  it("flags results from machines that are not shared only when no run was on the local testbed", () => {
    const aws = {
      ...trainRecord({ nodes: 2, throughput: 150 }),
      testbed: { name: "seed", target: "aws" as const, instanceType: "g4dn.8xlarge" },
    };
    expect(reportMeta([aws], new Date()).sharedMachine).toBe(false);
  });
});

describe("real data and time to train", () => {
  it("lists the runs that read a dataset with their wait for data, time to train and restarts, and leaves synthetic runs out", () => {
    const synthetic = trainRecord({ model: "small", batchSize: 16, nodes: 1, throughput: 100 });
    // The same configuration on synthetic data, two repeats: the real-data row is compared with their mean.
    const syntheticTwoNodes = [160, 170].map((throughput, i) =>
      trainRecord({ model: "small", batchSize: 16, nodes: 2, throughput, repeat: i + 1, knobs: { data: "synthetic" } }),
    );
    const real = trainRecord({ model: "small", batchSize: 16, nodes: 2, throughput: 150, knobs: { data: "dataset" } });
    const metrics = {
      ...real.result!.metrics,
      data: { kind: "folder", path: "/s/datasets/x" },
      stepSeconds: [0.2, 0.2],
      dataWaitSeconds: [0.01, 0.03],
      timeToTrainSeconds: 42.5,
      targetAccuracy: 0.9,
      reachedTargetAtEpoch: 3,
      restarts: 1,
      stepsRedone: 4,
      secondsLost: 6.5,
      epochs: [1, 2, 3].map((epoch) => ({ epoch, seconds: 14, heldOutAccuracy: 0.3 * epoch, steps: 10 * epoch })),
    };
    const data = reportData([
      synthetic,
      ...syntheticTwoNodes,
      { ...real, result: { ...real.result!, metrics } } as RunRecord,
    ]);
    expect(data.realData).toEqual([
      {
        runId: "train-small-b16-n2-1gbit-data-dataset-r1",
        label: "small · batch 16 · 2 nodes × 1 · 1gbit",
        workers: 2,
        throughput: 150,
        syntheticThroughput: 165,
        dataWaitFraction: expect.closeTo(0.1, 12),
        timeToTrainSeconds: 42.5,
        epochs: 3,
        heldOutAccuracy: 0.3 * 3,
        targetAccuracy: 0.9,
        reachedTargetAtEpoch: 3,
        restarts: 1,
        stepsRedone: 4,
        secondsLost: 6.5,
        nodesAtStart: 2,
        nodesAtEnd: 2,
        strategy: "ring",
        reduction: "ring",
        comparedWith: expect.any(String),
        context: "small · batch 16 · 2 nodes × 1 · 1gbit",
        linkGbps: 1,
        stepsToTarget: 30,
        bestAccuracy: 0.3 * 3,
        replicaDivergence: null,
        averagingDrift: null,
        staleness: null,
      },
    ]);
  });

  it("says when a run lost a node and went on with fewer (elastic), in the data and on the page, and leaves it out of scaling", () => {
    const real = trainRecord({
      model: "small",
      batchSize: 16,
      nodes: 3,
      throughput: 90,
      knobs: { data: "dataset", failNode: 2, minNodes: 2 },
    });
    const result = {
      ...real.result!,
      world: { ...real.result!.world, nodes: 2, size: 2 },
      metrics: {
        ...real.result!.metrics,
        data: { kind: "folder", path: "/s/datasets/x" },
        timeToTrainSeconds: 30,
        restarts: 1,
        stepsRedone: 0,
        secondsLost: 19.2,
        nodesAtStart: 3,
      },
    };
    const data = reportData([{ ...real, result } as RunRecord]);
    expect(data.realData.map((run) => [run.nodesAtStart, run.nodesAtEnd, run.workers])).toEqual([[3, 2, 2]]);
    expect(data.training).toEqual([]); // no point of a scaling curve: it ran at 3 nodes and at 2
    const page = renderMarkdown(data, reportMeta([{ ...real, result } as RunRecord], new Date()), []);
    expect(page).toContain("| 1 (lost 1 of 3 nodes, went on with 2) | 0 | 19.2 s |");
    expect(renderHtml(data, {}, reportMeta([{ ...real, result } as RunRecord], new Date()), [])).toContain(
      "No training run to draw a scaling curve from: a run that lost a node ran at two node counts",
    );
  });
});

describe("reportData: the nodes' CPU check", () => {
  it("gives every point and baseline the mean over its runs of each run's mean GFLOP/s, with Student's t over the runs that have one", () => {
    const data = reportData([
      trainRecord({ nodes: 1, repeat: 1, throughput: 100, computeGflops: [4.0] }),
      trainRecord({ nodes: 1, repeat: 2, throughput: 100, computeGflops: [3.8] }),
      // Each run counts once, whatever its rank count: (3.6, 3.8) → 3.7 and (3.4, 3.6) → 3.5; the third predates the
      // calibration.
      trainRecord({ nodes: 2, repeat: 1, throughput: 150, computeGflops: [3.6, 3.8] }),
      trainRecord({ nodes: 2, repeat: 2, throughput: 150, computeGflops: [3.4, 3.6] }),
      trainRecord({ nodes: 2, repeat: 3, throughput: 150 }),
    ]);
    const configuration = data.training[0]!;
    // (4.0, 3.8) and (3.7, 3.5): sample sd 0.1·√2 each, standard error 0.1.
    expect(configuration.baseline!.cpuCheckGflops!.mean).toBeCloseTo(3.9, 12);
    expect(configuration.baseline!.cpuCheckGflops!.halfWidth95).toBeCloseTo(T1 * 0.1, 9);
    const calibration = point(configuration, "1gbit", 2).cpuCheckGflops!;
    expect(calibration.n).toBe(2);
    expect(calibration.mean).toBeCloseTo(3.6, 12);
    expect(calibration.halfWidth95).toBeCloseTo(T1 * 0.1, 9);
  });

  it("leaves the scaling efficiency as measured, whatever the calibrations say", () => {
    // 150 / 200 = 0.75 although the point's nodes computed at 3.2 GFLOP/s against the baseline's 4.0.
    const data = reportData([
      trainRecord({ nodes: 1, throughput: 100, computeGflops: [4.0] }),
      trainRecord({ nodes: 2, throughput: 150, computeGflops: [3.0, 3.4] }),
    ]);
    expect(point(data.training[0]!, "1gbit", 2).scalingEfficiency).toBeCloseTo(0.75, 12);
  });

  it("has no calibration for records without one, on either side", () => {
    const old = reportData(scalingCampaign());
    const resnet50 = config(old.training, "resnet50 · batch 64");
    expect(resnet50.baseline!.cpuCheckGflops).toBeNull();
    expect(resnet50.series.flatMap((series) => series.points).map((p) => p.cpuCheckGflops)).toEqual([
      null,
      null,
      null,
      null,
    ]);
    const pointOnly = reportData([
      trainRecord({ nodes: 1, throughput: 100 }),
      trainRecord({ nodes: 2, throughput: 150, computeGflops: [3.0, 3.4] }),
    ]);
    expect(pointOnly.training[0]!.baseline!.cpuCheckGflops).toBeNull();
    expect(point(pointOnly.training[0]!, "1gbit", 2).cpuCheckGflops!.mean).toBeCloseTo(3.2, 12);
    const baselineOnly = reportData([
      trainRecord({ nodes: 1, throughput: 100, computeGflops: [4.0] }),
      trainRecord({ nodes: 2, throughput: 150 }),
    ]);
    expect(baselineOnly.training[0]!.baseline!.cpuCheckGflops!.mean).toBeCloseTo(4.0, 12);
    expect(point(baselineOnly.training[0]!, "1gbit", 2).cpuCheckGflops).toBeNull();
  });
});

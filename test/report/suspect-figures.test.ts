import { describe, expect, it } from "vitest";
import { reportData } from "../../src/analysis/data.ts";
import { flagKindsOf, flagTally, reportFlags, type Flag } from "../../src/report/suspect-figures.ts";
import type { HostLoad, RunRecord } from "../../src/results/record.ts";
import { probeRecord, scalingCampaign, trainRecord } from "./fixtures/records.ts";

function flagsOf(records: readonly RunRecord[]): Flag[] {
  return reportFlags(reportData(records), records);
}

function ofKind(records: readonly RunRecord[], kind: Flag["kind"]): Flag[] {
  return flagsOf(records).filter((flag) => flag.kind === kind);
}

/** Repeats 1, 2, ... of one training configuration, one record each. */
function repeats(
  options: Omit<Parameters<typeof trainRecord>[0], "throughput" | "repeat">,
  values: readonly number[],
): RunRecord[] {
  return values.map((throughput, i) => trainRecord({ ...options, repeat: i + 1, throughput }));
}

describe("efficiency above ideal", () => {
  // Baseline 100 ± 2 img/s (one run's spread), so the ideal at 2 nodes is 200; the point's spread is 4 img/s.
  // Delta method: ± E · √((2/100)² + (4/T)²). At T = 206: E 1.03, ± 0.02871, so 3 points over is beyond it;
  // at T = 205.6: E 1.028, ± 0.02868, and 2.8 points over is inside it.
  const baseline = trainRecord({ nodes: 1, throughput: 100, ci95: 2 });

  it("fires when the efficiency exceeds 100% by more than its interval, and says what the interval came from", () => {
    const [flag, ...rest] = ofKind(
      [baseline, trainRecord({ nodes: 2, throughput: 206, ci95: 4 })],
      "efficiency-above-ideal",
    );
    expect(rest).toEqual([]);
    expect(flag).toMatchObject({
      subject: "resnet50 · batch 64 · 1gbit · 2 nodes",
      runIds: ["train-resnet50-b64-n2-1gbit-r1"],
    });
    expect(flag!.reason).toContain(
      "scaling efficiency 103.0% ± 2.9 points is above 100% by more than its 95% interval",
    );
    expect(flag!.reason).toContain(
      "the point's 206.0 img/s (± 4.0, one run's spread over iterations) and the baseline's 100.0 img/s (± 2.0, one run's spread over iterations)",
    );
  });

  it("does not fire just inside the interval", () => {
    expect(ofKind([baseline, trainRecord({ nodes: 2, throughput: 205.6, ci95: 4 })], "efficiency-above-ideal")).toEqual(
      [],
    );
  });

  it("uses Student's t over repeats where there are several", () => {
    // Point (230, 232, 234): 232 ± 4.303 · 2/√3 = 232 ± 4.97; baseline (100, 100.2, 99.8): 100 ± 0.50.
    // E 1.16 ± 1.16 · √((4.97/232)² + (0.50/100)²) = 1.16 ± 0.0255.
    const records = [...repeats({ nodes: 1 }, [100, 100.2, 99.8]), ...repeats({ nodes: 2 }, [230, 232, 234])];
    const [flag] = ofKind(records, "efficiency-above-ideal");
    expect(flag!.reason).toContain("scaling efficiency 116.0% ± 2.6 points");
    expect(flag!.reason).toContain(
      "the point's 232.0 img/s (± 5.0, Student's t over 3 repeats) and the baseline's 100.0 img/s (± 0.5, Student's t over 3 repeats)",
    );
  });

  it("with no noise estimate on either side, any excess counts, and the reason says there was none", () => {
    const [flag] = ofKind(
      [trainRecord({ nodes: 1, throughput: 100 }), trainRecord({ nodes: 2, throughput: 200.4 })],
      "efficiency-above-ideal",
    );
    expect(flag!.reason).toContain("one run without a spread over iterations: no noise estimate");
    expect(
      ofKind(
        [trainRecord({ nodes: 1, throughput: 100 }), trainRecord({ nodes: 2, throughput: 200 })],
        "efficiency-above-ideal",
      ),
    ).toEqual([]);
  });
});

describe("probe above link", () => {
  const probe = (busbw: number, repeat = 1) =>
    probeRecord({
      nodes: 2,
      bandwidth: "1gbit",
      repeat,
      busbw: [
        [4096, 0.2],
        [67_108_864, busbw],
      ],
    });

  it("fires when a probe run once reads more than 2% above its link", () => {
    const [flag, ...rest] = ofKind([probe(1.021)], "probe-above-link");
    expect(rest).toEqual([]);
    expect(flag).toMatchObject({ subject: "all-reduce probe · 1gbit · 2 nodes", runIds: ["allreduce-n2-1gbit-r1"] });
    expect(flag!.reason).toBe(
      "bus bandwidth 1.021 Gbit/s at 64 MiB (one repeat, no interval: the margin alone) is above the 1.000 Gbit/s link " +
        "by more than its 95% interval plus 2% (limit 1.020 Gbit/s): the shaping did not hold, or the probe's times are wrong.",
    );
  });

  it("does not fire just inside the margin, nor above it within the interval of its repeats", () => {
    expect(ofKind([probe(1.019)], "probe-above-link")).toEqual([]);
    // (1.02, 1.04): 1.03 ± 12.706 · 0.01, so the limit is 1.02 + 0.127.
    expect(ofKind([probe(1.02, 1), probe(1.04, 2)], "probe-above-link")).toEqual([]);
  });

  it("fires above the margin plus the interval of its repeats", () => {
    // (1.10, 1.104): 1.102 ± 12.706 · 0.002 = 1.102 ± 0.0254, above 1.02 + 0.0254.
    const [flag] = ofKind([probe(1.1, 1), probe(1.104, 2)], "probe-above-link");
    expect(flag!.reason).toContain("bus bandwidth 1.102 Gbit/s at 64 MiB (± 0.02541, Student's t over 2 repeats)");
    expect(flag!.reason).toContain("(limit 1.045 Gbit/s)");
  });
});

describe("outlier repeat", () => {
  // Judged against (100, 101, 102, 103): quartiles 100.75 and 102.25, IQR 1.5, far-out fence 96.25 – 106.75.
  it("fires for a repeat beyond Tukey's far-out fence of the other repeats", () => {
    const [flag, ...rest] = ofKind(repeats({ nodes: 2 }, [100, 101, 102, 103, 107]), "outlier-repeat");
    expect(rest).toEqual([]);
    expect(flag).toMatchObject({
      subject: "resnet50 · batch 64 · 1gbit · 2 nodes",
      runIds: ["train-resnet50-b64-n2-1gbit-r5"],
    });
    expect(flag!.reason).toBe(
      "repeat train-resnet50-b64-n2-1gbit-r5 measured 107.0 img/s, outside the far-out fence 96.3 – 106.8 of the other 4 repeats " +
        "(quartiles 100.8 and 102.3, 3 interquartile ranges beyond them: Tukey).",
    );
  });

  it("does not fire just inside the fence", () => {
    expect(ofKind(repeats({ nodes: 2 }, [100, 101, 102, 103, 106.7]), "outlier-repeat")).toEqual([]);
  });

  it("judges nothing with fewer than four repeats, however far apart", () => {
    expect(ofKind(repeats({ nodes: 2 }, [100, 101, 300]), "outlier-repeat")).toEqual([]);
  });

  it("judges the single-node baseline and the probe's peak bus bandwidth too", () => {
    expect(
      ofKind(repeats({ nodes: 1 }, [100, 101, 102, 103, 60]), "outlier-repeat").map((flag) => flag.subject),
    ).toEqual(["resnet50 · batch 64 · 1 node (baseline)"]);
    const probes = [0.9, 0.91, 0.92, 0.93, 0.5].map((busbw, i) =>
      probeRecord({ nodes: 2, bandwidth: "1gbit", repeat: i + 1, busbw: [[67_108_864, busbw]] }),
    );
    const [flag] = ofKind(probes, "outlier-repeat");
    expect(flag!.runIds).toEqual(["allreduce-n2-1gbit-r5"]);
    expect(flag!.reason).toContain("measured 0.5000 Gbit/s");
  });
});

describe("wide interval", () => {
  it("fires when the 95% interval is wider in full than 20% of the mean", () => {
    // (100, 101.6): ± 12.706 · 0.8 = 10.16, full width 20.33 against 20.16.
    const [flag] = ofKind(repeats({ nodes: 2 }, [100, 101.6]), "wide-interval");
    expect(flag!.reason).toBe(
      "the 95% interval of the mean, 100.8 ± 10.2 img/s over 2 repeats (Student's t), is 20.2% of the mean wide, more than 20%: " +
        "the mean is not known well enough to compare; more repeats narrow it.",
    );
  });

  it("does not fire just inside, nor for one repeat, whatever its spread over iterations", () => {
    // (100, 101.5): ± 9.53, full width 19.06 against 20.15.
    expect(ofKind(repeats({ nodes: 2 }, [100, 101.5]), "wide-interval")).toEqual([]);
    expect(ofKind([trainRecord({ nodes: 2, throughput: 100, ci95: 40 })], "wide-interval")).toEqual([]);
  });
});

describe("faster link slower", () => {
  // 1gbit (200, 202, 204): 202 ± 4.97, down to 197.03. A 10gbit mean of 192 reaches up to 196.97: apart;
  // 192.1 reaches 197.07: the intervals overlap.
  const slowLink = repeats({ nodes: 2, bandwidth: "1gbit" }, [200, 202, 204]);

  it("fires when the faster link's interval lies wholly below the slower link's", () => {
    const [flag, ...rest] = ofKind(
      [...slowLink, ...repeats({ nodes: 2, bandwidth: "10gbit" }, [190, 192, 194])],
      "faster-link-slower",
    );
    expect(rest).toEqual([]);
    expect(flag!.subject).toBe("resnet50 · batch 64 · 2 nodes · 10gbit against 1gbit");
    expect(flag!.runIds).toHaveLength(6);
    expect(flag!.reason).toContain(
      "at 2 nodes the faster link 10gbit gave 192.0 img/s (± 5.0, Student's t over 3 repeats), " +
        "fewer than 1gbit's 202.0 img/s (± 5.0, Student's t over 3 repeats), and the two 95% intervals do not overlap",
    );
  });

  it("does not fire when the intervals just overlap", () => {
    expect(
      ofKind([...slowLink, ...repeats({ nodes: 2, bandwidth: "10gbit" }, [190.1, 192.1, 194.1])], "faster-link-slower"),
    ).toEqual([]);
  });

  it("uses one run's spread over iterations where a side ran once", () => {
    const slow = trainRecord({ nodes: 2, bandwidth: "1gbit", throughput: 200, ci95: 5 });
    expect(
      ofKind([slow, trainRecord({ nodes: 2, bandwidth: "10gbit", throughput: 190, ci95: 4.9 })], "faster-link-slower"),
    ).toHaveLength(1);
    expect(
      ofKind([slow, trainRecord({ nodes: 2, bandwidth: "10gbit", throughput: 190, ci95: 5.1 })], "faster-link-slower"),
    ).toEqual([]);
  });

  it("without a noise estimate, counts unlimited as the fastest and flags a drop of more than 10%", () => {
    const slow = trainRecord({ nodes: 2, bandwidth: "1gbit", throughput: 200 });
    const [flag] = ofKind(
      [slow, trainRecord({ nodes: 2, bandwidth: "unlimited", throughput: 179 })],
      "faster-link-slower",
    );
    expect(flag!.reason).toContain(
      "10.5% fewer, more than 10% (without a noise estimate on both sides the drop alone decides)",
    );
    expect(
      ofKind([slow, trainRecord({ nodes: 2, bandwidth: "unlimited", throughput: 181 })], "faster-link-slower"),
    ).toEqual([]);
  });
});

describe("machine busy", () => {
  const load = (outsideShare: number, busy: boolean): HostLoad => ({
    seconds: 40,
    cores: 2,
    machineCpuSeconds: 60,
    testbedCpuSeconds: 60 - outsideShare * 80,
    outsideShare,
    cpuPressureShare: 0.125,
    busy,
    busyThreshold: 0.25,
  });
  const run = trainRecord({ nodes: 2, throughput: 150 });

  it("fires for a run whose record says the machine was busy, naming the share and the threshold", () => {
    const [flag] = ofKind([{ ...run, hostLoad: load(0.35, true) }], "machine-busy");
    expect(flag).toEqual({
      kind: "machine-busy",
      subject: "resnet50 · batch 64 · 1gbit · 2 nodes",
      runIds: ["train-resnet50-b64-n2-1gbit-r1"],
      reason:
        "run train-resnet50-b64-n2-1gbit-r1: 35.0% of the machine's CPU capacity went to work outside the testbed while its benchmark ran, " +
        "above the 25.0% that marks the machine busy; some task waited for a CPU 12.5% of the time: its numbers may be the machine's, not the testbed's.",
    });
  });

  it("does not fire for a run just under the threshold, nor for older records without a measurement", () => {
    expect(ofKind([{ ...run, hostLoad: load(0.24, false) }], "machine-busy")).toEqual([]);
    expect(ofKind([run], "machine-busy")).toEqual([]);
  });

  it("looks at each run's latest attempt only", () => {
    const busyFirst = { ...run, attempt: 1, status: "failed" as const, hostLoad: load(0.5, true) };
    expect(ofKind([busyFirst, { ...run, attempt: 2 }], "machine-busy")).toEqual([]);
  });
});

describe("unsteady run", () => {
  // 7 steps at 0.5 s, then 13 at 0.38 s: the first third's median 31.6 % above the others'.
  const slowedAtStart = [...Array.from({ length: 7 }, () => 0.5), ...Array.from({ length: 13 }, () => 0.38)];
  const run = trainRecord({ nodes: 2, throughput: 150, stepSeconds: slowedAtStart });

  it("fires for a run whose steps changed speed, with the thirds' medians, the shift and what to do", () => {
    expect(ofKind([run], "unsteady-run")).toEqual([
      {
        kind: "unsteady-run",
        subject: "resnet50 · batch 64 · 1gbit · 2 nodes",
        runIds: ["train-resnet50-b64-n2-1gbit-r1"],
        reason:
          "run train-resnet50-b64-n2-1gbit-r1 changed speed while it ran: the first third's median step took 0.500 s, the middle third's 0.380 s " +
          "(20 timed steps), 31.6% apart, more than 20.0%: its throughput mixes two speeds. Something slowed the machine for part of the run, " +
          "or its warm-up (numWarmupBatches) was too short if every run shows it.",
      },
    ]);
    expect(flagTally(flagsOf([run]))).toBe("1 unsteady run");
  });

  it("looks at each run's latest attempt only: a steady rerun clears it", () => {
    const steady = trainRecord({ nodes: 2, throughput: 150, stepSeconds: Array.from({ length: 20 }, () => 0.38) });
    expect(
      ofKind(
        [
          { ...run, attempt: 1 },
          { ...steady, attempt: 2 },
        ],
        "unsteady-run",
      ),
    ).toEqual([]);
  });
});

describe("flags together", () => {
  const records = scalingCampaign();
  const flags = flagsOf(records);

  it("finds in the fixture campaign only the two intervals over two repeats (Student's t is 12.7 with one degree of freedom)", () => {
    expect(flags.map((flag) => [flag.kind, flag.subject])).toEqual([
      ["wide-interval", "resnet50 · batch 64 · 1 node (baseline)"],
      ["wide-interval", "resnet50 · batch 64 · 1gbit · 2 nodes"],
    ]);
  });

  it("counts by kind for the closing lines, and tells a table row which kinds concern its runs", () => {
    const busy = {
      ...records[8]!,
      hostLoad: {
        seconds: 1,
        cores: 2,
        machineCpuSeconds: 2,
        testbedCpuSeconds: 1,
        outsideShare: 0.5,
        busy: true,
        busyThreshold: 0.25,
      },
    };
    const more = flagsOf([...records.filter((record) => record.runId !== busy.runId), busy]);
    expect(flagTally(more)).toBe("2 wide intervals, 1 machine busy");
    expect(flagKindsOf(more, ["train-resnet50-b64-n4-10gbit-r1", "train-resnet50-b64-n4-10gbit-r2"])).toEqual([
      "machine-busy",
    ]);
    expect(flagKindsOf(more, ["train-resnet50-b64-n4-1gbit-r1"])).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import {
  algorithmBandwidthGbps,
  busBandwidthGbps,
  efficiencyCeiling,
  ringAllReduceLowerBoundSeconds,
  scalingEfficiency,
} from "../../src/results/cost-model.ts";
import { exchangeShare, reductionLowerBoundSeconds } from "../../src/reductions/index.ts";
import { estimateCampaign } from "../../src/campaign/estimate.ts";
import { planCampaign } from "../../src/campaign/plan.ts";
import { parseCampaign } from "../../src/config/load.ts";

describe("ring all-reduce lower bound", () => {
  it("matches the figures in ANCHORS.md for ResNet-50 and ResNet-152 on 4 nodes at 1 Gbit/s", () => {
    // 2(N-1)/N · S/B = 1.5 · 102.2 MB / 125 MB/s
    expect(ringAllReduceLowerBoundSeconds(25_557_032 * 4, 4, 1)).toBeCloseTo(1.2268, 3);
    expect(ringAllReduceLowerBoundSeconds(60_192_808 * 4, 4, 1)).toBeCloseTo(2.8893, 3);
    expect(ringAllReduceLowerBoundSeconds(60_192_808 * 4, 4, 10)).toBeCloseTo(0.28893, 4);
  });

  it("adds 2(N-1) latency terms and is zero for one rank", () => {
    expect(ringAllReduceLowerBoundSeconds(0, 3, 1, 0.001)).toBeCloseTo(0.004, 9);
    expect(ringAllReduceLowerBoundSeconds(1e9, 1, 1)).toBe(0);
  });
});

describe("lower bound per reduction", () => {
  const resnet50Bytes = 25_557_032 * 4; // 102.2 MB; B = 125 MB/s at 1 Gbit/s
  const fourNodes = { nodes: 4, processesPerNode: 1 };

  it("the ring and the sharded parameter server load every link with 2(N-1)/N of the gradient", () => {
    expect(reductionLowerBoundSeconds("ring", resnet50Bytes, fourNodes, 1, true)).toBeCloseTo(1.2268, 3);
    expect(reductionLowerBoundSeconds("sharded-parameter-server", resnet50Bytes, fourNodes, 1, true)).toBeCloseTo(
      1.2268,
      3,
    );
    expect(reductionLowerBoundSeconds("sharded-parameter-server", resnet50Bytes, fourNodes, 1, false)).toBeCloseTo(
      1.2268,
      3,
    );
  });

  it("a central server's link carries (N-1) gradients each way; shaped on egress only, N in all", () => {
    // Full duplex: 2 · 3 · 102.2 MB / 125 MB/s; egress-shaped: 4 · 102.2 MB / 125 MB/s.
    expect(reductionLowerBoundSeconds("parameter-server", resnet50Bytes, fourNodes, 1, false)).toBeCloseTo(4.9067, 3);
    expect(reductionLowerBoundSeconds("parameter-server", resnet50Bytes, fourNodes, 1, true)).toBeCloseTo(3.2711, 3);
    // Two nodes, full duplex: the server gets S in 1 s, then sends S back in 1 s.
    expect(
      reductionLowerBoundSeconds("parameter-server", 125_000_000, { nodes: 2, processesPerNode: 1 }, 1, false),
    ).toBeCloseTo(2, 12);
  });

  it("the asynchronous server's step pays its own exchange, 2·S/B, not every rank's, but no less than the server's link sending the others theirs", () => {
    const S = 125_000_000; // 1 s at 1 Gbit/s
    // 3 ranks, egress-shaped: the parameter server's round is 3 s; one asynchronous step waits for S in and S out, 2 s.
    expect(exchangeShare("async-parameter-server", 3)).toBeCloseTo(2 / 3, 12);
    expect(
      reductionLowerBoundSeconds("async-parameter-server", S, { nodes: 3, processesPerNode: 1 }, 1, true),
    ).toBeCloseTo(2, 12);
    // 6 ranks: the server's link sends 5 ranks their parameters a round, 5 s, more than one rank's own 2 s.
    expect(
      reductionLowerBoundSeconds("async-parameter-server", S, { nodes: 6, processesPerNode: 1 }, 1, true),
    ).toBeCloseTo(5, 12);
    // 2 ranks: the one remote rank's exchange is the whole of it.
    expect(exchangeShare("async-parameter-server", 2)).toBe(1);
    for (const reduction of ["ring", "parameter-server", "powersgd"] as const)
      expect(exchangeShare(reduction, 3)).toBe(1);
  });

  it("counts only what crosses the links when nodes run several processes", () => {
    const S = 125_000_000; // 1 s at 1 Gbit/s
    // One node: everything stays inside it.
    for (const reduction of ["ring", "parameter-server", "sharded-parameter-server"] as const) {
      expect(reductionLowerBoundSeconds(reduction, S, { nodes: 1, processesPerNode: 4 }, 1, true)).toBe(0);
    }
    // 2 nodes × 2: a ring of 4 ranks, 2·3/4 = 1.5 s; 4 nodes × 1 the same; by hand for the servers:
    expect(reductionLowerBoundSeconds("ring", S, { nodes: 2, processesPerNode: 2 }, 1, true)).toBeCloseTo(1.5, 12);
    expect(reductionLowerBoundSeconds("ring", S, fourNodes, 1, true)).toBeCloseTo(1.5, 12);
    // sharded: 2·(1/2)·2 = 2 s; server, egress-shaped: the other node pushes 2 S (2 s), the server sends 2 S back (2
    // s).
    expect(
      reductionLowerBoundSeconds("sharded-parameter-server", S, { nodes: 2, processesPerNode: 2 }, 1, true),
    ).toBeCloseTo(2, 12);
    expect(reductionLowerBoundSeconds("parameter-server", S, { nodes: 2, processesPerNode: 2 }, 1, true)).toBeCloseTo(
      4,
      12,
    );
    expect(reductionLowerBoundSeconds("parameter-server", S, { nodes: 2, processesPerNode: 2 }, 1, false)).toBeCloseTo(
      4,
      12,
    );
    expect(reductionLowerBoundSeconds("parameter-server", S, { nodes: 3, processesPerNode: 2 }, 1, false)).toBeCloseTo(
      8,
      12,
    );
  });
});

describe("bandwidths as nccl-tests defines them", () => {
  it("algbw is bytes per time, busbw scales it by 2(N-1)/N", () => {
    expect(algorithmBandwidthGbps(125_000_000, 1)).toBe(1);
    expect(busBandwidthGbps(1, 2)).toBe(1);
    expect(busBandwidthGbps(1, 4)).toBe(1.5);
    expect(busBandwidthGbps(1, 1)).toBe(0);
  });
});

describe("efficiency", () => {
  it("scaling efficiency is throughput against n times one node", () => {
    expect(scalingEfficiency(360, 4, 100)).toBe(0.9);
  });

  it("the ceiling with and without overlap of compute and all-reduce", () => {
    expect(efficiencyCeiling(0.3, 0.1).noOverlap).toBeCloseTo(0.75, 12);
    expect(efficiencyCeiling(0.3, 0.1).perfectOverlap).toBe(1);
    expect(efficiencyCeiling(0.1, 0.4).noOverlap).toBeCloseTo(0.2, 12);
    expect(efficiencyCeiling(0.1, 0.4).perfectOverlap).toBeCloseTo(0.25, 12);
    expect(efficiencyCeiling(0.1, 0)).toEqual({ noOverlap: 1, perfectOverlap: 1 });
  });
});

describe("campaign estimate", () => {
  it("prices an AWS campaign from instance-hours of every node it provisions, idle or not", () => {
    const file = parseCampaign(
      `
testbed: {target: aws, name: s, nodes: 4, adminCidr: 203.0.113.7/32, sshPublicKey: "ssh-ed25519 AAAAC3Nza"}
campaign: {matrix: {nodes: [1, 2], model: resnet50, batchSize: 64, bandwidth: 1gbit}}
`,
      "c.yaml",
    );
    const plan = planCampaign(file, "c");
    const estimate = estimateCampaign(plan, file);
    // The testbed is provisioned as described (4 nodes), even though no run uses more than 2.
    expect(plan.nodesToProvision).toBe(4);
    expect(plan.largestRunNodes).toBe(2);
    expect(estimate.hourlyPriceUsd).toBe(0.526);
    expect(estimate.instanceHours).toBeCloseTo((4 * estimate.seconds) / 3600, 9);
    expect(estimate.costUsd).toBeCloseTo(estimate.instanceHours! * 0.526, 9);
  });
});

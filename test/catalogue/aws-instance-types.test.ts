import { describe, expect, it } from "vitest";
import {
  AWS_INSTANCE_TYPES,
  checkEfaInstanceType,
  EFA_INSTANCE_TYPES,
  instanceTypeFacts,
  onDemandUsdPerHour,
  SOURCES,
} from "../../src/catalogue/aws-instance-types.ts";

describe("AWS instance type catalogue", () => {
  it("holds the figures the docs give for the common testbed types", () => {
    expect(instanceTypeFacts("g4dn.xlarge")).toEqual({
      gpus: 1,
      gpuModel: "NVIDIA T4",
      gpuMemoryGiB: 16,
      vcpus: 4,
      efa: false,
      baselineNetworkGbps: 5,
      burstNetworkGbps: 25,
      onDemandUsdPerHour: 0.526,
    });
    expect(instanceTypeFacts("g5.xlarge")).toMatchObject({
      burstNetworkGbps: 10,
      baselineNetworkGbps: 2.5,
      onDemandUsdPerHour: 1.006,
    });
    expect(instanceTypeFacts("p3.2xlarge")).toMatchObject({ burstNetworkGbps: 10, onDemandUsdPerHour: 3.06 });
    expect(instanceTypeFacts("g5.12xlarge")).toMatchObject({
      efa: true,
      burstNetworkGbps: 40,
      onDemandUsdPerHour: 5.672,
    });
    expect(instanceTypeFacts("p3dn.24xlarge")).toMatchObject({
      efa: true,
      burstNetworkGbps: 100,
      onDemandUsdPerHour: 31.212,
    });
    expect(instanceTypeFacts("p4d.24xlarge")).toMatchObject({
      efa: true,
      burstNetworkGbps: 400,
      onDemandUsdPerHour: 32.773,
    });
  });

  it("covers the instance types the README and estimates talk about", () => {
    const required = [
      "g4dn.xlarge",
      "g4dn.2xlarge",
      "g4dn.4xlarge",
      "g4dn.8xlarge",
      "g4dn.12xlarge",
      "g4dn.16xlarge",
      "g4dn.metal",
      "g5.xlarge",
      "g5.2xlarge",
      "g5.4xlarge",
      "g5.8xlarge",
      "g5.12xlarge",
      "g5.16xlarge",
      "g5.24xlarge",
      "g5.48xlarge",
      "g6.xlarge",
      "g6.8xlarge",
      "g6.12xlarge",
      "g6.48xlarge",
      "g6e.xlarge",
      "g6e.12xlarge",
      "g6e.48xlarge",
      "p3.2xlarge",
      "p3.8xlarge",
      "p3.16xlarge",
      "p3dn.24xlarge",
      "p4d.24xlarge",
      "p5.48xlarge",
      "c5n.9xlarge",
      "c5n.18xlarge",
    ];
    for (const type of required) expect(instanceTypeFacts(type), type).toBeDefined();
  });

  it("keeps every entry consistent: baseline at most burst, GPU model only with GPUs, a source per column", () => {
    for (const [type, facts] of Object.entries(AWS_INSTANCE_TYPES)) {
      expect(facts.baselineNetworkGbps, type).toBeLessThanOrEqual(facts.burstNetworkGbps);
      expect(facts.gpuModel === null, type).toBe(facts.gpus === 0);
      expect(facts.onDemandUsdPerHour, type).toBeGreaterThan(0);
    }
    for (const sources of Object.values(SOURCES)) {
      expect(sources.length).toBeGreaterThan(0);
      for (const source of sources) {
        expect(source.url).toMatch(/^https:\/\/(docs\.)?aws\.amazon\.com\//);
        expect(source.retrieved).toMatch(/^2025-\d\d$/);
      }
    }
  });

  it("derives the EFA list and prices from the entries, and knows nothing of unknown types", () => {
    expect(EFA_INSTANCE_TYPES.has("p4d.24xlarge")).toBe(true);
    expect(EFA_INSTANCE_TYPES.has("g4dn.xlarge")).toBe(false);
    expect(checkEfaInstanceType("g5.12xlarge")).toBeUndefined();
    expect(checkEfaInstanceType("g4dn.xlarge")).toMatch(/^instance type g4dn\.xlarge has no EFA; use one of/);
    expect(checkEfaInstanceType("x9.huge")).toMatch(/not in ringlab's catalogue/);
    expect(onDemandUsdPerHour("g4dn.xlarge")).toBe(0.526);
    expect(onDemandUsdPerHour("toString")).toBeUndefined();
  });
});

import { describe, expect, it } from "vitest";
import {
  campaignNameOf,
  checkCampaignName,
  checkResourceName,
  nodeContainerName,
  nodeName,
  stackName,
} from "../../src/rules/names.ts";

describe("checkResourceName", () => {
  it("accepts 1-24 lower-case letters, digits and dashes starting with a letter", () => {
    for (const name of ["a", "smoke", "scale-16", "a".repeat(24), "g5-12xl-run2"])
      expect(checkResourceName(name)).toBeUndefined();
  });

  it("refuses names that cannot name AWS resources or Docker containers", () => {
    for (const name of ["", "My_Bed", "1st", "-x", "x-", "a".repeat(25), "tb.1", "tb{{x}}", "tb\n", "tb x", "Tb"]) {
      expect(checkResourceName(name), name).toMatch(/^expected 1-24 lower-case letters, digits or dashes/);
    }
  });
});

describe("derived names", () => {
  it("names nodes, containers and stacks from the testbed name", () => {
    expect(nodeName("smoke", 2)).toBe("smoke-node-2");
    expect(nodeContainerName("smoke", 2)).toBe("ringlab-smoke-node-2");
    expect(stackName("scale")).toBe("ringlab-scale");
  });

  it("names a campaign after its file, without directory or extension", () => {
    expect(campaignNameOf("/home/u/campaigns/local-smoke.yaml")).toBe("local-smoke");
    expect(campaignNameOf("scale.yml")).toBe("scale");
  });
});

describe("checkCampaignName", () => {
  it("accepts file-derived names up to 64 characters", () => {
    for (const name of ["local-smoke", "2025-scaling", "c", "a".repeat(64)])
      expect(checkCampaignName(name)).toBeUndefined();
  });

  it("refuses names that would be unsafe as a results directory or tag value", () => {
    for (const name of ["", "My Campaign", "a,b", "x{{y}}", "-x", "a".repeat(65), "..", "a/b", "scale.v2"]) {
      expect(checkCampaignName(name), name).toMatch(/^expected 1-64 lower-case letters/);
    }
  });
});

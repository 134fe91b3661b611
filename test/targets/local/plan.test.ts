import { describe, expect, it } from "vitest";
import { parseCampaign } from "../../../src/config/load.ts";
import { addressInSubnet, planLocalTestbed, stateDirId } from "../../../src/targets/local/plan.ts";
import { testbedPaths } from "../../../src/testbed/paths.ts";
import { resolveTestbedSpec, type LocalTestbedSpec } from "../../../src/testbed/spec.ts";

describe("local testbed plan", () => {
  const testbed = (extra = "") => {
    const tb = parseCampaign(`testbed: {target: local, name: smoke, nodes: 3${extra}}\n`, "c.yaml").testbed;
    const spec = resolveTestbedSpec(tb, {
      campaign: "c",
      testbedDir: testbedPaths("/state", "smoke").dir,
      createdAt: new Date(),
    });
    if (spec.target !== "local") throw new Error("fixture is local");
    return spec as LocalTestbedSpec;
  };

  it("names containers, hostnames and addresses so that up, down and status agree", () => {
    const plan = planLocalTestbed(testbed(), "/state");
    expect(plan.network).toBe("ringlab-smoke");
    expect(plan.labels).toEqual({
      "ringlab.testbed": "smoke",
      "ringlab.state-dir": stateDirId("/state"),
      "ringlab.state-path": "/state",
    });
    expect(plan.sharedDir).toBe("/state/testbeds/smoke/shared");
    expect(plan.nodes).toEqual([
      { rank: 0, name: "smoke-node-0", container: "ringlab-smoke-node-0", ip: "10.77.0.10" },
      { rank: 1, name: "smoke-node-1", container: "ringlab-smoke-node-1", ip: "10.77.0.11" },
      { rank: 2, name: "smoke-node-2", container: "ringlab-smoke-node-2", ip: "10.77.0.12" },
    ]);
  });

  it("uses the subnet and shared directory the file names", () => {
    const plan = planLocalTestbed(testbed(", subnet: 192.168.50.0/24, sharedDir: /data/shared"), "/state");
    expect(plan.nodes[2]!.ip).toBe("192.168.50.12");
    expect(plan.sharedDir).toBe("/data/shared");
  });

  it("labels each state folder's testbeds with an id of their own, so `down --all` keeps to its own", () => {
    expect(stateDirId("/home/a/.ringlab")).toMatch(/^[0-9a-f]{16}$/);
    expect(stateDirId("/home/a/.ringlab")).not.toBe(stateDirId("/home/b/.ringlab"));
  });
});

describe("addresses in a subnet", () => {
  it("counts from the network address, whatever host bits the CIDR carries", () => {
    expect(addressInSubnet("10.77.0.0/24", 10)).toBe("10.77.0.10");
    expect(addressInSubnet("10.77.1.99/23", 300)).toBe("10.77.1.44");
  });

  it("refuses an address the subnet cannot hold", () => {
    expect(() => addressInSubnet("10.0.0.0/28", 15)).toThrowError(
      /subnet 10\.0\.0\.0\/28 has 16 addresses, too few for a node at offset 15/,
    );
  });
});

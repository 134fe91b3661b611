import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { validateCampaign } from "../../src/config/schema.ts";
import { ConfigError } from "../../src/util/errors.ts";
import {
  CPU_PERIOD_MS,
  HOST_HEADROOM_CORES,
  mostWorkersAtOnce,
  planCpuQuota,
  resolveCpuQuota,
  underQuota,
} from "../../src/testbed/cpu-quota.ts";

describe("planCpuQuota", () => {
  it("defaults to the machine's cores less the headroom, shared by the nodes and rounded down to 0.01", () => {
    expect(HOST_HEADROOM_CORES).toBe(0.5);
    expect(planCpuQuota({ cores: 2, nodes: 3 })).toEqual({ ok: true, cpusPerNode: 0.5 });
    expect(planCpuQuota({ cores: 16, nodes: 3 })).toEqual({ ok: true, cpusPerNode: 5.16 });
    expect(planCpuQuota({ cores: 2, nodes: 1 })).toEqual({ ok: true, cpusPerNode: 1.5 });
  });

  it("keeps a requested quota the machine can give every node at once, the exact fit included", () => {
    expect(planCpuQuota({ cores: 2, nodes: 3, requested: 0.25 })).toEqual({ ok: true, cpusPerNode: 0.25 });
    expect(planCpuQuota({ cores: 2, nodes: 2, requested: 0.75 })).toEqual({ ok: true, cpusPerNode: 0.75 });
  });

  it("refuses a total above the machine, naming the largest value that fits", () => {
    const plan = planCpuQuota({ cores: 2, nodes: 3, requested: 1 });
    expect(plan).toMatchObject({ ok: false, largestThatFits: 0.5 });
    expect(!plan.ok && plan.problem).toBe(
      "found 1 × 3 nodes = 3 cores, more than this machine's 2 cores less 0.5 for dockerd, sshd and Ansible; the largest value that fits is 0.5",
    );
  });

  it("refuses more nodes than the machine can give a hundredth of a core each", () => {
    expect(planCpuQuota({ cores: 1, nodes: 60 })).toMatchObject({ ok: false, largestThatFits: 0 });
  });
});

describe("resolveCpuQuota", () => {
  it("gives AWS testbeds no quota", () => {
    expect(resolveCpuQuota({ sourceFile: "a.yaml", testbed: { target: "aws" } }, 2)).toBeUndefined();
  });

  it("turns a quota that does not fit into a ConfigError at testbed.cpusPerNode (exit 2)", () => {
    const file = { sourceFile: "/x/lab.yaml", testbed: { target: "local" as const, nodes: 3, cpusPerNode: 1 } };
    let error: unknown;
    try {
      resolveCpuQuota(file, 2);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).message).toMatch(
      /^\/x\/lab\.yaml: testbed\.cpusPerNode: found 1 × 3 nodes .* the largest value that fits is 0\.5$/,
    );
  });
});

describe("with several processes per node", () => {
  it("gives every process the quota, so the most processes at once must fit", () => {
    // 2 nodes × 2 processes on 2 cores: 4 slots of (2 - 0.5) / 4 = 0.375 cores.
    expect(planCpuQuota({ cores: 2, nodes: 3, workers: 4 })).toEqual({ ok: true, cpusPerNode: 0.37 });
    const plan = planCpuQuota({ cores: 2, nodes: 3, workers: 4, requested: 0.5 });
    expect(!plan.ok && plan.problem).toBe(
      "found 0.5 × 4 worker processes (nodes × processesPerNode) = 2 cores, more than this machine's 2 cores " +
        "less 0.5 for dockerd, sshd and Ansible; the largest value that fits is 0.37",
    );
  });

  it("reads the most nodes and processes per node from the campaign's matrix", () => {
    const file = {
      sourceFile: "s.yaml",
      testbed: { target: "local" as const, nodes: 4 },
      campaign: { matrix: { nodes: [1, 2, 4], processesPerNode: [1, 2] } },
    };
    // 4 nodes × 2 processes: (2 - 0.5) / 8, rounded down.
    expect(resolveCpuQuota(file, 2)).toBe(0.18);
    expect(resolveCpuQuota({ ...file, campaign: { matrix: { nodes: [1, 2] } } }, 2)).toBe(0.37);
  });

  it("counts only the combinations maxWorkers keeps", () => {
    expect(mostWorkersAtOnce([1, 2, 4], [1, 2, 4], 4)).toBe(4);
    // 3 × 2 = 6 is left out, so 3 × 1 is the most; not min(6, 5).
    expect(mostWorkersAtOnce([3], [1, 2], 5)).toBe(3);
    expect(mostWorkersAtOnce([3], [1, 2], undefined)).toBe(6);
  });
});

describe("testbed.cpusPerNode in the campaign file", () => {
  it("is a local-testbed field of at least a tenth of a core: the kernel's 1 ms of a 10 ms period", () => {
    expect(validateCampaign({ testbed: { target: "local", name: "lab", nodes: 3, cpusPerNode: 0.5 } }).ok).toBe(true);
    expect(validateCampaign({ testbed: { target: "local", name: "lab", nodes: 3, cpusPerNode: 0.1 } }).ok).toBe(true);
    for (const cpusPerNode of [0, 0.05]) {
      const tooSmall = validateCampaign({ testbed: { target: "local", name: "lab", nodes: 3, cpusPerNode } });
      expect(!tooSmall.ok && tooSmall.problems.map((problem) => problem.path)).toEqual(["testbed.cpusPerNode"]);
    }
  });
});

describe("the quota's CFS period", () => {
  it("is the 10 ms the worker role gives every worker container", () => {
    expect(CPU_PERIOD_MS).toBe(10);
    expect(readFileSync("ansible/roles/worker/defaults/main.yml", "utf8")).toMatch(
      new RegExp(`^worker_cpu_period_us: ${CPU_PERIOD_MS * 1000}$`, "m"),
    );
  });

  it("keeps a record as measured under the quota only at the same quota and period: Docker's 100 ms (no period recorded) ran faster after waits", () => {
    const params = (cpusPerNode?: number, cpuPeriodMs?: number) => ({
      params: {
        ...(cpusPerNode === undefined ? {} : { cpusPerNode }),
        ...(cpuPeriodMs === undefined ? {} : { cpuPeriodMs }),
      },
    });
    expect(underQuota(params(0.5, 10), 0.5)).toBe(true);
    expect(underQuota(params(0.5), 0.5)).toBe(false);
    expect(underQuota(params(0.75, 10), 0.5)).toBe(false);
    expect(underQuota(params(), undefined)).toBe(true);
    expect(underQuota(params(0.5, 10), undefined)).toBe(false);
  });
});

/**
 * The testbed target table (src/targets/): one module per target, what each cannot do as data with why, and the
 * callers that ask it instead of a target's name (the campaign schema, `ringlab run --cpus`, the planner).
 */
import { describe, expect, it } from "vitest";
import { parseCampaign } from "../../src/config/load.ts";
import { validateCampaign } from "../../src/config/schema.ts";
import { planCampaign } from "../../src/campaign/plan.ts";
import {
  CAPABILITIES,
  gapOf,
  TARGET_NAMES,
  TARGETS,
  targetsThatCan,
  type Capability,
  type Target,
} from "../../src/targets/index.ts";
import { resolveCpuQuota } from "../../src/testbed/cpu-quota.ts";

const TESTBEDS: Record<string, Record<string, unknown>> = {
  local: { target: "local", name: "t", nodes: 2 },
  aws: {
    target: "aws",
    name: "t",
    nodes: 2,
    adminCidr: "203.0.113.7/32",
    sshPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx2Jm3ZpG5a0xV8y3Qb1ZrjQ5k6m0z2b7Vt3nq2XaBc",
  },
  kubernetes: {
    target: "kubernetes",
    name: "t",
    nodes: 2,
    namespace: "ringlab",
    sharedClaim: "shared",
    workerImage: "registry.example/ringlab/worker:gpu",
  },
};

/**
 * The problems of a campaign on `target`'s testbed (with `testbed` fields over it) and `campaign`'s fields over a plain
 * matrix.
 */
function problems(
  target: string,
  campaign: Record<string, unknown> = {},
  testbed: Record<string, unknown> = {},
): string[] {
  const result = validateCampaign({
    testbed: { ...TESTBEDS[target], ...testbed },
    campaign: { matrix: { nodes: [1, 2], model: "tiny", batchSize: 8, bandwidth: ["unlimited"] }, ...campaign },
  });
  return result.ok ? [] : result.problems.map((problem) => `${problem.path}: ${problem.message}`);
}

/** An action a target can do is a method it has; one it cannot is a gap with its reason, and no method. */
const ACTIONS: [Capability, (target: Target) => unknown][] = [
  ["node-recovery", (target) => target.recreateNodes],
  ["found-by-label", (target) => target.testbedsByLabel],
  ["stack", (target) => target.stack],
  [
    "provision",
    (target) =>
      target.up !== undefined && target.down !== undefined && target.resolveSpec !== undefined ? true : undefined,
  ],
];

describe("the target table (src/targets/)", () => {
  it("has a module for every target a campaign file accepts, in the order a wrong target lists them", () => {
    expect(Object.keys(TARGETS)).toEqual(TARGET_NAMES);
    for (const name of TARGET_NAMES) expect(TARGETS[name].name).toBe(name);
    const wrong = validateCampaign({ testbed: { target: "moon", name: "t", nodes: 1 } });
    expect(wrong.ok ? [] : wrong.problems.map((problem) => problem.message)).toEqual([
      `found "moon", expected ${TARGET_NAMES.map((name) => `"${name}"`)
        .join(", ")
        .replace(/, ([^,]*)$/, " or $1")}`,
    ]);
  });

  it("names each gap by a known capability, with a reason to end a message with", () => {
    for (const target of Object.values(TARGETS)) {
      for (const [capability, reason] of Object.entries(target.gaps)) {
        expect(Object.keys(CAPABILITIES), `${target.name}: ${capability}`).toContain(capability);
        expect(reason, `${target.name}: ${capability}`).toMatch(/^\S.*[^.\s]$/);
      }
    }
  });

  it.each(ACTIONS)("has the %s action exactly where it has no gap of that name", (capability, action) => {
    for (const target of Object.values(TARGETS)) {
      expect(action(target) !== undefined, `${target.name}: ${capability}`).toBe(
        gapOf(target, capability) === undefined,
      );
    }
  });

  it("runs every target's campaigns: a target ringlab does not bring up brings its own run path", () => {
    for (const target of Object.values(TARGETS))
      expect(gapOf(target, "provision") === undefined || target.ownRunPath !== undefined, target.name).toBe(true);
  });
});

describe("callers ask the table, not the target's name", () => {
  it("refuses amp and horovod where the target has no GPU or no Horovod, with the target's reason", () => {
    expect(problems("local", { train: { precision: "amp" } })).toEqual([
      "campaign: precision amp needs a GPU; the local testbed runs on CPU (use fp32)",
    ]);
    expect(problems("aws", { train: { precision: "amp" } })).toEqual([]);
    // A gap that depends on the settings: pods that ask for no GPU.
    expect(problems("kubernetes", { train: { precision: "amp" } }, { gpusPerPod: 0, workerImage: "r/w:cpu" })).toEqual([
      "campaign: precision amp needs a GPU; the pods ask for none (testbed.gpusPerPod: 0)",
    ]);
    expect(problems("kubernetes", { train: { precision: "amp" } })).toEqual([]);
    expect(problems("local", { train: { engine: "horovod" } })).toEqual([
      `campaign: engine horovod needs Horovod, ${TARGETS.local.gaps.horovod}`,
    ]);
  });

  it("names the targets that can do what another cannot, from the table", () => {
    expect(targetsThatCan("launchers").map((target) => target.name)).toEqual(["local", "aws"]);
    expect(problems("kubernetes", { launcher: "slurm" })).toEqual([
      "campaign.launcher: found slurm: on Kubernetes every run is a Job of the cluster's own; slurm needs a testbed ringlab configures (local, aws)",
    ]);
    expect(() =>
      parseCampaign(`testbed: ${JSON.stringify(TESTBEDS.kubernetes)}\n`, "k8s.yaml", "/c/k8s.yaml", {
        readKeys: false,
      }),
    ).toThrow(
      /^k8s\.yaml: testbed\.target: kubernetes: this command works on a testbed ringlab brings up \(local, aws\); on a Kubernetes cluster/,
    );
  });

  it("holds workers to a CPU quota only where the target can", () => {
    expect(resolveCpuQuota({ sourceFile: "c.yaml", testbed: { target: "local", nodes: 2 } }, 4)).toBe(1.75);
    const why = {
      aws: "where every node is a machine of its own",
      kubernetes: "where every pod asks the cluster for its own resources",
    };
    for (const name of ["aws", "kubernetes"] as const) {
      // What the refusal and the docs say of the gap: why the target has no quota.
      expect(gapOf(TARGETS[name], "cpu-quota")).toBe(why[name]);
      expect(resolveCpuQuota({ sourceFile: "c.yaml", testbed: { target: name, nodes: 2 } }, 4)).toBeUndefined();
    }
  });

  it("lets a run's workers wait as long as the run where its target does not start them together", () => {
    const timeout = (target: string) => {
      const result = validateCampaign({
        testbed: TESTBEDS[target],
        campaign: {
          matrix: { nodes: [2], model: "tiny", batchSize: 8, bandwidth: ["unlimited"] },
          runTimeoutSeconds: 600,
        },
      });
      if (!result.ok) throw new Error(JSON.stringify(result.problems));
      return planCampaign(result.value, "c").runs[0]!.workerArgs.join(" ");
    };
    expect(gapOf(TARGETS.kubernetes, "simultaneous-start")).toBe(
      "its pods start when the cluster schedules them and their nodes have pulled the image, which can be minutes apart",
    );
    expect(gapOf(TARGETS.local, "simultaneous-start")).toBeUndefined();
    expect(timeout("kubernetes")).toMatch(/--timeout-seconds 600\b/);
    expect(timeout("local")).toMatch(/--timeout-seconds 120\b/);
  });
});

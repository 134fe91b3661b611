/**
 * The local testbed: the "nodes" are Docker containers on this machine, on their own network, reached by Ansible over
 * real SSH (src/testbed/local.ts brings them up). It shares this machine, so its workers run under a CPU quota and its
 * load is watched while the runs measure; it trains on CPU, in the CPU worker image built here.
 */
import { existsSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { z } from "zod";
import { ConfigError, UsageError } from "../../util/errors.ts";
import { DEFAULT_LAUNCHER } from "../../launchers/names.ts";
import { SMALLEST_CPU_QUOTA } from "../../rules/cpu-quota-limits.ts";
import { checkIpv4Cidr, parseIpv4Cidr } from "../../rules/cidr.ts";
import { nodeContainerName } from "../../rules/names.ts";
import { checkDockerImageReference, checkSafeResolvedPath, checkSharedDirLocation } from "../../rules/safe-text.ts";
import { unsafeFolderProblem } from "../../util/fs.ts";
import { ruled, safePath, testbedCommon } from "../../config/fields.ts";
import { commonSpecOf, specCommon } from "../spec-fields.ts";
import { narrowed, resolvePath, type Target } from "../target.ts";

export const LOCAL_DEFAULTS = {
  /** A private range unlikely to clash with Docker's default pools (172.17-31.x.x). */
  subnet: "10.77.0.0/24",
  workerImage: "ringlab/worker:cpu",
} as const;

export const localSection = z.strictObject({
  target: z
    .literal("local")
    .describe(
      "local: the nodes are Docker containers on this machine, reached by Ansible over SSH, their links shaped with tc.",
    ),
  ...testbedCommon,
  subnet: ruled((cidr) => checkIpv4Cidr(cidr, { example: LOCAL_DEFAULTS.subnet }))
    .default(LOCAL_DEFAULTS.subnet)
    .describe("The Docker network of the node containers."),
  sharedDir: safePath()
    .optional()
    .describe(
      "Host directory shared by all nodes, bind-mounted at the same path; default .ringlab/testbeds/<name>/shared.",
    ),
  workerImage: ruled(checkDockerImageReference)
    .default(LOCAL_DEFAULTS.workerImage)
    .describe(
      "The image every node's worker runs, from this machine's Docker engine (docker/worker/build.sh builds ringlab/worker:cpu).",
    ),
  cpusPerNode: z
    .number()
    .min(SMALLEST_CPU_QUOTA)
    .optional()
    .describe(
      "CPU cores every worker process may use (a CFS quota of its node's container in 10 ms periods, src/rules/cpu-quota-limits.ts, times the processes there), " +
        "so that compute is fixed per node (per GPU) as on a real cluster. Default: (this machine's cores - 0.5) / the most processes that run " +
        "at once (src/testbed/cpu-quota.ts); more than that is refused.",
    ),
  memoryPerNodeGiB: z
    .number()
    .min(0.25)
    .max(1024)
    .optional()
    .describe(
      "Memory of every node's worker (GiB, swap included: a cgroup limit of its container), shared by its processes, as a real node has its " +
        "own memory: a run whose ranks need more is killed by the kernel, and `ringlab plan` refuses one the memory model predicts will not fit " +
        "before anything starts. Absent: no limit.",
    ),
});

export const localSpec = z.strictObject({
  ...specCommon,
  target: z.literal("local"),
  subnet: z.string().min(1),
  sharedDir: z.string().min(1),
});

/**
 * Refuses (a UsageError naming the folder, its owner and mode, and the fix) a local testbed's shared directory, its
 * own or the default one in the state folder, whose path would break a line it goes into, or that someone besides
 * the caller (and root) could write or replace: every node mounts it read-write and works in it as root. Also
 * worth calling right after creating it, so a folder planted in between is caught.
 */
export function checkLocalSharedDir(sharedDir: string): void {
  const pathProblem = checkSafeResolvedPath(sharedDir);
  if (pathProblem !== undefined) throw new UsageError(`shared directory ${JSON.stringify(sharedDir)}: ${pathProblem}`);
  const problem = unsafeFolderProblem(sharedDir);
  if (problem !== undefined) {
    throw new UsageError(`shared directory ${sharedDir}: ${problem}`, {
      hint: "set testbed.sharedDir to a folder you own that only you can write (ringlab creates it if missing)",
    });
  }
}

/** An absolute path with the symbolic links of its existing part resolved (the rest need not exist yet). */
function realLocation(path: string): string {
  const missing: string[] = [];
  let existing = path;
  while (!existsSync(existing) && dirname(existing) !== existing) {
    missing.unshift(basename(existing));
    existing = dirname(existing);
  }
  try {
    return join(realpathSync(existing), ...missing);
  } catch {
    return path;
  }
}

export const localTarget: Target = {
  name: "local",
  title: "local",
  nodesShareOneMachine: true,
  gaps: {
    gpu: "the local testbed runs on CPU (use fp32)",
    horovod: "which the local testbed's CPU worker image does not have (use ddp)",
    stack: "`ringlab up` writes its inventory itself",
  },

  checkTestbed(section, issue) {
    const testbed = narrowed("local", section);
    const parsed = parseIpv4Cidr(testbed.subnet);
    if (!parsed.ok) return;
    const addresses = 2 ** (32 - parsed.range.prefixLength);
    // Nodes take .10 and up (src/testbed/local-plan.ts); the last address is the broadcast address.
    if (10 + testbed.nodes > addresses - 1)
      issue(["subnet"], `found ${testbed.subnet}, too small for ${testbed.nodes} nodes; use a /24`);
  },

  checkCampaign(section, campaign, issue) {
    const testbed = narrowed("local", section);
    if (testbed.memoryPerNodeGiB !== undefined && campaign.launcher !== DEFAULT_LAUNCHER) {
      issue(
        ["testbed", "memoryPerNodeGiB"],
        `launcher ${campaign.launcher} starts its workers with a CPU limit alone: memoryPerNodeGiB is applied by launcher ${DEFAULT_LAUNCHER}`,
      );
    }
  },

  resolveFiles(section, where) {
    const testbed = narrowed("local", section);
    if (testbed.sharedDir === undefined) return testbed;
    const sharedDir = resolvePath(testbed.sharedDir, where.baseDir);
    const problem =
      checkSharedDirLocation(realLocation(sharedDir), homedir()) ??
      (where.checkFolders ? checkSafeResolvedPath(sharedDir) : undefined);
    if (problem !== undefined) {
      throw new ConfigError(where.displayName, [
        { path: "testbed.sharedDir", message: `found ${JSON.stringify(testbed.sharedDir)}, ${problem}` },
      ]);
    }
    // Every node mounts it read-write as root: whoever else can write it, or a folder above it, decides what they read.
    const ownership = where.checkFolders ? unsafeFolderProblem(sharedDir) : undefined;
    if (ownership !== undefined)
      throw new ConfigError(where.displayName, [{ path: "testbed.sharedDir", message: ownership }]);
    return { ...testbed, sharedDir };
  },

  memoryOf(section) {
    const { memoryPerNodeGiB } = narrowed("local", section);
    return {
      device: "cpu",
      ...(memoryPerNodeGiB === undefined
        ? {}
        : { perNode: { gib: memoryPerNodeGiB, what: "testbed.memoryPerNodeGiB" } }),
    };
  },
  resolveSpec(section, inputs) {
    const testbed = narrowed("local", section);
    const sharedDir = testbed.sharedDir ?? join(inputs.testbedDir, "shared");
    checkLocalSharedDir(sharedDir);
    return { ...commonSpecOf(testbed, inputs), target: "local", subnet: testbed.subnet, sharedDir };
  },

  async up(ctx, spec) {
    const { upLocal } = await import("./testbed.ts");
    return upLocal(ctx, narrowed("local", spec));
  },

  async down(ctx, name) {
    const { downLocal } = await import("./testbed.ts");
    const removed = await ctx.reporter.step(`remove local testbed ${name}`, () => downLocal(ctx, name));
    return { target: "local", removed };
  },

  async testbedsByLabel(ctx, scope) {
    const { localTestbedNames } = await import("./testbed.ts");
    return localTestbedNames(ctx, scope);
  },

  async runningNodes(ctx, record) {
    const { localNodeContainers } = await import("./testbed.ts");
    const containers = await localNodeContainers(ctx, record.name);
    return new Set(
      record.nodes
        .filter((node) => containers.some((c) => c.running && c.name === nodeContainerName(record.name, node.rank)))
        .map((node) => node.name),
    );
  },

  async recreateNodes(ctx, spec, ranks) {
    const { recreateLocalNodes } = await import("./testbed.ts");
    await recreateLocalNodes(ctx, narrowed("local", spec), ranks);
  },

  estimate: {
    // Gloo between containers is CPU-bound at about 5 Gbit/s (test/bench/README.md).
    fastestAllReduceGbps: 5,
    // Measured on the local testbed (test/bench/README.md).
    overheadSeconds: { run: 6, campaign: 25 },
    // Its nodes use this machine's engine, where docker/worker/build.sh built the image.
    workerImageSource: () => "present",
  },
};

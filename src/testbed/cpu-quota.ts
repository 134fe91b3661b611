/**
 * The CPU quota of every node's worker on the local testbed (a cgroup CFS quota, cpu.max: its share of every 10 ms
 * period, CPU_PERIOD_MS): fixed
 * compute per node, so that adding nodes adds compute as on a real cluster. Pure: the machine's core count is
 * passed in (the CLI reads `os.availableParallelism()`).
 */
import { ConfigError } from "../util/errors.ts";
import { CPU_PERIOD_MS, SMALLEST_CPU_QUOTA } from "../rules/cpu-quota-limits.ts";
import { gapOf, targetOf, type TargetName } from "../targets/index.ts";

/**
 * The quota's period, and the smallest quota the kernel takes in it (src/rules/cpu-quota-limits.ts: the campaign schema
 * applies it too).
 */
export { CPU_PERIOD_MS, SMALLEST_CPU_QUOTA };

/** Cores left to dockerd, sshd and Ansible, which run beside the workers and must not be starved. */
export const HOST_HEADROOM_CORES = 0.5;

export interface CpuQuotaRequest {
  /** Cores of this machine (`os.availableParallelism()`). */
  readonly cores: number;
  /** Nodes of the testbed (testbed.nodes): every one may run a worker at once. */
  readonly nodes: number;
  /**
   * The most worker processes that run at once, when more than the nodes (nodes × processes per node): each
   * process gets the quota, as each GPU of a node brings its own compute.
   */
  readonly workers?: number | undefined;
  /** testbed.cpusPerNode; absent: the largest quota that fits. */
  readonly requested?: number | undefined;
}

export type CpuQuotaPlan =
  | { readonly ok: true; readonly cpusPerNode: number }
  | { readonly ok: false; readonly problem: string; readonly largestThatFits: number };

/** The largest per-node quota whose total leaves the headroom free, rounded down to Docker's 0.01 steps. */
export function largestCpuQuota(cores: number, nodes: number): number {
  return Math.floor(((cores - HOST_HEADROOM_CORES) / nodes) * 100) / 100;
}

/** The quota every worker runs under: the requested one if the machine can give it to every node (process) at once. */
export function planCpuQuota(request: CpuQuotaRequest): CpuQuotaPlan {
  const { cores, nodes, requested } = request;
  const slots = Math.max(nodes, request.workers ?? 0);
  const what = slots > nodes ? `${slots} worker processes (nodes × processesPerNode)` : `${nodes} nodes`;
  const largestThatFits = largestCpuQuota(cores, slots);
  if (largestThatFits < SMALLEST_CPU_QUOTA) {
    return {
      ok: false,
      largestThatFits,
      problem: `${what} do not fit on ${cores} cores (${HOST_HEADROOM_CORES} kept for dockerd, sshd and Ansible); use fewer`,
    };
  }
  if (requested === undefined) return { ok: true, cpusPerNode: largestThatFits };
  // A hundredth of a core of slack: 0.75 × 2 must fit in 1.5 whatever floating point makes of it.
  if (requested * slots > cores - HOST_HEADROOM_CORES + 1e-9) {
    return {
      ok: false,
      largestThatFits,
      problem:
        `found ${requested} × ${what} = ${roundCores(requested * slots)} cores, more than this machine's ${cores} cores less ` +
        `${HOST_HEADROOM_CORES} for dockerd, sshd and Ansible; the largest value that fits is ${largestThatFits}`,
    };
  }
  return { ok: true, cpusPerNode: requested };
}

function roundCores(cores: number): number {
  return Math.round(cores * 100) / 100;
}

/**
 * The quota of a loaded campaign file's workers: undefined where its target cannot hold them to one ("cpu-quota": on
 * AWS every node is a machine of its own); on the local testbed the file's cpusPerNode or the default, or a
 * ConfigError (exit 2) naming the largest value that fits.
 */
export function resolveCpuQuota(file: CpuQuotaFile, cores: number): number | undefined {
  const { testbed } = file;
  if (gapOf(targetOf(testbed), "cpu-quota") !== undefined || !("nodes" in testbed)) return undefined;
  const matrix = file.campaign?.matrix;
  const workers =
    matrix === undefined
      ? undefined
      : mostWorkersAtOnce(matrix.nodes, matrix.processesPerNode ?? [1], file.campaign?.maxWorkers);
  const plan = planCpuQuota({ cores, nodes: testbed.nodes, requested: testbed.cpusPerNode, workers });
  if (plan.ok) return plan.cpusPerNode;
  throw new ConfigError(file.sourceFile, [{ path: "testbed.cpusPerNode", message: plan.problem }]);
}

/** The largest nodes × processes per node the matrix runs: every combination, less those above maxWorkers. */
export function mostWorkersAtOnce(
  nodes: readonly number[],
  processesPerNode: readonly number[],
  maxWorkers: number | undefined,
): number {
  const products = nodes
    .flatMap((n) => processesPerNode.map((p) => n * p))
    .filter((workers) => maxWorkers === undefined || workers <= maxWorkers);
  return Math.max(0, ...products);
}

interface CpuQuotaFile {
  readonly sourceFile: string;
  readonly testbed: CpuQuotaTestbed;
  readonly campaign?:
    | {
        readonly matrix: {
          readonly nodes: readonly number[];
          readonly processesPerNode?: readonly number[] | undefined;
        };
        /** Combinations above this many workers are not run. */
        readonly maxWorkers?: number | undefined;
      }
    | undefined;
}

/** A testbed section: its nodes and its cpusPerNode where its target takes one. */
type CpuQuotaTestbed =
  | { readonly target: TargetName; readonly nodes: number; readonly cpusPerNode?: number | undefined }
  | { readonly target: TargetName };

/**
 * Whether a record measured what a run under `cpusPerNode` (undefined: no quota) measures now: the same quota, in
 * this ringlab's CFS period (a record without one ran under Docker's 100 ms, faster after every wait).
 */
export function underQuota(record: QuotaOfRecord, cpusPerNode: number | undefined): boolean {
  return record.params.cpusPerNode === cpusPerNode && inCurrentCpuPeriod(record);
}

/**
 * Whether a record ran without a quota or in this ringlab's CFS period (one without a period ran in Docker's 100 ms).
 */
export function inCurrentCpuPeriod(record: QuotaOfRecord): boolean {
  return record.params.cpusPerNode === undefined || record.params.cpuPeriodMs === CPU_PERIOD_MS;
}

/** What a run record says of its CPU quota (results/record.ts). */
interface QuotaOfRecord {
  readonly params: { readonly cpusPerNode?: number; readonly cpuPeriodMs?: number };
}

/**
 * The run record (`ringlab.run/v1`): one file per attempt of a run, the one result format campaigns write and
 * the report reads. The type and the schema that checks a record read back from disk live together here.
 * Pure: no file system (see store.ts).
 */
import { z } from "zod";
import { DEFAULT_LAUNCHER, LAUNCHER_NAMES, type RecordedLauncher } from "../launchers/names.ts";
import { workerResultSchema, type WorkerResult } from "./worker-result.ts";

export const RUN_RECORD_SCHEMA = "ringlab.run/v1";

/** The benchmark jobs a worker runs. */
export const JOBS = ["train", "allreduce"] as const;
export type Job = (typeof JOBS)[number];

export interface RunRecord {
  readonly schema: typeof RUN_RECORD_SCHEMA;
  readonly campaign: string;
  readonly runId: string;
  /**
   * 1 for a run's first attempt, counting up each time the run is done again (it failed, or its parameters
   * changed). Absent in records written before attempts were kept: those are attempt 1.
   */
  readonly attempt?: number;
  /** See PlannedRun.fingerprint: a resumed campaign keeps this record only if the plan still matches it. */
  readonly fingerprint: string;
  readonly params: {
    readonly job: Job;
    readonly nodes: number;
    /** Worker processes per node; absent in records made before the axis existed, which ran one. */
    readonly processesPerNode?: number;
    /** Link rate ("1gbit"), "unlimited", or null for a single-node run. */
    readonly bandwidth: string | null;
    /** The same in Gbit/s; null for unlimited or single-node. */
    readonly linkGbps: number | null;
    readonly repeat: number;
    readonly model?: string;
    readonly batchSize?: number;
    /** Train knobs the campaign set, by name. */
    readonly knobs: Readonly<Record<string, string | number | boolean>>;
    readonly workerArgs: readonly string[];
    /**
     * Local testbed: the CPU cores every node's worker was limited to (Docker's --cpus); absent on AWS and in older
     * records.
     */
    readonly cpusPerNode?: number;
    /**
     * With cpusPerNode: the CFS period of that quota, ms (src/rules/cpu-quota-limits.ts CPU_PERIOD_MS). Absent where it
     * was Docker's 100 ms (records before 2026-11-26), under which a worker ran faster after every wait.
     */
    readonly cpuPeriodMs?: number;
    /**
     * Local testbed: the memory every node's worker container was limited to, GiB (testbed.memoryPerNodeGiB); absent:
     * none.
     */
    readonly memoryPerNodeGiB?: number;
    /**
     * The launcher that started it (src/launchers/; slurm: one Slurm job, its job.sbatch in logsDir; mpi: one mpirun,
     * its mpirun.sh there); absent: Ansible.
     */
    readonly launcher?: RecordedLauncher;
    /** The campaign's repeatUntil, when it repeated configurations until their interval was narrow. */
    readonly repeatUntil?: { readonly halfWidth: number; readonly minRepeats: number; readonly maxRepeats: number };
  };
  /** skipped: not run because a node it needs does not answer; a rerun of the campaign does it. */
  readonly status: "ok" | "failed" | "skipped";
  /** Why it failed or was skipped; the worker logs are in logsDir. */
  readonly error?: string;
  /** Nodes found lost just before this run and brought back (local testbed: recreated and reconfigured). */
  readonly nodeRecovery?: { readonly recreated: readonly string[]; readonly seconds: number };
  readonly startedAt: string;
  readonly endedAt: string;
  /** The run's wall time, orchestration included. */
  readonly wallSeconds: number;
  /** Time inside the benchmark job (worker launch to end, from its provenance); absent when it failed. */
  readonly benchmarkSeconds?: number;
  /** Its target's name (src/targets/): a record is read as written, whatever targets this ringlab knows. */
  readonly testbed: { readonly name: string; readonly target: string; readonly instanceType?: string };
  /** This attempt's worker logs, relative to the results directory. */
  readonly logsDir: string;
  /** The worker's result as it wrote it. */
  readonly result?: WorkerResult;
  /**
   * Local testbed: what else the machine did while the run's benchmark ran (src/testbed/host-load.ts); absent on AWS
   * and in older records.
   */
  readonly hostLoad?: HostLoad;
}

/**
 * How busy the machine was outside the testbed during one run: the local testbed's nodes share the machine with
 * whatever else runs there, and these VMs report no steal time, so this is what shows a slow host.
 */
export interface HostLoad {
  /** Length of the window measured (the run's benchmark, from its start to its end), seconds. */
  readonly seconds: number;
  /** CPUs of the machine (/proc/stat). */
  readonly cores: number;
  /** CPU seconds the whole machine spent busy over the window (/proc/stat: all but idle and iowait). */
  readonly machineCpuSeconds: number;
  /** CPU seconds the testbed's containers (nodes and workers) used over the window (their cgroups' cpu.stat). */
  readonly testbedCpuSeconds: number;
  /** (machine − testbed) / (cores × seconds): the share of the machine's capacity that went to anything else. */
  readonly outsideShare: number;
  /**
   * Share of the window in which some runnable task waited for a CPU (/proc/pressure/cpu "some"); absent without PSI.
   */
  readonly cpuPressureShare?: number;
  /** Seconds the workers' quotas held them back (their cgroups' throttled_usec, summed over workers). */
  readonly workersThrottledSeconds?: number;
  /** outsideShare above `busyThreshold`: the run's numbers may be the machine's, not the testbed's. */
  readonly busy: boolean;
  readonly busyThreshold: number;
}

/** Checks a record read back from disk; unknown fields are kept, as a later v1 writer may add some. */
export const runRecordSchema: z.ZodType<RunRecord> = z.looseObject({
  schema: z.literal(RUN_RECORD_SCHEMA),
  campaign: z.string(),
  runId: z.string().min(1),
  attempt: z.number().int().positive().optional(),
  fingerprint: z.string(),
  params: z.looseObject({
    job: z.enum(JOBS),
    nodes: z.number().int().positive(),
    processesPerNode: z.number().int().positive().optional(),
    bandwidth: z.string().nullable(),
    linkGbps: z.number().nullable(),
    repeat: z.number().int(),
    model: z.string().optional(),
    batchSize: z.number().optional(),
    knobs: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    workerArgs: z.array(z.string()),
    cpusPerNode: z.number().positive().optional(),
    cpuPeriodMs: z.number().positive().optional(),
    memoryPerNodeGiB: z.number().positive().optional(),
    launcher: z.enum(LAUNCHER_NAMES).exclude([DEFAULT_LAUNCHER]).optional(),
    repeatUntil: z.looseObject({ halfWidth: z.number(), minRepeats: z.number(), maxRepeats: z.number() }).optional(),
  }),
  status: z.enum(["ok", "failed", "skipped"]),
  error: z.string().optional(),
  nodeRecovery: z.looseObject({ recreated: z.array(z.string()), seconds: z.number() }).optional(),
  startedAt: z.string(),
  endedAt: z.string(),
  wallSeconds: z.number(),
  benchmarkSeconds: z.number().optional(),
  testbed: z.looseObject({ name: z.string(), target: z.string().min(1), instanceType: z.string().optional() }),
  logsDir: z.string(),
  result: workerResultSchema.optional(),
  hostLoad: z
    .looseObject({
      seconds: z.number(),
      cores: z.number(),
      machineCpuSeconds: z.number(),
      testbedCpuSeconds: z.number(),
      outsideShare: z.number(),
      cpuPressureShare: z.number().optional(),
      workersThrottledSeconds: z.number().optional(),
      busy: z.boolean(),
      busyThreshold: z.number(),
    })
    .optional(),
});

/** A record, or why it is not one: the first field that does not fit. */
export function parseRunRecord(json: unknown): { record: RunRecord } | { problem: string } {
  const parsed = runRecordSchema.safeParse(json);
  if (parsed.success) return { record: parsed.data };
  const issue = parsed.error.issues[0]!;
  return { problem: `not a ${RUN_RECORD_SCHEMA} record at ${issue.path.join(".") || "(top)"}: ${issue.message}` };
}

export function attemptOf(record: RunRecord): number {
  return record.attempt ?? 1;
}

/** A run's latest attempt and how many attempts it had. */
export interface LatestAttempt {
  readonly record: RunRecord;
  readonly attempts: number;
}

/**
 * The latest attempt of every run, runs in the order their first record appears. The count is the latest
 * attempt's number when that is higher than the records at hand (an earlier record was unreadable).
 */
export function latestAttempts(records: readonly RunRecord[]): LatestAttempt[] {
  const byRun = new Map<string, { record: RunRecord; count: number }>();
  for (const record of records) {
    const seen = byRun.get(record.runId);
    if (seen === undefined) byRun.set(record.runId, { record, count: 1 });
    else
      byRun.set(record.runId, {
        record: attemptOf(record) > attemptOf(seen.record) ? record : seen.record,
        count: seen.count + 1,
      });
  }
  return [...byRun.values()].map(({ record, count }) => ({ record, attempts: Math.max(count, attemptOf(record)) }));
}

/**
 * How a run's Job stands, judged from the Job and its pods as the API returns them (pure): still going (and, while
 * a pod waits for a machine, the scheduler's reason), done, or failed with a sentence saying why. The run path
 * (./run.ts) asks this after every look at the cluster; a pod that can never start (an invalid image name, a
 * container that cannot be made) fails the run at once rather than at the deadline, and a pull that keeps failing
 * fails it after a while (./run.ts).
 */
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { parseWorkerResult, type WorkerResult } from "../../results/worker-result.ts";

export type RunState =
  /**
   * `unscheduled`: the scheduler's reason while a pod waits for a machine; `pullFailing`: a pull the kubelet is
   * retrying.
   */
  | { readonly kind: "running"; readonly unscheduled?: string; readonly pullFailing?: string }
  | { readonly kind: "succeeded" }
  | { readonly kind: "failed"; readonly reason: string };

/** A container waiting for one of these never starts without someone's fix. */
const HOPELESS_WAITS = new Set([
  "ErrImageNeverPull",
  "InvalidImageName",
  "CreateContainerConfigError",
  "CreateContainerError",
]);
/**
 * A pull that failed, which the kubelet tries again with back-off: a registry's 429 can clear, a wrong name cannot
 * (./run.ts waits a while).
 */
const RETRIED_WAITS = new Set(["ErrImagePull", "ImagePullBackOff"]);

/** The completion index of a pod of an Indexed Job: its node rank. */
export function podIndex(pod: V1Pod): number | undefined {
  const text =
    pod.metadata?.annotations?.["batch.kubernetes.io/job-completion-index"] ??
    pod.metadata?.labels?.["batch.kubernetes.io/job-completion-index"];
  return text === undefined || !/^\d+$/.test(text) ? undefined : Number(text);
}

/**
 * The run's state; `job` undefined: the Job is gone. `lastUnscheduled` is the scheduler's reason at the last look
 * that found pods: a Job whose pods were never placed and were removed at its deadline gives that reason, not just
 * "deadline exceeded".
 */
export function judgeRun(job: V1Job | undefined, pods: readonly V1Pod[], lastUnscheduled?: string): RunState {
  if (job === undefined) {
    return {
      kind: "failed",
      reason:
        "the Job was deleted before it ended (kubectl delete, `ringlab down` from elsewhere, or a policy that removes finished Jobs at once)",
    };
  }
  // A pod placed since an earlier look clears the reason: a pod that waited for a new node was not the deadline's
  // cause.
  const unscheduled = pods.length > 0 ? unscheduledReason(pods) : lastUnscheduled;
  const conditions = job.status?.conditions ?? [];
  const holds = (type: string) =>
    conditions.find((condition) => condition.type === type && condition.status === "True");
  // A Job reports Complete only once every index succeeded (SuccessCriteriaMet comes first on 1.31+).
  if (holds("Complete") !== undefined) return { kind: "succeeded" };
  const failed = holds("Failed") ?? holds("FailureTarget");
  if (failed !== undefined) {
    const why =
      failed.reason === "DeadlineExceeded" && unscheduled !== undefined
        ? `its pods were not all placed before the deadline (activeDeadlineSeconds): ${unscheduled}`
        : `the Job failed (${failed.reason ?? "no reason given"}${failed.message === undefined ? "" : `: ${failed.message}`})`;
    return { kind: "failed", reason: [why, ...podFailures(pods)].join("; ") };
  }
  const hopeless = waitingFor(pods, HOPELESS_WAITS);
  if (hopeless !== undefined) return { kind: "failed", reason: hopeless };
  const pullFailing = waitingFor(pods, RETRIED_WAITS);
  return {
    kind: "running",
    ...(unscheduled === undefined ? {} : { unscheduled }),
    ...(pullFailing === undefined ? {} : { pullFailing }),
  };
}

/** The scheduler's reason for a pod it has not placed ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu."). */
function unscheduledReason(pods: readonly V1Pod[]): string | undefined {
  for (const pod of pods) {
    const condition = pod.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False");
    if (condition !== undefined)
      return `pod ${pod.metadata?.name} not scheduled (${condition.reason ?? "no reason given"}: ${condition.message ?? ""})`.replace(
        /: \)$/,
        ")",
      );
  }
  return undefined;
}

/**
 * "pod x: container worker cannot start (image y): <reason>: <kubelet's message>" for the first container waiting for
 * one of `reasons`.
 */
function waitingFor(pods: readonly V1Pod[], reasons: ReadonlySet<string>): string | undefined {
  for (const pod of pods) {
    for (const status of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
      const waiting = status.state?.waiting;
      if (waiting?.reason === undefined || !reasons.has(waiting.reason)) continue;
      const image = waiting.reason.includes("Image") ? ` (image ${status.image})` : "";
      return `pod ${pod.metadata?.name}: container ${status.name} cannot start${image}: ${waiting.reason}${waiting.message === undefined ? "" : `: ${waiting.message}`}`;
    }
  }
  return undefined;
}

/** "pod X (node rank i): worker exited with code 1 (Error)" for each container that ended in failure. */
function podFailures(pods: readonly V1Pod[]): string[] {
  return pods.flatMap((pod) =>
    [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].flatMap((status) => {
      const ended = status.state?.terminated;
      if (ended === undefined || ended.exitCode === 0) return [];
      const index = podIndex(pod);
      return [
        `pod ${pod.metadata?.name}${index === undefined ? "" : ` (node rank ${index})`}: ${status.name} exited with code ${ended.exitCode}${ended.reason === undefined ? "" : ` (${ended.reason})`}`,
      ];
    }),
  );
}

/** What rank 0 prints after its result file (docker/worker/ringlab_worker/jobs.py, RESULT_LOG_PREFIX). */
const RESULT_PREFIX = "ringlab-result: ";

/**
 * Rank 0's result from its pod's log: the last line that carries it (torchrun may put a prefix before a worker's
 * line). The claim that holds result.json is the cluster's; the log is what the API gives back.
 */
export function resultFromLog(log: string): { result: WorkerResult; text: string } | { error: string } {
  const line = log
    .split("\n")
    .reverse()
    .find((text) => text.includes(RESULT_PREFIX));
  if (line === undefined) return { error: `no line starting "${RESULT_PREFIX.trim()}" in node rank 0's log` };
  const text = line.slice(line.indexOf(RESULT_PREFIX) + RESULT_PREFIX.length).trim();
  try {
    return { result: parseWorkerResult(JSON.parse(text)), text };
  } catch (error) {
    return { error: `node rank 0's result does not read as a worker result: ${(error as Error).message}` };
  }
}

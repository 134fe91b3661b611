/**
 * One planned run on a Kubernetes cluster: its manifests saved beside its logs (manifests.yaml, the run's job file:
 * `kubectl apply -f` runs it again once its Secret exists; the Secret's value is in no file), its NetworkPolicy,
 * Secret, Service and Indexed Job created, the Job followed until it ends (or its deadline passes), every pod's log
 * collected (worker-<node rank>.log) and rank 0's result read from its log, and the run's objects deleted, whatever
 * happened. The outcome is a RunOutcome, as the other testbeds' runs give.
 */
import { writeFileAtomic } from "../../util/fs.ts";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { V1Pod } from "@kubernetes/client-node";
import type { KubernetesTestbed } from "../../config/schema.ts";
import { uninterruptible, type Context } from "../../context/context.ts";
import { endedNow, freshCollectDir, type RunOutcome } from "../../runner/runner.ts";
import { ToolError } from "../../util/errors.ts";
import { isStatus, type Cluster } from "./cluster.ts";
import { judgeRun, podIndex, resultFromLog, type RunState } from "./follow.ts";
import { manifestsYaml, rendezvousSecret, runLabels, type RunManifests } from "./manifests.ts";
import type { PlannedRun } from "../../campaign/plan.ts";

/** How often the Job and its pods are looked at. */
export const DEFAULT_POLL_MS = 2000;
/** After the Job's own deadline (activeDeadlineSeconds), how long the Job controller gets to say it failed. */
const DEFAULT_GRACE_SECONDS = 30;
/** A registry's rate limit or a node's slow credentials clear within this; a wrong image name or tag does not. */
const DEFAULT_PULL_PATIENCE_SECONDS = 60;

export interface ClusterRunRequest {
  readonly run: PlannedRun;
  readonly manifests: RunManifests;
  readonly testbed: KubernetesTestbed;
  /** The Job's activeDeadlineSeconds (the campaign's runTimeoutSeconds). */
  readonly deadlineSeconds: number;
  /** A folder of this attempt alone: the run's files go here. */
  readonly collectDir: string;
  /** @default DEFAULT_POLL_MS */
  readonly pollMs?: number;
  /** After the Job's deadline, how long its controller gets to fail it before ringlab gives up on it. @default 30 */
  readonly graceSeconds?: number;
  /** How long an image pull may keep failing (the kubelet retries it) before the run fails. @default 60 */
  readonly pullPatienceSeconds?: number;
}

export async function runOnCluster(ctx: Context, cluster: Cluster, request: ClusterRunRequest): Promise<RunOutcome> {
  const { collectDir, manifests, testbed } = request;
  freshCollectDir(collectDir);
  writeFileAtomic(join(collectDir, "manifests.yaml"), manifestsYaml(manifests, testbed));
  const labels = runLabels(testbed, request.run);
  const jobName = manifests.objects[2].metadata!.name!;
  const started = new Date();
  const ended = (fields: Pick<RunOutcome, "status" | "result" | "error">) => endedNow(collectDir, started, fields);
  try {
    let uid: string;
    try {
      // A fresh rendezvous id for every attempt, in the cluster alone.
      uid = await cluster.create(manifests, rendezvousSecret(manifests));
    } catch (error) {
      if (!isStatus(error, 409)) throw error;
      return ended({
        status: "failed",
        error:
          `${(error as Error).message}: another campaign with testbed name ${testbed.name} runs in namespace ${testbed.namespace}, ` +
          "or an earlier one's objects are still being deleted (`ringlab down` with the campaign file deletes them)",
      });
    }
    const { state, pods } = await ctx.reporter.step(
      `run ${request.run.id} (Job ${jobName}, ${request.run.nodes} pod${request.run.nodes === 1 ? "" : "s"})`,
      (detail) =>
        follow(ctx, cluster, { name: jobName, uid }, labels, request, detail).catch((error: unknown) => {
          // The cluster stopped answering for longer than a blip: this run is lost, the campaign goes on.
          if (!(error instanceof ToolError) || ctx.signal.aborted) throw error;
          return {
            state: {
              kind: "failed",
              reason: `lost touch with the cluster while following the Job: ${error.message}`,
            } as RunState,
            pods: [],
          };
        }),
    );
    const headLog = await collectLogs(cluster, pods, collectDir);
    const logs = `worker logs: ${collectDir}/worker-*.log`;
    if (state.kind === "failed") return ended({ status: "failed", error: `${state.reason}; ${logs}` });
    const head = resultFromLog(headLog);
    if ("error" in head) return ended({ status: "failed", error: `the Job completed but ${head.error}; ${logs}` });
    writeFileAtomic(join(collectDir, "result.json"), `${head.text}\n`);
    return ended({ status: "ok", result: head.result });
  } finally {
    // Nothing of a run is left in the namespace: not after a failure, not after Ctrl-C.
    await cluster
      .deleteLabelled(labels)
      .catch((error: Error) =>
        uninterruptible(ctx).reporter.warn(
          `run ${request.run.id}'s objects could not all be deleted (${error.message}); \`ringlab down\` with the campaign file deletes them`,
        ),
      );
  }
}

/**
 * Looks at the Job until it ends, its deadline (and grace) passes, or the user interrupts. While no pod exists, the
 * Job's events say whether the cluster refuses to create them (admission, quota): that fails the run at once.
 */
async function follow(
  ctx: Context,
  cluster: Cluster,
  job: { name: string; uid: string },
  labels: Record<string, string>,
  request: ClusterRunRequest,
  detail: (text: string) => void,
): Promise<{ state: RunState; pods: readonly V1Pod[] }> {
  const grace = request.graceSeconds ?? DEFAULT_GRACE_SECONDS;
  const until = Date.now() + (request.deadlineSeconds + grace) * 1000;
  let unscheduled: string | undefined;
  let pullFailingSince: number | undefined;
  for (;;) {
    ctx.signal.throwIfAborted();
    const view = await cluster.look(job.name, job.uid, labels, ctx.signal);
    const state = judgeRun(view.job, view.pods, unscheduled);
    if (state.kind !== "running") return { state, pods: view.pods };
    pullFailingSince = state.pullFailing === undefined ? undefined : (pullFailingSince ?? Date.now());
    if (
      pullFailingSince !== undefined &&
      Date.now() - pullFailingSince >= (request.pullPatienceSeconds ?? DEFAULT_PULL_PATIENCE_SECONDS) * 1000
    ) {
      return {
        state: {
          kind: "failed",
          reason: `${state.pullFailing} (failing for ${Math.round((Date.now() - pullFailingSince) / 1000)} s)`,
        },
        pods: view.pods,
      };
    }
    // What the pods say now; with no pods (the controller removed them at the deadline), what they said last.
    unscheduled = state.unscheduled;
    if (view.pods.length === 0) {
      const refused = await cluster.podCreationFailures(job.name, job.uid);
      if (refused.length > 0)
        return {
          state: { kind: "failed", reason: `the cluster refused to create the Job's pods: ${refused.at(-1)}` },
          pods: [],
        };
    }
    detail(describePods(view.pods, state.unscheduled));
    if (Date.now() > until) {
      const why = unscheduled === undefined ? "" : `; the scheduler said: ${unscheduled}`;
      return {
        state: {
          kind: "failed",
          reason: `the Job did not end within its deadline (${request.deadlineSeconds} s, runTimeoutSeconds) and ${grace} s more${why}`,
        },
        pods: view.pods,
      };
    }
    await sleep(request.pollMs ?? DEFAULT_POLL_MS, undefined, { signal: ctx.signal }).catch(() =>
      ctx.signal.throwIfAborted(),
    );
  }
}

/** "2 pods: 1 Running, 1 Pending (pod x not scheduled ...)". */
function describePods(pods: readonly V1Pod[], unscheduled: string | undefined): string {
  const phases = new Map<string, number>();
  for (const pod of pods)
    phases.set(pod.status?.phase ?? "Unknown", (phases.get(pod.status?.phase ?? "Unknown") ?? 0) + 1);
  const counts = [...phases].map(([phase, count]) => `${count} ${phase}`).join(", ");
  return `${pods.length} pod${pods.length === 1 ? "" : "s"}${counts === "" ? "" : `: ${counts}`}${unscheduled === undefined ? "" : ` (${unscheduled})`}`;
}

/**
 * Every pod's worker log as worker-<node rank>.log (a pod with no index, by name); returns node rank 0's ("" without
 * one).
 */
async function collectLogs(cluster: Cluster, pods: readonly V1Pod[], collectDir: string): Promise<string> {
  let head = "";
  for (const pod of pods) {
    const log = await cluster.podLog(pod);
    const index = podIndex(pod);
    if (index === 0) head = log;
    writeFileAtomic(
      join(collectDir, `worker-${index ?? pod.metadata?.name}.log`),
      log.endsWith("\n") ? log : `${log}\n`,
    );
  }
  return head;
}

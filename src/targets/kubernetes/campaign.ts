/**
 * The Kubernetes target's run path (src/targets/kubernetes.ts): how a campaign's runs go on a cluster the user already
 * has, which ringlab neither provisions nor configures. The campaign's flow is the one of every target
 * (src/campaign/execute.ts: plan, resume, record, report); this opens the cluster for it (kubeconfig, context,
 * namespace, claim: nothing is created before these pass, and what a killed earlier invocation left is deleted), runs
 * each run as its own Job, recorded as soon as it ends, and at the end deletes everything labelled with the testbed
 * once more. Every run deletes its objects when it ends.
 */
import type { AnyLoadedCampaignFile, LoadedKubernetesCampaignFile } from "../../config/load.ts";
import type { KubernetesTestbed } from "../../config/schema.ts";
import { uninterruptible, type Context } from "../../context/context.ts";
import { recordRun, runCampaign, runRecord, type CampaignOutcome, type CampaignRuns } from "../../campaign/execute.ts";
import type { CampaignTestbed } from "../index.ts";
import { Cluster, type ClusterOptions } from "./cluster.ts";
import { networkPolicyWarning, runManifests } from "./manifests.ts";
import { runOnCluster } from "./run.ts";

/** What tests hand the run path in place of a real cluster (TargetOptions' `kubernetes` entry). */
export interface ClusterRunOptions {
  /** Where the kubeconfig is read and how long a call may take (tests point these at a loopback API server). */
  readonly cluster?: ClusterOptions;
  /** How often a run's Job is looked at (ms). */
  readonly pollMs?: number;
  /** How long an image pull may keep failing before its run fails (s; default 60). */
  readonly pullPatienceSeconds?: number;
}

export interface KubernetesCampaignOptions extends ClusterRunOptions {
  /** Default: the file's resultsDir, or results/<campaign name>. */
  readonly resultsDir?: string;
}

/**
 * A Kubernetes campaign through the campaign's flow, with the cluster's options (what `ringlab campaign` does, for
 * tests).
 */
export function runKubernetesCampaign(
  ctx: Context,
  file: LoadedKubernetesCampaignFile,
  options: KubernetesCampaignOptions = {},
): Promise<CampaignOutcome> {
  const { resultsDir, ...cluster } = options;
  return runCampaign(ctx, file as AnyLoadedCampaignFile, {
    ...(resultsDir === undefined ? {} : { resultsDir }),
    targetOptions: { kubernetes: cluster },
  });
}

/** Connects to the cluster, deletes what an earlier invocation left, and returns how the campaign's runs go there. */
export async function openCluster(
  ctx: Context,
  testbed: KubernetesTestbed,
  options: ClusterRunOptions,
): Promise<CampaignTestbed> {
  const unguarded = networkPolicyWarning(testbed);
  if (unguarded !== undefined) ctx.reporter.warn(unguarded);
  const cluster = await ctx.reporter.step(
    `check the cluster (namespace ${testbed.namespace}, claim ${testbed.sharedClaim})`,
    () => Cluster.connect(testbed, options.cluster),
  );
  ctx.reporter.info(`cluster: context ${cluster.context} (${cluster.server})`);
  const opened: CampaignTestbed = {
    run: (runCtx, runs) => runJobs(runCtx, cluster, testbed, runs, options),
    tearDown: (downCtx) => tearDown(downCtx, cluster, testbed.name),
  };
  try {
    // A killed earlier invocation's run would hold its Job's name, and its terminating pods its labels.
    const leftovers = await cluster.deleteLabelled({ "ringlab.testbed": testbed.name }, { waitUntilGone: true });
    if (leftovers > 0)
      ctx.reporter.warn(
        `deleted ${leftovers} objects an earlier invocation left (label ringlab.testbed=${testbed.name})`,
      );
  } catch (error) {
    // Connected: what is labelled with the testbed is deleted at the end all the same.
    await opened.tearDown(ctx);
    throw error;
  }
  return opened;
}

/** Each run as its own Job, one after the other, each recorded as soon as it ends. */
async function runJobs(
  ctx: Context,
  cluster: Cluster,
  testbed: KubernetesTestbed,
  runs: CampaignRuns,
  options: ClusterRunOptions,
): Promise<void> {
  const { todo, scope, tally } = runs;
  const { plan, store } = scope;
  for (const [index, run] of todo.entries()) {
    ctx.signal.throwIfAborted();
    ctx.reporter.info(`run ${index + 1}/${todo.length}: ${run.id}`);
    const attempt = store.nextAttempt(run.id);
    const outcome = await runOnCluster(ctx, cluster, {
      run,
      testbed,
      manifests: runManifests(run, testbed, plan.name, plan.runTimeoutSeconds),
      deadlineSeconds: plan.runTimeoutSeconds,
      collectDir: store.logsDirOf(run.id, attempt),
      ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
      ...(options.pullPatienceSeconds === undefined ? {} : { pullPatienceSeconds: options.pullPatienceSeconds }),
    });
    recordRun(ctx, scope, tally, runRecord(scope, run, attempt, outcome, undefined));
    if (outcome.status === "ok")
      ctx.reporter.info(`✓ run ${index + 1}/${todo.length}: ${run.id} (${outcome.wallSeconds.toFixed(1)} s)`);
  }
}

/**
 * Deletes everything labelled with the testbed in the namespace (each run deleted its own already) and waits until it
 * is gone.
 */
async function tearDown(ctx: Context, cluster: Cluster, testbed: string): Promise<"done" | "failed"> {
  try {
    await cluster.deleteLabelled({ "ringlab.testbed": testbed }, { waitUntilGone: true });
    return "done";
  } catch (error) {
    uninterruptible(ctx).reporter.warn(
      `deleting what is labelled ringlab.testbed=${testbed} failed: ${(error as Error).message}; \`ringlab down\` with the campaign file does it`,
    );
    return "failed";
  }
}

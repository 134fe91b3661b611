/**
 * A campaign on a Kubernetes cluster the user already has (testbed.target: kubernetes): the sibling of
 * src/campaign/execute.ts for a testbed ringlab neither provisions nor configures. Read -> plan -> check the cluster
 * (kubeconfig, context, namespace, claim: nothing is created before these pass) -> each run as its own Job, recorded
 * as soon as it ends -> report. Every run deletes its objects when it ends; at the end everything labelled with the
 * testbed is deleted once more (what a killed earlier invocation left too). A rerun of the same file resumes.
 */
import type { LoadedKubernetesCampaignFile } from "../config/load.ts";
import { uninterruptible, type Context } from "../context.ts";
import { makeReport, recordRun, resultsDirFor, runRecord, saveCampaignCopy, type CampaignOutcome, type RecordScope, type Tally } from "../campaign/execute.ts";
import { campaignName, planCampaign, remainingRuns } from "../campaign/plan.ts";
import { ResultsStore } from "../results/store.ts";
import { Cluster, type ClusterOptions } from "./cluster.ts";
import { networkPolicyWarning, runManifests } from "./manifests.ts";
import { runOnCluster } from "./run.ts";

export interface KubernetesCampaignOptions {
  /** Default: the file's resultsDir, or results/<campaign name>. */
  readonly resultsDir?: string;
  /** Where the kubeconfig is read and how long a call may take (tests point these at a loopback API server). */
  readonly cluster?: ClusterOptions;
  /** How often a run's Job is looked at (ms). */
  readonly pollMs?: number;
  /** How long an image pull may keep failing before its run fails (s; default 60). */
  readonly pullPatienceSeconds?: number;
}

export async function runKubernetesCampaign(ctx: Context, file: LoadedKubernetesCampaignFile, options: KubernetesCampaignOptions = {}): Promise<CampaignOutcome> {
  const started = Date.now();
  const plan = planCampaign(file, campaignName(file.sourceFile));
  const { testbed } = file;
  const leftOut: string[] = [];
  const store = ResultsStore.open(resultsDirFor(file, options.resultsDir), (message) => {
    leftOut.push(message);
    ctx.reporter.warn(message);
  });
  const todo = remainingRuns(plan, new Map(store.latestRecords().map(({ record }) => [record.runId, record])));
  saveCampaignCopy(store.layout, file.sourceText);
  ctx.reporter.info(`campaign ${plan.name}: ${plan.runs.length} runs planned, ${plan.runs.length - todo.length} already done, ${todo.length} to run ` +
    `as Jobs in namespace ${testbed.namespace}; results in ${store.layout.dir}`);
  const unguarded = networkPolicyWarning(testbed);
  if (unguarded !== undefined && todo.length > 0) ctx.reporter.warn(unguarded);

  const scope: RecordScope = { testbed: { name: testbed.name, target: "kubernetes" }, plan, store, instanceType: undefined, cpusPerNode: undefined };
  const tally: Omit<Tally, "rerun"> = { ok: 0, failed: 0, notRun: 0, benchmarkSeconds: 0 };
  let teardown: CampaignOutcome["teardown"] = "not needed";
  let cluster: Cluster | undefined;
  let upSeconds = 0;
  try {
    if (todo.length > 0) {
      const connectStarted = Date.now();
      cluster = await ctx.reporter.step(`check the cluster (namespace ${testbed.namespace}, claim ${testbed.sharedClaim})`, () => Cluster.connect(testbed, options.cluster));
      ctx.reporter.info(`cluster: context ${cluster.context} (${cluster.server})`);
      // A killed earlier invocation's run would hold its Job's name, and its terminating pods its labels.
      const leftovers = await cluster.deleteLabelled({ "ringlab.testbed": testbed.name }, { waitUntilGone: true });
      if (leftovers > 0) ctx.reporter.warn(`deleted ${leftovers} objects an earlier invocation left (label ringlab.testbed=${testbed.name})`);
      upSeconds = (Date.now() - connectStarted) / 1000;
    }
    for (const [index, run] of todo.entries()) {
      ctx.signal.throwIfAborted();
      ctx.reporter.info(`run ${index + 1}/${todo.length}: ${run.id}`);
      const attempt = store.nextAttempt(run.id);
      const outcome = await runOnCluster(ctx, cluster!, {
        run, testbed, manifests: runManifests(run, testbed, plan.name, plan.runTimeoutSeconds), deadlineSeconds: plan.runTimeoutSeconds,
        collectDir: store.logsDirOf(run.id, attempt), ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
        ...(options.pullPatienceSeconds === undefined ? {} : { pullPatienceSeconds: options.pullPatienceSeconds }),
      });
      recordRun(ctx, scope, tally, runRecord(scope, run, attempt, outcome, undefined));
      if (outcome.status === "ok") ctx.reporter.info(`✓ run ${index + 1}/${todo.length}: ${run.id} (${outcome.wallSeconds.toFixed(1)} s)`);
    }
  } finally {
    if (cluster !== undefined) teardown = await tearDown(ctx, cluster, testbed.name);
    await makeReport(ctx, store, leftOut);
    if (ctx.signal.aborted) ctx.reporter.warn(`interrupted: ${tally.ok + tally.failed} runs recorded this time; rerun the same command to resume`);
  }
  return {
    resultsDir: store.layout.dir, planned: plan.runs.length, alreadyDone: plan.runs.length - todo.length, ...tally,
    rerun: { runs: 0, failed: 0, stillDisturbed: 0 }, wallSeconds: (Date.now() - started) / 1000, upSeconds, teardown,
  };
}

/** Deletes everything labelled with the testbed in the namespace (each run deleted its own already) and waits until it is gone. */
async function tearDown(ctx: Context, cluster: Cluster, testbed: string): Promise<CampaignOutcome["teardown"]> {
  try {
    await cluster.deleteLabelled({ "ringlab.testbed": testbed }, { waitUntilGone: true });
    return "done";
  } catch (error) {
    uninterruptible(ctx).reporter.warn(`deleting what is labelled ringlab.testbed=${testbed} failed: ${(error as Error).message}; \`ringlab down\` with the campaign file does it`);
    return "failed";
  }
}

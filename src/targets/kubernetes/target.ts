/**
 * A Kubernetes cluster the user already has (issue #38): ringlab provisions and configures nothing there. Each run is
 * an Indexed Job (one pod per node) and a headless Service for torchrun's rendezvous (src/kubernetes/manifests.ts),
 * run by the campaign through this target's own run path (src/kubernetes/campaign.ts) or written by `ringlab
 * manifests` for `kubectl apply -f`. What a testbed ringlab configures offers beyond that is a gap, said with why.
 */
import { z } from "zod";
import { bandwidthGbps } from "../../rules/bandwidth.ts";
import { ruled, testbedCommon } from "../../config/fields.ts";
import {
  checkDnsLabel,
  checkDnsSubdomain,
  checkKubeContext,
  checkLabelKey,
  checkLabelValue,
} from "../../rules/kubernetes.ts";
import { checkDockerImageReference } from "../../rules/safe-text.ts";
import { NO_MPI4PY } from "../aws/target.ts";
import { narrowed, type Target } from "../target.ts";

declare module "../target.ts" {
  interface TargetOptions {
    /**
     * Where the kubeconfig is read, how often a Job is looked at, how long a pull may fail
     * (src/kubernetes/campaign.ts).
     */
    readonly kubernetes?: import("./campaign.ts").ClusterRunOptions;
  }
}

export const KUBERNETES_DEFAULTS = {
  gpusPerPod: 1,
  /** The user (and group) the pods run as: not root, as Pod Security "restricted" requires. */
  runAsUser: 1000,
  /** Where the PersistentVolumeClaim is mounted in every pod: datasets, checkpoints, the runs' results. */
  sharedMountPath: "/ringlab",
} as const;

export const kubernetesSection = z.strictObject({
  target: z
    .literal("kubernetes")
    .describe(
      "kubernetes: a cluster you already have; each run is an Indexed Job there, ringlab provisions and configures nothing.",
    ),
  ...testbedCommon,
  context: ruled(checkKubeContext)
    .optional()
    .describe("The kubeconfig's context to use; default: its current context."),
  namespace: ruled(checkDnsLabel).describe("The namespace the runs' objects go in."),
  workerImage: ruled(checkDockerImageReference).describe(
    "The worker image every pod runs, in a registry the cluster pulls from (GPU: ringlab/worker:gpu, tagged and pushed).",
  ),
  gpusPerPod: z
    .int()
    .min(0)
    .max(16)
    .default(KUBERNETES_DEFAULTS.gpusPerPod)
    .describe("`nvidia.com/gpu` each pod asks for (0: a CPU pod)."),
  nodeSelector: z
    .record(ruled(checkLabelKey), ruled(checkLabelValue))
    .default({})
    .describe('Where the pods may run, e.g. {"node.kubernetes.io/instance-type": "p4d.24xlarge"}.'),
  sharedClaim: ruled(checkDnsSubdomain).describe(
    "The PersistentVolumeClaim (ReadWriteMany: EFS, NFS) mounted in every pod at /ringlab.",
  ),
  hostNetwork: z
    .boolean()
    .default(false)
    .describe("The pods use their nodes' network (EFA, RDMA): one ringlab pod per node then."),
  shapeInPod: z
    .boolean()
    .default(false)
    .describe(
      "Each pod shapes its own egress with tc before the worker starts (needs the NET_ADMIN capability there).",
    ),
  runAsUser: z
    .int()
    .min(0)
    .max(2147483647)
    .default(KUBERNETES_DEFAULTS.runAsUser)
    .describe(
      'The user id (and group id, and fsGroup) the pods\' worker runs as; 0 is root, which Pod Security "restricted" refuses ("baseline" ' +
        "allows it). The shared claim must be writable by that user (fsGroup helps where the volume supports it). Kubernetes takes 0 to 2147483647.",
    ),
});

export type KubernetesSection = z.output<typeof kubernetesSection>;

/** A campaign file whose testbed is a Kubernetes cluster: what `ringlab manifests` writes the objects of. */
export function isKubernetesTestbed<T extends { readonly target: string }>(
  testbed: T,
): testbed is Extract<T, { readonly target: "kubernetes" }> {
  return testbed.target === "kubernetes";
}

const NOT_CONFIGURED = "ringlab does not configure the cluster's nodes";

export const kubernetesTarget: Target = {
  name: "kubernetes",
  title: "Kubernetes",
  gaps: {
    provision:
      "on a Kubernetes cluster `ringlab plan <file>` lists the runs, `ringlab campaign <file>` runs them (each a Job), `ringlab manifests <file>` " +
      "writes their objects for `kubectl apply -f` and `ringlab down <file>` deletes what a killed campaign left",
    "cpu-quota": "where every pod asks the cluster for its own resources",
    "mpi-probe": NO_MPI4PY,
    launchers: "on Kubernetes every run is a Job of the cluster's own",
    "node-loss": "a lost node on Kubernetes fails the whole Job (backoffLimit 0), so the others could not go on",
    "repeat-until": "which ringlab does not do on Kubernetes yet",
    "dataset-generate":
      "ringlab writes a dataset onto a testbed it configures, not onto a claim: copy it onto sharedClaim under datasets/<name> and set generate: false",
    "node-recovery": "a pod that is lost fails its Job; the cluster reschedules nothing for ringlab",
    "reuse-configured": NOT_CONFIGURED,
    "host-load": "its pods run on the cluster's machines, which ringlab does not watch",
    "rerun-disturbed": "its runs' objects are deleted as each run ends; `ringlab campaign` does every run once",
    "simultaneous-start":
      "its pods start when the cluster schedules them and their nodes have pulled the image, which can be minutes apart",
    "found-by-label": "what a campaign left is deleted by its label in its namespace (`ringlab down <file>`)",
    keep: "its runs' objects are always deleted",
    predictions: "ringlab does not know the cluster's machines",
    stack: NOT_CONFIGURED,
  },
  gapsOf(section) {
    const testbed = narrowed("kubernetes", section);
    return testbed.gpusPerPod === 0 ? { gpu: "the pods ask for none (testbed.gpusPerPod: 0)" } : {};
  },

  checkCampaign(section, campaign, issue) {
    const tb = narrowed("kubernetes", section);
    const shaped = campaign.matrix.bandwidth.filter((rate) => bandwidthGbps(rate) !== null);
    const multiNode = campaign.matrix.nodes.some((nodes) => nodes > 1);
    if (multiNode && shaped.length > 0 && !tb.shapeInPod) {
      issue(
        ["campaign", "matrix", "bandwidth"],
        `found ${shaped.join(", ")}: on Kubernetes a link is shaped only inside the pods; set testbed.shapeInPod: true where the cluster ` +
          "lets pods have the NET_ADMIN capability, or measure the cluster's own network with bandwidth: [unlimited]",
      );
    }
    if (tb.shapeInPod && tb.hostNetwork) {
      issue(
        ["testbed", "shapeInPod"],
        "with hostNetwork the pods share their nodes' network: shaping there would shape the node itself; turn one of them off",
      );
    }
    if (tb.gpusPerPod > 0 && /:cpu$/.test(tb.workerImage)) {
      issue(
        ["testbed", "gpusPerPod"],
        `found ${tb.gpusPerPod} with workerImage ${tb.workerImage}, which has no CUDA: use the GPU image (ringlab/worker:gpu, pushed where the cluster pulls from) or gpusPerPod: 0`,
      );
    }
    const processes = campaign.matrix.processesPerNode ?? [];
    if (tb.gpusPerPod > 0 && processes.some((count) => count > tb.gpusPerPod)) {
      issue(
        ["campaign", "matrix", "processesPerNode"],
        `found ${Math.max(...processes)}, expected at most testbed.gpusPerPod (${tb.gpusPerPod}): each process trains on a GPU of its pod's`,
      );
    }
  },

  /**
   * Every Job, Service, NetworkPolicy, Secret and pod labelled ringlab.testbed=<name> (a campaign deletes each run's
   * own; this is for what a kill left).
   */
  async downFromSection(_ctx, section) {
    const testbed = narrowed("kubernetes", section);
    const { Cluster } = await import("./cluster.ts");
    const cluster = await Cluster.connect(testbed, {}, "delete");
    const removed = await cluster.deleteLabelled({ "ringlab.testbed": testbed.name }, { waitUntilGone: true });
    return `deleted ${removed} objects labelled ringlab.testbed=${testbed.name} in namespace ${testbed.namespace} (context ${cluster.context})`;
  },

  runsWhere: (section) => ` as Jobs in namespace ${narrowed("kubernetes", section).namespace}`,

  async ownRunPath(ctx, file, options) {
    const { openCluster } = await import("./campaign.ts");
    return openCluster(ctx, narrowed("kubernetes", file.testbed), options.kubernetes ?? {});
  },
};

/**
 * The Kubernetes API as a Kubernetes campaign uses it, through the official client (@kubernetes/client-node), never
 * kubectl: read the kubeconfig, pick the context, check the namespace and the claim before anything is created,
 * create a run's objects, look at its Job and pods, read a pod's log, and delete by label.
 *
 * Every call has a deadline of its own (a cluster that does not answer is named, not waited for), and an error the
 * user can fix (the kubeconfig, the context, the namespace, the claim, what the user may do) is exit 2 naming it;
 * a cluster that does not answer before anything started is exit 3.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { ApiException, BatchV1Api, CoreV1Api, KubeConfig, type RequestContext, type ResponseContext, type V1Job, type V1Pod } from "@kubernetes/client-node";
import type { KubernetesTestbed } from "../config/schema.ts";
import { PrerequisiteError, ToolError, UsageError } from "../errors.ts";
import type { RunManifests } from "./manifests.ts";

/** How long one API call may take before the cluster counts as not answering. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface ClusterOptions {
  /** Where the kubeconfig is looked for: $KUBECONFIG (files joined by ":"), else ~/.kube/config. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** @default DEFAULT_REQUEST_TIMEOUT_MS */
  readonly requestTimeoutMs?: number;
}

export type Labels = Readonly<Record<string, string>>;

/** A run's Job and pods as one look at the cluster found them. */
export interface RunView {
  readonly job: V1Job | undefined;
  readonly pods: readonly V1Pod[];
}

export class Cluster {
  private readonly core: CoreV1Api;
  private readonly batch: BatchV1Api;

  private constructor(
    config: KubeConfig,
    /** The kubeconfig context in use, and its API server's URL (for messages). */
    readonly context: string,
    readonly server: string,
    readonly namespace: string,
    private readonly requestTimeoutMs: number,
  ) {
    this.core = config.makeApiClient(CoreV1Api);
    this.batch = config.makeApiClient(BatchV1Api);
  }

  /**
   * The testbed's cluster, checked: the kubeconfig reads, has the context, the cluster answers, the namespace
   * exists, and (unless only deleting) so does the claim. Nothing is created.
   */
  static async connect(testbed: KubernetesTestbed, options: ClusterOptions = {}, purpose: "run" | "delete" = "run"): Promise<Cluster> {
    const config = loadKubeconfig(options.env ?? process.env);
    const context = testbed.context ?? config.getCurrentContext();
    const contexts = config.getContexts().map((entry) => entry.name);
    if (!contexts.includes(context)) {
      throw new UsageError(`the kubeconfig has no context ${JSON.stringify(context)}${testbed.context === undefined ? " (its current-context)" : " (testbed.context)"}`, {
        hint: contexts.length === 0 ? "it has no contexts at all: point KUBECONFIG at the file kubectl uses" : `its contexts: ${contexts.join(", ")}; set testbed.context to one`,
      });
    }
    config.setCurrentContext(context);
    const server = config.getCurrentCluster()?.server ?? "(no server)";
    const cluster = new Cluster(config, context, server, testbed.namespace, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    await cluster.check(testbed, purpose);
    return cluster;
  }

  /** Refuses, before anything is created, a cluster that does not answer, a missing namespace or claim, or a user who may not read them. */
  private async check(testbed: KubernetesTestbed, purpose: "run" | "delete"): Promise<void> {
    try {
      await this.call("read the namespace", (options) => this.core.readNamespace({ name: this.namespace }, options));
    } catch (error) {
      if (isStatus(error, 404)) {
        throw new UsageError(`namespace ${this.namespace} does not exist on the cluster of context ${this.context} (${this.server})`, {
          hint: `create it (kubectl --context ${this.context} create namespace ${this.namespace}) or set testbed.namespace to one that exists`,
        });
      }
      if (error instanceof ToolError && error.details.toolExitCode === undefined) {
        throw new PrerequisiteError(`the cluster of context ${this.context} (${this.server}) does not answer: ${error.message}`, {
          hint: "check that the cluster is up and reachable from here (kubectl cluster-info), or pick another context (testbed.context)",
        });
      }
      throw error;
    }
    if (purpose === "delete") return;
    try {
      await this.call("read the shared claim", (options) => this.core.readNamespacedPersistentVolumeClaim({ name: testbed.sharedClaim, namespace: this.namespace }, options));
    } catch (error) {
      if (!isStatus(error, 404)) throw error;
      throw new UsageError(`namespace ${this.namespace} has no PersistentVolumeClaim ${testbed.sharedClaim} (testbed.sharedClaim)`, {
        hint: "create a ReadWriteMany claim (EFS, NFS) of that name in the namespace, or name one that exists",
      });
    }
  }

  /** Creates a run's Service, then its Job (the order `kubectl apply -f` of its manifests would take). */
  async create(manifests: RunManifests): Promise<void> {
    const [service, job] = manifests.objects;
    await this.call(`create Service ${service.metadata?.name}`, (options) =>
      this.core.createNamespacedService({ namespace: this.namespace, body: service.toJSON() as never }, options));
    await this.call(`create Job ${job.metadata?.name}`, (options) =>
      this.batch.createNamespacedJob({ namespace: this.namespace, body: job.toJSON() as never }, options));
  }

  /** The Job of that name (undefined once it is gone) and the pods with these labels. */
  async look(jobName: string, labels: Labels): Promise<RunView> {
    let job: V1Job | undefined;
    try {
      job = await this.call(`read Job ${jobName}`, (options) => this.batch.readNamespacedJob({ name: jobName, namespace: this.namespace }, options));
    } catch (error) {
      if (!isStatus(error, 404)) throw error;
    }
    const pods = await this.call("list the run's pods", (options) =>
      this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: selector(labels) }, options));
    return { job, pods: pods.items };
  }

  /** A pod's worker log, or why there is none (a container that never started has no log). */
  async podLog(podName: string): Promise<string> {
    try {
      return await this.call(`read pod ${podName}'s log`, (options) =>
        this.core.readNamespacedPodLog({ name: podName, namespace: this.namespace, container: "worker" }, options));
    } catch (error) {
      if (error instanceof ApiException || error instanceof ToolError) return `(no log from pod ${podName}: ${(error as Error).message})\n`;
      throw error;
    }
  }

  /**
   * Deletes the Jobs, Services and pods with these labels (a Job's pods go with it: background propagation; pods
   * are deleted too, in case a Job was removed without them). Returns how many objects were asked to go.
   */
  async deleteLabelled(labels: Labels): Promise<number> {
    const labelSelector = selector(labels);
    const jobs = await this.call("list Jobs", (options) => this.batch.listNamespacedJob({ namespace: this.namespace, labelSelector }, options));
    if (jobs.items.length > 0) {
      await this.call("delete Jobs", (options) =>
        this.batch.deleteCollectionNamespacedJob({ namespace: this.namespace, labelSelector, propagationPolicy: "Background" }, options));
    }
    // Services are deleted one by one: deleting a collection of Services is recent (Kubernetes 1.31).
    const services = await this.call("list Services", (options) => this.core.listNamespacedService({ namespace: this.namespace, labelSelector }, options));
    for (const service of services.items) {
      try {
        await this.call(`delete Service ${service.metadata?.name}`, (options) =>
          this.core.deleteNamespacedService({ name: service.metadata!.name!, namespace: this.namespace }, options));
      } catch (error) {
        if (!isStatus(error, 404)) throw error;
      }
    }
    const pods = await this.call("list pods", (options) => this.core.listNamespacedPod({ namespace: this.namespace, labelSelector }, options));
    if (pods.items.length > 0) {
      await this.call("delete pods", (options) => this.core.deleteCollectionNamespacedPod({ namespace: this.namespace, labelSelector }, options));
    }
    return jobs.items.length + services.items.length + pods.items.length;
  }

  /** One API call under the request deadline; its failure as a ToolError that says what was asked and what the API answered. */
  private async call<T>(what: string, request: (options: RequestOptions) => Promise<T>): Promise<T> {
    const signal = AbortSignal.timeout(this.requestTimeoutMs);
    try {
      return await request(withSignal(signal));
    } catch (error) {
      if (error instanceof ApiException) {
        throw new ToolError("kubernetes", `${what}: the API answered ${error.code} ${statusMessage(error.body)}`, { toolExitCode: error.code, cause: error });
      }
      // What is not the network (an http:// server, an auth plugin that fails) is the kubeconfig's to fix.
      if (!signal.aborted && (error as Error).name !== "FetchError") {
        throw new UsageError(`${what}: the kubeconfig's context ${this.context} (${this.server}) cannot be used: ${(error as Error).message}`, {
          hint: `check it with kubectl --context ${this.context} get namespace ${this.namespace}`,
        });
      }
      const reason = signal.aborted ? `no answer within ${this.requestTimeoutMs / 1000} s` : (error as Error).message;
      throw new ToolError("kubernetes", `${what} on ${this.server}: ${reason}`, { cause: error });
    }
  }
}

type RequestOptions = NonNullable<Parameters<CoreV1Api["readNamespace"]>[1]>;

/**
 * Per-call options that put the call under `signal`. The object API's middleware returns the client's observables,
 * which are a promise in a thin wrapper (its rxjsStub); Settled is one.
 */
function withSignal(signal: AbortSignal): RequestOptions {
  const options = {
    middleware: [{
      pre: (context: RequestContext) => {
        context.setSignal(signal);
        return new Settled(Promise.resolve(context));
      },
      post: (response: ResponseContext) => new Settled(Promise.resolve(response)),
    }],
    middlewareMergeStrategy: "append",
  } as const;
  // The client's Observable class keeps its promise private, so a structural twin does not type as one.
  return options as unknown as RequestOptions;
}

class Settled<T> {
  constructor(readonly promise: Promise<T>) {}

  toPromise(): Promise<T> {
    return this.promise;
  }

  pipe<S>(callback: (value: T) => S | PromiseLike<S>): Settled<S> {
    return new Settled(this.promise.then(callback));
  }
}

/** The kubeconfig kubectl would read: $KUBECONFIG's files, else ~/.kube/config; a missing or unreadable one is exit 2. */
function loadKubeconfig(env: NodeJS.ProcessEnv): KubeConfig {
  const files = env["KUBECONFIG"] ? env["KUBECONFIG"].split(delimiter).filter((file) => file !== "") : [join(env["HOME"] ?? homedir(), ".kube", "config")];
  const missing = files.filter((file) => !existsSync(file));
  if (missing.length > 0) {
    throw new UsageError(`no kubeconfig at ${missing.join(", ")}${env["KUBECONFIG"] ? " (KUBECONFIG)" : ""}`, {
      hint: "point KUBECONFIG at the file kubectl uses (kind: kind export kubeconfig; EKS: aws eks update-kubeconfig --name CLUSTER)",
    });
  }
  const config = new KubeConfig();
  try {
    for (const [index, file] of files.entries()) {
      if (index === 0) config.loadFromFile(file);
      else {
        const more = new KubeConfig();
        more.loadFromFile(file);
        config.mergeConfig(more);
      }
    }
  } catch (error) {
    throw new UsageError(`the kubeconfig ${files.join(", ")} cannot be read: ${(error as Error).message}`, { hint: "check it with kubectl config view" });
  }
  return config;
}

/** A label selector of equalities ("a=b,c=d"); the values passed the campaign's label rules. */
export function selector(labels: Labels): string {
  return Object.entries(labels).map(([key, value]) => `${key}=${value}`).join(",");
}

function isStatus(error: unknown, code: number): boolean {
  return error instanceof ToolError && error.details.toolExitCode === code;
}

/** The message of a Status the API sent back (its body is JSON), or its start. */
function statusMessage(body: unknown): string {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === "string") return parsed.message;
  } catch {
    // not JSON: the text itself
  }
  return (text ?? "").slice(0, 300);
}

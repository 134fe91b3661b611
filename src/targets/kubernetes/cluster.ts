/**
 * The Kubernetes API as a Kubernetes campaign uses it, through the official client (@kubernetes/client-node), never
 * kubectl: read the kubeconfig, pick the context, check the namespace and the claim before anything is created,
 * create a run's objects (its NetworkPolicy, Secret, Service and Job), look at its Job and pods, read a pod's log,
 * and delete by label.
 *
 * Every call has a deadline of its own (a cluster that does not answer is named, not waited for), and an error the
 * user can fix (the kubeconfig, the context, the namespace, the claim, what the user may do) is exit 2 naming it;
 * a cluster that does not answer before anything started is exit 3.
 */
import { existsSync } from "node:fs";
import { STATUS_CODES } from "node:http";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  ApiException,
  BatchV1Api,
  CoreV1Api,
  KubeConfig,
  NetworkingV1Api,
  type RequestContext,
  type ResponseContext,
  type V1Job,
  type V1NetworkPolicy,
  type V1Pod,
  type V1Secret,
  type V1Service,
} from "@kubernetes/client-node";
import type { Secret } from "kubernetes-models/v1";
import type { KubernetesTestbed } from "../../config/schema.ts";
import { PrerequisiteError, ToolError, UsageError } from "../../util/errors.ts";
import type { RunManifests } from "./manifests.ts";

/** How long one API call may take before the cluster counts as not answering. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** While a run is followed, how long a cluster may fail to answer (a blip, a 429, a 5xx) before the run is given up. */
const FOLLOW_PATIENCE_MS = 60_000;
/**
 * How long deleted objects may take to be gone (pods have a 30 s grace period) before a Job of the same name is
 * created.
 */
const GONE_WAIT_MS = 90_000;

export interface ClusterOptions {
  /**
   * Where the kubeconfig is looked for: $KUBECONFIG (files joined by ":"), else ~/.kube/config. @default process.env
   */
  readonly env?: NodeJS.ProcessEnv;
  /** @default DEFAULT_REQUEST_TIMEOUT_MS */
  readonly requestTimeoutMs?: number;
  /** How long a look at a run may keep failing before it counts (tests shorten it). @default 60 s */
  readonly followPatienceMs?: number;
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
  private readonly networking: NetworkingV1Api;

  private constructor(
    config: KubeConfig,
    /** The kubeconfig context in use, and its API server's URL (for messages). */
    readonly context: string,
    readonly server: string,
    readonly namespace: string,
    private readonly requestTimeoutMs: number,
    private readonly followPatienceMs: number,
  ) {
    this.core = config.makeApiClient(CoreV1Api);
    this.batch = config.makeApiClient(BatchV1Api);
    this.networking = config.makeApiClient(NetworkingV1Api);
  }

  /**
   * The testbed's cluster, checked: the kubeconfig reads, has the context, the cluster answers, the namespace
   * exists, and (unless only deleting) so does the claim. Nothing is created.
   */
  static async connect(
    testbed: KubernetesTestbed,
    options: ClusterOptions = {},
    purpose: "run" | "delete" = "run",
  ): Promise<Cluster> {
    const config = loadKubeconfig(options.env ?? process.env);
    const contexts = config.getContexts().map((entry) => entry.name);
    const hint =
      contexts.length === 0
        ? "it has no contexts at all: point KUBECONFIG at the file kubectl uses"
        : `its contexts: ${contexts.join(", ")}; set testbed.context to one`;
    const context = testbed.context ?? config.getCurrentContext();
    if (!context)
      throw new UsageError("the kubeconfig has no current-context and testbed.context names none", { hint });
    if (!contexts.includes(context)) {
      throw new UsageError(
        `the kubeconfig has no context ${JSON.stringify(context)}${testbed.context === undefined ? " (its current-context)" : " (testbed.context)"}`,
        { hint },
      );
    }
    config.setCurrentContext(context);
    const server = config.getCurrentCluster()?.server;
    if (server === undefined) {
      throw new UsageError(`the kubeconfig's context ${context} names a cluster the kubeconfig does not define`, {
        hint: "check it with kubectl config view",
      });
    }
    const cluster = new Cluster(
      config,
      context,
      server,
      testbed.namespace,
      options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      options.followPatienceMs ?? FOLLOW_PATIENCE_MS,
    );
    await cluster.check(testbed, purpose);
    return cluster;
  }

  /**
   * Refuses, before anything is created, a cluster that does not answer, a missing namespace or claim, or a user who
   * may not read them.
   */
  private async check(testbed: KubernetesTestbed, purpose: "run" | "delete"): Promise<void> {
    try {
      await this.call("read the namespace", (options) => this.core.readNamespace({ name: this.namespace }, options));
    } catch (error) {
      if (isStatus(error, 404)) {
        throw new UsageError(
          `namespace ${this.namespace} does not exist on the cluster of context ${this.context} (${this.server})`,
          {
            hint: `create it (kubectl --context ${this.context} create namespace ${this.namespace}) or set testbed.namespace to one that exists`,
          },
        );
      }
      throw this.beforeAnything(error);
    }
    if (purpose === "delete") return;
    try {
      await this.call("read the shared claim", (options) =>
        this.core.readNamespacedPersistentVolumeClaim(
          { name: testbed.sharedClaim, namespace: this.namespace },
          options,
        ),
      );
    } catch (error) {
      if (!isStatus(error, 404)) throw this.beforeAnything(error);
      throw new UsageError(
        `namespace ${this.namespace} has no PersistentVolumeClaim ${testbed.sharedClaim} (testbed.sharedClaim)`,
        {
          hint: "create a ReadWriteMany claim (EFS, NFS) of that name in the namespace, or name one that exists",
        },
      );
    }
  }

  /** A failed check, before anything was created: no answer is exit 3; what the user may not do is exit 2. */
  private beforeAnything(error: unknown): unknown {
    if (!(error instanceof ToolError)) return error;
    const code = error.details.toolExitCode;
    if (code === undefined || code === 429 || code >= 500) {
      return new PrerequisiteError(
        `the cluster of context ${this.context} (${this.server}) does not answer: ${error.message}`,
        {
          hint: "check that the cluster is up and reachable from here (kubectl cluster-info), or pick another context (testbed.context)",
        },
      );
    }
    if (code === 401 || code === 403) {
      return new UsageError(`the kubeconfig's user may not do what a campaign needs: ${error.message}`, {
        hint:
          `a campaign needs, in namespace ${this.namespace}: get on namespaces and persistentvolumeclaims; create, get, list, delete and deletecollection ` +
          `on jobs and pods; create, list and delete on services, secrets and networkpolicies (networking.k8s.io); get on pods/log; list on events ` +
          `(kubectl --context ${this.context} auth can-i --list -n ${this.namespace})`,
      });
    }
    return error;
  }

  /**
   * Creates a run's NetworkPolicy (before any pod of the run exists), its Secret (the rendezvous id the pods read),
   * its Service, then its Job. Returns the Job's uid: its pods are the ones it owns, not whatever else carries its
   * labels (a deleted attempt's, terminating). A name that is taken is a Conflict (another campaign with this
   * testbed name, or a deletion not finished).
   */
  async create(manifests: RunManifests, secret: Secret): Promise<string> {
    const [networkPolicy, service, job] = manifests.objects;
    await this.call(`create NetworkPolicy ${networkPolicy.metadata?.name}`, (options) =>
      this.networking.createNamespacedNetworkPolicy(
        { namespace: this.namespace, body: networkPolicy.toJSON() as never },
        options,
      ),
    );
    await this.call(`create Secret ${secret.metadata?.name}`, (options) =>
      this.core.createNamespacedSecret({ namespace: this.namespace, body: secret.toJSON() as never }, options),
    );
    await this.call(`create Service ${service.metadata?.name}`, (options) =>
      this.core.createNamespacedService({ namespace: this.namespace, body: service.toJSON() as never }, options),
    );
    const created = await this.call(`create Job ${job.metadata?.name}`, (options) =>
      this.batch.createNamespacedJob({ namespace: this.namespace, body: job.toJSON() as never }, options),
    );
    return created.metadata?.uid ?? "";
  }

  /**
   * The Job of that name (undefined once it is gone) and the pods it owns. A cluster that does not answer, or answers
   * 429 or 5xx, is asked again for up to a minute before this throws: one blip does not end a long campaign.
   */
  async look(jobName: string, jobUid: string, labels: Labels, interrupt?: AbortSignal): Promise<RunView> {
    return this.patiently(interrupt, async () => {
      let job: V1Job | undefined;
      try {
        job = await this.call(`read Job ${jobName}`, (options) =>
          this.batch.readNamespacedJob({ name: jobName, namespace: this.namespace }, options),
        );
      } catch (error) {
        if (!isStatus(error, 404)) throw error;
      }
      const pods = await this.listPods(selector(labels));
      return {
        job,
        pods: pods.filter((pod) => pod.metadata?.ownerReferences?.some((owner) => owner.uid === jobUid) ?? false),
      };
    });
  }

  /**
   * Why the Job controller could not create the Job's pods (its FailedCreate events: admission, quota), newest last.
   */
  async podCreationFailures(jobName: string, jobUid: string): Promise<string[]> {
    const events = await this.patiently(undefined, () =>
      this.call(`list Job ${jobName}'s events`, (options) =>
        this.core.listNamespacedEvent(
          { namespace: this.namespace, fieldSelector: `involvedObject.kind=Job,involvedObject.name=${jobName}` },
          options,
        ),
      ),
    );
    return events.items
      .filter(
        (event) =>
          event.reason === "FailedCreate" &&
          (event.involvedObject.uid === undefined || event.involvedObject.uid === jobUid),
      )
      .map((event) => event.message ?? "FailedCreate");
  }

  /**
   * A pod's worker log, or why there is none (a container that never started has none): then the log of its
   * init container, where tc may have said why shaping failed.
   */
  async podLog(pod: V1Pod): Promise<string> {
    const name = pod.metadata?.name ?? "";
    const log = (container: string) =>
      this.call(`read pod ${name}'s ${container} log`, (options) =>
        this.core.readNamespacedPodLog({ name, namespace: this.namespace, container }, options),
      );
    try {
      return await log("worker");
    } catch (error) {
      if (!(error instanceof ToolError)) throw error;
      const none = `(no log from pod ${name}: ${error.message})\n`;
      const init = pod.spec?.initContainers?.[0]?.name;
      if (init === undefined) return none;
      return `${none}(its init container ${init}:)\n${await log(init).catch((initError: Error) => `(none either: ${initError.message})\n`)}`;
    }
  }

  /**
   * Deletes the Jobs, Services, Secrets and pods with these labels (a Job's pods go with it: background propagation;
   * pods are deleted too, in case a Job was removed without them), and their NetworkPolicies once no such pod is left:
   * a terminating pod still listens, and its policy is what keeps the rest of the cluster off its ports. Not waiting,
   * a policy whose pods still terminate is left for the next deletion that waits (the campaign's end, `ringlab down`).
   * Returns how many objects were asked to go.
   */
  async deleteLabelled(labels: Labels, options: { readonly waitUntilGone?: boolean } = {}): Promise<number> {
    return this.patiently(undefined, () => this.deleteNow(selector(labels), options.waitUntilGone === true));
  }

  private async deleteNow(labelSelector: string, waitUntilGone: boolean): Promise<number> {
    const jobs = await this.listJobs(labelSelector);
    if (jobs.length > 0) {
      await this.call("delete Jobs", (options) =>
        this.batch.deleteCollectionNamespacedJob(
          { namespace: this.namespace, labelSelector, propagationPolicy: "Background" },
          options,
        ),
      );
    }
    // Services are deleted one by one: deleting a collection of Services is recent (Kubernetes 1.31). Secrets and
    // NetworkPolicies too: the user needs the same verbs on all three.
    const services = await this.listServices(labelSelector);
    for (const service of services) {
      await this.deleteOne(`delete Service ${service.metadata?.name}`, (options) =>
        this.core.deleteNamespacedService({ name: service.metadata!.name!, namespace: this.namespace }, options),
      );
    }
    const secrets = await this.listSecrets(labelSelector);
    for (const secret of secrets) {
      await this.deleteOne(`delete Secret ${secret.metadata?.name}`, (options) =>
        this.core.deleteNamespacedSecret({ name: secret.metadata!.name!, namespace: this.namespace }, options),
      );
    }
    const pods = await this.listPods(labelSelector);
    if (pods.length > 0) {
      await this.call("delete pods", (options) =>
        this.core.deleteCollectionNamespacedPod({ namespace: this.namespace, labelSelector }, options),
      );
    }
    let networkPolicies = await this.listNetworkPolicies(labelSelector);
    if (networkPolicies.length > 0 && (await this.listPods(labelSelector)).length > 0) {
      if (waitUntilGone) await this.waitUntilGone(labelSelector, [(selector) => this.listPods(selector)]);
      else networkPolicies = [];
    }
    for (const networkPolicy of networkPolicies) {
      await this.deleteOne(`delete NetworkPolicy ${networkPolicy.metadata?.name}`, (options) =>
        this.networking.deleteNamespacedNetworkPolicy(
          { name: networkPolicy.metadata!.name!, namespace: this.namespace },
          options,
        ),
      );
    }
    const asked = jobs.length + services.length + secrets.length + networkPolicies.length + pods.length;
    if (waitUntilGone && asked > 0) await this.waitUntilGone(labelSelector);
    return asked;
  }

  private async listJobs(labelSelector: string): Promise<V1Job[]> {
    return (
      await this.call("list Jobs", (options) =>
        this.batch.listNamespacedJob({ namespace: this.namespace, labelSelector }, options),
      )
    ).items;
  }

  private async listServices(labelSelector: string): Promise<V1Service[]> {
    return (
      await this.call("list Services", (options) =>
        this.core.listNamespacedService({ namespace: this.namespace, labelSelector }, options),
      )
    ).items;
  }

  /** One object's deletion; one already gone is as good. */
  private async deleteOne(what: string, request: (options: RequestOptions) => Promise<unknown>): Promise<void> {
    try {
      await this.call(what, request);
    } catch (error) {
      if (!isStatus(error, 404)) throw error;
    }
  }

  private async listSecrets(labelSelector: string): Promise<V1Secret[]> {
    return (
      await this.call("list Secrets", (options) =>
        this.core.listNamespacedSecret({ namespace: this.namespace, labelSelector }, options),
      )
    ).items;
  }

  private async listNetworkPolicies(labelSelector: string): Promise<V1NetworkPolicy[]> {
    return (
      await this.call("list NetworkPolicies", (options) =>
        this.networking.listNamespacedNetworkPolicy({ namespace: this.namespace, labelSelector }, options),
      )
    ).items;
  }

  private async listPods(labelSelector: string): Promise<V1Pod[]> {
    return (
      await this.call("list pods", (options) =>
        this.core.listNamespacedPod({ namespace: this.namespace, labelSelector }, options),
      )
    ).items;
  }

  /**
   * Waits (up to 90 s) until nothing with the labels is listed (by `lists`, by default every kind ringlab creates):
   * pods take their grace period to terminate.
   */
  private async waitUntilGone(
    labelSelector: string,
    lists: readonly ((labelSelector: string) => Promise<{ metadata?: { name?: string } }[]>)[] = [
      (selector) => this.listJobs(selector),
      (selector) => this.listServices(selector),
      (selector) => this.listSecrets(selector),
      (selector) => this.listNetworkPolicies(selector),
      (selector) => this.listPods(selector),
    ],
  ): Promise<void> {
    const until = Date.now() + GONE_WAIT_MS;
    for (let pause = 100; ; pause = Math.min(pause * 2, 2000)) {
      const left: { metadata?: { name?: string } }[] = [];
      for (const list of lists) left.push(...(await list(labelSelector)));
      if (left.length === 0) return;
      if (Date.now() > until) {
        throw new ToolError(
          "kubernetes",
          `${left.length} objects labelled ${labelSelector} were still there ${GONE_WAIT_MS / 1000} s after their deletion ` +
            `(${left
              .slice(0, 3)
              .map((object) => object.metadata?.name)
              .join(", ")}): a finalizer may hold them`,
        );
      }
      await sleep(pause);
    }
  }

  /**
   * Runs `work`, again after a pause while the cluster does not answer or answers 429 or 5xx, for up to
   * followPatienceMs; no more tries once `interrupt` fires (Ctrl-C goes on to the run's deletion).
   */
  private async patiently<T>(interrupt: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
    const until = Date.now() + this.followPatienceMs;
    for (let pause = 500; ; pause = Math.min(pause * 2, 8000)) {
      try {
        return await work();
      } catch (error) {
        const code = error instanceof ToolError ? error.details.toolExitCode : 0;
        const passing = error instanceof ToolError && (code === undefined || code === 429 || code! >= 500);
        if (!passing || Date.now() + pause > until) throw error;
        interrupt?.throwIfAborted();
        await sleep(pause, undefined, interrupt === undefined ? {} : { signal: interrupt }).catch(() =>
          interrupt?.throwIfAborted(),
        );
      }
    }
  }

  /**
   * One API call under the request deadline; its failure as a ToolError that says what was asked and what the API
   * answered.
   */
  private async call<T>(what: string, request: (options: RequestOptions) => Promise<T>): Promise<T> {
    const signal = AbortSignal.timeout(this.requestTimeoutMs);
    try {
      // The signal ends the HTTP request; the race also ends what comes before it (a kubeconfig's exec credential
      // plugin, e.g. aws eks get-token, runs before the request and has no deadline of its own).
      return await Promise.race([request(withSignal(signal)), aborted(signal)]);
    } catch (error) {
      if (error instanceof ApiException) {
        throw new ToolError(
          "kubernetes",
          `${what}: the API answered ${error.code} ${statusMessage(error.body) || (STATUS_CODES[error.code] ?? "")}`,
          { toolExitCode: error.code, cause: error },
        );
      }
      // What is not the network (an http:// server, an auth plugin that fails, a certificate that does not match
      // the kubeconfig's CA) is the kubeconfig's to fix.
      const network = networkFailure(error);
      if (!signal.aborted && (network === undefined || isTlsFailure(network))) {
        throw new UsageError(
          `${what}: the kubeconfig's context ${this.context} (${this.server}) cannot be used: ${(network ?? (error as Error)).message}`,
          {
            hint: `check it with kubectl --context ${this.context} get namespace ${this.namespace}`,
          },
        );
      }
      const reason = signal.aborted
        ? `no answer within ${this.requestTimeoutMs / 1000} s`
        : (network ?? (error as Error)).message;
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
    middleware: [
      {
        pre: (context: RequestContext) => {
          context.setSignal(signal);
          return new Settled(Promise.resolve(context));
        },
        post: (response: ResponseContext) => new Settled(Promise.resolve(response)),
      },
    ],
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

/**
 * The kubeconfig kubectl would read: $KUBECONFIG's files, else ~/.kube/config; a missing or unreadable one is exit 2.
 */
function loadKubeconfig(env: NodeJS.ProcessEnv): KubeConfig {
  const listed = env["KUBECONFIG"]
    ? env["KUBECONFIG"].split(delimiter).filter((file) => file !== "")
    : [join(env["HOME"] ?? homedir(), ".kube", "config")];
  // As kubectl: files of the list that do not exist are passed over, unless none does.
  const files = listed.filter((file) => existsSync(file));
  if (files.length === 0) {
    throw new UsageError(`no kubeconfig at ${listed.join(", ")}${env["KUBECONFIG"] ? " (KUBECONFIG)" : ""}`, {
      hint: "point KUBECONFIG at the file kubectl uses (kind: kind export kubeconfig; EKS: aws eks update-kubeconfig --name CLUSTER)",
    });
  }
  const loaded = files.map((file) => {
    const config = new KubeConfig();
    try {
      config.loadFromFile(file);
    } catch (error) {
      throw new UsageError(`the kubeconfig ${file} cannot be read: ${(error as Error).message}`, {
        hint: "check it with kubectl config view",
      });
    }
    return config;
  });
  if (loaded.length === 1) return loaded[0]!;
  // As kubectl merges them: the first file that names a cluster, user or context wins, and so does the first
  // current-context.
  const firstByName = <T extends { name: string }>(entries: readonly T[]) =>
    entries.filter((entry, index) => entries.findIndex((other) => other.name === entry.name) === index);
  const merged = new KubeConfig();
  merged.loadFromOptions({
    clusters: firstByName(loaded.flatMap((config) => config.clusters)),
    users: firstByName(loaded.flatMap((config) => config.users)),
    contexts: firstByName(loaded.flatMap((config) => config.contexts)),
    currentContext: loaded.map((config) => config.currentContext).find((context) => context) ?? "",
  });
  return merged;
}

/** A label selector of equalities ("a=b,c=d"); the values passed the campaign's label rules. */
export function selector(labels: Labels): string {
  return Object.entries(labels)
    .map(([key, value]) => `${key}=${value}`)
    .join(",");
}

/** Rejects when the signal fires: the deadline of one call. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, fail) => signal.addEventListener("abort", () => fail(new Error("aborted")), { once: true }));
}

/**
 * What the network said when a request failed (refused, no such host, a reset, a TLS failure): the client's fetch
 * (undici) fails with a TypeError "fetch failed" whose cause it is. Undefined for any other failure.
 */
function networkFailure(error: unknown): Error | undefined {
  const { name, message, cause } = error as { name?: unknown; message?: unknown; cause?: unknown };
  return name === "TypeError" && message === "fetch failed" && cause instanceof Error ? cause : undefined;
}

/**
 * A certificate that does not verify, or a server that does not speak TLS, fails as the network does; its code says so.
 */
function isTlsFailure(error: Error): boolean {
  const { code } = error as { code?: unknown };
  return (
    typeof code === "string" &&
    /^(CERT_|UNABLE_TO_|ERR_TLS_|DEPTH_ZERO_SELF_SIGNED|SELF_SIGNED_CERT|ERR_SSL_)/.test(code)
  );
}

export function isStatus(error: unknown, code: number): boolean {
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

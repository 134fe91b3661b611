/**
 * A loopback HTTPS server (its own self-signed certificate, trusted by the kubeconfig it writes, as a cluster's CA
 * is) that answers the few Kubernetes API calls ringlab makes as the API does (paths, verbs,
 * label selectors, and the documented shapes: Namespace, PersistentVolumeClaim, Service, NetworkPolicy, Secret (its
 * stringData kept as base64 data, as the API server stores it), Job with its conditions, PodList with phases,
 * conditions and container states (init containers too), Status for errors, text/plain for logs). What the pods of
 * a Job do is a scenario: the test says, look by look, what the Job controller and the kubelet would report.
 * Where a cluster is less kind than a scenario's plain words, the fake is too: the Job controller of Kubernetes 1.31
 * and later says FailureTarget or SuccessCriteriaMet before Failed or Complete (`jobController`), lists come sorted by
 * name, and a log is the named container's (`?container=`), or the kubelet's reason why there is none.
 * Anything else asked is answered 404 and kept in `unexpected`, for the test to assert there is none.
 */
// biome-ignore-all lint/suspicious/noAssignInExpressions: a route matches and keeps its match in one condition
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

type Json = Record<string, any>;

/** One pod as a scenario describes it at a look: its index, and what its status and logs say. */
export interface PodState {
  /** Its completion index. @default its place in the scenario's list */
  readonly index?: number;
  readonly phase: "Pending" | "Running" | "Succeeded" | "Failed";
  /** Extra pod conditions, e.g. PodScheduled False with the scheduler's reason. */
  readonly conditions?: readonly Json[];
  /** The worker container's state (waiting / running / terminated), as status.containerStatuses[0].state. */
  readonly worker?: Json;
  /** The worker container's log. */
  readonly log?: string;
  /**
   * The init container's state (the Job's template has one with shapeInPod), as status.initContainerStatuses[0].state.
   * @default terminated with 0 once the worker container has a state
   */
  readonly init?: Json;
  /** The init container's log (GET .../log?container=<its name>). */
  readonly initLog?: string;
}

/**
 * What the cluster reports at the n-th look at the Job (n from 0): the Job's conditions, each pod's state (the
 * Job's pods are these, no more), and the messages of the Job's FailedCreate events. A scenario says how the Job ends
 * as an old cluster says it (Failed or Complete); `jobController` makes a current cluster's sequence of it.
 */
export type Scenario = (look: number, job: Json) => ScenarioLook;
export interface ScenarioLook {
  readonly conditions?: readonly Json[];
  readonly pods: readonly PodState[];
  readonly failedCreate?: readonly string[];
}

/**
 * How the Job controller says that a Job ended.
 * - "current" (Kubernetes 1.31 and later): first FailureTarget (the reason and message Failed will carry) or
 *   SuccessCriteriaMet (CompletionsReached), while the pods it stopped still terminate; at the next look Failed or
 *   Complete beside it, the stopped pods gone. The controller's newFailureCondition/newSuccessCondition give the
 *   interim type whenever delayTerminalCondition() holds (feature gates JobManagedBy or JobPodReplacementPolicy, on by
 *   default), and enactJobFinished adds the terminal one only once no pod terminates (kubernetes/kubernetes
 *   pkg/controller/job/job_controller.go; KEP-4368 "Terminating pods and terminal Job conditions"; the Job docs,
 *   "Terminal Job conditions": "In Kubernetes v1.31 and later the Job controller delays the addition of the terminal
 *   conditions, Failed or Complete, until all of the Job Pods are terminated"). Both success conditions carry reason
 *   CompletionsReached, message "Reached expected number of succeeded pods" (test/e2e/apps/job.go asserts the reason).
 * - "before-1.31": Failed or Complete alone, as the scenario says it.
 */
export type JobController = "current" | "before-1.31";
export const JOB_CONTROLLERS: readonly JobController[] = ["current", "before-1.31"];

export interface FakeClusterOptions {
  readonly namespace: string;
  /** The PersistentVolumeClaims the namespace has. */
  readonly claims?: readonly string[];
  /** Default: every Job completes at its third look, each pod logging "ok". */
  readonly scenario?: Scenario;
  /** Accept connections but never answer (a cluster that hangs). */
  readonly hang?: boolean;
  /**
   * Objects already in the namespace (another testbed's, a killed run's), by kind; `logs`: an existing pod's logs by
   * container.
   */
  readonly existing?: {
    readonly jobs?: readonly Json[];
    readonly services?: readonly Json[];
    readonly pods?: readonly Json[];
    readonly networkPolicies?: readonly Json[];
    readonly secrets?: readonly Json[];
    readonly logs?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  };
  /** How the Job controller says a Job ended. @default "current" */
  readonly jobController?: JobController;
  /** An error status to answer instead, by request ("GET /api/v1/...") and how many such requests came before it. */
  readonly failWith?: (request: string, earlier: number) => number | undefined;
  /** How many pod lists a deleted pod still shows in, terminating (its grace period). @default 2 */
  readonly terminatingLists?: number;
}

export interface FakeCluster {
  readonly url: string;
  /** "METHOD path" of every request, in order. */
  readonly requests: string[];
  /** Requests the fake does not know: a test expects none. */
  readonly unexpected: string[];
  /** The bodies of created objects, in order, as sent (a Secret with its stringData). */
  readonly created: Json[];
  /** Each pod gone from the namespace (its termination over): its run's label and how many requests had come then. */
  readonly podsGone: { readonly run: string; readonly afterRequests: number }[];
  /** Names of what is left in the namespace. */
  left(): { jobs: string[]; services: string[]; networkPolicies: string[]; secrets: string[]; pods: string[] };
  /** A kubeconfig file whose context `context` points at this server. */
  kubeconfig(context?: string, namespace?: string): string;
  close(): Promise<void>;
}

export const completesAtThirdLook: Scenario = (look, job) => {
  const pods = Array.from(
    { length: job.spec.completions },
    (): PodState =>
      look === 0
        ? { phase: "Pending" }
        : look === 1
          ? { phase: "Running" }
          : { phase: "Succeeded", worker: { terminated: { exitCode: 0, reason: "Completed" } }, log: "ok\n" },
  );
  return look < 2 ? { pods } : { conditions: [{ type: "Complete", status: "True" }], pods };
};

export async function startFakeCluster(options: FakeClusterOptions): Promise<FakeCluster> {
  const ns = options.namespace;
  const scenario = options.scenario ?? completesAtThirdLook;
  const requests: string[] = [];
  const unexpected: string[] = [];
  const created: Json[] = [];
  const podsGone: { run: string; afterRequests: number }[] = [];
  const jobs = new Map<string, Json>((options.existing?.jobs ?? []).map((job) => [job.metadata.name, job]));
  const services = new Map<string, Json>(
    (options.existing?.services ?? []).map((service) => [service.metadata.name, service]),
  );
  const pods = new Map<string, Json>((options.existing?.pods ?? []).map((pod) => [pod.metadata.name, pod]));
  const networkPolicies = new Map<string, Json>(
    (options.existing?.networkPolicies ?? []).map((policy) => [policy.metadata.name, policy]),
  );
  const secrets = new Map<string, Json>(
    (options.existing?.secrets ?? []).map((secret) => [secret.metadata.name, secret]),
  );
  /** Logs by pod and container. */
  const logs = new Map<string, string>(
    Object.entries(options.existing?.logs ?? {}).flatMap(([pod, byContainer]) =>
      Object.entries(byContainer).map(([container, text]) => [`${pod}/${container}`, text] as const),
    ),
  );
  const looks = new Map<string, number>();
  const jobController = options.jobController ?? "current";
  /**
   * Per Job (by uid), on a current cluster: the interim condition once sent, and the scenario's look that ended it,
   * held for the next look.
   */
  const interim = new Map<string, Json>();
  const heldBack = new Map<string, ScenarioLook>();
  const failedCreate = new Map<string, readonly string[]>();
  /** Deleted pods still terminating: how many more pod lists show them. */
  const terminating = new Map<string, number>();
  const seen = new Map<string, number>();

  const status = (code: number, reason: string, message: string) => ({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: code < 400 ? "Success" : "Failure",
    message,
    reason,
    code,
  });
  const matches = (object: Json, labelSelector: string | null) =>
    (labelSelector ?? "")
      .split(",")
      .filter((term) => term !== "")
      .every((term) => {
        const [key, value] = term.split("=");
        return object.metadata?.labels?.[key!] === value;
      });
  // The API server lists in key order, that is by name within a namespace: etcd's range reads are, and so are lists
  // from its watch cache (k8s.io/apiserver pkg/storage/cacher, sortableStoreElements). Not in the order of creation.
  const byName = (a: Json, b: Json) =>
    a.metadata?.name < b.metadata?.name ? -1 : a.metadata?.name > b.metadata?.name ? 1 : 0;
  const list = (kind: string, apiVersion: string, objects: Iterable<Json>, labelSelector: string | null) => ({
    kind,
    apiVersion,
    metadata: { resourceVersion: "1" },
    items: [...objects].filter((object) => matches(object, labelSelector)).sort(byName),
  });

  /**
   * The scenario's look as the Job controller says it (see JobController): its conditions, and whether the pods it
   * stopped are still terminating.
   */
  function asController(uid: string, state: ScenarioLook): { conditions: Json[]; stoppedTerminate: boolean } {
    const conditions = [...(state.conditions ?? [])];
    const ended = conditions.find((c) => (c.type === "Failed" || c.type === "Complete") && c.status === "True");
    if (jobController === "before-1.31" || ended === undefined) return { conditions, stoppedTerminate: false };
    const interimType = ended.type === "Failed" ? "FailureTarget" : "SuccessCriteriaMet";
    if (conditions.some((c) => c.type === interimType)) return { conditions, stoppedTerminate: false };
    const terminal =
      ended.type === "Complete"
        ? { reason: "CompletionsReached", message: "Reached expected number of succeeded pods", ...ended }
        : ended;
    const others = conditions.filter((c) => c !== ended);
    if (!interim.has(uid)) {
      interim.set(uid, { ...terminal, type: interimType });
      heldBack.set(uid, state);
      return { conditions: [...others, interim.get(uid)!], stoppedTerminate: true };
    }
    return { conditions: [...others, interim.get(uid)!, terminal], stoppedTerminate: false };
  }

  /** The Job's status and pods as the scenario has them at this look. */
  function advance(job: Json): void {
    const name = job.metadata.name;
    const uid: string = job.metadata.uid;
    let state = heldBack.get(uid);
    if (state === undefined) {
      const look = looks.get(name) ?? 0;
      looks.set(name, look + 1);
      state = scenario(look, job);
    } else heldBack.delete(uid);
    const { conditions, stoppedTerminate } = asController(uid, state);
    job.status = {
      ...(conditions.length === 0
        ? {}
        : {
            conditions: conditions.map((c) => ({
              lastProbeTime: "2026-11-26T00:00:00Z",
              lastTransitionTime: "2026-11-26T00:00:00Z",
              ...c,
            })),
          }),
    };
    failedCreate.set(name, state.failedCreate ?? []);
    const template = job.spec.template.spec;
    const podName = (pod: PodState, place: number) => `${name}-${pod.index ?? place}-x${pod.index ?? place}k`;
    const now = new Set(state.pods.map(podName));
    // The Job's pods are what the scenario says now: the controller removes pods, as at a deadline. On a current
    // cluster, a Job's end first shows the pods it stopped still there, terminating.
    for (const [listed, pod] of pods) {
      if (pod.metadata.labels?.["job-name"] !== name || terminating.has(listed)) continue;
      if (stoppedTerminate && !now.has(listed) && (pod.status.phase === "Pending" || pod.status.phase === "Running"))
        pod.metadata.deletionTimestamp = "2026-11-26T00:00:30Z";
      else removePod(listed);
    }
    state.pods.forEach((pod, place) => {
      const index = pod.index ?? place;
      const started = !(pod.phase === "Pending" && pod.worker === undefined && pod.init === undefined);
      const status = (container: Json, containerState: Json | undefined) => ({
        name: container.name,
        image: container.image,
        ready: pod.phase === "Running" && containerState?.running !== undefined,
        restartCount: 0,
        ...(containerState === undefined ? {} : { state: containerState }),
      });
      const inits: Json[] = template.initContainers ?? [];
      pods.set(podName(pod, place), {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: podName(pod, place),
          namespace: ns,
          labels: {
            ...job.spec.template.metadata.labels,
            "batch.kubernetes.io/job-completion-index": String(index),
            "job-name": name,
          },
          annotations: { "batch.kubernetes.io/job-completion-index": String(index) },
          ownerReferences: [
            {
              apiVersion: "batch/v1",
              kind: "Job",
              name,
              uid: job.metadata.uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: template,
        status: {
          phase: pod.phase,
          conditions: [...(pod.conditions ?? [])],
          ...(inits.length === 0 || !started
            ? {}
            : {
                initContainerStatuses: inits.map((init) =>
                  status(init, pod.init ?? { terminated: { exitCode: 0, reason: "Completed" } }),
                ),
              }),
          containerStatuses: started
            ? [status(template.containers[0], pod.worker ?? (pod.phase === "Running" ? { running: {} } : undefined))]
            : [],
        },
      });
      if (pod.log !== undefined) logs.set(`${podName(pod, place)}/${template.containers[0].name}`, pod.log);
      if (pod.initLog !== undefined && inits[0] !== undefined)
        logs.set(`${podName(pod, place)}/${inits[0].name}`, pod.initLog);
    });
  }

  /**
   * A container's log (GET .../log?container=), or the error a cluster gives instead: the API server's when the name
   * is missing or wrong (pkg/registry/core/pod: ValidateContainer), the kubelet's when the container has not started
   * (pkg/kubelet/kubelet_pods.go: validateContainerLogStatus). A pod not yet on a node has an empty log.
   */
  function podLog(pod: Json, asked: string | null): { code: number; text: string } {
    const name = pod.metadata.name;
    const containers: string[] = (pod.spec?.containers ?? []).map((c: Json) => c.name);
    const inits: string[] = (pod.spec?.initContainers ?? []).map((c: Json) => c.name);
    if (asked === null && containers.length !== 1)
      return {
        code: 400,
        text: `a container name must be specified for pod ${name}, choose one of: [${[...inits, ...containers].join(" ")}]`,
      };
    const container = asked ?? containers[0]!;
    if (![...containers, ...inits].includes(container))
      return { code: 400, text: `container ${container} is not valid for pod ${name}` };
    const text = logs.get(`${name}/${container}`);
    if (text !== undefined) return { code: 200, text };
    if (pod.status?.conditions?.some((c: Json) => c.type === "PodScheduled" && c.status === "False"))
      return { code: 200, text: "" };
    const status = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
      (s: Json) => s.name === container,
    );
    const state = status?.state ?? {};
    if (state.running !== undefined || state.terminated !== undefined) return { code: 200, text: "" };
    const reason =
      state.waiting?.reason ??
      (inits.includes(container) || inits.length === 0 ? "ContainerCreating" : "PodInitializing");
    const why =
      reason === "ErrImagePull"
        ? "image can't be pulled"
        : reason === "ImagePullBackOff"
          ? "trying and failing to pull image"
          : reason;
    return { code: 400, text: `container "${container}" in pod "${name}" is waiting to start: ${why}` };
  }

  /** A pod gone from the namespace. */
  function removePod(name: string): void {
    podsGone.push({ run: pods.get(name)?.metadata.labels?.["ringlab.run"] ?? "", afterRequests: requests.length });
    pods.delete(name);
  }

  /** A deleted pod: marked, and listed for a few more pod lists (its grace period), then gone. */
  function terminate(name: string): void {
    const pod = pods.get(name);
    if (pod === undefined || terminating.has(name)) return;
    pod.metadata.deletionTimestamp = "2026-11-26T00:00:30Z";
    if ((options.terminatingLists ?? 2) === 0) removePod(name);
    else terminating.set(name, options.terminatingLists ?? 2);
  }

  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url!, "http://fake");
    const path = url.pathname;
    const method = request.method!;
    requests.push(`${method} ${path}`);
    const key = `${method} ${path}`;
    const failure = options.failWith?.(key, seen.get(key) ?? 0);
    seen.set(key, (seen.get(key) ?? 0) + 1);
    const body = await new Promise<string>((done) => {
      let text = "";
      request.on("data", (chunk) => (text += chunk));
      request.on("end", () => done(text));
    });
    const send = (code: number, json: unknown) => {
      response.writeHead(code, { "content-type": "application/json" });
      response.end(JSON.stringify(json));
    };
    const notFound = (what: string) => send(404, status(404, "NotFound", `${what} not found`));
    if (failure === 401) {
      // As the API server does: no Status body for an unauthenticated request's 401 here, just the code.
      response.writeHead(401, { "content-type": "application/json" });
      return void response.end(JSON.stringify(status(401, "Unauthorized", "Unauthorized")));
    }
    if (failure !== undefined) {
      const reasons: Record<number, string> = {
        403: "Forbidden",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
      };
      const message =
        failure === 403
          ? `jobs.batch is forbidden: User "tester" cannot get resource "${path.split("/").at(-2)}" in API group "" in the namespace "${ns}"`
          : `${reasons[failure] ?? "Error"}`;
      return send(failure, status(failure, reasons[failure] ?? "Unknown", message));
    }
    const selector = url.searchParams.get("labelSelector");
    const core = `/api/v1/namespaces/${ns}`;
    const batch = `/apis/batch/v1/namespaces/${ns}`;
    const networking = `/apis/networking.k8s.io/v1/namespaces/${ns}`;
    let match: RegExpMatchArray | null;

    if (/^\/api\/v1\/namespaces\/[^/]+$/.test(path) && method === "GET") {
      return path === core
        ? send(200, { kind: "Namespace", apiVersion: "v1", metadata: { name: ns }, status: { phase: "Active" } })
        : notFound(`namespaces "${path.split("/").at(-1)}"`);
    }
    if ((match = path.match(/^\/api\/v1\/namespaces\/[^/]+\/persistentvolumeclaims\/([^/]+)$/)) && method === "GET") {
      return path.startsWith(core) && (options.claims ?? []).includes(match[1]!)
        ? send(200, {
            kind: "PersistentVolumeClaim",
            apiVersion: "v1",
            metadata: { name: match[1], namespace: ns },
            spec: { accessModes: ["ReadWriteMany"] },
            status: { phase: "Bound" },
          })
        : notFound(`persistentvolumeclaims "${match[1]}"`);
    }
    if (path === `${core}/services` && method === "POST") {
      const service = JSON.parse(body);
      created.push(service);
      if (services.has(service.metadata.name))
        return send(409, status(409, "AlreadyExists", `services "${service.metadata.name}" already exists`));
      services.set(service.metadata.name, service);
      return send(201, service);
    }
    if (path === `${core}/services` && method === "GET")
      return send(200, list("ServiceList", "v1", services.values(), selector));
    if ((match = path.match(new RegExp(`^${core}/services/([^/]+)$`))) && method === "DELETE") {
      const service = services.get(match[1]!);
      if (service === undefined) return notFound(`services "${match[1]}"`);
      services.delete(match[1]!);
      return send(200, service);
    }
    // NetworkPolicies and Secrets: created, listed by label, deleted by name, as Services are.
    for (const [collection, kind, apiVersion, objects, stored] of [
      [
        `${networking}/networkpolicies`,
        "NetworkPolicy",
        "networking.k8s.io/v1",
        networkPolicies,
        (policy: Json) => ({ ...policy, metadata: { ...policy.metadata, uid: randomUUID() } }),
      ],
      // The API server keeps stringData as data (base64), and gives back no stringData.
      [
        `${core}/secrets`,
        "Secret",
        "v1",
        secrets,
        ({ stringData, ...secret }: Json) => ({
          ...secret,
          metadata: { ...secret.metadata, uid: randomUUID() },
          data: {
            ...secret.data,
            ...Object.fromEntries(
              Object.entries(stringData ?? {}).map(([key, value]) => [
                key,
                Buffer.from(String(value)).toString("base64"),
              ]),
            ),
          },
        }),
      ],
    ] as const) {
      // As the API names them in its messages: networkpolicies.networking.k8s.io "x", secrets "x".
      const resource =
        apiVersion === "v1"
          ? collection.split("/").at(-1)!
          : `${collection.split("/").at(-1)}.${apiVersion.split("/")[0]}`;
      if (path === collection && method === "POST") {
        const object = JSON.parse(body);
        created.push(object);
        if (object.kind !== kind || object.apiVersion !== apiVersion)
          return send(
            400,
            status(
              400,
              "BadRequest",
              `the object is a ${object.apiVersion}/${object.kind}, not a ${apiVersion}/${kind}`,
            ),
          );
        if (objects.has(object.metadata.name))
          return send(409, status(409, "AlreadyExists", `${resource} "${object.metadata.name}" already exists`));
        objects.set(object.metadata.name, stored(object));
        return send(201, objects.get(object.metadata.name));
      }
      if (path === collection && method === "GET")
        return send(200, list(`${kind}List`, apiVersion, objects.values(), selector));
      if ((match = path.match(new RegExp(`^${collection}/([^/]+)$`))) && method === "DELETE") {
        const object = objects.get(match[1]!);
        if (object === undefined) return notFound(`${resource} "${match[1]}"`);
        objects.delete(match[1]!);
        return send(200, status(200, "", ""));
      }
    }
    if (path === `${batch}/jobs` && method === "POST") {
      const job = JSON.parse(body);
      created.push(job);
      if (jobs.has(job.metadata.name))
        return send(409, status(409, "AlreadyExists", `jobs.batch "${job.metadata.name}" already exists`));
      jobs.set(job.metadata.name, { ...job, metadata: { ...job.metadata, uid: randomUUID() }, status: {} });
      return send(201, jobs.get(job.metadata.name));
    }
    if (path === `${batch}/jobs` && method === "GET")
      return send(200, list("JobList", "batch/v1", jobs.values(), selector));
    if (path === `${batch}/jobs` && method === "DELETE") {
      const doomed = [...jobs.values()].filter((job) => matches(job, selector));
      for (const job of doomed) {
        jobs.delete(job.metadata.name);
        // Background propagation: the garbage collector deletes the Job's pods, which terminate for a while.
        if (url.searchParams.get("propagationPolicy") === "Background")
          for (const [name, pod] of pods) if (pod.metadata.labels?.["job-name"] === job.metadata.name) terminate(name);
      }
      return send(200, status(200, "", ""));
    }
    if ((match = path.match(new RegExp(`^${batch}/jobs/([^/]+)$`))) && method === "GET") {
      const job = jobs.get(match[1]!);
      if (job === undefined) return notFound(`jobs.batch "${match[1]}"`);
      advance(job);
      return send(200, job);
    }
    if (path === `${core}/pods` && method === "GET") {
      const answer = list("PodList", "v1", pods.values(), selector);
      for (const [name, left] of terminating) {
        if (left > 1) terminating.set(name, left - 1);
        else {
          terminating.delete(name);
          removePod(name);
        }
      }
      return send(200, answer);
    }
    if (path === `${core}/pods` && method === "DELETE") {
      const doomed = [...pods.values()].filter((pod) => matches(pod, selector));
      for (const pod of doomed) terminate(pod.metadata.name);
      return send(200, list("PodList", "v1", doomed, null));
    }
    if (path === `${core}/events` && method === "GET") {
      const name = /involvedObject\.name=([^,]+)/.exec(url.searchParams.get("fieldSelector") ?? "")?.[1] ?? "";
      const job = jobs.get(name);
      const items = (failedCreate.get(name) ?? []).map((message, index) => ({
        apiVersion: "v1",
        kind: "Event",
        metadata: { name: `${name}.${index}`, namespace: ns },
        type: "Warning",
        reason: "FailedCreate",
        message,
        involvedObject: { apiVersion: "batch/v1", kind: "Job", name, namespace: ns, uid: job?.metadata.uid },
        source: { component: "job-controller" },
      }));
      return send(200, { kind: "EventList", apiVersion: "v1", metadata: {}, items });
    }
    if ((match = path.match(new RegExp(`^${core}/pods/([^/]+)/log$`))) && method === "GET") {
      const pod = pods.get(match[1]!);
      if (pod === undefined) return notFound(`pods "${match[1]}"`);
      const log = podLog(pod, url.searchParams.get("container"));
      if (log.code !== 200) return send(log.code, status(log.code, "BadRequest", log.text));
      response.writeHead(200, { "content-type": "text/plain" });
      response.end(log.text);
      return;
    }
    unexpected.push(`${method} ${request.url}`);
    notFound(`${method} ${path}`);
  }

  const tls = certificate();
  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (request, response) => {
    if (options.hang) return;
    answer(request, response).catch((error) => {
      response.writeHead(500);
      response.end(String(error));
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  const url = `https://127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), "ringlab-kubeconfig-"));
  return {
    url,
    requests,
    unexpected,
    created,
    podsGone,
    left: () => ({
      jobs: [...jobs.keys()],
      services: [...services.keys()],
      networkPolicies: [...networkPolicies.keys()],
      secrets: [...secrets.keys()],
      pods: [...pods.keys()],
    }),
    kubeconfig(context = "fake", namespace = ns) {
      const file = join(dir, `${context.replace(/[^a-z0-9-]/gi, "_")}.yaml`);
      writeFileSync(file, kubeconfigText(url, context, namespace, tls.cert));
      return file;
    },
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

let generated: { key: string; cert: string } | undefined;

/** A key and self-signed certificate for 127.0.0.1, made once per test process (openssl, as kind or kubeadm would). */
function certificate(): { key: string; cert: string } {
  if (generated !== undefined) return generated;
  const dir = mkdtempSync(join(tmpdir(), "ringlab-fake-apiserver-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "2",
      "-subj",
      "/CN=fake-kube-apiserver",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ],
    { stdio: "pipe" },
  );
  generated = { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") };
  return generated;
}

/** A kubeconfig with one cluster at `server` (trusting `caPem`, as a cluster's CA) and one context of that name. */
export function kubeconfigText(server: string, context: string, namespace: string, caPem: string): string {
  const ca = Buffer.from(caPem).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    `current-context: ${JSON.stringify(context)}`,
    "clusters:",
    `- name: fake`,
    `  cluster: {server: ${JSON.stringify(server)}, certificate-authority-data: ${ca}}`,
    "users:",
    "- name: tester",
    "  user: {token: test-token}",
    "contexts:",
    `- name: ${JSON.stringify(context)}`,
    `  context: {cluster: fake, user: tester, namespace: ${namespace}}`,
    "",
  ].join("\n");
}

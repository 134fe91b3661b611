/**
 * A loopback HTTPS server (its own self-signed certificate, trusted by the kubeconfig it writes, as a cluster's CA
 * is) that answers the few Kubernetes API calls ringlab makes as the API does (paths, verbs,
 * label selectors, and the documented shapes: Namespace, PersistentVolumeClaim, Service, NetworkPolicy, Secret (its
 * stringData kept as base64 data, as the API server stores it), Job with its conditions, PodList with phases,
 * conditions and container states, Status for errors, text/plain for logs). What the pods of
 * a Job do is a scenario: the test says, look by look, what the Job controller and the kubelet would report.
 * Anything else asked is answered 404 and kept in `unexpected`, for the test to assert there is none.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

type Json = Record<string, any>;

/** One pod as a scenario describes it at a look: its index, and what its status and log say. */
export interface PodState {
  readonly phase: "Pending" | "Running" | "Succeeded" | "Failed";
  /** Extra pod conditions, e.g. PodScheduled False with the scheduler's reason. */
  readonly conditions?: readonly Json[];
  /** The worker container's state (waiting / running / terminated), as status.containerStatuses[0].state. */
  readonly worker?: Json;
  readonly log?: string;
}

/**
 * What the cluster reports at the n-th look at the Job (n from 0): the Job's conditions, each pod's state (the
 * Job's pods are these, no more), and the messages of the Job's FailedCreate events.
 */
export type Scenario = (look: number, job: Json) => { readonly conditions?: readonly Json[]; readonly pods: readonly PodState[]; readonly failedCreate?: readonly string[] };

export interface FakeClusterOptions {
  readonly namespace: string;
  /** The PersistentVolumeClaims the namespace has. */
  readonly claims?: readonly string[];
  /** Default: every Job completes at its third look, each pod logging "ok". */
  readonly scenario?: Scenario;
  /** Accept connections but never answer (a cluster that hangs). */
  readonly hang?: boolean;
  /** Objects already in the namespace (another testbed's, a killed run's), by kind. */
  readonly existing?: { readonly jobs?: readonly Json[]; readonly services?: readonly Json[]; readonly pods?: readonly Json[]; readonly networkPolicies?: readonly Json[]; readonly secrets?: readonly Json[] };
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
  /** Names of what is left in the namespace. */
  left(): { jobs: string[]; services: string[]; networkPolicies: string[]; secrets: string[]; pods: string[] };
  /** A kubeconfig file whose context `context` points at this server. */
  kubeconfig(context?: string, namespace?: string): string;
  close(): Promise<void>;
}

export const completesAtThirdLook: Scenario = (look, job) => {
  const pods = Array.from({ length: job.spec.completions }, (): PodState => look === 0 ? { phase: "Pending" } : look === 1 ? { phase: "Running" } : { phase: "Succeeded", worker: { terminated: { exitCode: 0, reason: "Completed" } }, log: "ok\n" });
  return look < 2 ? { pods } : { conditions: [{ type: "Complete", status: "True" }], pods };
};

export async function startFakeCluster(options: FakeClusterOptions): Promise<FakeCluster> {
  const ns = options.namespace;
  const scenario = options.scenario ?? completesAtThirdLook;
  const requests: string[] = [];
  const unexpected: string[] = [];
  const created: Json[] = [];
  const jobs = new Map<string, Json>((options.existing?.jobs ?? []).map((job) => [job.metadata.name, job]));
  const services = new Map<string, Json>((options.existing?.services ?? []).map((service) => [service.metadata.name, service]));
  const pods = new Map<string, Json>((options.existing?.pods ?? []).map((pod) => [pod.metadata.name, pod]));
  const networkPolicies = new Map<string, Json>((options.existing?.networkPolicies ?? []).map((policy) => [policy.metadata.name, policy]));
  const secrets = new Map<string, Json>((options.existing?.secrets ?? []).map((secret) => [secret.metadata.name, secret]));
  const logs = new Map<string, string>();
  const looks = new Map<string, number>();
  const failedCreate = new Map<string, readonly string[]>();
  /** Deleted pods still terminating: how many more pod lists show them. */
  const terminating = new Map<string, number>();
  const seen = new Map<string, number>();

  const status = (code: number, reason: string, message: string) => ({ kind: "Status", apiVersion: "v1", metadata: {}, status: code < 400 ? "Success" : "Failure", message, reason, code });
  const matches = (object: Json, labelSelector: string | null) => (labelSelector ?? "").split(",").filter((term) => term !== "").every((term) => {
    const [key, value] = term.split("=");
    return object.metadata?.labels?.[key!] === value;
  });
  const list = (kind: string, apiVersion: string, objects: Iterable<Json>, labelSelector: string | null) =>
    ({ kind, apiVersion, metadata: { resourceVersion: "1" }, items: [...objects].filter((object) => matches(object, labelSelector)) });

  /** The Job's pods as the scenario has them at this look. */
  function advance(job: Json): void {
    const name = job.metadata.name;
    const look = looks.get(name) ?? 0;
    looks.set(name, look + 1);
    const state = scenario(look, job);
    job.status = { ...(state.conditions === undefined ? {} : { conditions: state.conditions.map((c) => ({ lastTransitionTime: "2026-11-26T00:00:00Z", ...c })) }) };
    failedCreate.set(name, state.failedCreate ?? []);
    // The Job's pods are what the scenario says now: the controller removes pods, as at a deadline.
    for (const [podName, pod] of pods) if (pod.metadata.labels?.["job-name"] === name && !terminating.has(podName)) pods.delete(podName);
    state.pods.forEach((pod, index) => {
      const podName = `${name}-${index}-x${index}k`;
      const container = { name: "worker", image: job.spec.template.spec.containers[0].image, ready: pod.phase === "Running", restartCount: 0, ...(pod.worker === undefined ? {} : { state: pod.worker }) };
      pods.set(podName, {
        apiVersion: "v1", kind: "Pod",
        metadata: {
          name: podName, namespace: ns,
          labels: { ...job.spec.template.metadata.labels, "batch.kubernetes.io/job-completion-index": String(index), "job-name": name },
          annotations: { "batch.kubernetes.io/job-completion-index": String(index) },
          ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name, uid: job.metadata.uid, controller: true, blockOwnerDeletion: true }],
        },
        spec: job.spec.template.spec,
        status: { phase: pod.phase, conditions: [...(pod.conditions ?? [])], containerStatuses: pod.phase === "Pending" && pod.worker === undefined ? [] : [container] },
      });
      if (pod.log !== undefined) logs.set(podName, pod.log);
    });
  }

  /** A deleted pod: marked, and listed for a few more pod lists (its grace period), then gone. */
  function terminate(name: string): void {
    const pod = pods.get(name);
    if (pod === undefined || terminating.has(name)) return;
    pod.metadata.deletionTimestamp = "2026-11-26T00:00:30Z";
    if ((options.terminatingLists ?? 2) === 0) pods.delete(name);
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
      const reasons: Record<number, string> = { 403: "Forbidden", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable" };
      const message = failure === 403 ? `jobs.batch is forbidden: User "tester" cannot get resource "${path.split("/").at(-2)}" in API group "" in the namespace "${ns}"` : `${reasons[failure] ?? "Error"}`;
      return send(failure, status(failure, reasons[failure] ?? "Unknown", message));
    }
    const selector = url.searchParams.get("labelSelector");
    const core = `/api/v1/namespaces/${ns}`;
    const batch = `/apis/batch/v1/namespaces/${ns}`;
    const networking = `/apis/networking.k8s.io/v1/namespaces/${ns}`;
    let match: RegExpMatchArray | null;

    if (/^\/api\/v1\/namespaces\/[^/]+$/.test(path) && method === "GET") {
      return path === core ? send(200, { kind: "Namespace", apiVersion: "v1", metadata: { name: ns }, status: { phase: "Active" } }) : notFound(`namespaces "${path.split("/").at(-1)}"`);
    }
    if ((match = path.match(/^\/api\/v1\/namespaces\/[^/]+\/persistentvolumeclaims\/([^/]+)$/)) && method === "GET") {
      return path.startsWith(core) && (options.claims ?? []).includes(match[1]!)
        ? send(200, { kind: "PersistentVolumeClaim", apiVersion: "v1", metadata: { name: match[1], namespace: ns }, spec: { accessModes: ["ReadWriteMany"] }, status: { phase: "Bound" } })
        : notFound(`persistentvolumeclaims "${match[1]}"`);
    }
    if (path === `${core}/services` && method === "POST") {
      const service = JSON.parse(body);
      created.push(service);
      if (services.has(service.metadata.name)) return send(409, status(409, "AlreadyExists", `services "${service.metadata.name}" already exists`));
      services.set(service.metadata.name, service);
      return send(201, service);
    }
    if (path === `${core}/services` && method === "GET") return send(200, list("ServiceList", "v1", services.values(), selector));
    if ((match = path.match(new RegExp(`^${core}/services/([^/]+)$`))) && method === "DELETE") {
      const service = services.get(match[1]!);
      if (service === undefined) return notFound(`services "${match[1]}"`);
      services.delete(match[1]!);
      return send(200, service);
    }
    // NetworkPolicies and Secrets: created, listed by label, deleted by name, as Services are.
    for (const [collection, kind, apiVersion, objects, stored] of [
      [`${networking}/networkpolicies`, "NetworkPolicy", "networking.k8s.io/v1", networkPolicies, (policy: Json) => ({ ...policy, metadata: { ...policy.metadata, uid: randomUUID() } })],
      // The API server keeps stringData as data (base64), and gives back no stringData.
      [`${core}/secrets`, "Secret", "v1", secrets, ({ stringData, ...secret }: Json) => ({
        ...secret, metadata: { ...secret.metadata, uid: randomUUID() },
        data: { ...secret.data, ...Object.fromEntries(Object.entries(stringData ?? {}).map(([key, value]) => [key, Buffer.from(String(value)).toString("base64")])) },
      })],
    ] as const) {
      // As the API names them in its messages: networkpolicies.networking.k8s.io "x", secrets "x".
      const resource = apiVersion === "v1" ? collection.split("/").at(-1)! : `${collection.split("/").at(-1)}.${apiVersion.split("/")[0]}`;
      if (path === collection && method === "POST") {
        const object = JSON.parse(body);
        created.push(object);
        if (object.kind !== kind || object.apiVersion !== apiVersion) return send(400, status(400, "BadRequest", `the object is a ${object.apiVersion}/${object.kind}, not a ${apiVersion}/${kind}`));
        if (objects.has(object.metadata.name)) return send(409, status(409, "AlreadyExists", `${resource} "${object.metadata.name}" already exists`));
        objects.set(object.metadata.name, stored(object));
        return send(201, objects.get(object.metadata.name));
      }
      if (path === collection && method === "GET") return send(200, list(`${kind}List`, apiVersion, objects.values(), selector));
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
      if (jobs.has(job.metadata.name)) return send(409, status(409, "AlreadyExists", `jobs.batch "${job.metadata.name}" already exists`));
      jobs.set(job.metadata.name, { ...job, metadata: { ...job.metadata, uid: randomUUID() }, status: {} });
      return send(201, jobs.get(job.metadata.name));
    }
    if (path === `${batch}/jobs` && method === "GET") return send(200, list("JobList", "batch/v1", jobs.values(), selector));
    if (path === `${batch}/jobs` && method === "DELETE") {
      const doomed = [...jobs.values()].filter((job) => matches(job, selector));
      for (const job of doomed) {
        jobs.delete(job.metadata.name);
        // Background propagation: the garbage collector deletes the Job's pods, which terminate for a while.
        if (url.searchParams.get("propagationPolicy") === "Background") for (const [name, pod] of pods) if (pod.metadata.labels?.["job-name"] === job.metadata.name) terminate(name);
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
          pods.delete(name);
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
        apiVersion: "v1", kind: "Event", metadata: { name: `${name}.${index}`, namespace: ns }, type: "Warning", reason: "FailedCreate", message,
        involvedObject: { apiVersion: "batch/v1", kind: "Job", name, namespace: ns, uid: job?.metadata.uid }, source: { component: "job-controller" },
      }));
      return send(200, { kind: "EventList", apiVersion: "v1", metadata: {}, items });
    }
    if ((match = path.match(new RegExp(`^${core}/pods/([^/]+)/log$`))) && method === "GET") {
      const pod = pods.get(match[1]!);
      if (pod === undefined) return notFound(`pods "${match[1]}"`);
      if (!logs.has(match[1]!)) return send(400, status(400, "BadRequest", `container "worker" in pod "${match[1]}" is waiting to start: trying and failing to pull image`));
      response.writeHead(200, { "content-type": "text/plain" });
      response.end(logs.get(match[1]!));
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
    url, requests, unexpected, created,
    left: () => ({ jobs: [...jobs.keys()], services: [...services.keys()], networkPolicies: [...networkPolicies.keys()], secrets: [...secrets.keys()], pods: [...pods.keys()] }),
    kubeconfig(context = "fake", namespace = ns) {
      const file = join(dir, `${context.replace(/[^a-z0-9-]/gi, "_")}.yaml`);
      writeFileSync(file, kubeconfigText(url, context, namespace, tls.cert));
      return file;
    },
    close: () => new Promise<void>((done) => {
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
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
    "-subj", "/CN=fake-kube-apiserver", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "pipe" });
  generated = { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") };
  return generated;
}

/** A kubeconfig with one cluster at `server` (trusting `caPem`, as a cluster's CA) and one context of that name. */
export function kubeconfigText(server: string, context: string, namespace: string, caPem: string): string {
  const ca = Buffer.from(caPem).toString("base64");
  return [
    "apiVersion: v1", "kind: Config", `current-context: ${JSON.stringify(context)}`,
    "clusters:", `- name: fake`, `  cluster: {server: ${JSON.stringify(server)}, certificate-authority-data: ${ca}}`,
    "users:", "- name: tester", "  user: {token: test-token}",
    "contexts:", `- name: ${JSON.stringify(context)}`, `  context: {cluster: fake, user: tester, namespace: ${namespace}}`, "",
  ].join("\n");
}

/** A Kubernetes campaign's runs as objects (src/kubernetes/manifests.ts): what `kubectl apply -f` gets. */
import { load } from "js-yaml";
import { Job } from "kubernetes-models/batch/v1";
import { describe, expect, it } from "vitest";
import { planCampaign, type PlannedRun } from "../../src/campaign/plan.ts";
import { validateCampaign, type KubernetesTestbed } from "../../src/config/schema.ts";
import { manifestsYaml, objectName, runManifests } from "../../src/kubernetes/manifests.ts";

const TESTBED = "{target: kubernetes, name: eks, nodes: 3, namespace: ringlab, sharedClaim: ringlab-shared, workerImage: registry.example/ringlab/worker:gpu";

function planned(testbedExtra = "", campaign = "{matrix: {nodes: [1, 3], model: resnet50, batchSize: 64, bandwidth: [unlimited]}, train: {precision: amp}}") {
  const result = validateCampaign(load(`{testbed: ${TESTBED}${testbedExtra}}, campaign: ${campaign}}`));
  if (!result.ok) throw new Error(result.problems.map((problem) => `${problem.path}: ${problem.message}`).join("\n"));
  const file = result.value;
  if (file.testbed.target !== "kubernetes") throw new Error("not a kubernetes testbed");
  return { testbed: file.testbed as KubernetesTestbed, runs: planCampaign(file, "k8s").runs, timeout: file.campaign!.runTimeoutSeconds };
}

const byId = (runs: readonly PlannedRun[], id: string) => runs.find((run) => run.id === id)!;

describe("a run's Kubernetes objects", () => {
  it("are a headless Service and an Indexed Job, one pod per node, written as YAML for kubectl apply (snapshot)", async () => {
    const { testbed, runs, timeout } = planned();
    const yaml = manifestsYaml(runManifests(byId(runs, "train-resnet50-b64-n3-unlimited-r1"), testbed, "k8s", timeout), testbed);
    await expect(yaml).toMatchFileSnapshot("__snapshots__/train-resnet50-b64-n3-unlimited-r1.yaml");
  });

  it("give every pod its node rank, pod 0's stable DNS name as the rendezvous, the claim and the GPU it asks for", () => {
    const { testbed, runs, timeout } = planned();
    const [service, job] = runManifests(byId(runs, "train-resnet50-b64-n3-unlimited-r1"), testbed, "k8s", timeout).objects;
    const name = "eks-train-resnet50-b64-n3-unlimited-r1";
    expect(service.spec).toMatchObject({ clusterIP: "None", publishNotReadyAddresses: true, selector: { "ringlab.testbed": "eks", "ringlab.run": "train-resnet50-b64-n3-unlimited-r1" } });
    expect(job.spec).toMatchObject({ completionMode: "Indexed", completions: 3, parallelism: 3, backoffLimit: 0, activeDeadlineSeconds: timeout });
    const pod = job.spec!.template.spec!;
    expect(pod.subdomain).toBe(name);
    // No two pods of the run on one machine: they would measure no network.
    expect(pod.affinity!.podAntiAffinity!.requiredDuringSchedulingIgnoredDuringExecution).toEqual([
      { labelSelector: { matchLabels: service.spec!.selector }, topologyKey: "kubernetes.io/hostname" }]);
    expect(job.spec!.template.metadata!.labels).toMatchObject(service.spec!.selector!);
    const env = Object.fromEntries(pod.containers[0]!.env!.map((variable) => [variable.name, variable.value ?? variable.valueFrom?.fieldRef?.fieldPath]));
    expect(env).toMatchObject({
      RINGLAB_NUM_NODES: "3", RINGLAB_NODE_RANK: "metadata.annotations['batch.kubernetes.io/job-completion-index']",
      RINGLAB_HEAD_ADDR: `${name}-0.${name}.ringlab.svc`, RINGLAB_RDZV_PORT: "29400", RINGLAB_SHARED_DIR: "/ringlab", RINGLAB_SOCKET_IFNAME: "eth0",
    });
    expect(pod.containers[0]!.args!.slice(-2)).toEqual(["--output", "/ringlab/runs/train-resnet50-b64-n3-unlimited-r1/result.json"]);
    // Pods start when their nodes have the image, maybe minutes apart: the rendezvous waits the run's whole limit
    // (other testbeds start every worker at once and give it 120 s).
    const args = pod.containers[0]!.args!;
    expect(args[args.indexOf("--timeout-seconds") + 1]).toBe(String(timeout));
    expect(timeout).toBe(900);
    expect(pod.containers[0]!.resources).toEqual({ limits: { "nvidia.com/gpu": "1" } });
    expect(pod.volumes![0]).toEqual({ name: "shared", persistentVolumeClaim: { claimName: "ringlab-shared" } });
  });

  it("shape each pod's egress in an init container with NET_ADMIN when the campaign shapes links (shapeInPod), and only then", () => {
    const { testbed, runs, timeout } = planned(", shapeInPod: true", "{matrix: {nodes: [1, 2], model: resnet50, batchSize: 64, bandwidth: [1gbit, unlimited]}}");
    const init = (id: string) => runManifests(byId(runs, id), testbed, "k8s", timeout).objects[1].spec!.template.spec!.initContainers;
    expect(init("train-resnet50-b64-n2-1gbit-r1")).toEqual([{
      name: "shape-link", image: "registry.example/ringlab/worker:gpu",
      command: ["tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "1000000000bit", "burst", "262144", "latency", "50ms"],
      securityContext: { capabilities: { add: ["NET_ADMIN"] } },
    }]);
    expect(init("train-resnet50-b64-n2-unlimited-r1")).toBeUndefined();
    expect(init("train-resnet50-b64-n1-r1")).toBeUndefined();
  });

  it("use the nodes' network when asked (EFA), leaving the interface to NCCL and Gloo, and ask for no GPU in a CPU pod", () => {
    const { testbed, runs, timeout } = planned(", hostNetwork: true, gpusPerPod: 0", "{matrix: {nodes: [2], model: resnet50, batchSize: 64, bandwidth: [unlimited]}}");
    const pod = runManifests(byId(runs, "train-resnet50-b64-n2-unlimited-r1"), testbed, "k8s", timeout).objects[1].spec!.template.spec!;
    expect(pod).toMatchObject({ hostNetwork: true, dnsPolicy: "ClusterFirstWithHostNet" });
    expect(pod.containers[0]!.env!.map((variable) => variable.name)).not.toContain("RINGLAB_SOCKET_IFNAME");
    expect(pod.containers[0]!.resources).toBeUndefined();
  });

  it("name objects so a pod's hostname stays a DNS label: long or dotted run ids are shortened with a hash, kept whole in an annotation", () => {
    expect(objectName("eks", "train-resnet50-b64-n2-1gbit-r1")).toBe("eks-train-resnet50-b64-n2-1gbit-r1");
    const long = objectName("a-rather-long-testbed", "train-inception_v3-b96-n10-p8-1.5gbit-r12");
    expect(long).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(long.length).toBeLessThanOrEqual(58);
    expect(long).not.toBe(objectName("a-rather-long-testbed", "train-inception_v3-b96-n10-p8-1.5gbit-r13"));
    expect(objectName("eks", "train-x-1.5gbit-r1")).toMatch(/^eks-train-x-1-5gbit-r1-[0-9a-f]{8}$/);
  });

  it("are checked against the Kubernetes OpenAPI schema, which refuses a malformed object", () => {
    const { testbed, runs, timeout } = planned();
    for (const run of runs) expect(() => runManifests(run, testbed, "k8s", timeout)).not.toThrow();
    expect(() => new Job({ metadata: { name: "x" }, spec: { completions: "three" as unknown as number, template: { spec: { containers: [{ name: "w" }] } } } }).validate()).toThrow();
  });
});

/** A Kubernetes campaign file: what its testbed section accepts, and what only `ringlab manifests` reads. */
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { parseCampaign } from "../../src/config/load.ts";
import { validateCampaign } from "../../src/config/schema.ts";

const CAMPAIGN = "{matrix: {nodes: [1, 2], model: resnet50, batchSize: 64, bandwidth: [unlimited]}}";

/** The problems of a Kubernetes campaign whose testbed has `fields` (YAML flow mapping entries) over a valid one's. */
function problems(fields: string, campaign = CAMPAIGN): string[] {
  const testbed = {
    target: "kubernetes",
    name: "eks",
    nodes: 2,
    namespace: "ringlab",
    sharedClaim: "shared",
    workerImage: "registry.example/ringlab/worker:gpu",
    ...(load(`{${fields.replace(/^, /, "")}}`) as object),
  };
  const result = validateCampaign({ testbed, campaign: load(campaign) });
  return result.ok ? [] : result.problems.map((problem) => `${problem.path}: ${problem.message}`);
}

describe("a Kubernetes testbed", () => {
  it("takes a namespace, a claim, a context, GPUs per pod and a node selector, with defaults for the rest", () => {
    expect(
      problems(
        ", context: 'arn:aws:eks:us-east-1:1:cluster/x', gpusPerPod: 4, nodeSelector: {node.kubernetes.io/instance-type: p4d.24xlarge}",
      ),
    ).toEqual([]);
    const result = validateCampaign(
      load(
        `{testbed: {target: kubernetes, name: eks, nodes: 2, namespace: ringlab, sharedClaim: shared, workerImage: r/w:gpu}}`,
      ),
    );
    expect(result.ok && result.value.testbed).toMatchObject({
      gpusPerPod: 1,
      nodeSelector: {},
      hostNetwork: false,
      shapeInPod: false,
      runAsUser: 1000,
    });
    // No default image: ringlab's own tag is in no registry a cluster pulls from.
    expect(
      validateCampaign(
        load(`{testbed: {target: kubernetes, name: eks, nodes: 2, namespace: ringlab, sharedClaim: shared}}`),
      ).ok,
    ).toBe(false);
  });

  it.each([
    ["a namespace that is not a DNS label", ", namespace: Ringlab_NS", /^testbed\.namespace: .*expected a DNS label/],
    [
      "a namespace with a dot (another object's name)",
      ", namespace: a.b",
      /^testbed\.namespace: .*expected a DNS label/,
    ],
    ["a claim name with a slash", ", sharedClaim: ../other", /^testbed\.sharedClaim: .*expected a DNS subdomain/],
    ["a node selector key with a space", ", nodeSelector: {'a b': x}", /^testbed\.nodeSelector.*expected a label key/],
    [
      "a node selector value with a comma (a second selector term)",
      ", nodeSelector: {zone: 'a,b'}",
      /^testbed\.nodeSelector\.zone: .*expected a label value/,
    ],
    [
      "a context with a newline",
      ', context: "a\\nb"',
      /^testbed\.context: .*expected a kubeconfig context name of 1 to 253 letters, digits and @ : \/ \. _ -/,
    ],
    [
      "a context a shell would expand",
      ", context: 'x$(id)'",
      /^testbed\.context: .*expected a kubeconfig context name/,
    ],
    [
      "GPUs with the CPU image",
      ", workerImage: ringlab/worker:cpu",
      /^testbed\.gpusPerPod: found 1 with workerImage ringlab\/worker:cpu, which has no CUDA/,
    ],
    [
      "shaping inside pods on the nodes' network",
      ", shapeInPod: true, hostNetwork: true",
      /^testbed\.shapeInPod: with hostNetwork the pods share their nodes' network/,
    ],
    ["a negative user id", ", runAsUser: -1", /^testbed\.runAsUser: /],
    ["a user id that is not an integer", ", runAsUser: 1.5", /^testbed\.runAsUser: /],
    ["a user id Kubernetes does not take (over 2147483647)", ", runAsUser: 2147483648", /^testbed\.runAsUser: /],
  ])("refuses %s, naming the field", (_, extra, message) => {
    expect(problems(extra)).toEqual([expect.stringMatching(message)]);
  });

  it("takes the pods' user id, root (0) included", () => {
    expect(problems(", runAsUser: 0")).toEqual([]);
    expect(problems(", runAsUser: 2147483647")).toEqual([]);
  });

  it("refuses a shaped link unless the pods shape it, AMP without a GPU, and another launcher", () => {
    expect(
      problems("", "{matrix: {nodes: [1, 2], model: resnet50, batchSize: 64, bandwidth: [1gbit, unlimited]}}"),
    ).toEqual([
      expect.stringMatching(
        /^campaign\.matrix\.bandwidth: found 1gbit: on Kubernetes a link is shaped only inside the pods; set testbed\.shapeInPod: true/,
      ),
    ]);
    expect(
      problems(", shapeInPod: true", "{matrix: {nodes: [1, 2], model: resnet50, batchSize: 64, bandwidth: [1gbit]}}"),
    ).toEqual([]);
    expect(
      problems(
        ", gpusPerPod: 0, workerImage: ringlab/worker:cpu",
        `{matrix: {nodes: [2], model: resnet50, batchSize: 64, bandwidth: [unlimited]}, train: {precision: amp}}`,
      ),
    ).toEqual([expect.stringMatching(/^campaign: precision amp needs a GPU; the pods ask for none/)]);
    expect(
      problems("", `{matrix: {nodes: [2], model: resnet50, batchSize: 64, bandwidth: [unlimited]}, launcher: slurm}`),
    ).toEqual([expect.stringMatching(/^campaign\.launcher: found slurm: on Kubernetes every run is a Job/)]);
  });

  it("refuses what ringlab would have to do itself on the cluster, and more processes than a pod has GPUs", () => {
    const matrix = "matrix: {nodes: [2], model: small, batchSize: 8, bandwidth: [unlimited]}";
    expect(problems("", `{${matrix}, repeatUntil: {halfWidth: 0.1, minRepeats: 2, maxRepeats: 3}}`)).toEqual([
      expect.stringMatching(/^campaign\.repeatUntil: repeatUntil decides between rounds/),
    ]);
    expect(
      problems(
        "",
        `{${matrix}, train: {epochs: 1, data: dataset, checkpointEvery: 5, maxRestarts: 1, failAtStep: 3, failNode: 1, minNodes: 1}, dataset: {name: d, generate: false}}`,
      ),
    ).toEqual([expect.stringMatching(/^campaign\.train\.failNode: a lost node on Kubernetes fails the whole Job/)]);
    expect(problems("", `{${matrix}, train: {epochs: 1, data: dataset}, dataset: {name: d}}`)).toEqual([
      expect.stringMatching(/^campaign\.dataset\.generate: ringlab writes a dataset onto a testbed it configures/),
    ]);
    expect(
      problems(
        ", gpusPerPod: 2",
        "{matrix: {nodes: [2], model: small, batchSize: 8, bandwidth: [unlimited], processesPerNode: [2, 4]}}",
      ),
    ).toEqual([
      expect.stringMatching(/^campaign\.matrix\.processesPerNode: found 4, expected at most testbed\.gpusPerPod \(2\)/),
    ]);
  });

  it("is refused by the commands that work on a testbed ringlab brings up, saying which commands serve it", () => {
    expect(() =>
      parseCampaign(
        `testbed: {target: kubernetes, name: eks, nodes: 2, namespace: ringlab, sharedClaim: shared, workerImage: r/w:gpu}\ncampaign: ${CAMPAIGN}\n`,
        "k8s.yaml",
        "/c/k8s.yaml",
        { readKeys: false },
      ),
    ).toThrow(
      /^k8s\.yaml: testbed\.target: kubernetes: this command works on a testbed ringlab brings up \(local, aws\); on a Kubernetes cluster `ringlab plan <file>` lists the runs, `ringlab campaign <file>` runs them/,
    );
  });
});

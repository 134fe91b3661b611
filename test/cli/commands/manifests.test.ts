/** `ringlab manifests` as a user runs it: the real CLI on the shipped Kubernetes example. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";

const BIN = resolve("src/bin/ringlab.mjs");
const EXAMPLE = "campaigns/k8s-example.yaml";

function cli(args: string[]) {
  const state = mkdtempSync(join(tmpdir(), "ringlab-manifests-"));
  return spawnSync(process.execPath, [BIN, "--state-dir", join(state, "state"), ...args], { encoding: "utf8" });
}

describe("ringlab manifests", () => {
  it("writes one file per planned run, each a NetworkPolicy, a Service and an Indexed Job for kubectl apply -f, and lists them", () => {
    const out = join(mkdtempSync(join(tmpdir(), "ringlab-manifests-out-")), "runs");
    const written = cli(["manifests", EXAMPLE, "--out", out]);
    expect(written.status, written.stderr).toBe(0);
    const files = readdirSync(out).sort();
    expect(files).toHaveLength(10);
    expect(
      written.stdout
        .trim()
        .split("\n")
        .map((line) => line.slice(out.length + 1))
        .sort(),
    ).toEqual(files);
    const documents = loadAll(readFileSync(join(out, "train-resnet50-b64-n2-unlimited-r1.yaml"), "utf8")) as {
      kind: string;
      metadata: { namespace: string };
    }[];
    expect(documents.map((document) => [document.kind, document.metadata.namespace])).toEqual([
      ["NetworkPolicy", "ringlab"],
      ["Service", "ringlab"],
      ["Job", "ringlab"],
    ]);
    // No Secret, and no value for one: the header says how to make it.
    expect(readFileSync(join(out, "train-resnet50-b64-n2-unlimited-r1.yaml"), "utf8")).toContain(
      `\n#   openssl rand -hex 16 | tr -d '\\n' | kubectl --context "arn:aws:eks:us-east-1:111122223333:cluster/ringlab" create secret generic eks-g5-train-resnet50-b64-n2-unlimited-r1 -n ringlab --from-file=rdzvSecret=/dev/stdin\n`,
    );
    expect(written.stderr).toBe(
      "pods pass the namespace's Pod Security level 'restricted', the strictest (pod-security.kubernetes.io/enforce)\n",
    );
  });

  it("prints one run's objects with --run, and refuses a run the campaign does not plan, listing some it does", () => {
    const one = cli(["manifests", EXAMPLE, "--run", "allreduce-n2-unlimited-r1"]);
    expect(one.status, one.stderr).toBe(0);
    expect(one.stdout).toMatch(
      /^# ringlab run allreduce-n2-unlimited-r1: kubectl --context "arn:aws:eks:us-east-1:111122223333:cluster\/ringlab" apply -f this file/,
    );
    expect((loadAll(one.stdout) as { kind: string }[]).map((document) => document.kind)).toEqual([
      "NetworkPolicy",
      "Service",
      "Job",
    ]);
    const unknown = cli(["manifests", EXAMPLE, "--run", "train-x-r9"]);
    expect([unknown.status, unknown.stdout]).toEqual([2, ""]);
    expect(unknown.stderr).toMatch(
      /plans no run "train-x-r9"\nhint: its runs: allreduce-n2-unlimited-r1, .* \(10 in all\)/,
    );
  });

  it("plan lists a Kubernetes campaign's runs, each a Job, without a duration or cost it cannot know", () => {
    const plan = cli(["plan", EXAMPLE]);
    expect(plan.status, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/train-resnet50-b64-n2-unlimited-r1/);
    expect(plan.stdout).toMatch(
      /\n10 runs, each a Job of up to 2 pods in namespace ringlab \(context arn:aws:eks:us-east-1:111122223333:cluster\/ringlab\), 1 GPU per pod; each run ends within 15 min/,
    );
    expect(plan.stdout).toMatch(/\npods pass the namespace's Pod Security level 'restricted', the strictest/);
    const json = cli(["plan", EXAMPLE, "--format", "json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ estimate: null, predictions: [] });
  });

  it("plan and manifests say which Pod Security level shapeInPod, hostNetwork or root needs, and warn that a NetworkPolicy does not hold on the nodes' network", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-manifests-security-"));
    const variant = (name: string, from: RegExp, to: string) => {
      const file = join(dir, `${name}.yaml`);
      const text = readFileSync(EXAMPLE, "utf8");
      expect(text).toMatch(from);
      writeFileSync(file, text.replace(from, to));
      return file;
    };
    const shaped = variant(
      "shaped",
      /shapeInPod: false\n([\s\S]*)bandwidth: \[unlimited\]/,
      "shapeInPod: true\n$1bandwidth: [1gbit]",
    );
    for (const command of ["plan", "manifests"]) {
      const ran = cli([command, shaped]);
      expect(ran.status, ran.stderr).toBe(0);
      expect(ran.stdout + ran.stderr).toMatch(
        /pods need the namespace's Pod Security level 'privileged' \(the pods of 6 of the 10 runs; the others less\): shapeInPod's init container shape-link adds NET_ADMIN \(baseline allows adding only /,
      );
    }
    const host = variant("host", /shapeInPod: false/, "hostNetwork: true");
    for (const command of ["plan", "manifests"]) {
      const ran = cli([command, host]);
      expect(ran.status, ran.stderr).toBe(0);
      expect(ran.stdout + ran.stderr).toContain(
        "pods need the namespace's Pod Security level 'privileged': the pod sets hostNetwork: true",
      );
      expect(ran.stderr).toMatch(
        /warning: with hostNetwork the pods are in their nodes' network namespace, where the run's NetworkPolicy does not apply/,
      );
    }
    const root = cli(["plan", variant("root", /runAsUser: 1000/, "runAsUser: 0")]);
    expect(root.status, root.stderr).toBe(0);
    expect(root.stdout).toContain(
      "pods need the namespace's Pod Security level 'baseline': the pod runs as root (runAsUser: 0)",
    );
    expect(root.stderr).not.toContain("NetworkPolicy");
  });

  it("refuses a campaign of another target, and the commands for a testbed ringlab brings up refuse a Kubernetes campaign, before anything starts", () => {
    const local = cli(["manifests", "campaigns/local-smoke.yaml"]);
    expect([local.status, local.stdout]).toEqual([2, ""]);
    expect(local.stderr).toMatch(/testbed\.target: found local, expected kubernetes/);
    for (const command of [["dataset"], ["up"], ["synth"]]) {
      const refused = cli([...command, EXAMPLE]);
      expect(refused.status, command.join(" ")).toBe(2);
      expect(refused.stderr).toMatch(
        /testbed\.target: kubernetes: this command works on a testbed ringlab brings up \(local, aws\)/,
      );
    }
  });
});

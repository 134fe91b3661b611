import { describe, expect, it } from "vitest";
import {
  ASSUMED_ADMIN_UPLINK_GBPS,
  ASSUMED_TARBALL_BYTES,
  estimateCampaign,
  estimateImageDelivery,
  estimateRunSeconds,
} from "../../src/campaign/estimate.ts";
import { planCampaign } from "../../src/campaign/plan.ts";
import { parseCampaign } from "../../src/config/load.ts";
import { MODELS, PLANNING } from "../../src/config/registry.ts";

const awsFile = (extra: string) =>
  parseCampaign(
    `
testbed: {target: aws, name: s, nodes: 4, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub${extra}}
campaign: {matrix: {nodes: [1, 2], model: resnet50, batchSize: 64, bandwidth: 1gbit}}
`,
    "c.yaml",
    "/c/c.yaml",
    { readKeys: false },
  );

describe("worker image delivery in the estimate", () => {
  it("counts a tarball's upload: size x nodes through the operator's uplink", () => {
    const delivery = estimateImageDelivery(awsFile(", workerImageTarball: w.tar"), {
      workerImageTarballBytes: 10e9,
      adminUplinkGbps: 1,
    });
    expect(delivery).toEqual({
      source: "tarball",
      seconds: 320,
      uploadBytes: 40e9,
      assumption: "10.0 GB × 4 nodes at 1 Gbit/s",
    });
  });

  it("states what it assumes when neither the tarball nor the uplink is known", () => {
    const delivery = estimateImageDelivery(awsFile(", workerImageTarball: w.tar"));
    expect(delivery.seconds).toBeCloseTo((4 * ASSUMED_TARBALL_BYTES * 8) / (ASSUMED_ADMIN_UPLINK_GBPS * 1e9), 6);
    expect(delivery.assumption).toBe(
      "an assumed 18 GB tarball (the file is not here) × 4 nodes at an assumed 100 Mbit/s uplink",
    );
  });

  it("adds the upload to the campaign's duration and cost; building on the nodes costs minutes instead of hours", () => {
    const tarball = awsFile(", workerImageTarball: w.tar");
    const built = awsFile("");
    const withTarball = estimateCampaign(planCampaign(tarball, "c"), tarball);
    const withBuild = estimateCampaign(planCampaign(built, "c"), built);
    expect(withBuild.imageDelivery).toEqual({ source: "build", seconds: 480 });
    expect(withTarball.seconds - withBuild.seconds).toBeCloseTo(withTarball.imageDelivery.seconds - 480, 6);
    expect(withTarball.costUsd! - withBuild.costUsd!).toBeCloseTo(
      (((withTarball.seconds - withBuild.seconds) * 4) / 3600) * 0.526,
      6,
    );
    expect(estimateImageDelivery(awsFile(", workerImage: ghcr.io/me/worker:1"))).toEqual({
      source: "registry",
      seconds: 300,
    });
  });

  it("adds nothing on the local testbed, whose nodes use the host's image", () => {
    const local = parseCampaign(
      "testbed: {target: local, name: l, nodes: 2}\ncampaign: {matrix: {nodes: 2, model: tiny, batchSize: 8, bandwidth: 1gbit}}\n",
      "l.yaml",
    );
    expect(estimateImageDelivery(local)).toEqual({ source: "present", seconds: 0 });
  });
});

describe("a GPU run's compute in the estimate", () => {
  const oneRun = (instanceType: string, model: string) => {
    const parsed = parseCampaign(
      `
testbed: {target: aws, name: s, nodes: 1, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub, instanceType: ${instanceType}}
campaign: {matrix: {nodes: [1], model: ${model}, batchSize: 64, bandwidth: unlimited}, train: {numWarmupBatches: 0, numIters: 10, numBatchesPerIter: 10}}
`,
      "c.yaml",
      "/c/c.yaml",
      { readKeys: false },
    );
    return estimateRunSeconds(planCampaign(parsed, "c").runs[0]!, parsed);
  };

  it("is what predict takes for the instance type's GPU: published on an H100, scaled for ResNet-101, a T4's assumed figure", () => {
    // 100 steps of batch 64 on one node, plus the fixed start and orchestration (equal for every instance type).
    const fixed = oneRun("g4dn.xlarge", "resnet50") - (100 * 64) / PLANNING.resnet50!.t4Fp32ImagesPerSecond;
    expect(oneRun("p5.48xlarge", "resnet50") - fixed).toBeCloseTo((100 * 64) / 1895, 6);
    expect(oneRun("p5.48xlarge", "resnet101") - fixed).toBeCloseTo((100 * 64) / ((1895 * 1399.1) / 2139.7), 6);
    // An A10G has no published, scaled or assumed figure: the T4's, which it is not slower than.
    expect(oneRun("g5.xlarge", "resnet50")).toBeCloseTo(oneRun("g4dn.xlarge", "resnet50"), 6);
  });
});

describe("every model in the registry has what plan estimates it with", () => {
  // A model added to registry.json without its planning figures (CPU images/s, a T4's, or a language model's shape)
  // made `ringlab plan` print "estimated duration: NaN h" and "$NaN", and exit 0.
  it.each(MODELS)("%s: a finite duration on the local testbed and a finite duration and cost on AWS", (model) => {
    const local = parseCampaign(
      `testbed: {target: local, name: l, nodes: 2}\ncampaign: {matrix: {nodes: 2, model: ${model}, batchSize: 8, bandwidth: 1gbit}}\n`,
      "l.yaml",
    );
    const aws = parseCampaign(
      `
testbed: {target: aws, name: s, nodes: 2, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub}
campaign: {matrix: {nodes: 2, model: ${model}, batchSize: 8, bandwidth: 1gbit}}
`,
      "c.yaml",
      "/c/c.yaml",
      { readKeys: false },
    );
    expect(estimateCampaign(planCampaign(local, "l"), local).seconds).toSatisfy(Number.isFinite);
    const onAws = estimateCampaign(planCampaign(aws, "c"), aws);
    expect(onAws.seconds).toSatisfy(Number.isFinite);
    expect(onAws.costUsd).toSatisfy(Number.isFinite);
  });
});

describe("a training run's steps as a calibration predicts them", () => {
  const local = parseCampaign(
    `
testbed: {target: local, name: l, nodes: 2}
campaign: {matrix: {nodes: [1, 2], model: gpt-mini, batchSize: 6, bandwidth: 1gbit}, train: {numWarmupBatches: 2, numIters: 5, numBatchesPerIter: 3}}
`,
    "l.yaml",
  );
  const plan = planCampaign(local, "l");
  const [one, two] = plan.runs;

  it("replaces the coarse compute and all-reduce of the runs it has, 17 steps of 0.4 s here, and says of how many", () => {
    const coarse = estimateCampaign(plan, local);
    const predicted = estimateCampaign(plan, local, { predictedStepSeconds: new Map([[two!.id, 0.4]]) });
    // The worker's start (5 s) and the local testbed's orchestration of a run (6 s) stay.
    expect(estimateRunSeconds(two!, local, { predictedStepSeconds: new Map([[two!.id, 0.4]]) })).toBeCloseTo(
      6 + 5 + 17 * 0.4,
      6,
    );
    expect(predicted.seconds - coarse.seconds).toBeCloseTo(6 + 5 + 17 * 0.4 - estimateRunSeconds(two!, local), 6);
    expect(predicted.predictedSteps).toEqual({ runs: 1, of: 2 });
    // The run it has no step for keeps the coarse figure; without the option nothing is said.
    expect(estimateRunSeconds(one!, local, { predictedStepSeconds: new Map([[two!.id, 0.4]]) })).toBe(
      estimateRunSeconds(one!, local),
    );
    expect(coarse.predictedSteps).toBeUndefined();
  });
});

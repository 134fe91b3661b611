import { describe, expect, it } from "vitest";
import { ASSUMED_ADMIN_UPLINK_GBPS, ASSUMED_TARBALL_BYTES, estimateCampaign, estimateImageDelivery } from "../../src/campaign/estimate.ts";
import { planCampaign } from "../../src/campaign/plan.ts";
import { parseCampaign } from "../../src/config/load.ts";

const awsFile = (extra: string) => parseCampaign(`
testbed: {target: aws, name: s, nodes: 4, adminCidr: 203.0.113.7/32, sshPublicKeyFile: id.pub${extra}}
campaign: {matrix: {nodes: [1, 2], model: resnet50, batchSize: 64, bandwidth: 1gbit}}
`, "c.yaml", "/c/c.yaml", { readKeys: false });

describe("worker image delivery in the estimate", () => {
  it("counts a tarball's upload: size x nodes through the operator's uplink", () => {
    const delivery = estimateImageDelivery(awsFile(", workerImageTarball: w.tar"), { workerImageTarballBytes: 10e9, adminUplinkGbps: 1 });
    expect(delivery).toEqual({ source: "tarball", seconds: 320, uploadBytes: 40e9, assumption: "10.0 GB × 4 nodes at 1 Gbit/s" });
  });

  it("states what it assumes when neither the tarball nor the uplink is known", () => {
    const delivery = estimateImageDelivery(awsFile(", workerImageTarball: w.tar"));
    expect(delivery.seconds).toBeCloseTo((4 * ASSUMED_TARBALL_BYTES * 8) / (ASSUMED_ADMIN_UPLINK_GBPS * 1e9), 6);
    expect(delivery.assumption).toBe("an assumed 18 GB tarball (the file is not here) × 4 nodes at an assumed 100 Mbit/s uplink");
  });

  it("adds the upload to the campaign's duration and cost; building on the nodes costs minutes instead of hours", () => {
    const tarball = awsFile(", workerImageTarball: w.tar");
    const built = awsFile("");
    const withTarball = estimateCampaign(planCampaign(tarball, "c"), tarball);
    const withBuild = estimateCampaign(planCampaign(built, "c"), built);
    expect(withBuild.imageDelivery).toEqual({ source: "build", seconds: 480 });
    expect(withTarball.seconds - withBuild.seconds).toBeCloseTo(withTarball.imageDelivery.seconds - 480, 6);
    expect(withTarball.costUsd! - withBuild.costUsd!).toBeCloseTo(((withTarball.seconds - withBuild.seconds) * 4 / 3600) * 0.526, 6);
    expect(estimateImageDelivery(awsFile(", workerImage: ghcr.io/me/worker:1"))).toEqual({ source: "registry", seconds: 300 });
  });

  it("adds nothing on the local testbed, whose nodes use the host's image", () => {
    const local = parseCampaign("testbed: {target: local, name: l, nodes: 2}\ncampaign: {matrix: {nodes: 2, model: tiny, batchSize: 8, bandwidth: 1gbit}}\n", "l.yaml");
    expect(estimateImageDelivery(local)).toEqual({ source: "present", seconds: 0 });
  });
});

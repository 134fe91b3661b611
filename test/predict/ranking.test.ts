/**
 * The ranking a campaign saves beside predictions.json before its first run (src/predict/ranking.ts): recommend's
 * order of the layouts at every slot where the campaign compares layouts.
 */
import { describe, expect, it } from "vitest";
import { memoryConstantsFor } from "../../src/campaign/fits.ts";
import { planCampaign } from "../../src/campaign/plan.ts";
import { parseCampaign } from "../../src/config/load.ts";
import { predictionContextFor } from "../../src/predict/inputs.ts";
import { parseRanking, rankingsOf, RANKING_SCHEMA } from "../../src/predict/ranking.ts";
import { layoutsCampaign, recommendedBy } from "../bench/layouts-campaign.ts";

const { campaign, calibration } = layoutsCampaign(
  "test/bench/data/layouts-repeats",
  "test/bench/data/layouts-newer-cpu",
);
const header = { madeAt: "2026-12-06T10:00:00.000Z", calibration: "/state/calibration.json" };

describe("the ranking saved before the first run", () => {
  it("holds recommend's order at each node count and link the campaign compares layouts at, and reads back", () => {
    const ranking = rankingsOf(
      planCampaign(campaign, "layouts"),
      predictionContextFor(campaign, 0.5, calibration)!,
      memoryConstantsFor(campaign, 0.5, calibration),
      header,
    )!;
    expect(ranking.schema).toBe(RANKING_SCHEMA);
    const ranked = recommendedBy(campaign, calibration);
    // In the plan's order: a link's group at a time.
    expect(ranking.rankings.map((slot) => [slot.nodes, slot.bandwidth, slot.ranked.map((row) => row.layout)])).toEqual(
      ["300mbit", "1gbit", "unlimited"].flatMap((link) => [2, 3].map((nodes) => [nodes, link, ranked(nodes, link)])),
    );
    expect(ranking.rankings[0]!.ranked[0]!.throughput).toBeGreaterThan(ranking.rankings[0]!.ranked[1]!.throughput!);
    expect(parseRanking(JSON.parse(JSON.stringify(ranking)))).toEqual({ file: ranking });
    expect(parseRanking({ ...ranking, rankings: [{}] })).toMatchObject({
      problem: expect.stringMatching(/^not a ringlab.ranking\/v1 file at rankings.0.model/),
    });
  });

  it("is none where the campaign runs one layout at each slot", () => {
    const oneLayout = parseCampaign(
      `testbed: {target: local, name: t, nodes: 2, cpusPerNode: 0.5}
campaign:
  matrix: {nodes: [1, 2], model: tiny, batchSize: 8, bandwidth: 1gbit}
`,
      "c.yaml",
    );
    expect(
      rankingsOf(
        planCampaign(oneLayout, "c"),
        { calibration, cpusPerNode: 0.5 },
        memoryConstantsFor(oneLayout, 0.5, calibration),
        header,
      ),
    ).toBeUndefined();
  });
});

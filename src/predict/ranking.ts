/**
 * `ranking.json` in a results folder (`ringlab.ranking/v1`, issue #66): `predict --recommend`'s order of the layouts at
 * each node count and link of a campaign that compares layouts, saved with predictions.json before the first run, so
 * that "recommend ranked the measured winner first" is checked against the order it gave then, not one today's code
 * recomputes. Pure: the campaign writes the file (src/campaign/execute.ts).
 */
import { z } from "zod";
import type { CampaignPlan } from "../campaign/plan.ts";
import { KNOB_OWNERS, type TrainKnobName } from "../config/registry.ts";
import type { MemoryConstants } from "./memory.ts";
import type { PredictionContext } from "./predict.ts";
import { recommend } from "./recommend.ts";

export const RANKING_SCHEMA = "ringlab.ranking/v1";

/** The layout's own knobs (registry.json: parallelism and those that belong to it): recommend sets them itself. */
const LAYOUT_KNOBS: readonly string[] = [
  "parallelism",
  ...Object.entries(KNOB_OWNERS)
    .filter(([, owner]) => owner.axis === "parallelism")
    .map(([knob]) => knob as TrainKnobName),
];

const rankingSchema = z.looseObject({
  schema: z.literal(RANKING_SCHEMA),
  madeAt: z.string(),
  calibration: z.string(),
  rankings: z.array(
    z.looseObject({
      model: z.string(),
      batchSize: z.number(),
      nodes: z.number(),
      processesPerNode: z.number(),
      bandwidth: z.string(),
      /** Layout names ("pipeline 1f1b, 6 micro-batches"), first the one predicted fastest among those that fit. */
      ranked: z.array(
        z.looseObject({ layout: z.string(), throughput: z.number().nullable(), fits: z.boolean().nullable() }),
      ),
    }),
  ),
});

export type RankingFile = z.infer<typeof rankingSchema>;

/**
 * recommend's order at every multi-node slot (model, batch, nodes, placement, link) of a campaign whose training runs
 * there take more than one layout; none where the campaign compares no layouts.
 */
export function rankingsOf(
  plan: CampaignPlan,
  context: PredictionContext,
  memory: MemoryConstants,
  header: { readonly madeAt: string; readonly calibration: string },
): RankingFile | undefined {
  const slots = new Map<string, { run: CampaignPlan["runs"][number]; layouts: Set<string> }>();
  for (const run of plan.runs) {
    if (run.job !== "train" || run.nodes < 2 || run.model === undefined || run.batchSize === undefined) continue;
    const key = JSON.stringify([run.model, run.batchSize, run.nodes, run.processesPerNode ?? 1, run.bandwidth]);
    const layout = JSON.stringify(LAYOUT_KNOBS.map((knob) => run.knobs[knob as TrainKnobName] ?? null));
    const slot = slots.get(key) ?? { run, layouts: new Set<string>() };
    slot.layouts.add(layout);
    slots.set(key, slot);
  }
  const rankings = [...slots.values()]
    .filter((slot) => slot.layouts.size > 1)
    .map(({ run }) => {
      const knobs = Object.fromEntries(Object.entries(run.knobs).filter(([knob]) => !LAYOUT_KNOBS.includes(knob)));
      const ranked = recommend(
        {
          model: run.model!,
          batchSize: run.batchSize!,
          nodes: run.nodes,
          ...(run.processesPerNode === undefined ? {} : { processesPerNode: run.processesPerNode }),
          bandwidth: run.bandwidth,
          knobs: knobs as Record<string, string | number | boolean>,
        },
        context,
        memory,
      );
      return {
        model: run.model!,
        batchSize: run.batchSize!,
        nodes: run.nodes,
        processesPerNode: run.processesPerNode ?? 1,
        bandwidth: run.bandwidth!,
        ranked: ranked.map((row) => ({
          layout: row.candidate.name,
          throughput: "throughput" in row.prediction ? row.prediction.throughput : null,
          fits: row.fits,
        })),
      };
    });
  return rankings.length === 0 ? undefined : { schema: RANKING_SCHEMA, ...header, rankings };
}

/** A ranking file read back, or why it is not one. */
export function parseRanking(json: unknown): { file: RankingFile } | { problem: string } {
  const parsed = rankingSchema.safeParse(json);
  if (parsed.success) return { file: parsed.data };
  const issue = parsed.error.issues[0]!;
  return { problem: `not a ${RANKING_SCHEMA} file at ${issue.path.join(".") || "(top)"}: ${issue.message}` };
}

/**
 * φ of the layouts other than DDP (fsdp, tensor, pipeline): on each shaped-link training point of a campaign, the share
 * of min(compute, collectives) that the measured step hid against predict.ts's own model of the layout, at φ = 0 and
 * φ = 1 on the merged calibration's compute, split steps and links. The step is linear in φ between the two, so
 * φ = (step at 0 − measured) / (step at 0 − step at 1). DDP's φ is the report's (calibration.ts overlapFromReport).
 *
 * Why a layout needs its own: on the local testbed's CPU quota a chatty layout pays only part of the link time the
 * back-to-back probe gives its collectives (test/bench/README.md, "Layouts on 2 and 3 CPU nodes": 2-node tensor none of
 * it, 3-node a third). Pure.
 */
import { layoutName, sumsWithReduction } from "../layouts/index.ts";
import { meanWithInterval } from "../results/statistics.ts";
import type { RunRecord } from "../results/record.ts";
import {
  calibratingRecords,
  calibrationFromRecords,
  mergeCalibrations,
  type Calibration,
  type OverlapEntry,
} from "./calibration.ts";
import { isPrediction, predictTraining } from "./predict.ts";

/** A campaign's records, as `ringlab calibrate` is given them. */
export interface CampaignRecords {
  readonly records: readonly RunRecord[];
  /** As the user named the folder (each entry's source says it). */
  readonly resultsDir: string;
  /** Its absolute path. */
  readonly folder?: string;
}

/**
 * The calibration of several campaigns: each one's entries merged over `earlier` (a later one's replace an earlier
 * one's), then each layout's φ from every campaign's shaped-link runs of it, against that merge.
 */
export function calibrationOfCampaigns(
  campaigns: readonly CampaignRecords[],
  warn: (message: string) => void = () => {},
  earlier: readonly Calibration[] = [],
): Calibration {
  const merged = mergeCalibrations([
    ...earlier,
    ...campaigns.map((campaign) =>
      calibrationFromRecords(campaign.records, campaign.resultsDir, warn, campaign.folder),
    ),
  ]);
  const overlap = campaigns.flatMap((campaign) => layoutOverlapEntries(campaign, merged));
  return mergeCalibrations([merged, { ...merged, compute: [], splitSteps: [], links: [], memory: [], overlap }]);
}

/** Each layout's φ per node count, placement and quota from one campaign's shaped-link training points. */
export function layoutOverlapEntries(campaign: CampaignRecords, against: Calibration): OverlapEntry[] {
  const { data, recordOf, measured } = calibratingRecords(
    campaign.records,
    campaign.resultsDir,
    () => {},
    campaign.folder,
  );
  const groups = new Map<string, { key: Omit<OverlapEntry, "share" | "source">; shares: number[]; runIds: string[] }>();
  for (const config of data.training) {
    for (const series of config.series.filter((candidate) => candidate.linkGbps !== null)) {
      for (const point of series.points.filter((candidate) => candidate.nodes > 1)) {
        const first = recordOf.get(point.runIds[0]!);
        if (first === undefined || sumsWithReduction(first.params.knobs)) continue;
        const key = {
          parallelism: layoutName(first.params.knobs),
          nodes: point.nodes,
          processesPerNode: point.processesPerNode,
          reduction: "ring",
          cpusPerNode: first.params.cpusPerNode ?? null,
          ...(first.testbed.instanceType === undefined ? {} : { instanceType: first.testbed.instanceType }),
        };
        const at = (share: number) => {
          const forced = {
            ...against,
            overlap: [
              {
                ...key,
                share: { mean: share, halfWidth95: 0, points: 1 },
                source: { kind: "derived" as const, how: "φ forced" },
              },
            ],
          };
          const prediction = predictTraining(
            {
              runId: point.runIds[0]!,
              model: config.model,
              batchSize: config.batchSize,
              nodes: point.nodes,
              processesPerNode: point.processesPerNode,
              bandwidth: series.link,
              knobs: first.params.knobs,
            },
            {
              calibration: forced,
              ...(key.cpusPerNode === null ? {} : { cpusPerNode: key.cpusPerNode }),
              ...(key.instanceType === undefined ? {} : { instanceType: key.instanceType }),
            },
          );
          return isPrediction(prediction) ? prediction : undefined;
        };
        const [none, full] = [at(0), at(1)];
        if (none === undefined || full === undefined || !(none.stepSeconds - full.stepSeconds > 0)) continue;
        // The measured step trains what the predicted one does: its length is the prediction's, scaled by the
        // throughputs.
        const measuredStep = none.stepSeconds * (none.throughput / point.throughput.mean);
        const id = JSON.stringify(key);
        const group = groups.get(id) ?? { key, shares: [], runIds: [] };
        group.shares.push((none.stepSeconds - measuredStep) / (none.stepSeconds - full.stepSeconds));
        group.runIds.push(...point.runIds);
        groups.set(id, group);
      }
    }
  }
  return [...groups.values()].map(({ key, shares, runIds }) => {
    const share = meanWithInterval(shares);
    return {
      ...key,
      share: { mean: share.mean, halfWidth95: share.halfWidth95, points: share.n },
      source: measured(runIds),
    };
  });
}

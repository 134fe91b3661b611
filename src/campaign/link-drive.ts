/**
 * Whether the local testbed's workers can fill the links they are shaped to. Pure. Gloo moves and sums the
 * gradient on the CPU, so under a CPU quota (cpusPerNode) a worker drives only so many Gbit/s: a link shaped
 * faster than that is never the limit, and a run at that rate measures the CPU, not the link.
 */
import { bandwidthGbps } from "../rules/bandwidth.ts";
import type { CampaignPlan } from "./plan.ts";

/**
 * Bus bandwidth Gloo reaches per core of CPU quota on unshaped links, Gbit/s: test/bench/allreduce-probe.sh with
 * RATE_MBIT=0 and CPUS=0.25 / 0.5 / 0.75 (2 and 3 ranks, 16-64 MiB) on the 2-core build machine, 2026-11-23, gave
 * 7.1-9.8 Gbit/s per core (test/bench/README.md, "What a CPU quota drives"); this is the lowest, rounded down.
 * Another machine's cores drive more or less; the warning below says where the figure comes from.
 */
export const GLOO_GBPS_PER_CORE = 7;

/**
 * Above this share of what the quota drives, the all-reduce takes most of the worker's quota, and the miniature's
 * shaped points have left the regime the model reproduces on some days: on the 2-core build machine the 3 Gbit/s
 * points (86 % of the 3.5 Gbit/s 0.5 cores drive) measured 14-19 points below the model fitted from the probe on
 * 2026-11-23 and in one idle run of 2026-11-25, and within 6 points on 2026-11-24 and in three runs of 2026-11-25;
 * at 300 Mbit/s and 1 Gbit/s (9-29 %) no point has measured more than 5 below it (test/bench/README.md, "The 3 Gbit/s
 * gap").
 */
export const RELIABLE_SHARE_OF_DRIVABLE = 0.6;

/** The fastest link a worker under `cpusPerNode` cores can fill, Gbit/s. */
export function drivableGbps(cpusPerNode: number): number {
  return GLOO_GBPS_PER_CORE * cpusPerNode;
}

/**
 * One warning per shaped rate of a multi-node run that the quota cannot drive; none without a quota (AWS: a
 * machine per node) and none for `unlimited`, which is meant to leave the CPU as the limit.
 */
export function checkLinkDrive(plan: CampaignPlan, cpusPerNode: number | undefined): string[] {
  if (cpusPerNode === undefined) return [];
  const drivable = drivableGbps(cpusPerNode);
  const reliable = drivable * RELIABLE_SHARE_OF_DRIVABLE;
  const rates = [
    ...new Set(plan.runs.filter((run) => run.nodes > 1 && run.bandwidth !== null).map((run) => run.bandwidth!)),
  ];
  return rates.flatMap((rate) => {
    const gbps = bandwidthGbps(rate) ?? 0;
    if (gbps > drivable) {
      return [
        `links shaped to ${rate} are faster than a worker under a CPU quota of ${cpusPerNode} cores drives with Gloo ` +
          `(about ${formatGbps(drivable)} measured on the build machine): runs at ${rate} measure the CPU, not the link. ` +
          `Use rates up to ${formatGbps(drivable)} (e.g. ${suggestRates(drivable)}) or a larger testbed.cpusPerNode`,
      ];
    }
    if (gbps > reliable) {
      return [
        `links shaped to ${rate} need ${Math.round((100 * gbps) / drivable)} % of what a worker under ${cpusPerNode} cores drives with Gloo ` +
          `(about ${formatGbps(drivable)}): the all-reduce then takes most of the quota, and on the build machine such points ` +
          `measured up to 19 points below the model fitted from the probe on some days (within 6 on others; test/bench/README.md, ` +
          `"The 3 Gbit/s gap"). Below ${formatGbps(reliable)} no such loss has been measured; or give the workers more cores (testbed.cpusPerNode)`,
      ];
    }
    return [];
  });
}

function formatGbps(gbps: number): string {
  return gbps >= 1 ? `${Number(gbps.toFixed(2))} Gbit/s` : `${Math.round(gbps * 1000)} Mbit/s`;
}

/** Two tc rates at the 1 : 10 ratio of 1 and 10 Gbit/s, the faster one within what the quota drives. */
function suggestRates(drivable: number): string {
  const fastMbit = Math.max(10, Math.floor((drivable * 1000) / 10) * 10);
  const slowMbit = Math.max(1, Math.round(fastMbit / 10));
  return `${slowMbit}mbit and ${fastMbit}mbit`;
}

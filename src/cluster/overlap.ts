/**
 * What of a step's communication compute hides (issue #69, item 5), as part of the model rather than a fudge:
 *   - DDP's bucketed all-reduce runs under backward as buckets fill; the last bucket waits for backward's end
 *     (PyTorch's DistributedDataParallel design notes: "overlap gradient reduction with backward computation");
 *   - FSDP prefetches the next unit's all-gather under the current unit's compute, forward and backward, and
 *     reduce-scatters each unit's gradients as backward leaves it; the first gather and the last reduce-scatter wait
 *     (torchtitan's FSDP2: implicit forward and backward prefetching);
 *   - ZeRO-1/2 gather the updated parameters after the optimizer step: exposed;
 *   - context parallelism's ring attention passes keys and values under attention's compute;
 *   - tensor parallelism's collectives sit between the matrix products that need them: exposed (no asynchronous TP);
 *   - a pipeline's sends overlap its steady state; the fill and the drain wait for theirs, and its bubble is
 *     (p − 1) / (v m) of the step's compute (Narayanan et al. 2021, section 2.2.2; v = 1 for GPipe and 1F1B).
 * Forward is a third of the compute and backward two thirds (backward computes two products per forward one).
 * The no-overlap and full-overlap steps are the bounds any real run lies between. Pure.
 */
import type { GroupCollective } from "./collectives.ts";
import type { LayoutDegrees } from "./groups.ts";

export const OVERLAP_SOURCE =
  "DDP's buckets under backward, FSDP's prefetch under forward and backward, tensor parallelism exposed, a pipeline's fill and drain exposed (src/cluster/overlap.ts)";

export interface TimedCollective {
  readonly collective: GroupCollective;
  readonly seconds: number;
}

export interface OverlapAnswer {
  /** Communication the step waits for. */
  readonly exposedSeconds: number;
  /** All of the step's communication. */
  readonly totalSeconds: number;
  /** Each collective's exposed part, in the order given. */
  readonly exposedEach: readonly number[];
}

/**
 * The exposed communication of a step whose compute (bubble excluded) takes `computeSeconds`: each window hides what
 * fits under it, less its last call, which waits for the window's end.
 */
export function exposedCommunication(
  timed: readonly TimedCollective[],
  computeSeconds: number,
  layout: LayoutDegrees,
): OverlapAnswer {
  const windows: Record<"forward" | "backward", number> = {
    forward: computeSeconds / 3,
    backward: (2 * computeSeconds) / 3,
  };
  const exposedEach = timed.map(() => 0);
  for (const window of ["forward", "backward"] as const) {
    const members = timed.flatMap((entry, index) => (entry.collective.overlap === window ? [{ ...entry, index }] : []));
    const total = members.reduce((sum, entry) => sum + entry.seconds, 0);
    if (total === 0) continue;
    const lastCalls = members.reduce((sum, entry) => sum + entry.seconds / Math.max(1, entry.collective.calls), 0);
    const exposed = Math.max(lastCalls, total - windows[window]);
    // Shared out in proportion to each collective's time, so that every group's line says what it costs.
    for (const entry of members) exposedEach[entry.index] = (exposed * entry.seconds) / total;
  }
  timed.forEach((entry, index) => {
    const window = entry.collective.overlap;
    if (window === "exposed") exposedEach[index] = entry.seconds;
    if (window === "steady-state") {
      const perCall = entry.seconds / Math.max(1, entry.collective.calls);
      exposedEach[index] = Math.min(entry.seconds, perCall * 2 * (layout.pp - 1));
    }
  });
  return {
    exposedSeconds: exposedEach.reduce((sum, seconds) => sum + seconds, 0),
    totalSeconds: timed.reduce((sum, entry) => sum + entry.seconds, 0),
    exposedEach,
  };
}

/** The pipeline's compute with its bubble: (1 + (p − 1) / (v m)) times the stage's own. */
export function withBubble(stageComputeSeconds: number, layout: LayoutDegrees): number {
  if (layout.pp < 2) return stageComputeSeconds;
  const v = layout.pipelineSchedule === "interleaved-1f1b" ? layout.virtualStages : 1;
  return stageComputeSeconds * (1 + (layout.pp - 1) / (v * layout.microBatches));
}

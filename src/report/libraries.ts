/**
 * Which communication library gets closest to the link (issue #36): where the probe summed the same link, node
 * count and placement through torch.distributed and through Open MPI (probe.library), one sentence comparing their
 * α-β fits; where iperf3 measured the link just before (probe.reference), each library's rate against that one TCP
 * stream, which no library can beat. Pure.
 */
import type { ProbeSeries } from "../analysis/data.ts";
import { formatBytes } from "../util/format.ts";

/** "torch.distributed (gloo)", "Open MPI" */
export function libraryName(probe: Pick<ProbeSeries, "library" | "backend">): string {
  return probe.library === "mpi" ? "Open MPI" : `torch.distributed (${probe.backend})`;
}

/**
 * One sentence per link, node count and placement whose torch.distributed probe has a fit and a partner: Open MPI's
 * probe, or iperf3's rate.
 */
export function libraryComparisons(probes: readonly ProbeSeries[]): string[] {
  const fitted = probes.filter(
    (probe) => probe.fit !== null && probe.reduction === "ring" && probe.collective === "all-reduce",
  );
  return fitted
    .filter((probe) => probe.library === "torch")
    .flatMap((torch) => {
      const mpi = fitted.find(
        (probe) =>
          probe.library === "mpi" &&
          probe.bandwidth === torch.bandwidth &&
          probe.nodes === torch.nodes &&
          probe.processesPerNode === torch.processesPerNode,
      );
      const reference = torch.referenceGbps?.mean ?? null;
      if (mpi === undefined && reference === null) return [];
      const describe = (probe: ProbeSeries) => {
        const fit = probe.fit!;
        const share =
          probe.linkGbps === null ? "" : ` (${((100 * fit.effectiveGbps) / probe.linkGbps).toFixed(1)} % of the link)`;
        return `${libraryName(probe)} moves its bytes at 8/β = ${fit.effectiveGbps.toFixed(3)} Gbit/s${share} and pays α = ${(fit.alphaSeconds * 1e6).toFixed(0)} µs per ring step`;
      };
      const parts = [
        `${torch.bandwidth}, ${torch.nodes} nodes: ${describe(torch)}${mpi === undefined ? "" : `; ${describe(mpi)}`}.`,
      ];
      if (mpi !== undefined) {
        const [closer, further] = torch.fit!.effectiveGbps >= mpi.fit!.effectiveGbps ? [torch, mpi] : [mpi, torch];
        const gap = 100 * (closer.fit!.effectiveGbps / further.fit!.effectiveGbps - 1);
        const latency =
          torch.fit!.alphaSeconds === mpi.fit!.alphaSeconds
            ? ""
            : `; ${libraryName(torch.fit!.alphaSeconds < mpi.fit!.alphaSeconds ? torch : mpi)} starts a step sooner, which small messages feel`;
        parts.push(
          `${libraryName(closer)} gets closer to the link, by ${gap.toFixed(1)} % in large messages${latency}.`,
        );
      }
      if (reference !== null) {
        // Like against like: iperf3's is an average payload rate, as the bus bandwidth of the largest message is (8/β
        // is a slope, and can pass it by the latency it leaves out).
        const largest = torch.rows.at(-1)!;
        const of = (probe: ProbeSeries) =>
          `${libraryName(probe)} ${((100 * probe.rows.at(-1)!.busBandwidthGbps.mean) / reference).toFixed(1)} %`;
        parts.push(
          `iperf3's one TCP stream on the same link just before: ${reference.toFixed(3)} Gbit/s, the most any library can move; ` +
            `the bus bandwidth at ${formatBytes(largest.sizeBytes)} reaches of it ${[torch, ...(mpi === undefined ? [] : [mpi])].map(of).join(", ")}.`,
        );
      }
      return [parts.join(" ")];
    });
}

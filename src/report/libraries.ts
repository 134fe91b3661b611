/**
 * Which communication library gets closest to the link (issue #36): where the probe summed the same link, node
 * count and placement through torch.distributed and through Open MPI (probe.library), one sentence comparing their
 * α-β fits. Pure.
 */
import type { ProbeSeries } from "./data.ts";

/** "torch.distributed (gloo)", "Open MPI" */
export function libraryName(probe: Pick<ProbeSeries, "library" | "backend">): string {
  return probe.library === "mpi" ? "Open MPI" : `torch.distributed (${probe.backend})`;
}

/** One sentence per link, node count and placement that both libraries probed with a fit. */
export function libraryComparisons(probes: readonly ProbeSeries[]): string[] {
  const fitted = probes.filter((probe) => probe.fit !== null && probe.reduction === "ring");
  return fitted.filter((probe) => probe.library === "mpi").flatMap((mpi) => {
    const torch = fitted.find((probe) => probe.library === "torch" && probe.bandwidth === mpi.bandwidth && probe.nodes === mpi.nodes
      && probe.processesPerNode === mpi.processesPerNode);
    if (torch === undefined) return [];
    const describe = (probe: ProbeSeries) => {
      const fit = probe.fit!;
      const share = probe.linkGbps === null ? "" : ` (${(100 * fit.effectiveGbps / probe.linkGbps).toFixed(1)} % of the link)`;
      return `${libraryName(probe)} moves its bytes at 8/β = ${fit.effectiveGbps.toFixed(3)} Gbit/s${share} and pays α = ${(fit.alphaSeconds * 1e6).toFixed(0)} µs per ring step`;
    };
    const [closer, further] = torch.fit!.effectiveGbps >= mpi.fit!.effectiveGbps ? [torch, mpi] : [mpi, torch];
    const gap = 100 * (closer.fit!.effectiveGbps / further.fit!.effectiveGbps - 1);
    const latency = torch.fit!.alphaSeconds === mpi.fit!.alphaSeconds ? "" : `; ${libraryName(torch.fit!.alphaSeconds < mpi.fit!.alphaSeconds ? torch : mpi)} starts a step sooner, which small messages feel`;
    return [`${mpi.bandwidth}, ${mpi.nodes} nodes: ${describe(torch)}; ${describe(mpi)}. ${libraryName(closer)} gets closer to the link, by ${gap.toFixed(1)} % in large messages${latency}.`];
  });
}

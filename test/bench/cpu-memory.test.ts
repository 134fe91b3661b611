/**
 * The CPU worker's memory (test/bench/README.md, "CPU memory"), from the records test/bench/cpu-memory.sh wrote on
 * 2026-11-28 (test/bench/data/cpu-memory/): the memory model's assumed CPU constants are their fit, and the allocator
 * is what decides an FSDP rank's resident peak.
 *
 *   test/bench/cpu-memory.sh test/bench/data/cpu-memory
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { affineFit, ASSUMED_MEMORY, predictMemory, isMemoryPrediction } from "../../src/predict/memory.ts";
import { dimsOf, memoryTermsOf } from "../../src/layouts/index.ts";
import { rankMemory } from "../../src/workload/memory.ts";

const MIB = 2 ** 20;
const FOLDER = "test/bench/data/cpu-memory";
interface Result {
  readonly knobs: Record<string, string | number | boolean>;
  readonly world: { readonly size: number; readonly nodes: number };
  readonly provenance: { readonly allocator: string };
  readonly metrics: {
    readonly memory: {
      readonly perRank: readonly { peakBytes: number; baselineBytes: number; launcherPeakBytes?: number }[];
    };
  };
}
const results = new Map(
  readdirSync(FOLDER)
    .filter((name) => name.endsWith(".json"))
    .sort()
    .map((name) => [name.replace(/\.json$/, ""), JSON.parse(readFileSync(`${FOLDER}/${name}`, "utf8")) as Result]),
);
const run = (name: string) => results.get(name)!;
/** Each rank's peak over its baseline, and the memory model's bytes for it. */
function points(result: Result): { analytic: number; measured: number }[] {
  const layout = dimsOf(result.knobs, result.world.size, result.world.nodes);
  if (!layout.ok) throw new Error(layout.problem);
  const analytic = rankMemory(
    { model: "gpt-mini", batchSize: Number(result.knobs["batchSize"]), knobs: result.knobs, dims: layout.dims },
    memoryTermsOf(result.knobs, layout.dims),
  )[0]!.peak;
  return result.metrics.memory.perRank.map((rank) => ({ analytic, measured: rank.peakBytes - rank.baselineBytes }));
}
const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
const peaks = (name: string) => points(run(name)).map((point) => point.measured / MIB);

describe("the CPU worker's memory (test/bench/README.md)", () => {
  const singles = [...results.keys()].filter((name) => name.startsWith("single-")).map(run);

  it("ran the single workers under tcmalloc, as the CPU image does", () => {
    expect(singles).toHaveLength(4);
    expect(new Set(singles.map((result) => result.provenance.allocator))).toEqual(new Set(["tcmalloc"]));
  });

  it("gives the memory model's assumed CPU constants: 94 MiB + 1.04 × the model's bytes, baseline 231 MiB, launcher 226 MiB", () => {
    const fit = affineFit(
      singles.flatMap(points).map((point) => point.analytic),
      singles.flatMap(points).map((point) => point.measured),
    );
    expect(Math.round(fit.overhead / MIB)).toBe(ASSUMED_MEMORY.cpu.overheadBytes / MIB);
    expect(Number(fit.scale.toFixed(2))).toBe(ASSUMED_MEMORY.cpu.scale);
    const ranks = singles.flatMap((result) => result.metrics.memory.perRank);
    expect(Math.round(mean(ranks.map((rank) => rank.baselineBytes)) / MIB)).toBe(
      ASSUMED_MEMORY.cpu.baselineBytes / MIB,
    );
    expect(Math.round(mean(ranks.map((rank) => rank.launcherPeakBytes!)) / MIB)).toBe(
      ASSUMED_MEMORY.cpu.launcherBytes / MIB,
    );
  });

  it("gives FSDP's own overhead at the same scale: 140 MiB, from its full and grad-op runs on 3 ranks", () => {
    const fsdp = ["fsdp-full-tcmalloc", "fsdp-grad-op-tcmalloc"].flatMap((name) => points(run(name)));
    const overhead = mean(fsdp.map((point) => point.measured - ASSUMED_MEMORY.cpu.scale * point.analytic));
    expect(Math.round(overhead / MIB / 5) * 5).toBe(ASSUMED_MEMORY.cpu.layouts!["fsdp"]!.overheadBytes / MIB);
  });

  it("under tcmalloc puts every 3-rank layout within 5 % of the memory model's prediction", () => {
    for (const [name, knobs] of [
      ["ddp-tcmalloc", { parallelism: "ddp" }],
      ["fsdp-full-tcmalloc", { parallelism: "fsdp", fsdpSharding: "full" }],
      ["fsdp-grad-op-tcmalloc", { parallelism: "fsdp", fsdpSharding: "grad-op" }],
    ] as const) {
      const predicted = predictMemory(
        { model: "gpt-mini", batchSize: 4, nodes: 1, processesPerNode: 3, knobs: { ...run(name).knobs, ...knobs } },
        ASSUMED_MEMORY.cpu,
      );
      if (!isMemoryPrediction(predicted)) throw new Error(predicted.problem);
      for (const measured of peaks(name))
        expect(Math.abs((measured * MIB) / predicted.rankBytes - 1), name).toBeLessThan(0.05);
    }
  });

  it("under glibc's malloc has an FSDP rank peak at 2.4-2.6x its tcmalloc peak, and above DDP's", () => {
    const ratio = mean(peaks("fsdp-full-glibc")) / mean(peaks("fsdp-full-tcmalloc"));
    expect(ratio).toBeGreaterThan(2.4);
    expect(ratio).toBeLessThan(2.6);
    expect(Math.min(...peaks("fsdp-full-glibc"))).toBeGreaterThan(Math.max(...peaks("ddp-glibc")));
    expect(Math.max(...peaks("fsdp-full-tcmalloc"))).toBeLessThan(Math.min(...peaks("ddp-tcmalloc")));
  });

  it("gives the table's ranges: each layout's peaks under both allocators, the model's figure and the throughput", () => {
    const range = (name: string) => `${Math.round(Math.min(...peaks(name)))}-${Math.round(Math.max(...peaks(name)))}`;
    const rate = (name: string) =>
      Math.round(
        (run(name).metrics as unknown as { tokensPerSecondTotal: { mean: number } }).tokensPerSecondTotal.mean,
      );
    const model = (knobs: Record<string, string>) => {
      const predicted = predictMemory(
        {
          model: "gpt-mini",
          batchSize: 4,
          nodes: 1,
          processesPerNode: 3,
          knobs: { ...run("ddp-tcmalloc").knobs, ...knobs },
        },
        ASSUMED_MEMORY.cpu,
      );
      return isMemoryPrediction(predicted) ? Math.round(predicted.rankBytes / MIB) : NaN;
    };
    expect(
      [
        ["ddp", { parallelism: "ddp" }],
        ["fsdp-full", { parallelism: "fsdp", fsdpSharding: "full" }],
        ["fsdp-grad-op", { parallelism: "fsdp", fsdpSharding: "grad-op" }],
      ].map(([name, knobs]) => [
        range(`${name as string}-glibc`),
        range(`${name as string}-tcmalloc`),
        model(knobs as Record<string, string>),
        rate(`${name as string}-glibc`),
        rate(`${name as string}-tcmalloc`),
      ]),
    ).toEqual([
      ["391-405", "351-358", 352, 808, 778],
      ["612-629", "238-250", 241, 610, 658],
      ["473-574", "274-275", 278, 691, 663],
    ]);
  });
});

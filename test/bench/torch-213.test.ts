/**
 * The figures test/bench/README.md gives for the worker on torch 2.13 against 1.13 ("The worker on current PyTorch"),
 * recomputed from the two smoke campaigns' summary.csv, committed in test/bench/data/torch-2.13/.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

function rows(file: string): Record<string, string>[] {
  const [header, ...lines] = readFileSync(`test/bench/data/torch-2.13/${file}`, "utf8").trim().split("\n");
  const names = header!.split(",");
  return lines.map((line) => Object.fromEntries(line.split(",").map((value, index) => [names[index]!, value])));
}
const runs = { old: rows("smoke-torch-1.13.csv"), current: rows("smoke-torch-2.13.csv") };
const throughput = (data: Record<string, string>[], id: string) =>
  Number(data.find((row) => row["run_id"] === id)!["images_per_second_total"]);
const singleNode = (data: Record<string, string>[]) =>
  (throughput(data, "train-small-b32-n1-r1") + throughput(data, "train-small-b32-n1-r2")) / 2;

describe("the worker on torch 2.13 against 1.13 (test/bench/README.md)", () => {
  it("computes the small CNN's step 5.3x as fast: 71.8 and 76.3 img/s against 391.5 and 391.3", () => {
    expect(
      [throughput(runs.old, "train-small-b32-n1-r1"), throughput(runs.old, "train-small-b32-n1-r2")].map((v) =>
        v.toFixed(1),
      ),
    ).toEqual(["71.8", "76.3"]);
    expect(
      [throughput(runs.current, "train-small-b32-n1-r1"), throughput(runs.current, "train-small-b32-n1-r2")].map((v) =>
        v.toFixed(1),
      ),
    ).toEqual(["391.5", "391.3"]);
    expect((singleNode(runs.current) / singleNode(runs.old)).toFixed(1)).toBe("5.3");
  });

  it("scales 2 nodes at 1 Gbit/s at 65 % on 1.13 and 37 % on 2.13", () => {
    const efficiency = (data: Record<string, string>[]) =>
      Math.round((100 * throughput(data, "train-small-b32-n2-1gbit-r1")) / (2 * singleNode(data)));
    expect([efficiency(runs.old), efficiency(runs.current)]).toEqual([65, 37]);
  });

  it("probes the same links at a peak of 93-97 % of their rate on both (1.13: 95.5, 96.7, 92.8, 93.5 %; 2.13: 95.5, 95.5, 94.9, 94.1 %)", () => {
    const shares = (data: Record<string, string>[]) =>
      ["allreduce-n2-1gbit-r1", "allreduce-n3-1gbit-r1", "allreduce-n2-3gbit-r1", "allreduce-n3-3gbit-r1"].map((id) =>
        (
          (100 * Number(data.find((row) => row["run_id"] === id)!["peak_busbw_gbps"])) /
          (id.includes("3gbit") ? 3 : 1)
        ).toFixed(1),
      );
    expect(shares(runs.old)).toEqual(["95.5", "96.7", "92.8", "93.5"]);
    expect(shares(runs.current)).toEqual(["95.5", "95.5", "94.9", "94.1"]);
  });
});

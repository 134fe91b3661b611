/**
 * Published throughput figures against ringlab's GPU-cluster predictions (test/bench/README.md, "Published
 * throughput"): every case of test/bench/data/published/ with a throughput figure, predicted through the code
 * `ringlab predict --case` runs from what a user has before renting, each error and band recomputed here and the
 * README's tables held to them, misses included; the held-out third apart, scored last.
 *
 *   for f in test/bench/data/published/*.yaml; do npx ringlab predict --case "$f"; done
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { THROUGHPUT_FIGURES } from "../../src/cluster/case-throughput.ts";
import { loadCaseFile } from "../../src/predict/case-file.ts";
import { scoreCase, type ScoredFigure } from "../../src/predict/case-score.ts";

const FOLDER = "test/bench/data/published";
const cases = readdirSync(FOLDER)
  .filter((name) => name.endsWith(".yaml"))
  .sort()
  .map((name) => {
    const file = loadCaseFile(join(FOLDER, name));
    return { name: name.replace(/\.yaml$/, ""), heldOut: file.heldOut === true, score: scoreCase(file, FOLDER) };
  });

interface Row extends ScoredFigure {
  readonly name: string;
  readonly heldOut: boolean;
  readonly basis: string;
}

const rows: Row[] = cases.flatMap(({ name, heldOut, score }) =>
  score.figures
    .filter((figure) => (THROUGHPUT_FIGURES as readonly string[]).includes(figure.figure))
    .map((figure) => ({ ...figure, name, heldOut, basis: "basis" in score.throughput ? score.throughput.basis : "-" })),
);

/** Scaling efficiency in points, every other figure in percent of the published one. */
function errorText(row: Row): string {
  if (row.predicted === null) return "-";
  return row.figure === "scalingEfficiency"
    ? `${(100 * (row.predicted - row.published)).toFixed(1)} pts`
    : `${(100 * row.error!).toFixed(1)} %`;
}

function inBand(row: Row): boolean {
  return row.band !== undefined && row.published >= row.band.low && row.published <= row.band.high;
}

function line(row: Row): string {
  if (row.predicted === null) return `| ${row.name} | ${row.figure} | ${row.published} | - | ${row.why} | | |`;
  const band = `${row.band!.low.toPrecision(4)}-${row.band!.high.toPrecision(4)}`;
  return `| ${row.name} | ${row.figure} | ${row.published} | ${row.predicted.toPrecision(4)} | ${errorText(row)} | ${band}${inBand(row) ? "" : " (outside)"} | ${row.basis} |`;
}

/** Mean |error| of the throughput figures (percent), of the scaling efficiencies (points), and the band's count. */
function summary(of: readonly Row[]): string {
  const predicted = of.filter((row) => row.predicted !== null);
  const throughput = predicted.filter((row) => row.figure !== "scalingEfficiency" && row.figure !== "mfu");
  const efficiency = predicted.filter((row) => row.figure === "scalingEfficiency");
  const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  return (
    `${predicted.length} of ${of.length} figures predicted; throughput (per GPU or in all, TFLOP/s) mean |error| ` +
    `${mean(throughput.map((row) => 100 * Math.abs(row.error!))).toFixed(1)} % over ${throughput.length}; scaling efficiency mean |error| ` +
    `${mean(efficiency.map((row) => 100 * Math.abs(row.predicted! - row.published))).toFixed(1)} points over ${efficiency.length}; ` +
    `${predicted.filter(inBand).length} of ${predicted.length} inside the no-overlap / full-overlap band`
  );
}

const inSample = rows.filter((row) => !row.heldOut);
const heldOut = rows.filter((row) => row.heldOut);

describe("published throughput figures (test/bench/README.md)", () => {
  it("predicts every throughput figure of the published set from what a user has before renting", () => {
    expect(rows.filter((row) => row.predicted === null).map((row) => [row.name, row.why])).toEqual([]);
    // Where a case gives a single-GPU throughput, that measured figure is the compute; else the published efficiency.
    for (const { name, score } of cases) {
      if (!("basis" in score.throughput)) continue;
      expect(["measured", "published efficiency"], name).toContain(score.throughput.basis);
    }
  });

  it("summarises the in-sample cases and the held-out third apart, as test/bench/README.md prints them", () => {
    const readme = readFileSync("test/bench/README.md", "utf8");
    expect(readme).toContain(`In sample: ${summary(inSample)}.`);
    expect(readme).toContain(`Held out: ${summary(heldOut)}.`);
  });

  it("prints every figure, its error and its band in test/bench/README.md as computed here", () => {
    const readme = readFileSync("test/bench/README.md", "utf8");
    for (const row of rows) expect(readme, row.name).toContain(line(row));
  });
});

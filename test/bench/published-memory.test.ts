/**
 * Published memory figures against ringlab's predictions (test/bench/README.md, "Published memory"): every case file in
 * test/bench/data/published/ with a memory figure, predicted through the same code as `ringlab predict --case`, each
 * error recomputed here and the README's table held to it, misses included.
 *
 *   for f in test/bench/data/published/*.yaml; do npx ringlab predict --case "$f"; done
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadCaseFile } from "../../src/predict/case-file.ts";
import { scoreCase, type ScoredFigure } from "../../src/predict/case-score.ts";

const FOLDER = "test/bench/data/published";
const MEMORY_FIGURES = new Set(["peakMemoryGiB", "modelStatesGB", "modelStatesGiB"]);
const cases = readdirSync(FOLDER)
  .filter((name) => name.endsWith(".yaml"))
  .sort()
  .map((name) => ({ name: name.replace(/\.yaml$/, ""), score: scoreCase(loadCaseFile(join(FOLDER, name))) }));
const rows = cases.flatMap(({ name, score }) =>
  score.figures.filter((figure) => MEMORY_FIGURES.has(figure.figure)).map((figure) => ({ name, ...figure })),
);
const percent = (figure: ScoredFigure) => `${(100 * figure.error!).toFixed(1)} %`;
const of = (prefix: string) => rows.filter((row) => row.name.startsWith(prefix));

describe("published memory figures (test/bench/README.md)", () => {
  it("has a prediction for every memory figure of every case", () => {
    expect(rows).toHaveLength(11);
    expect(rows.filter((row) => row.predicted === null)).toEqual([]);
  });

  it("reproduces the ZeRO paper's Table 1 for 7.5 B parameters on 64 GPUs to the digits it prints: 120, 31.4, 16.6, 1.88 GB", () => {
    const zero = of("zero-paper-");
    expect(zero.map((row) => [row.name, row.predicted!.toPrecision(3)])).toEqual(
      zero.map((row) => [row.name, row.published.toPrecision(3)]),
    );
    expect(zero).toHaveLength(4);
  });

  it("reproduces DeepSpeed's documented estimator examples within 1 % (their two printed decimals)", () => {
    const deepspeed = of("deepspeed-");
    expect(deepspeed).toHaveLength(5);
    for (const row of deepspeed) expect(Math.abs(row.error!), row.name).toBeLessThan(0.01);
  });

  it("predicts torchtitan's Llama 3.1 8B FSDP peaks 10.04 % under on 8 H100 (a miss) and 5.6 % under on 128", () => {
    expect(of("torchtitan-").map((row) => [row.name, (100 * row.error!).toFixed(2)])).toEqual([
      ["torchtitan-llama3.1-8b-fsdp-128gpu", "-5.58"],
      ["torchtitan-llama3.1-8b-fsdp-8gpu", "-10.04"],
    ]);
  });

  it("prints every error in test/bench/README.md as computed here", () => {
    const readme = readFileSync("test/bench/README.md", "utf8");
    for (const row of rows) {
      const line = `| ${row.name} | ${row.figure} | ${row.published} | ${row.predicted!.toPrecision(4)} | ${percent(row)} |`;
      expect(readme, line).toContain(line);
    }
  });
});

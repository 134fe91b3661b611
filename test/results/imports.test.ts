/** Results are a leaf (STYLE.md convention 11): the report reads records and never imports the code that made them. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

function importsOf(dir: string): { file: string; from: string }[] {
  return readdirSync(dir).filter((file) => file.endsWith(".ts")).flatMap((file) =>
    [...readFileSync(join(dir, file), "utf8").matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gms)]
      .map((match) => ({ file: `${dir}/${file}`, from: match[1]! })));
}

describe("module boundaries", () => {
  it("src/results imports neither the campaign nor the report", () => {
    const offending = importsOf("src/results").filter(({ from }) => /\/(campaign|report)\//.test(from) || /^\.\.\/(campaign|report)/.test(from));
    expect(offending).toEqual([]);
  });

  it("src/report imports nothing from the campaign", () => {
    expect(importsOf("src/report").filter(({ from }) => from.includes("campaign/"))).toEqual([]);
  });

  it("the cost model is a pure leaf: no ringlab module, no node built-in", () => {
    expect(importsOf("src/results").filter(({ file }) => file.endsWith("cost-model.ts"))).toEqual([]);
  });
});

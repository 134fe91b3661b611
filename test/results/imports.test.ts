/**
 * Module boundaries. Results are a leaf (STYLE.md convention 11): the report reads records and never imports the code
 * that made them. The campaign file's schema sits below the testbed, the planner below the runner, and the launcher
 * table (read by the report and the schema too) loads nothing that runs a tool.
 */
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

  it("src/config imports nothing from the testbed, and the planner nothing from the runner", () => {
    expect(importsOf("src/config").filter(({ from }) => from.includes("testbed/"))).toEqual([]);
    expect(importsOf("src/campaign").filter(({ file, from }) => file.endsWith("plan.ts") && /runner|testbed\//.test(from))).toEqual([]);
  });

  it("the launcher table loads no ringlab module outside it, types aside (a launcher's tools load when it runs)", () => {
    const offending = readdirSync("src/launchers").flatMap((file) =>
      [...readFileSync(join("src/launchers", file), "utf8").matchAll(/^import (?!type )[^;]*?from "(\.\.\/[^"]+)"/gm)].map((match) => `${file}: ${match[1]}`));
    expect(offending).toEqual([]);
  });
});

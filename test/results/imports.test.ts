/**
 * Module boundaries. Results are a leaf (STYLE.md convention 11): the report reads records and never imports the code
 * that made them. The campaign file's schema sits below the testbed, the planner below the runner, and the launcher
 * table (read by the report and the schema too) loads nothing that runs a tool. Only the target table (src/targets/)
 * tells testbed targets apart by name; everything else asks it, and it loads nothing that runs a tool either. The
 * reduction units (src/reductions/) are arithmetic on the registry and the cost models. Every
 * source file sits in a folder named for its concern (docs/layout.md), none loose in src/.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { TARGET_NAMES } from "../../src/targets/index.ts";

function importsOf(dir: string): { file: string; from: string }[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith(".ts"))
    .flatMap((file) =>
      [...readFileSync(join(dir, file), "utf8").matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gms)].map(
        (match) => ({ file: `${dir}/${file}`, from: match[1]! }),
      ),
    );
}

describe("module boundaries", () => {
  it("src/ holds folders only: every source file sits in a folder named for its concern", () => {
    const loose = readdirSync("src", { withFileTypes: true })
      .filter((entry) => !entry.isDirectory())
      .map((entry) => entry.name);
    expect(loose).toEqual([]);
  });

  it("src/results imports neither the campaign nor the report", () => {
    const offending = importsOf("src/results").filter(
      ({ from }) => /\/(campaign|report)\//.test(from) || /^\.\.\/(campaign|report)/.test(from),
    );
    expect(offending).toEqual([]);
  });

  it("src/report imports nothing from the campaign", () => {
    expect(importsOf("src/report").filter(({ from }) => from.includes("campaign/"))).toEqual([]);
  });

  it("the cost model and the statistics are pure leaves: no ringlab module, no node built-in", () => {
    expect(importsOf("src/results").filter(({ file }) => /\/(cost-model|statistics)\.ts$/.test(file))).toEqual([]);
  });

  it("the reduction units load only the registry, the cost and communication models, and each other", () => {
    const allowed = /^\.\/[\w-]+\.ts$|^\.\.\/config\/registry\.ts$|^\.\.\/results\/(cost-model|comm-model)\.ts$/;
    expect(importsOf("src/reductions").filter(({ from }) => !allowed.test(from))).toEqual([]);
  });

  it("src/config imports nothing from the testbed, and the planner nothing from the runner", () => {
    expect(importsOf("src/config").filter(({ from }) => from.includes("testbed/"))).toEqual([]);
    expect(
      importsOf("src/campaign").filter(({ file, from }) => file.endsWith("plan.ts") && /runner|testbed\//.test(from)),
    ).toEqual([]);
  });

  it("only src/targets/ branches on a testbed target's name; the rest asks the table (and these, not yet moved, are listed)", () => {
    expect(targetNameBranches()).toEqual(NOT_YET_MOVED);
  });

  it("the target table loads nothing that runs a tool, types aside (a target's verbs load theirs when they run)", () => {
    const table = [
      ...readdirSync("src/targets").filter((file) => file.endsWith(".ts")),
      ...TARGET_NAMES.map((name) => `${name}/target.ts`),
    ];
    const offending = table
      .flatMap((file) =>
        [
          ...readFileSync(join("src/targets", file), "utf8").matchAll(
            /^(?:import|export) (?!type )[^;]*?from "(\.[^"]+)"/gm,
          ),
        ].map((match) => `${file}: ${relative("src", join("src/targets", dirname(file), match[1]!))}`),
      )
      .filter((line) =>
        /: (?:\.\.\/stacks\/|(?:testbed|adapters|campaign|cli|report|results|predict|runner|context)\/|targets\/\w+\/(?!target\.ts))/.test(
          line,
        ),
      );
    expect(offending).toEqual([]);
  });

  it("the launcher table loads no ringlab module outside it, types aside (a launcher's tools load when it runs)", () => {
    const offending = readdirSync("src/launchers").flatMap((file) =>
      [
        ...readFileSync(join("src/launchers", file), "utf8").matchAll(/^import (?!type )[^;]*?from "(\.\.\/[^"]+)"/gm),
      ].map((match) => `${file}: ${match[1]}`),
    );
    expect(offending).toEqual([]);
  });
});

/**
 * Branches on a target's name outside src/targets/ that wait for their files' owners to ask the table instead (issue
 * #51): file -> how many. A new branch anywhere fails; one of these removed is dropped from here.
 */
const NOT_YET_MOVED: Record<string, number> = {};

/** Every `target === "<name>"` (or !==, or the name first, or `case "<name>":`) outside src/targets/, by file. */
function targetNameBranches(): Record<string, number> {
  const names = TARGET_NAMES.join("|");
  const branch = new RegExp(
    `\\btarget\\s*[!=]==?\\s*["'](?:${names})["']|["'](?:${names})["']\\s*[!=]==?\\s*[\\w.?]*\\btarget\\b|\\bcase\\s+["'](?:${names})["']\\s*:`,
    "g",
  );
  const counts: Record<string, number> = {};
  for (const file of sourceFiles(["src", "stacks"])) {
    if (file.startsWith("src/targets/")) continue;
    const found = readFileSync(file, "utf8").match(branch)?.length ?? 0;
    if (found > 0) counts[file] = found;
  }
  return counts;
}

function sourceFiles(dirs: readonly string[]): string[] {
  return dirs
    .flatMap((dir) =>
      readdirSync(dir, { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".ts"))
        .map((file) => `${dir}/${file}`),
    )
    .sort();
}

/**
 * Module boundaries, as docs/layout.md's code map draws them. No import cycle between src/'s modules at run time (a
 * folder is a module, and so is a target's own code beside its table entry): the analysis both predict/ and report/
 * need is src/analysis/, below both, and the campaign file's schema reads each target's section and defaults from the
 * target table. Results are a leaf: the report reads records and never imports the code that made them. The
 * campaign file's schema sits below the testbed, the planner below the runner, and the launcher table (read by the
 * report and the schema too) loads nothing that runs a tool. Only src/targets/ tells testbed targets apart by name
 * and imports a target's own code; everything else asks the table, which loads nothing that runs a tool either. The
 * reduction units (src/reductions/) are arithmetic on the registry and the cost models. Every source file sits in a
 * folder named for its concern, none loose in src/.
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

describe("module boundaries (docs/layout.md): no import cycle at run time, one home per target", () => {
  it("no import cycle between src/'s modules at run time (import() aside: it loads when a verb runs)", () => {
    expect(moduleCycle()).toEqual([]);
  });

  it("src/predict imports nothing from the report: what both need is the analysis below them", () => {
    expect(importsOf("src/predict").filter(({ from }) => /\/report\//.test(from))).toEqual([]);
  });

  it("no target's own module is imported by name outside src/targets/ (stacks/, the AWS target's stack, aside)", () => {
    const byName = sourceFiles(["src", "stacks"])
      .filter((file) => !file.startsWith("src/targets/"))
      .flatMap((file) =>
        [...readFileSync(file, "utf8").matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*)"(\.[^"]+)"/g)]
          .map((match) => relative(".", join(dirname(file), match[1]!)))
          .filter((path) => /^src\/targets\/\w+\//.test(path))
          .filter((path) => !(file.startsWith("stacks/") && path.startsWith("src/targets/aws/")))
          .map((path) => `${file}: ${path}`),
      );
    expect(byName).toEqual([]);
  });

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

/**
 * The module a source file belongs to: its folder of src/, except a target's own code (src/targets/<name>/ but its
 * target.ts, which is the table's), a module of its own that the table loads only when a verb runs.
 */
function moduleOf(file: string): string {
  const [, folder, target, name] = file.split("/");
  return folder === "targets" && name !== undefined && name !== "target.ts"
    ? `src/targets/${target}/`
    : `src/${folder}`;
}

/**
 * The first import cycle between modules, each step as one of its imports ("src/a/x.ts -> src/b/y.ts"); empty: none.
 * Counts what loads when a module loads: `import` and `export ... from` but `import type` (erased), not `import()`.
 */
function moduleCycle(): string[] {
  const edges = new Map<string, Map<string, string>>();
  for (const file of sourceFiles(["src"])) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/^(?:import|export)\s+(?!type\s)(?:[^;]*?\bfrom\s+)?"(\.[^"]+)"/gms)) {
      const imported = relative(".", join(dirname(file), match[1]!));
      const [from, to] = [moduleOf(file), moduleOf(imported)];
      if (!imported.startsWith("src/") || from === to) continue;
      if (!edges.has(from)) edges.set(from, new Map());
      if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, `${file} -> ${imported}`);
    }
  }
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (module: string): string[] | undefined => {
    const at = path.indexOf(module);
    if (at >= 0)
      return [...path.slice(at), module].slice(1).map((next, i) => edges.get(path[at + i] ?? module)!.get(next)!);
    if (done.has(module)) return undefined;
    path.push(module);
    for (const next of edges.get(module)?.keys() ?? []) {
      const cycle = visit(next);
      if (cycle !== undefined) return cycle;
    }
    path.pop();
    done.add(module);
    return undefined;
  };
  for (const module of edges.keys()) {
    const cycle = visit(module);
    if (cycle !== undefined) return cycle;
  }
  return [];
}

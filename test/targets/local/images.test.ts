import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SIDE_BY_SIDE_BUILDS } from "../../../src/targets/local/images.ts";

const REPO = join(import.meta.dirname, "..", "..", "..");

/** A Dockerfile's instructions: continuation lines joined, comments and blank lines left out. */
function instructions(dockerfile: string): string[] {
  return dockerfile
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** The instruction right after the FROM of a stage (the first FROM when no stage is named). */
function firstAfterFrom(dir: string, target?: string): string {
  const lines = instructions(readFileSync(join(REPO, "docker", dir, "Dockerfile"), "utf8"));
  const from = lines.findIndex(
    (line) => /^FROM\s/i.test(line) && (target === undefined || new RegExp(`\\sAS\\s+${target}$`, "i").test(line)),
  );
  expect(
    from,
    `docker/${dir}/Dockerfile has a FROM${target === undefined ? "" : ` ... AS ${target}`}`,
  ).toBeGreaterThanOrEqual(0);
  return lines[from + 1]!;
}

describe("the local images", () => {
  // Built side by side on one base by the classic builder, which caches a layer by its parent and instruction: two
  // Dockerfiles that begin alike each make their own copy of the first layer, and the next build picks one of the
  // copies for both, rebuilding the other image from scratch (the worker: 70 s) although nothing changed.
  it("begin each Dockerfile built side by side with an instruction of its own, so a rebuild finds both cached", () => {
    const first = SIDE_BY_SIDE_BUILDS.map((b) => firstAfterFrom(b.dir, b.target));
    expect(first).toHaveLength(2);
    expect(new Set(first).size).toBe(first.length);
  });
});

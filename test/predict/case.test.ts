/**
 * A published case file (src/predict/case.ts, case-file.ts): what `ringlab predict --case` refuses before it predicts
 * anything, each problem naming the field, and the command's exit code 2 on a case without a source.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { caseProblems } from "../../src/predict/case-file.ts";
import { validateCase, type CaseFile } from "../../src/predict/case.ts";

const BIN = resolve("src/bin/ringlab.mjs");
const TORCHTITAN = {
  source: "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Table 1, row 'FSDP'",
  nodes: 1,
  gpusPerNode: 8,
  model: "llama3.1-8b",
  layout: { dp: 8, dpSharding: "full" },
  batch: { micro: 2, sequence: 8192 },
  precision: "bf16",
  activationCheckpointing: "selective",
  published: { peakMemoryGiB: 82.4 },
};
const problemsOf = (document: unknown) => {
  const result = validateCase(document);
  return "problems" in result ? result.problems : caseProblems(result.case as CaseFile);
};

describe("a published case", () => {
  it("reads the contract's fields with their defaults", () => {
    const result = validateCase(TORCHTITAN);
    expect("case" in result && result.case).toMatchObject({
      framework: "pytorch",
      optimizer: "adamw",
      offload: "none",
      compile: false,
      float8: "none",
      asyncTensorParallel: false,
      layout: { dp: 8, dpSharding: "full", tp: 1, pp: 1, cp: 1 },
    });
    expect(problemsOf(TORCHTITAN)).toEqual([]);
  });

  it("says the software a source states, and refuses a transport or Float8 recipe it does not know, naming the field", () => {
    const stated = {
      ...TORCHTITAN,
      compile: true,
      float8: "tensorwise",
      asyncTensorParallel: true,
      transport: "nccl-ib",
    };
    expect(problemsOf(stated)).toEqual([]);
    expect(problemsOf({ ...TORCHTITAN, transport: "tcp" })[0]).toMatchObject({
      path: "transport",
      message: expect.stringContaining("nccl-socket"),
    });
    expect(problemsOf({ ...TORCHTITAN, float8: true })[0]).toMatchObject({ path: "float8" });
  });

  it("refuses a case without a source, an unknown field, and one that publishes no figure, naming each field", () => {
    const { source: _, ...sourceless } = TORCHTITAN;
    expect(problemsOf(sourceless)).toEqual([{ path: "source", message: "missing: expected text" }]);
    expect(problemsOf({ ...TORCHTITAN, layout: { dp: 8, sharding: "full" } })).toEqual([
      { path: "layout.sharding", message: expect.stringMatching(/unknown key "sharding".*dpSharding/) },
    ]);
    expect(problemsOf({ ...TORCHTITAN, published: { note: "none" } })[0]).toMatchObject({
      path: "published",
      message: expect.stringMatching(/no figure/),
    });
  });

  it("refuses ranks that are not the GPUs, a model the registry lacks and a sequence past its positions", () => {
    expect(problemsOf({ ...TORCHTITAN, layout: { dp: 16, dpSharding: "full" } })[0]).toMatchObject({
      path: "layout",
      message: "dp × tp × pp × cp = 16 ranks, but nodes × gpusPerNode = 8 GPUs",
    });
    expect(problemsOf({ ...TORCHTITAN, model: "llama9" })[0]).toMatchObject({
      path: "model",
      message: expect.stringMatching(/"llama9" is not a model of the registry/),
    });
    expect(problemsOf({ ...TORCHTITAN, batch: { micro: 1, sequence: 10 ** 6 } })[0]).toMatchObject({
      path: "batch.sequence",
      message: "1000000 is more than the model's 131072 positions",
    });
  });

  it("makes `ringlab predict --case` exit 2 naming the file and the field before it predicts", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-case-"));
    const file = join(dir, "sourceless.yaml");
    const { source: _, ...sourceless } = TORCHTITAN;
    writeFileSync(file, JSON.stringify(sourceless));
    const run = spawnSync(process.execPath, [BIN, "--state-dir", dir, "predict", "--case", file], { encoding: "utf8" });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`${file}: source:`);
    expect(run.stdout).toBe("");
  });
});

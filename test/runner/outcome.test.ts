import { lstatSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { plannedLostNode } from "../../src/launchers/node-loss.ts";
import { readOutcome, type RunRequest } from "../../src/runner/runner.ts";
import { probeRecord } from "../report/fixtures/records.ts";

/**
 * A run's folder holding outcome.json as run.yml writes it (ranks and ok as Ansible renders them: strings, booleans).
 */
function jobFolder(ranks: Record<string, unknown>[]): RunRequest {
  const collectDir = mkdtempSync(join(tmpdir(), "ringlab-outcome-"));
  writeFileSync(join(collectDir, "outcome.json"), JSON.stringify({ run_id: "r1", ranks }));
  return { runId: "r1", nodes: ranks.length, job: "allreduce", workerArgs: [], timeoutSeconds: 60, collectDir };
}

const result = probeRecord({ nodes: 2, bandwidth: "1gbit", busbw: [[1048576, 0.9]] }).result!;
const base64 = (text: string) => Buffer.from(text).toString("base64");
const rank = (n: number, fields: Record<string, unknown> = {}) => ({
  run_id: "r1",
  rank: String(n),
  host: `t-node-${n}`,
  ok: true,
  outcome: "exited with code 0",
  log: `log of rank ${n}`,
  result: "",
  result_error: "",
  result_file: n === 0 ? "/shared/runs/r1/result.json" : "",
  ...fields,
});
const since = new Date(Date.now() - 5000);

describe("a job's outcome.json (run.yml)", () => {
  it("becomes every rank's log and the head's result, and an ok run", () => {
    const request = jobFolder([rank(0, { result: base64(JSON.stringify(result)) }), rank(1)]);
    const outcome = readOutcome(request, since);
    expect(outcome.status, outcome.error).toBe("ok");
    expect(outcome.result?.world).toEqual(result.world);
    expect(outcome.wallSeconds).toBeGreaterThanOrEqual(5);
    expect(readdirSync(request.collectDir).sort()).toEqual([
      "outcome.json",
      "result.json",
      "worker-0.log",
      "worker-1.log",
    ]);
    expect(readFileSync(join(request.collectDir, "worker-1.log"), "utf8")).toBe("log of rank 1\n");
    expect(JSON.parse(readFileSync(join(request.collectDir, "result.json"), "utf8"))).toEqual(
      JSON.parse(JSON.stringify(result)),
    );
  });

  it("names every failed rank with how it ended, keeps every log, and writes no result", () => {
    const request = jobFolder([
      rank(0, { ok: "False", outcome: "timed out after 15 s and was stopped", log: "slow" }),
      rank(1, { ok: false, outcome: "exited with code 4", log: "peer gone" }),
    ]);
    const outcome = readOutcome(request, since);
    expect(outcome.status).toBe("failed");
    expect(outcome.error).toBe(
      "t-node-0 failed: Worker rank 0 on t-node-0 timed out after 15 s and was stopped; " +
        `t-node-1 failed: Worker rank 1 on t-node-1 exited with code 4; worker logs: ${request.collectDir}/worker-*.log`,
    );
    expect(readFileSync(join(request.collectDir, "worker-1.log"), "utf8")).toBe("peer gone\n");
    expect(readdirSync(request.collectDir)).not.toContain("result.json");
  });

  it("fails a head that exited cleanly without a result, saying which file and why", () => {
    const request = jobFolder([
      rank(0, { ok: false, result_error: "file not found: /shared/runs/r1/result.json" }),
      rank(1),
    ]);
    expect(readOutcome(request, since).error).toMatch(
      /^t-node-0 failed: Worker rank 0 on t-node-0 exited with code 0 but wrote no result \(\/shared\/runs\/r1\/result\.json: file not found: /,
    );
  });

  it("fails a run whose result is not a worker result, or whose outcome file is damaged", () => {
    const notAResult = jobFolder([rank(0, { result: base64('{"schema": "something else"}') })]);
    expect(readOutcome(notAResult, since).error).toMatch(/^unreadable result .*result\.json: /);
    const damaged = jobFolder([]);
    writeFileSync(join(damaged.collectDir, "outcome.json"), '{"ranks": [');
    expect(readOutcome(damaged, since)).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/^unreadable outcome .*outcome\.json: /),
    });
  });

  it("of a Slurm job keeps the job script and Slurm's output, and names Slurm's state and reason when it did not complete", () => {
    const slurm = (state: string, description: string) => ({
      job_id: "7",
      state,
      reason: "TimeLimit",
      exit_code: "143:0",
      nodes: ["t-node-0", "t-node-1"],
      description,
      batch_log: "*** JOB 7 CANCELLED DUE TO TIME LIMIT ***\n",
    });
    const timedOut = jobFolder([]);
    const described = "ran as Slurm job 7, which ended TIMEOUT (reason: TimeLimit, exit code 143:0 (code:signal))";
    writeFileSync(
      join(timedOut.collectDir, "outcome.json"),
      JSON.stringify({
        run_id: "r1",
        ranks: [rank(0, { ok: false, outcome: described }), rank(1, { ok: false, outcome: described })],
        slurm: slurm("TIMEOUT", described),
        job_script: "#!/bin/bash\n#SBATCH --nodes=2\n",
      }),
    );
    const outcome = readOutcome(timedOut, since);
    expect(outcome.status).toBe("failed");
    expect(outcome.error).toBe(
      `t-node-0, t-node-1: the run ${described}; Slurm's output: ${timedOut.collectDir}/slurm.out; ` +
        `worker logs: ${timedOut.collectDir}/worker-*.log`,
    );
    expect(readFileSync(join(timedOut.collectDir, "job.sbatch"), "utf8")).toBe("#!/bin/bash\n#SBATCH --nodes=2\n");
    expect(readFileSync(join(timedOut.collectDir, "slurm.out"), "utf8")).toMatch(/TIME LIMIT/);

    const completed = jobFolder([]);
    writeFileSync(
      join(completed.collectDir, "outcome.json"),
      JSON.stringify({
        run_id: "r1",
        ranks: [rank(0, { result: base64(JSON.stringify(result)) }), rank(1)],
        slurm: slurm("COMPLETED", "ran as Slurm job 7, which ended COMPLETED"),
        job_script: "#!/bin/bash\n",
      }),
    );
    expect(readOutcome(completed, since).status).toBe("ok");
    expect(readdirSync(completed.collectDir).sort()).toEqual([
      "job.sbatch",
      "outcome.json",
      "result.json",
      "slurm.out",
      "worker-0.log",
      "worker-1.log",
    ]);
  });

  it("of an mpirun job keeps mpirun.sh, its hostfile and mpirun's output (no job.sbatch), and words a failure in mpirun's terms", () => {
    const described =
      "ran under mpirun, which exited with code 3; rank 1 (t-node-1) was the first to fail, with exit code 3";
    const mpi = (exitCode: number, description: string) => ({
      exit_code: exitCode,
      timed_out: false,
      nodes: ["t-node-0", "t-node-1"],
      hostfile: "10.9.0.10 slots=1\n10.9.0.11 slots=1\n",
      description,
      output: "[1,1]<stderr>:boom\n",
      job_script: "#!/bin/bash\nexec mpirun --hostfile h\n",
    });
    const failed = jobFolder([]);
    writeFileSync(
      join(failed.collectDir, "outcome.json"),
      JSON.stringify({
        run_id: "r1",
        ranks: [
          rank(0, { ok: false, outcome: described }),
          rank(1, { ok: false, outcome: "exited with code 3, and mpirun ended the job" }),
        ],
        mpi: mpi(3, described),
      }),
    );
    const outcome = readOutcome(failed, since);
    expect(outcome.error).toBe(
      `t-node-0, t-node-1: the run ${described}; mpirun's output: ${failed.collectDir}/mpirun.out; ` +
        `worker logs: ${failed.collectDir}/worker-*.log`,
    );

    const completed = jobFolder([]);
    writeFileSync(
      join(completed.collectDir, "outcome.json"),
      JSON.stringify({
        run_id: "r1",
        ranks: [rank(0, { result: base64(JSON.stringify(result)) }), rank(1)],
        mpi: mpi(0, "ran under mpirun, which exited with code 0"),
      }),
    );
    expect(readOutcome(completed, since).status).toBe("ok");
    expect(readdirSync(completed.collectDir).sort()).toEqual([
      "hostfile",
      "mpirun.out",
      "mpirun.sh",
      "outcome.json",
      "result.json",
      "worker-0.log",
      "worker-1.log",
    ]);
    expect(readFileSync(join(completed.collectDir, "mpirun.sh"), "utf8")).toBe(
      "#!/bin/bash\nexec mpirun --hostfile h\n",
    );
  });
});

describe("the node a job loses on purpose (train --fail-node)", () => {
  it.each([
    [["--model", "small", "--fail-node", "2"], 2],
    [["--fail-node=1", "--min-nodes", "1"], 1],
    [["--model", "small"], undefined],
    [["--fail-node", "0"], undefined],
    [["--fail-node"], undefined],
  ] as const)("reads it from the worker arguments %j", (args, expected) => {
    expect(plannedLostNode(args)).toBe(expected);
  });

  it("writes the run's files in place of links planted at their names, never through them (a results folder others can write)", () => {
    const request = jobFolder([]);
    writeFileSync(
      join(request.collectDir, "outcome.json"),
      JSON.stringify({
        run_id: "r1",
        ranks: [rank(0, { result: base64(JSON.stringify(result)) }), rank(1)],
        mpi: {
          exit_code: 0,
          timed_out: false,
          nodes: ["t-node-0"],
          hostfile: "h\n",
          description: "ran",
          output: "o\n",
          job_script: "s\n",
        },
      }),
    );
    const precious = join(mkdtempSync(join(tmpdir(), "ringlab-precious-")), "precious");
    writeFileSync(precious, "do not overwrite\n");
    const names = ["worker-0.log", "worker-1.log", "result.json", "mpirun.out", "hostfile", "mpirun.sh"];
    for (const name of names) symlinkSync(precious, join(request.collectDir, name));
    expect(readOutcome(request, since).status).toBe("ok");
    expect(readFileSync(precious, "utf8")).toBe("do not overwrite\n");
    for (const name of names) expect(lstatSync(join(request.collectDir, name)).isSymbolicLink(), name).toBe(false);
  });
});

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { validateCampaign } from "../../src/config/schema.ts";
import { LAUNCHER_NAMES, LAUNCHERS, launchersWithSetup } from "../../src/launchers/index.ts";
import { configuredLaunchers, isConfiguredFor, loadRecord, type TestbedRecord } from "../../src/testbed/record.ts";

const ROLES = join(import.meta.dirname, "..", "..", "ansible", "roles");

describe("the launcher table (src/launchers/)", () => {
  it("has a module for every name a campaign or `ringlab run` accepts, each with the role that runs its jobs", () => {
    expect(Object.keys(LAUNCHERS).sort()).toEqual([...LAUNCHER_NAMES].sort());
    for (const name of LAUNCHER_NAMES) {
      const launcher = LAUNCHERS[name];
      expect(launcher.name).toBe(name);
      // run.yml includes tasks/job.yml of the launcher's role; site.yml its tasks/main.yml when it has a setup.
      expect(existsSync(join(ROLES, launcher.role, "tasks", "job.yml")), `${launcher.role}/tasks/job.yml`).toBe(true);
      if (launcher.setup !== undefined) expect(existsSync(join(ROLES, launcher.role, "tasks", "main.yml"))).toBe(true);
    }
  });

  it("is the campaign schema's list of launchers", () => {
    const campaign = (launcher: string) => ({
      testbed: { target: "local", name: "t", nodes: 2 },
      campaign: { matrix: { nodes: [2], model: ["tiny"], batchSize: [8], bandwidth: ["1gbit"] }, launcher },
    });
    for (const name of LAUNCHER_NAMES) expect(validateCampaign(campaign(name)).ok, name).toBe(true);
    expect(validateCampaign(campaign("no-such-launcher")).ok).toBe(false);
  });

  it("cancels through every launcher role's tasks/cancel.yml, and only launchers' (stop-workers.yml includes each)", () => {
    const cancelling = readdirSync(ROLES).filter((role) => existsSync(join(ROLES, role, "tasks", "cancel.yml")));
    expect(
      cancelling.every((role) => Object.values(LAUNCHERS).some((launcher) => launcher.role === role)),
      cancelling.join(", "),
    ).toBe(true);
    const stop = readFileSync(join(ROLES, "..", "stop-workers.yml"), "utf8");
    const included = [...stop.matchAll(/name: (\S+)\n\s+tasks_from: cancel\.yml/g)].map((match) => match[1]);
    expect(included.sort()).toEqual(cancelling.sort());
  });

  it("hands the runner a Slurm job's script and Slurm's account to keep beside the logs, and explains a job that did not complete", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-launcher-"));
    const slurm = {
      state: "TIMEOUT",
      description: "ran as Slurm job 7, which ended TIMEOUT",
      batch_log: "CANCELLED\n",
    };
    const read = LAUNCHERS.slurm.readOutcome!({ ranks: [], slurm, job_script: "#!/bin/bash\n" }, dir)!;
    expect(read.files).toEqual({ "job.sbatch": "#!/bin/bash\n", "slurm.out": "CANCELLED\n" });
    // A job script alone is kept too (the job never reached Slurm's queue).
    expect(LAUNCHERS.slurm.readOutcome!({ ranks: [], job_script: "#!/bin/bash\n" }, dir)).toEqual({
      files: { "job.sbatch": "#!/bin/bash\n" },
    });
    expect(read.failure!(["n-0"])).toBe(
      `n-0: the run ran as Slurm job 7, which ended TIMEOUT; Slurm's output: ${dir}/slurm.out`,
    );
    expect(read.failure!([])).toBeUndefined();
    expect(
      LAUNCHERS.slurm.readOutcome!({ ranks: [] }, mkdtempSync(join(tmpdir(), "ringlab-launcher-"))),
    ).toBeUndefined();
    expect(LAUNCHERS.slurm.refuses!(["--fail-node=1"])?.message).toBe("--fail-node runs with --launcher ansible only");
    expect(LAUNCHERS.ansible.refuses).toBeUndefined();
    expect(launchersWithSetup().map((launcher) => launcher.name)).toEqual(["slurm", "mpi"]);
  });

  it("hands the runner mpirun's command, hostfile and output to keep beside the logs, and explains a job mpirun ended in its words", () => {
    const dir = mkdtempSync(join(tmpdir(), "ringlab-launcher-"));
    const description =
      "ran under mpirun, which exited with code 3; rank 1 (n-1) was the first to fail, with exit code 3";
    const mpi = {
      exit_code: 3,
      timed_out: false,
      description,
      output: "[1,1]<stdout>:boom\n",
      hostfile: "10.0.0.10 slots=1\n",
      job_script: "#!/bin/bash\nexec mpirun\n",
    };
    const read = LAUNCHERS.mpi.readOutcome!({ ranks: [], mpi }, dir)!;
    expect(read.files).toEqual({
      "mpirun.sh": "#!/bin/bash\nexec mpirun\n",
      hostfile: "10.0.0.10 slots=1\n",
      "mpirun.out": "[1,1]<stdout>:boom\n",
    });
    // The launcher writes nothing itself: the runner does, never through a link (test/runner/outcome.test.ts).
    expect(readdirSync(dir)).toEqual([]);
    expect(read.failure!(["n-0", "n-1"])).toBe(`n-0, n-1: the run ${description}; mpirun's output: ${dir}/mpirun.out`);
    expect(read.failure!([])).toBeUndefined();
    // Exited 0: a head without a result is the runner's to word, as with every launcher.
    expect(
      LAUNCHERS.mpi.readOutcome!({ ranks: [], mpi: { ...mpi, exit_code: 0 } }, dir)!.failure!(["n-0"]),
    ).toBeUndefined();
    expect(
      LAUNCHERS.mpi.readOutcome!({ ranks: [], mpi: { ...mpi, exit_code: 0, timed_out: true } }, dir)!.failure!(["n-0"]),
    ).toMatch(/^n-0: the run /);
    // Another launcher's outcome is not mpirun's, and mpirun's script is not taken for Slurm's job.sbatch.
    const other = mkdtempSync(join(tmpdir(), "ringlab-launcher-"));
    expect(LAUNCHERS.mpi.readOutcome!({ ranks: [], job_script: "#!/bin/bash\n" }, other)).toBeUndefined();
    expect(LAUNCHERS.slurm.readOutcome!({ ranks: [], mpi }, other)).toBeUndefined();
    expect(readdirSync(other)).toEqual([]);
    expect(LAUNCHERS.mpi.refuses!(["--fail-node", "1"])?.message).toBe("--fail-node runs with --launcher ansible only");
  });
});

describe("the launchers a testbed record says it is configured for", () => {
  const record = (fields: Record<string, unknown>): TestbedRecord => {
    const state = mkdtempSync(join(tmpdir(), "ringlab-state-"));
    mkdirSync(join(state, "testbeds", "lab"), { recursive: true });
    writeFileSync(
      join(state, "testbeds", "lab", "testbed.json"),
      JSON.stringify({
        schema: "ringlab.testbed/v2",
        name: "lab",
        target: "local",
        inventory: "/i",
        sharedDir: "/s",
        nodes: [],
        createdAt: "2026-01-01T00:00:00Z",
        ...fields,
      }),
    );
    return loadRecord(state, "lab")!;
  };

  it("are the default alone unless configured for more, and a record of before the table (slurm: true) still reads", () => {
    expect(configuredLaunchers(record({}))).toEqual(["ansible"]);
    expect(isConfiguredFor(record({}), "slurm")).toBe(false);
    expect(isConfiguredFor(record({}), "ansible")).toBe(true);
    expect(configuredLaunchers(record({ launchers: ["ansible", "slurm"] }))).toEqual(["ansible", "slurm"]);
    const older = record({ slurm: true });
    expect(configuredLaunchers(older)).toEqual(["ansible", "slurm"]);
    expect("slurm" in older).toBe(false);
    expect(configuredLaunchers(record({ slurm: false }))).toEqual(["ansible"]);
    expect(() => record({ launchers: ["no-such-launcher"] })).toThrow(/not a ringlab\.testbed\/v2 testbed record/);
  });
});

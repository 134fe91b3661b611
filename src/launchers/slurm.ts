/**
 * Each job one sbatch job on a testbed that site.yml made a Slurm cluster (ansible/roles/slurm): the job script is
 * kept with the run's logs (job.sbatch, re-runnable with `sbatch job.sbatch`), with what Slurm said (slurm.out).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import type { Launcher } from "./launcher.ts";
import { refuseNodeLoss } from "./node-loss.ts";

/** What ansible/roles/slurm/files/ringlab_slurm.py adds to outcome.json: the job script and how Slurm ended the job. */
const SlurmOutcome = z.object({
  slurm: z.object({ state: z.string(), description: z.string(), batch_log: z.string() }),
  job_script: z.string().optional(),
});

export const slurmLauncher: Launcher = {
  name: "slurm",
  summary: "one sbatch job (the testbed configured with --slurm)",
  role: "slurm",
  setup: {
    option: "slurm",
    description:
      "also make it a Slurm cluster (munge, slurmctld on the head, slurmd everywhere), for `ringlab run --launcher slurm`",
    makes: "a Slurm cluster",
  },
  refuses: refuseNodeLoss("Slurm's srun (--kill-on-bad-exit) ends every node's task when the lost node's is killed"),
  reportNote: "runs as Slurm jobs",
  readOutcome(outcome, collectDir) {
    const parsed = SlurmOutcome.safeParse(outcome);
    // A job script alone is kept too (the job never reached Slurm's queue).
    const script: Record<string, string> =
      typeof outcome["job_script"] === "string" ? { "job.sbatch": outcome["job_script"] } : {};
    if (!parsed.success) return Object.keys(script).length === 0 ? undefined : { files: script };
    const { slurm } = parsed.data;
    return {
      files: { ...script, "slurm.out": slurm.batch_log },
      failure: (hosts) =>
        slurm.state === "COMPLETED" || hosts.length === 0
          ? undefined
          : `${hosts.join(", ")}: the run ${slurm.description}; Slurm's output: ${collectDir}/slurm.out`,
    };
  },
  async status(ctx, record) {
    // Loaded here: the table stays free of what runs Ansible (the report reads it too).
    const { runPlaybook } = await import("../testbed/playbook.ts");
    const dir = mkdtempSync(join(tmpdir(), "ringlab-slurm-status-"));
    try {
      const file = join(dir, "status.txt");
      await ctx.reporter.step("ask Slurm (ansible/slurm-status.yml)", (detail) =>
        runPlaybook(ctx, record, "slurm-status.yml", { extraVars: { slurm_status_file: file }, onTask: detail }),
      );
      return `Slurm (launcher slurm):\n${readFileSync(file, "utf8")}`;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

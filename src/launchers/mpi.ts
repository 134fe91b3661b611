/**
 * Each job one mpirun (Open MPI) on the head, which starts ringlab-mpi on every node of the job over the nodes' own SSH
 * (ansible/roles/mpi): the command is kept with the run's logs (mpirun.sh, re-runnable on the head with
 * `bash mpirun.sh` beside its hostfile), with what mpirun said (mpirun.out).
 */
import { z } from "zod";
import type { Launcher } from "./launcher.ts";
import { refuseNodeLoss } from "./node-loss.ts";

/**
 * What ansible/roles/mpi/files/ringlab_mpi.py adds to outcome.json: the job script, its hostfile and how mpirun ended.
 */
const MpiOutcome = z.object({
  mpi: z.object({
    exit_code: z.int(),
    timed_out: z.boolean(),
    description: z.string(),
    output: z.string(),
    hostfile: z.string(),
    job_script: z.string().optional(),
  }),
});

export const mpiLauncher: Launcher = {
  name: "mpi",
  summary: "one mpirun on the head, one process per node over SSH (the testbed configured with --mpi)",
  role: "mpi",
  setup: {
    option: "mpi",
    description: "also install Open MPI and let root SSH between the nodes, for `ringlab run --launcher mpi`",
    makes: "an Open MPI cluster",
  },
  refuses: refuseNodeLoss("mpirun ends every node's process when one exits with an error (the lost node's is killed)"),
  reportNote: "runs under mpirun",
  readOutcome(outcome, collectDir) {
    const parsed = MpiOutcome.safeParse(outcome);
    if (!parsed.success) return undefined;
    const { mpi } = parsed.data;
    return {
      files: {
        ...(mpi.job_script === undefined ? {} : { "mpirun.sh": mpi.job_script }),
        hostfile: mpi.hostfile,
        "mpirun.out": mpi.output,
      },
      failure: (hosts) =>
        (mpi.exit_code === 0 && !mpi.timed_out) || hosts.length === 0
          ? undefined
          : `${hosts.join(", ")}: the run ${mpi.description}; mpirun's output: ${collectDir}/mpirun.out`,
    };
  },
};

#!/usr/bin/python3
"""ringlab's side of a Slurm job, installed on every node as /usr/local/bin/ringlab-slurm by the slurm role.

  ringlab-slurm worker --run-id ID [--cpus C] [--procs-per-node P] -- JOB [ARGS...]
      One task of a job's srun step (one per node): runs the worker container on this node until it exits and
      leaves with its exit code. The rendezvous comes from Slurm's environment (SLURM_NNODES, SLURM_NODEID,
      SLURM_JOB_NODELIST: node 0 of the job is the head); what the container needs on this node (image, network,
      shared directory, interface) from /etc/ringlab/slurm-worker.json. Slurm stopping the step (time limit,
      scancel) removes the container.
  ringlab-slurm submit SCRIPT --run-id ID --nodes N --result FILE --timeout SECONDS
                [--script-from-stdin] [--partition P]
      (With --script-from-stdin, make SCRIPT's folder afresh and write SCRIPT from stdin; with --partition, check
      that P has N nodes answering.) sbatch SCRIPT, wait until the job has ended, and print how it ended as one JSON
      document in ringlab's outcome.json format: every rank's log, the head's result (base64), the job script, and
      Slurm's job state, reason and exit code. Interrupted, or still not ended SECONDS after it started, the job is
      cancelled.

Where things are: the job script and Slurm's output (slurm-<job id>.out, which holds every rank's output, each line
labelled with its rank by `srun --label`) are in SCRIPT's folder, which is root's alone and on the node's own disk
(the slurm role's slurm_job_root); the job's batch step runs on the head (the script asks for it with --nodelist),
so the output is written where `submit` reads it. Only the worker's result is on the shared storage, which other
users may be able to write to: it is read only if it is a regular file, never through a link.

What it shares with ringlab-mpi (starting the worker container, the job folder, reading the result) is in
/usr/local/lib/ringlab/ringlab_launcher_lib.py (roles/worker/files). Only Python's standard library and
python3-docker (the nodes have both for Ansible).
"""

import argparse
import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

# What ringlab-mpi shares with it (the worker container, the job folder, the result file), installed beside it by
# roles/worker/tasks/launcher-node.yml.
LIB_DIR = "/usr/local/lib/ringlab"
if LIB_DIR not in sys.path:
    sys.path.insert(1, LIB_DIR)
import ringlab_launcher_lib as lib  # noqa: E402

CONFIG_FILE = "/etc/ringlab/slurm-worker.json"
# Job states after which nothing more happens (squeue/scontrol man pages); COMPLETING is not one of them.
FINAL_STATES = {
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "TIMEOUT",
}
POLL_SECONDS = 0.2
# After scancel: slurm.conf's KillWait (5 s) and Slurm's own bookkeeping.
CANCEL_WAIT_SECONDS = 60


def parse_scontrol_record(line):
    """`scontrol show job -o` prints one job as Key=Value words; values of the fields ringlab reads have no spaces."""
    fields = {}
    for word in line.split():
        key, sep, value = word.partition("=")
        if sep:
            fields.setdefault(key, value)
    return fields


def job_state(fields):
    """JobState=CANCELLED may carry a suffix (`CANCELLED+`, `CANCELLED by 0` is split off by the spaces)."""
    return fields.get("JobState", "UNKNOWN").rstrip("+")


def describe_job(job_id, fields):
    """One sentence: how the job ended, in Slurm's own words."""
    state = job_state(fields)
    text = f"ran as Slurm job {job_id}, which ended {state}"
    reason = fields.get("Reason", "None")
    details = []
    if reason not in ("None", "(null)", ""):
        details.append(f"reason: {reason}")
    if fields.get("ExitCode") not in (None, "0:0"):
        details.append(f"exit code {fields['ExitCode']} (code:signal)")
    return f"{text} ({', '.join(details)})" if details else text


# `srun --label` puts "<task>: " before every line of a task's output (padded to the width of the largest task id).
_LABELLED_LINE = re.compile(r"^ *(\d+): ?(.*)$", re.DOTALL)


def split_labelled_output(text, tasks):
    """Each task's lines from the batch output, without their labels: {task: text}. Lines of Slurm's own (slurmstepd
    saying the job was cancelled, srun's errors) carry no label and stay in the batch output only."""
    logs = {task: [] for task in range(tasks)}
    # Lines end at "\n" only: a progress line's "\r" (or any other character splitlines() would take) stays inside it.
    for line in re.findall(r"[^\n]*\n|[^\n]+$", text):
        matched = _LABELLED_LINE.match(line)
        if matched and int(matched.group(1)) in logs:
            logs[int(matched.group(1))].append(matched.group(2))
    return {task: "".join(lines) for task, lines in logs.items()}


def build_outcome(run_id, job_id, fields, nodes, hosts, read_text, read_result):
    """outcome.json (as ansible/roles/worker/tasks/job.yml writes it, plus `slurm` and `job_script`).

    `read_text(path)` returns a file's text or None when it cannot be read; `read_result(path)` returns (text, None)
    or (None, why not). Every rank is ok when the job COMPLETED (exit 0 on every node) and, on the head, the result
    could be read.
    """
    batch_file = os.path.join(fields["_job_dir"], f"slurm-{job_id}.out")
    result_file = fields["_result_file"]
    state = job_state(fields)
    completed = state == "COMPLETED" and fields.get("ExitCode", "0:0") == "0:0"
    result, result_error = read_result(result_file) if completed else (None, f"{result_file} was not read")
    batch_log = read_text(batch_file)
    if batch_log is None:
        batch_host = fields.get("BatchHost", "")
        where = f" (the batch step ran on {batch_host})" if batch_host else ""
        missing = f"(no output: {batch_file} could not be read{where})\n"
        rank_logs = {rank: missing for rank in range(nodes)}
    else:
        rank_logs = split_labelled_output(batch_log, nodes)
    ranks = []
    for rank in range(nodes):
        head = rank == 0
        ranks.append(
            {
                "run_id": run_id,
                "rank": rank,
                "host": hosts[rank] if rank < len(hosts) else f"rank {rank}",
                "ok": completed and (not head or result is not None),
                "outcome": describe_job(job_id, fields) if not completed else "exited with code 0",
                "log": rank_logs[rank],
                "result": base64.b64encode(result.encode()).decode() if head and result is not None else "",
                "result_error": "" if not head or result is not None else result_error,
                "result_file": result_file if head else "",
            }
        )
    return {
        "run_id": run_id,
        "ranks": ranks,
        "slurm": {
            "job_id": job_id,
            "state": state,
            "reason": fields.get("Reason", ""),
            "exit_code": fields.get("ExitCode", ""),
            "nodes": hosts,
            "description": describe_job(job_id, fields),
            "batch_log": batch_log or "",
        },
    }


_read_text = lib.read_text
read_regular_file = lib.read_regular_file
write_script = lib.write_script
CONFIGURE_HINT = "the slurm role makes it: run `ringlab configure --slurm`"


def private_folder_problem(path):
    return lib.private_folder_problem(path, CONFIGURE_HINT)


def make_job_folder(folder):
    """The run's folder under slurm_job_root, made afresh (mode 0700)."""
    lib.make_job_folder(folder, "ringlab-slurm", CONFIGURE_HINT)


def _scontrol_job(job_id):
    done = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, check=False)
    return parse_scontrol_record(done.stdout) if done.returncode == 0 else None


def _hostnames(nodelist):
    if nodelist in ("", "(null)"):
        return []
    done = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, check=True)
    return done.stdout.split()


def answering_nodes(partition):
    """Nodes of the partition that slurmctld hears from (sinfo --responding)."""
    done = subprocess.run(
        ["sinfo", "--noheader", "--responding", "--partition", partition, "--format", "%D"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"sinfo failed: {done.stderr.strip()} (is slurmctld running on the head?)")
    return sum(int(count) for count in done.stdout.split())


def wait_for_end(job_id, deadline):
    """The job's fields once it is in a final state, or the last ones seen at the deadline (None: never seen)."""
    fields = None
    while True:
        fields = _scontrol_job(job_id) or fields
        if fields is not None and job_state(fields) in FINAL_STATES:
            return fields
        if time.monotonic() > deadline:
            return fields
        time.sleep(POLL_SECONDS)


def submit(args):
    if args.script_from_stdin:
        make_job_folder(os.path.dirname(args.script))
        script = sys.stdin.read()
        write_script(args.script, lib.take_secret_line(script, "ringlab-slurm") if args.secret_first else script)
    if args.partition is not None:
        answering = answering_nodes(args.partition)
        if answering < args.nodes:
            sys.stderr.write(
                f"the job needs {args.nodes} nodes, but partition {args.partition} has {answering} answering "
                "(sinfo shows which are down)\n"
            )
            return 2
    submitted = subprocess.run(["sbatch", "--parsable", args.script], capture_output=True, text=True, check=False)
    if submitted.returncode != 0:
        sys.stderr.write(f"sbatch {args.script} failed: {submitted.stderr.strip()}\n")
        return 1
    job_id = submitted.stdout.strip().split(";")[0]

    def cancel(signum, _frame):
        subprocess.run(["scancel", job_id], check=False)
        sys.exit(128 + signum)

    # SIGHUP: the SSH connection of an interrupted ansible-playbook went away.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, cancel)
    fields = wait_for_end(job_id, time.monotonic() + args.timeout)
    if fields is None or job_state(fields) not in FINAL_STATES:
        # Still not over: cancelled, and waited for until its steps (and so its containers) are gone.
        subprocess.run(["scancel", job_id], check=False)
        fields = dict(
            wait_for_end(job_id, time.monotonic() + CANCEL_WAIT_SECONDS) or fields or {},
            JobState="CANCELLED",
            Reason=f"not_ended_within_{args.timeout:g}_s",
        )
    fields["_job_dir"] = os.path.dirname(args.script)
    fields["_result_file"] = args.result
    outcome = build_outcome(
        args.run_id, job_id, fields, args.nodes, _hostnames(fields.get("NodeList", "")), _read_text, read_regular_file
    )
    outcome["job_script"] = _read_text(args.script) or ""
    json.dump(outcome, sys.stdout)
    return 0


def head_address(nodelist, resolve=socket.gethostbyname, hostnames=_hostnames):
    """The address of the job's node 0, which hosts torchrun's rendezvous."""
    names = hostnames(nodelist)
    if not names:
        raise SystemExit(f"ringlab-slurm: SLURM_JOB_NODELIST {nodelist!r} names no node")
    return resolve(names[0])


def worker_environment(config, env, run_id, procs_per_node, cpus, head_addr):
    """The worker container's environment: the node's settings, then the job's placement from Slurm."""
    return lib.container_environment(
        config,
        {
            "RINGLAB_NUM_NODES": env["SLURM_NNODES"],
            "RINGLAB_NODE_RANK": env["SLURM_NODEID"],
            "RINGLAB_HEAD_ADDR": head_addr,
            "RINGLAB_SLURM_JOB_ID": env.get("SLURM_JOB_ID", ""),
        },
        run_id,
        procs_per_node,
        cpus,
        env.get("RINGLAB_RDZV_SECRET"),
    )


write_whole_lines = lib.write_whole_lines


def worker(args):
    config = lib.load_config(CONFIG_FILE)
    env = os.environ
    missing = [name for name in ("SLURM_NNODES", "SLURM_NODEID", "SLURM_JOB_NODELIST") if not env.get(name)]
    if missing:
        raise SystemExit(f"ringlab-slurm worker runs as a task of a Slurm job step (srun); {', '.join(missing)} unset")
    environment = worker_environment(
        config, env, args.run_id, args.procs_per_node, args.cpus, head_address(env["SLURM_JOB_NODELIST"])
    )
    # Slurm ends a step with SIGTERM (then SIGKILL after KillWait): the container is removed on it.
    return lib.run_worker_container(config, args.run_id, args.job, args.job_args, args.cpus, environment)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="ringlab-slurm", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("worker", help="run this node's worker container (a task of srun)")
    run.add_argument("--run-id", required=True)
    run.add_argument("--cpus", type=float, default=None, help="CPU cores of the container (Docker's --cpus)")
    run.add_argument("--procs-per-node", type=int, default=None, help="worker processes on this node")
    run.add_argument("job", choices=["train", "allreduce"])
    run.add_argument("job_args", nargs=argparse.REMAINDER)
    sub = commands.add_parser("submit", help="sbatch a job script, wait for it, print its outcome (JSON)")
    sub.add_argument("script")
    sub.add_argument("--run-id", required=True)
    sub.add_argument("--nodes", type=int, required=True)
    sub.add_argument("--result", required=True, help="the result file the head's worker writes")
    sub.add_argument(
        "--timeout", type=float, required=True, help="cancel the job if it has not ended by then (seconds)"
    )
    sub.add_argument(
        "--script-from-stdin",
        action="store_true",
        help="make SCRIPT's folder afresh (its parent must be root's alone) and write SCRIPT from stdin first",
    )
    sub.add_argument(
        "--secret-first",
        action="store_true",
        help="stdin's first line is the run's rendezvous secret, for the job's environment (not the script)",
    )
    sub.add_argument("--partition", default=None, help="check first that this partition has --nodes nodes answering")
    args = parser.parse_args(argv)
    if args.command == "worker" and args.job_args[:1] == ["--"]:
        args.job_args = args.job_args[1:]
    return args


def main(argv=None):
    args = parse_args(argv)
    return worker(args) if args.command == "worker" else submit(args)


if __name__ == "__main__":
    sys.exit(main())

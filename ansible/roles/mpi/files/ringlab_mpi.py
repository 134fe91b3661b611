#!/usr/bin/python3
"""ringlab's side of a job that Open MPI's mpirun starts, installed on every node as /usr/local/bin/ringlab-mpi by the
mpi role.

  ringlab-mpi worker --run-id ID --head-addr ADDRESS [--cpus C] [--procs-per-node P] -- JOB [ARGS...]
      One process of the job (mpirun starts one per node: the hostfile gives every node slots=1): runs the worker
      container on this node until it exits and leaves with its exit code. The node's place in the job comes from
      Open MPI's environment (OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK; OMPI_COMM_WORLD_LOCAL_RANK must be 0), the
      rendezvous address from --head-addr (rank 0's host, the first line of the hostfile); what the container needs
      on this node (image, network, shared directory, interface) from /etc/ringlab/mpi-worker.json. mpirun ending the
      job (SIGTERM: a rank failed, the run timed out, it was cancelled) removes the container.
  ringlab-mpi launch SCRIPT --run-id ID --result FILE --timeout SECONDS --nodes NAME=ADDRESS [NAME=ADDRESS...]
      Make SCRIPT's folder afresh, write SCRIPT (mpirun.sh) from stdin and the hostfile beside it (one line per node
      in the order given, the head first, slots=1), run SCRIPT with its output in mpirun.out beside it, and print how
      the job ended as one JSON document in ringlab's outcome.json format: every rank's log (from mpirun
      --tag-output's labels), the head's result (base64), and under `mpi` the job script, the hostfile, mpirun's
      exit code, its whole output and its own words.
      Interrupted (SIGTERM, SIGINT, SIGHUP), or still running SECONDS after it started, mpirun is sent SIGTERM (it
      sends it on to every rank) and, STOP_GRACE_SECONDS later, its process group SIGKILL.
  ringlab-mpi cancel
      Stop every `ringlab-mpi launch` on this node (each stops its mpirun as when interrupted) and every mpirun of a
      hostfile under /var/lib/ringlab-mpi whose launch is gone; prints "cancelled" when there was one.
      (stop-workers.yml, on the head.)

Where things are: SCRIPT, the hostfile and mpirun.out are in SCRIPT's folder, which is root's alone and on the
head's own disk (the mpi role's mpi_job_root), never on the shared storage. Only the worker's result is on the
shared storage, which other users may be able to write to: it is read only if it is a regular file, never through a
link. What it shares with ringlab-slurm (starting the worker container, the job folder, reading the result) is in
/usr/local/lib/ringlab/ringlab_launcher_lib.py (roles/worker/files). Only Python's standard library and
python3-docker (the nodes have both for Ansible).
"""

import argparse
import base64
import json
import os
import re
import signal
import subprocess
import sys
import time

LIB_DIR = "/usr/local/lib/ringlab"
if LIB_DIR not in sys.path:
    sys.path.insert(1, LIB_DIR)
import ringlab_launcher_lib as lib  # noqa: E402

CONFIG_FILE = "/etc/ringlab/mpi-worker.json"
JOB_ROOT = "/var/lib/ringlab-mpi"
CONFIGURE_HINT = "the mpi role makes it: run `ringlab configure --mpi`"
# After SIGTERM, mpirun sends SIGTERM to every rank (each removes its container on it), SIGKILL mpi_kill_wait (3) s
# later, and exits about twice that long after the SIGTERM: what is still there after this long is killed.
STOP_GRACE_SECONDS = 30
# A node's name (the inventory's) and address (the hostfile's): nothing a shell or the hostfile's syntax reads more in.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ADDRESS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:-]*$")
# The most of mpirun's words an outcome quotes (its whole output is kept in mpirun.out).
WORDS_MAX = 400


# --- one rank: ringlab-mpi worker ---


def placement(env, head_addr):
    """The job's placement of this node, from Open MPI's environment: RINGLAB_NUM_NODES, RINGLAB_NODE_RANK and
    RINGLAB_HEAD_ADDR for the worker container."""
    names = ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK")
    missing = [name for name in names if not env.get(name)]
    if missing:
        raise SystemExit(f"ringlab-mpi worker runs as a process that mpirun starts; {', '.join(missing)} unset")
    size, rank, local_rank = (env[name] for name in names)
    if not (size.isdigit() and rank.isdigit() and int(rank) < int(size)):
        raise SystemExit(f"ringlab-mpi worker: rank {rank!r} of {size!r} processes is not a place in the job")
    if local_rank != "0":
        # Two ranks on one node would start the same container (one per node, and torchrun its processes).
        raise SystemExit(
            f"ringlab-mpi worker: rank {rank} is process {local_rank} on its node, but every node runs one "
            "(the hostfile gives each slots=1)"
        )
    return {"RINGLAB_NUM_NODES": size, "RINGLAB_NODE_RANK": rank, "RINGLAB_HEAD_ADDR": head_addr}


def mpi_environment(env):
    """Open MPI's and PMIx's settings for this rank, for the container: a worker that sums through Open MPI
    (`allreduce --library mpi`) calls MPI_Init there and reaches this node's Open MPI daemon at the address they
    name (PMIx on the node's loopback, which the container shares). PMIx's shared-memory store lives in the daemon's
    session folder, outside the container: its `hash` store asks the daemon instead. Harmless to a worker that does not
    use MPI (torch ignores them)."""
    passed = {name: value for name, value in env.items() if name.startswith(("OMPI_", "PMIX_", "OPAL_"))}
    passed["PMIX_MCA_gds"] = "hash"
    return passed


def worker(args):
    config = lib.load_config(CONFIG_FILE)
    environment = lib.container_environment(
        config,
        placement(os.environ, args.head_addr),
        args.run_id,
        args.procs_per_node,
        args.cpus,
        os.environ.get("RINGLAB_RDZV_SECRET"),
    )
    environment.update(mpi_environment(os.environ))
    return lib.run_worker_container(config, args.run_id, args.job, args.job_args, args.cpus, environment)


# --- the job, on the head: ringlab-mpi launch ---


def parse_node(text):
    """NAME=ADDRESS: the node's inventory name (for the outcome) and the address mpirun reaches it at (the hostfile)."""
    name, sep, address = text.partition("=")
    if not sep or not _NAME.match(name) or not _ADDRESS.match(address):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=ADDRESS (a node name and its address)")
    return name, address


def hostfile_text(addresses):
    """One line per node, in rank order (mpirun places rank i on line i: one slot each)."""
    for address in addresses:
        if not _ADDRESS.match(address):
            raise ValueError(f"not a host address: {address!r}")
    return "".join(f"{address} slots=1\n" for address in addresses)


# `mpirun --tag-output` puts "[<job>,<rank>]<stdout>:" (or <stderr>) before every piece of a rank's output it
# forwards: at the start of each line, and wherever a piece of another rank's (or of the same rank's other stream)
# interrupted a line that came in parts.
_TAG = re.compile(r"\[[^,\]\s]+,(\d+)\]<(stdout|stderr|stddiag)>:")


def split_tagged_output(text, ranks):
    """Each rank's output from mpirun's, without the tags ({rank: text}), and mpirun's own lines (its messages and
    the remote daemons', which carry no tag). A line that came in parts is put together again (per rank and stream)
    and takes its place in the rank's log when its end arrives."""
    logs = {rank: [] for rank in range(ranks)}
    pending = {}
    own = []
    # Lines end at "\n" only: a progress line's "\r" stays inside it.
    for line in re.findall(r"[^\n]*\n|[^\n]+$", text):
        tags = list(_TAG.finditer(line))
        if not tags or tags[0].start() != 0:
            own.append(line)
            continue
        for tag, following in zip(tags, tags[1:] + [None], strict=True):
            rank, stream = int(tag.group(1)), tag.group(2)
            piece = line[tag.end() : following.start() if following else len(line)]
            if rank not in logs:
                own.append(piece)
                continue
            pending[rank, stream] = pending.get((rank, stream), "") + piece
            if piece.endswith("\n"):
                logs[rank].append(pending.pop((rank, stream)))
    # What never got its end (the last piece of a rank that was killed).
    for (rank, _stream), rest in pending.items():
        logs[rank].append(rest)
    return {rank: "".join(pieces) for rank, pieces in logs.items()}, "".join(own)


def mpirun_words(own):
    """mpirun's first message in its own words, on one line ("" when it said nothing): the paragraph after its first
    rule of dashes, or its first lines."""
    paragraph = []
    for line in own.splitlines():
        text = line.strip()
        if not text or set(text) == {"-"}:
            if paragraph:
                break
            continue
        paragraph.append(text)
    words = " ".join(" ".join(paragraph).split())
    return words if len(words) <= WORDS_MAX else words[: WORDS_MAX - 3] + "..."


_FIRST_FAILED = re.compile(r"Process name:\s*\[\[[^\]]*,\d+\],(\d+)\]\s*\n\s*Exit code:\s*(-?\d+)")


def first_failed_rank(own):
    """(rank, exit code) of the process mpirun names as the first to exit non-zero, or None."""
    matched = _FIRST_FAILED.search(own)
    return (int(matched.group(1)), int(matched.group(2))) if matched else None


def describe_run(exit_code, timed_out, timeout, own, hosts):
    """One sentence: how the job ended, in mpirun's own words where it said something."""
    if timed_out:
        return f"ran under mpirun, which was stopped after {timeout:g} s (the run's time limit)"
    if exit_code < 0:
        text = f"ran under mpirun, which was killed by signal {-exit_code}"
    else:
        text = f"ran under mpirun, which exited with code {exit_code}"
    failed = first_failed_rank(own)
    if failed is not None:
        rank, code = failed
        host = hosts[rank] if rank < len(hosts) else f"rank {rank}"
        text += f"; rank {rank} ({host}) was the first to fail, with exit code {code}"
    words = mpirun_words(own)
    return f"{text} (mpirun: {words})" if words else text


def build_outcome(run_id, hosts, exit_code, timed_out, timeout, output, result_file, read_result, hostfile):
    """outcome.json (as ansible/roles/worker/tasks/job.yml writes it, plus `mpi`; `launch` adds mpi.job_script).

    `output` is mpirun.out (None: it could not be read), `read_result(path)` returns (text, None) or (None, why
    not). Every rank is ok when mpirun exited 0 (every process exited 0) and, on the head, the result could be read.
    """
    nodes = len(hosts)
    completed = exit_code == 0 and not timed_out
    result, result_error = read_result(result_file) if completed else (None, f"{result_file} was not read")
    if output is None:
        rank_logs, own = {rank: "(no output: mpirun.out could not be read)\n" for rank in range(nodes)}, ""
    else:
        rank_logs, own = split_tagged_output(output, nodes)
    description = describe_run(exit_code, timed_out, timeout, own, hosts)
    failed = first_failed_rank(own)
    ranks = []
    for rank in range(nodes):
        head = rank == 0
        if completed:
            how = "exited with code 0"
        elif timed_out:
            # As the Ansible launcher words it.
            how = f"timed out after {timeout:g} s and was stopped"
        elif failed is not None and failed[0] == rank:
            how = f"exited with code {failed[1]}, and mpirun ended the job"
        else:
            how = description
        ranks.append(
            {
                "run_id": run_id,
                "rank": rank,
                "host": hosts[rank],
                "ok": completed and (not head or result is not None),
                "outcome": how,
                "log": rank_logs[rank],
                "result": base64.b64encode(result.encode()).decode() if head and result is not None else "",
                "result_error": "" if not head or result is not None else result_error,
                "result_file": result_file if head else "",
            }
        )
    return {
        "run_id": run_id,
        "ranks": ranks,
        "mpi": {
            "exit_code": exit_code,
            "timed_out": timed_out,
            "nodes": list(hosts),
            "hostfile": hostfile,
            "description": description,
            "output": output or "",
        },
    }


def run_until_done(argv, cwd, output_fd, timeout, grace=STOP_GRACE_SECONDS):
    """Runs argv (the job script, whose mpirun is exec'd in its place) in a session of its own and returns (exit
    code, timed out, the signal that interrupted this process or None). Past `timeout`, or on SIGTERM, SIGINT or
    SIGHUP here, mpirun gets SIGTERM and, `grace` seconds later, its process group SIGKILL."""
    proc = subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=output_fd, stderr=subprocess.STDOUT, start_new_session=True
    )
    state = {"stopping_since": None, "signal": None}

    def stop(signum=None):
        if state["stopping_since"] is None:
            state["stopping_since"] = time.monotonic()
            try:
                proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        if signum is not None and state["signal"] is None:
            state["signal"] = signum

    # SIGHUP: the SSH connection of an interrupted ansible-playbook went away.
    handled = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    before = {signum: signal.signal(signum, lambda signum, _frame: stop(signum)) for signum in handled}
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        while True:
            try:
                code = proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if state["stopping_since"] is None and now >= deadline:
                timed_out = True
                stop()
            elif state["stopping_since"] is not None and now >= state["stopping_since"] + grace:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                code = proc.wait()
                break
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    return code, timed_out, state["signal"]


def launch(args):
    folder = os.path.dirname(args.script)
    hosts = [name for name, _ in args.nodes]
    hostfile = hostfile_text([address for _, address in args.nodes])
    lib.make_job_folder(folder, "ringlab-mpi", CONFIGURE_HINT)
    script = sys.stdin.read()
    lib.write_script(args.script, lib.take_secret_line(script, "ringlab-mpi") if args.secret_first else script)
    lib.write_script(os.path.join(folder, "hostfile"), hostfile, mode=0o600)
    output_file = os.path.join(folder, "mpirun.out")
    output_fd = os.open(output_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        exit_code, timed_out, interrupted = run_until_done(["/bin/bash", args.script], folder, output_fd, args.timeout)
    finally:
        os.close(output_fd)
    if interrupted is not None:
        return 128 + interrupted
    outcome = build_outcome(
        args.run_id,
        hosts,
        exit_code,
        timed_out,
        args.timeout,
        lib.read_text(output_file),
        args.result,
        lib.read_regular_file,
        hostfile,
    )
    # Inside `mpi`: a top-level job_script is Slurm's (src/launchers/slurm.ts saves it as job.sbatch).
    outcome["mpi"]["job_script"] = lib.read_text(args.script) or ""
    json.dump(outcome, sys.stdout)
    return 0


# --- stop-workers.yml: ringlab-mpi cancel ---


def targets(processes, job_root=JOB_ROOT):
    """The processes to stop ({pid: (parent pid, argv)} in, pids out): every `ringlab-mpi launch`, and every mpirun of
    a hostfile in a run's folder under job_root whose launch is gone. Never an mpirun whose launch is there too: the
    launch sends it SIGTERM, and a second signal makes mpirun exit at once without ending its ranks."""

    def is_launch(argv):
        return len(argv) >= 3 and os.path.basename(argv[1]) == "ringlab-mpi" and argv[2] == "launch"

    def is_our_mpirun(argv):
        if not argv or os.path.basename(argv[0]) not in ("mpirun", "mpiexec", "orterun"):
            return False
        hostfiles = [
            value
            for option, value in zip(argv, argv[1:], strict=False)
            if option in ("--hostfile", "-hostfile", "--machinefile")
        ]
        return any(os.path.dirname(os.path.dirname(path)) == job_root for path in hostfiles)

    launches = {pid for pid, (_, argv) in processes.items() if is_launch(argv)}
    orphans = {pid for pid, (parent, argv) in processes.items() if is_our_mpirun(argv) and parent not in launches}
    return sorted(launches | orphans)


def _processes():
    """{pid: (parent pid, argv)} of every process but this one."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = [part.decode("utf-8", "replace") for part in handle.read().split(b"\0") if part]
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                # "pid (comm) state ppid ...": comm may hold spaces and parentheses, the last ")" ends it.
                parent = int(handle.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        found[int(entry)] = (parent, argv)
    return found


def _running(pid):
    """Whether the process is there and not a zombie (which only waits for its parent to read its exit)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def cancel(_args):
    pids = targets(_processes())
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    # A launch gives its mpirun STOP_GRACE_SECONDS before SIGKILL.
    deadline = time.monotonic() + STOP_GRACE_SECONDS + 15
    while time.monotonic() < deadline and any(_running(pid) for pid in pids):
        time.sleep(0.2)
    # Still there: killed, with any mpirun whose launch this leaves behind.
    for pid in targets(_processes()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if pids:
        print("cancelled")
    return 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="ringlab-mpi", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("worker", help="run this node's worker container (a process mpirun starts)")
    run.add_argument("--run-id", required=True)
    run.add_argument("--head-addr", required=True, help="the address of rank 0's node (torchrun's rendezvous)")
    run.add_argument("--cpus", type=float, default=None, help="CPU cores of the container (Docker's --cpus)")
    run.add_argument("--procs-per-node", type=int, default=None, help="worker processes on this node")
    run.add_argument("job", choices=["train", "allreduce"])
    run.add_argument("job_args", nargs=argparse.REMAINDER)
    start = commands.add_parser(
        "launch", help="write mpirun.sh (stdin) and the hostfile, run it, print its outcome (JSON)"
    )
    start.add_argument("script")
    start.add_argument("--run-id", required=True)
    start.add_argument("--result", required=True, help="the result file the head's worker writes")
    start.add_argument("--timeout", type=float, required=True, help="stop mpirun if it has not ended by then (seconds)")
    start.add_argument(
        "--nodes",
        type=parse_node,
        nargs="+",
        required=True,
        metavar="NAME=ADDRESS",
        help="the job's nodes in rank order, the head first",
    )
    start.add_argument(
        "--secret-first",
        action="store_true",
        help="stdin's first line is the run's rendezvous secret, for mpirun's environment (not the script)",
    )
    commands.add_parser("cancel", help="stop ringlab's mpirun jobs on this node")
    args = parser.parse_args(argv)
    if args.command == "worker" and args.job_args[:1] == ["--"]:
        args.job_args = args.job_args[1:]
    return args


def main(argv=None):
    args = parse_args(argv)
    return {"worker": worker, "launch": launch, "cancel": cancel}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())

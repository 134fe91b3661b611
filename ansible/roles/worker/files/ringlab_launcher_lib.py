"""What the per-node programs of ringlab's launchers share: ringlab-slurm (roles/slurm) and ringlab-mpi (roles/mpi).

Installed beside them as /usr/local/lib/ringlab/ringlab_launcher_lib.py by roles/worker/tasks/launcher-node.yml,
which also writes the node's /etc/ringlab/<launcher>-worker.json that `run_worker_container` reads.

- `run_worker_container`: this node's worker container, started with exactly the settings the Ansible launcher gives
  it (roles/worker/tasks/job.yml): image, CPU quota, network (on the local testbed the node container's namespace,
  so that its link shaping applies), the shared folder, labels, GPUs; its output a whole line at a time; a SIGTERM,
  SIGINT or SIGHUP removes it.
- `container_environment`: its environment, the node's settings and the job's placement (from Slurm's or Open MPI's
  environment).
- The job folder on the head (root's alone, made afresh per run, never on the shared storage) and the result file
  read from the shared storage only when it is a regular file of its own.

Only Python's standard library, and python3-docker in `run_worker_container` (the nodes have both for Ansible).
"""

import errno
import json
import math
import os
import re
import shutil
import signal
import stat
import sys
import time


def load_config(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def container_environment(config, placement, run_id, procs_per_node, cpus, rdzv_secret=None):
    """The worker container's environment: the node's settings (`config["env"]`), then the job's placement
    (RINGLAB_NUM_NODES, RINGLAB_NODE_RANK, RINGLAB_HEAD_ADDR and what else the launcher adds), the rendezvous port,
    the run id and the run's rendezvous secret (RINGLAB_RDZV_SECRET, which ringlab hands the launcher's processes in
    their environment: sbatch's, which srun passes on, or mpirun's -x), the worker's rendezvous id."""
    worker_env = dict(config.get("env", {}))
    worker_env.update(placement)
    worker_env.update(
        {
            "RINGLAB_RDZV_PORT": str(config.get("rdzv_port", 29400)),
            "RINGLAB_RUN_ID": run_id,
        }
    )
    if rdzv_secret:
        worker_env["RINGLAB_RDZV_SECRET"] = rdzv_secret
    if procs_per_node:
        worker_env["RINGLAB_NPROC_PER_NODE"] = str(procs_per_node)
    if cpus:
        # As the Ansible launcher does (roles/worker/tasks/job.yml): each process's share of the quota, rounded up.
        worker_env["OMP_NUM_THREADS"] = str(max(1, math.ceil(cpus / (procs_per_node or 1))))
    return worker_env


def write_whole_lines(chunks, out):
    """The container's output, a whole line at a time (the rest at the end): the launcher labels what it gets (srun
    --label, mpirun --tag-output), and a line cut between two chunks would get a label in the middle."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        lines, newline, pending = pending.rpartition(b"\n")
        if newline:
            out.write(lines + newline)
            out.flush()
    if pending:
        out.write(pending + b"\n")
        out.flush()


def cfs_quota(cpus, period_us):
    """A quota of `cpus` cores as (CFS period, quota) in microseconds, as roles/worker/vars/main.yml computes it for
    the Ansible launcher: in the role's worker_cpu_period_us (10 ms), not Docker's --cpus period of 100 ms, after
    which a worker that waited on the network runs faster than its quota. The CLI gives at least 0.1 cores: the
    kernel's smallest quota, 1 ms of 10."""
    return period_us, int(round(cpus * period_us))


def run_worker_container(config, run_id, job, job_args, cpus, environment, out=None):
    """Runs this node's worker container until it exits and returns its exit code; its output goes to `out`
    (default: stdout) a whole line at a time. SIGTERM, SIGINT and SIGHUP (the launcher ending its tasks: Slurm's time
    limit or scancel, mpirun ending the job) remove the container, even one that is still being created."""
    from docker.types import DeviceRequest, Mount

    import docker  # python3-docker; imported here so that the rest of the module works without it

    client = docker.from_env()
    name = config["container_name"]

    def remove():
        try:
            client.containers.get(name).remove(force=True)
        except docker.errors.NotFound:
            pass

    def stop(signum, _frame):
        try:
            remove()
        finally:
            os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    remove()
    options = {
        "name": name,
        "detach": True,
        "environment": environment,
        "network_mode": config["network_mode"],
        "mounts": [Mount(target=config["shared_dir"], source=config["shared_dir"], type="bind")],
        "shm_size": config.get("shm_size", "1g"),
        "labels": dict(config.get("labels", {}), **{"ringlab.run_id": run_id}),
    }
    if cpus:
        options["cpu_period"], options["cpu_quota"] = cfs_quota(cpus, int(config["cpu_period_us"]))
    if int(config.get("gpus", 0)) > 0:
        options["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    try:
        container = client.containers.run(config["image"], [job, *job_args], **options)
        write_whole_lines(container.logs(stream=True, follow=True), out or sys.stdout.buffer)
        return container.wait().get("StatusCode", 1)
    finally:
        remove()


def read_text(path):
    """A file's text, or None when it cannot be read."""
    try:
        # newline="": "\r" comes through as written, for the per-rank split to keep inside its line.
        with open(path, encoding="utf-8", errors="replace", newline="") as handle:
            return handle.read()
    except OSError:
        return None


def read_regular_file(path):
    """(text, None), or (None, why not) when `path` is not a regular file of its own: the result is on the shared
    storage, where a link planted in place of it would otherwise make root read (and ringlab record) what it names."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, f"file not found: {path}"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return None, f"{path} is a link: not read"
        return None, f"{path} could not be read: {error.strerror}"
    with os.fdopen(handle, "rb") as opened:
        if not stat.S_ISREG(os.fstat(opened.fileno()).st_mode):
            return None, f"{path} is not a regular file: not read"
        return opened.read().decode("utf-8", errors="replace"), None


def private_folder_problem(path, configure_hint):
    """Why `path` is not a folder of root's (or the caller's) alone, or None: the job scripts and the launcher's
    output live there, and root runs the one and reads the other. `configure_hint` says what makes the folder."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return f"{path} does not exist ({configure_hint})"
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a folder (a link?)"
    if info.st_uid != os.geteuid():
        return f"{path} belongs to uid {info.st_uid}, not to uid {os.geteuid()}"
    if info.st_mode & 0o022:
        return f"{path} can be written by others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def make_job_folder(folder, program, configure_hint):
    """The run's folder under the launcher role's private root, made afresh (mode 0700): nothing an earlier attempt
    (or anyone) left there is read as this job's. `program` and `configure_hint` word the refusal."""
    root = os.path.dirname(folder)
    problem = private_folder_problem(root, configure_hint)
    if problem:
        raise SystemExit(f"{program}: refusing to write the job script: {problem}")
    if os.path.lexists(folder):
        if os.path.isdir(folder) and not os.path.islink(folder):
            shutil.rmtree(folder)
        else:
            os.unlink(folder)
    os.mkdir(folder, 0o700)


RDZV_SECRET_ENV = "RINGLAB_RDZV_SECRET"
_RDZV_SECRET = re.compile(r"[0-9a-f]{32,128}")


def take_secret_line(text, program):
    """The job script after its first line, the run's rendezvous secret, which goes into this process's environment
    (and so sbatch's or mpirun's, whose ranks get it): the secret reaches the job through the module's standard input,
    never a command line (`ps` shows those to every user) or a file."""
    secret, newline, script = text.partition("\n")
    if not newline or not _RDZV_SECRET.fullmatch(secret):
        raise SystemExit(
            f"{program}: with --secret-first, standard input's first line must be the run's rendezvous secret "
            "(32 to 128 lowercase hex digits)"
        )
    os.environ[RDZV_SECRET_ENV] = secret
    return script


def write_script(path, text, mode=0o755):
    """A file of the job folder (the job script, at `mode`), in one piece (a rename). Written to a new file (O_EXCL:
    never one that exists, nor through a link) and renamed over `path` (a link there is replaced, not followed)."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    partial = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.{time.monotonic_ns()}.partial")
    handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            os.fchmod(out.fileno(), mode)
        os.replace(partial, path)
    except BaseException:
        try:
            os.unlink(partial)
        except FileNotFoundError:
            pass
        raise

"""Runs ringlab-worker as real processes: one process per "node", all on loopback."""

import atexit
import hashlib
import json
import os
import pkgutil
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKER_DIR = REPO / "docker" / "worker"
SCHEMA_PATH = WORKER_DIR / "result.schema.json"
sys.path.insert(0, str(WORKER_DIR))  # unit tests import ringlab_worker directly

# ringlab's own code must not call what the running torch deprecates (torch deprecates with DeprecationWarning
# or FutureWarning): such a warning raised from a ringlab_worker module is an error, in the tests' process
# (filter added below) and in every worker process they start (PYTHONWARNINGS; it matches a module by its
# exact name, hence one entry per module). Warnings torch raises about its own internals stay warnings.
DEPRECATION_CATEGORIES = ("DeprecationWarning", "FutureWarning")
WORKER_MODULES = ["ringlab_worker"] + [
    f"ringlab_worker.{module.name}" for module in pkgutil.iter_modules([str(WORKER_DIR / "ringlab_worker")])
]
OWN_DEPRECATIONS_AS_ERRORS = ",".join(
    f"error::{category}:{module}" for category in DEPRECATION_CATEGORIES for module in WORKER_MODULES
)


def pytest_configure(config):
    for category in DEPRECATION_CATEGORIES:
        # A regex here, matched at the start of the module name: every ringlab_worker module.
        config.addinivalue_line("filterwarnings", f"error::{category}:ringlab_worker")
    # One temporary folder for the whole run, removed at its end: torchrun's agent makes a torchelastic_* folder in
    # the temporary folder at every launch and never removes it (in a worker container it goes with the container).
    # The worker processes the tests start inherit TMPDIR (base_env copies the environment). Removed at exit, after
    # pytest's own clean-up of its tmp_path folders in there (atexit runs the later-registered first).
    root = tempfile.mkdtemp(prefix="rl-pytest-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    os.environ["TMPDIR"] = root
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def base_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RINGLAB_", "TORCHELASTIC_"))}
    env["PYTHONPATH"] = str(WORKER_DIR)
    env["OMP_NUM_THREADS"] = "1"  # the machine is small and shared; two ranks must not fight over cores
    env["PYTHONWARNINGS"] = OWN_DEPRECATIONS_AS_ERRORS
    env.update({k: str(v) for k, v in extra.items()})
    return env


class RunsCode:
    """Unpickling this runs a shell command that touches `marker`: what an attacker's file or message would run (as
    root, in every rank) if ringlab unpickled it (test_checkpoint.py, test_rendezvous_secret.py)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def rdzv_secret(run_id: str) -> str:
    """The run's rendezvous secret, the same on every node: ringlab gives each run a random one; a test derives it."""
    return hashlib.sha256(f"test secret of {run_id}".encode()).hexdigest()[:32]


def node_env(node_rank: int, num_nodes: int, port: int, run_id: str) -> dict:
    return base_env(
        RINGLAB_NUM_NODES=num_nodes,
        RINGLAB_NODE_RANK=node_rank,
        RINGLAB_HEAD_ADDR="127.0.0.1",
        RINGLAB_RDZV_PORT=port,
        RINGLAB_RUN_ID=run_id,
        RINGLAB_RDZV_SECRET=rdzv_secret(run_id),
        RINGLAB_SOCKET_IFNAME="lo",
    )


NODE_TAG_ENV = "RINGLAB_TEST_NODE"


def _pids_tagged(tag: str):
    """Processes whose environment carries NODE_TAG_ENV=tag: an agent and every rank it started."""
    marker = f"{NODE_TAG_ENV}={tag}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    yield int(entry)
            except OSError:  # ended meanwhile, or not ours to read
                continue


class Nodes:
    """Starts worker processes (torchrun agents) that each play a node, and kills a whole node at once.

    A node's processes are found by a tag in their environment, not by process group: torchrun 2.x starts
    each worker in a session of its own. Each node's output is read as it comes (a thread per node), so a test
    can wait for a line a node prints (wait_for) instead of sleeping and hoping it has been printed.
    """

    def __init__(self):
        self.procs = []
        self._printed = threading.Condition()

    def start(self, args, env):
        env = {**env, NODE_TAG_ENV: f"{os.getpid()}-{len(self.procs)}"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "ringlab_worker", *args],
            env=env,
            cwd=str(REPO),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        proc.node_tag = env[NODE_TAG_ENV]
        proc.lines = []
        proc.reader = threading.Thread(target=self._read, args=(proc,), daemon=True)
        proc.reader.start()
        self.procs.append(proc)
        return proc

    def _read(self, proc):
        try:
            for line in proc.stdout:
                with self._printed:
                    proc.lines.append(line)
                    self._printed.notify_all()
        finally:
            with self._printed:
                proc.lines_done = True
                self._printed.notify_all()

    @staticmethod
    def output(proc) -> str:
        return "".join(proc.lines)

    def wait_for(self, procs, text, timeout):
        """Waits until one of `procs` has printed a line containing `text`; fails naming what each printed if none
        has within `timeout` seconds or all have ended without it."""
        deadline = time.monotonic() + timeout
        with self._printed:
            while not any(text in line for proc in procs for line in proc.lines):
                left = deadline - time.monotonic()
                if left <= 0 or all(getattr(proc, "lines_done", False) for proc in procs):
                    outputs = "\n".join(f"--- node {i}:\n{self.output(proc)}" for i, proc in enumerate(procs))
                    why = f"within {timeout} s" if left <= 0 else "before they all ended"
                    pytest.fail(f"no node printed {text!r} {why}:\n{outputs}")
                self._printed.wait(left)

    def workers(self, proc):
        """The node's live processes other than its agent (zombies left unreaped do not count)."""
        live = []
        for pid in _pids_tagged(proc.node_tag):
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if pid != proc.pid and state != "Z":
                live.append(pid)
        return live

    def kill(self, proc):
        for pid in [proc.pid, *_pids_tagged(proc.node_tag)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _collect(self, proc, grace=30):
        """The agent's exit code and all it printed. The output ends once every process holding the pipe has: a
        rank that outlives its agent by more than `grace` seconds is killed with its node, and the test fails."""
        proc.wait()
        proc.reader.join(grace)
        if proc.reader.is_alive():
            self.kill(proc)
            proc.reader.join(10)
            pytest.fail(
                f"a process of node {proc.node_tag} held its output open {grace} s after its agent ended:\n"
                f"{self.output(proc)}"
            )
        proc.stdout.close()
        return proc.returncode, self.output(proc)

    def finish(self, proc, timeout):
        """(exit code, output); kills the node if it outlives `timeout`, so a hang fails, not blocks."""
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(proc)
            _, output = self._collect(proc)
            pytest.fail(f"ringlab-worker still running after {timeout} s:\n{output}")
        return self._collect(proc)


@pytest.fixture
def nodes():
    started = Nodes()
    yield started
    for proc in started.procs:  # also on failure: no stray ranks left holding ports
        started.kill(proc)  # also when the agent has ended: a rank it left behind still holds the pipe
        proc.wait()
        proc.reader.join(10)
        if not proc.reader.is_alive():
            proc.stdout.close()


def run_worker(args, env=None, timeout=60):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "ringlab_worker", *args],
        env=env or base_env(),
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


@pytest.fixture(scope="session")
def validate_result():
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())

    def validate(path):
        text = Path(path).read_text()
        record = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
        validator.validate(record)
        return record

    return validate

"""Starts a job: in this process when RINGLAB_NUM_NODES is unset, otherwise through torchrun.

torchrun (torch.distributed.run) is called in-process rather than as a subprocess so that its
rendezvous and child-failure exceptions can be turned into distinct exit codes; its output reads the
same as `python3 -m torch.distributed.run ...`.
"""

import functools
import math
import os
import re
import signal
import sys
from dataclasses import dataclass, field
from typing import List, Mapping, Optional

from . import compat, signed_rendezvous
from .errors import EXIT_OTHER, EXIT_PEER_FAILED, MEANING, BadArguments, PeerFailed, PeerTimeout, WorkerError
from .guard import AGENT_PID_ENV, die_with_agent

DEFAULT_RDZV_PORT = 29400
DEFAULT_RUN_ID = "ringlab"
# torchrun's c10d rendezvous keeps its state in node 0's TCPStore as a pickle that every node's agent unpickles, and
# the store has no authentication and lists its keys to any client: whoever reaches the port could make every node run
# code. So every state is signed with a secret of the run (signed_rendezvous.py): the same unguessable value on every
# node, given by whoever starts them, never printed and never in the store.
RDZV_SECRET_ENV = signed_rendezvous.SECRET_ENV
_RDZV_SECRET = re.compile(r"[0-9a-f]{32,128}")


def is_torchrun_worker() -> bool:
    """torchrun sets TORCHELASTIC_RUN_ID for the processes it starts, never for its agent itself."""
    return "TORCHELASTIC_RUN_ID" in os.environ


@dataclass(frozen=True)
class Rendezvous:
    head_addr: str
    port: int
    node_rank: int
    num_nodes: int
    nproc_per_node: int
    run_id: str
    # The HMAC key of the rendezvous state (RDZV_SECRET_ENV): kept out of repr, never printed or passed to torchrun.
    secret: str = field(repr=False, default="")


def _env_int(env: Mapping[str, str], name: str, default: Optional[int], minimum: int) -> int:
    text = env.get(name, "")
    if text == "":
        if default is None:
            raise BadArguments(f"{name} is required when RINGLAB_NUM_NODES is set")
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadArguments(f"{name} must be an integer, got '{text}'") from None
    if value < minimum:
        raise BadArguments(f"{name} must be {minimum} or more, got {value}")
    return value


def rendezvous_from_env(env: Mapping[str, str], gpu_count: int) -> Optional[Rendezvous]:
    """The multi-node setup from RINGLAB_* variables, or None for a single process."""
    if env.get("RINGLAB_NUM_NODES", "") == "":
        return None
    num_nodes = _env_int(env, "RINGLAB_NUM_NODES", None, 1)
    node_rank = _env_int(env, "RINGLAB_NODE_RANK", None, 0)
    if node_rank >= num_nodes:
        raise BadArguments(f"RINGLAB_NODE_RANK={node_rank} must be below RINGLAB_NUM_NODES={num_nodes}")
    head_addr = env.get("RINGLAB_HEAD_ADDR", "")
    if not head_addr:
        raise BadArguments("RINGLAB_HEAD_ADDR (the address of node 0) is required when RINGLAB_NUM_NODES is set")
    secret = env.get(RDZV_SECRET_ENV, "")
    if not _RDZV_SECRET.fullmatch(secret):
        raise BadArguments(
            f"{RDZV_SECRET_ENV} must be set to the same unguessable value on every node of the run (32 to 128 "
            "lowercase hex digits, e.g. `openssl rand -hex 16`); it signs the rendezvous state, which anyone who "
            "reaches node 0's rendezvous port could otherwise replace with one that makes every node run code"
            + ("" if secret == "" else f" (it holds {len(secret)} characters that are not that)")
        )
    return Rendezvous(
        head_addr=head_addr,
        port=_env_int(env, "RINGLAB_RDZV_PORT", DEFAULT_RDZV_PORT, 1),
        node_rank=node_rank,
        num_nodes=num_nodes,
        nproc_per_node=_env_int(env, "RINGLAB_NPROC_PER_NODE", max(gpu_count, 1), 1),
        run_id=env.get("RINGLAB_RUN_ID") or DEFAULT_RUN_ID,
        secret=secret,
    )


# Elastic runs (--min-nodes): once MIN nodes have joined a rendezvous round, how long it waits for the others before
# it starts without them. In the first round a node slower to start than this is let in by torchrun restarting the
# round, which is no failure (time_to_train.py waits for it instead of training); after a node is lost, it is part of
# the recovery time.
ELASTIC_LAST_CALL_SECONDS = 5
# A lost node stays a member of the finished round until its heartbeats (every KEEP_ALIVE s) have been missing
# KEEP_ALIVE_ATTEMPTS times; only then can the others form the next round.
ELASTIC_KEEP_ALIVE_SECONDS = 1
ELASTIC_KEEP_ALIVE_ATTEMPTS = 3


def torchrun_argv(
    rdzv: Rendezvous,
    timeout_seconds: float,
    job_argv: List[str],
    max_restarts: int = 0,
    min_nodes: Optional[int] = None,
) -> List[str]:
    timeout = str(max(1, math.ceil(timeout_seconds)))
    # is_host is explicit: torch guesses it by matching hostnames, which fails in containers.
    # join_timeout bounds the wait for all nodes, read_timeout a non-head node's wait for the head.
    rdzv_conf = f"is_host={'true' if rdzv.node_rank == 0 else 'false'},join_timeout={timeout},read_timeout={timeout}"
    nnodes = str(rdzv.num_nodes)
    if min_nodes is not None:
        nnodes = f"{min_nodes}:{rdzv.num_nodes}"
        rdzv_conf += (
            f",last_call_timeout={ELASTIC_LAST_CALL_SECONDS}"
            f",keep_alive_interval={ELASTIC_KEEP_ALIVE_SECONDS}"
            f",keep_alive_max_attempt={ELASTIC_KEEP_ALIVE_ATTEMPTS}"
        )
    return [
        "--nnodes",
        nnodes,
        "--nproc_per_node",
        str(rdzv.nproc_per_node),
        "--rdzv_backend",
        signed_rendezvous.BACKEND_NAME,
        "--rdzv_endpoint",
        f"{rdzv.head_addr}:{rdzv.port}",
        "--rdzv_id",
        signed_rendezvous.public_rendezvous_id(rdzv.secret),
        "--rdzv_conf",
        rdzv_conf,
        # After a worker fails, every node's agent stops its workers and starts them again this many times
        # (train --max-restarts; they resume from the newest checkpoint).
        "--max_restarts",
        str(max_restarts),
        # How often the agent polls its workers: a finished or dead worker is noticed within a tenth of a second
        # (torch's default, 5 s, would add 2.5 s to every run on average); a poll is a waitpid, nearly free.
        "--monitor_interval",
        "0.1",
        "-m",
        "ringlab_worker",
        *job_argv,
    ]


# Interfaces NCCL must not pick by itself: Docker's bridge and loopback do not reach other nodes.
NCCL_EXCLUDED_INTERFACES = ("docker0", "lo")


def network_env(env: Mapping[str, str]) -> dict:
    """The Gloo and NCCL variables for the cluster interface the worker was given (RINGLAB_SOCKET_IFNAME).

    With an interface, Gloo and NCCL both use it (an explicit lo is honoured: one-machine tests). Without,
    NCCL excludes docker0 and lo, which it would otherwise pick inside a container. Variables the user set
    are kept, except that RINGLAB_SOCKET_IFNAME wins over NCCL_SOCKET_IFNAME. NCCL_DEBUG=WARN puts NCCL's
    warnings (a fallback transport, a wrong interface) into the node's log.
    """
    ifname = env.get("RINGLAB_SOCKET_IFNAME", "")
    wanted = {"NCCL_DEBUG": "WARN", compat.NCCL_ASYNC_ERROR_HANDLING_ENV: "1"}
    if ifname:
        wanted.update({"GLOO_SOCKET_IFNAME": ifname, "NCCL_SOCKET_IFNAME": ifname})
        return {name: value for name, value in wanted.items() if name.endswith("_SOCKET_IFNAME") or name not in env}
    wanted["NCCL_SOCKET_IFNAME"] = "^" + ",".join(NCCL_EXCLUDED_INTERFACES)
    return {name: value for name, value in wanted.items() if name not in env}


def configure_network_env(env) -> None:
    env.update(network_env(env))


def run_worker(args) -> int:
    die_with_agent()
    from .jobs import run_job  # imports torch: the agent itself and its unit tests run without it

    return run_job(args)


def launch(args, job_argv: List[str]) -> int:
    import torch

    configure_network_env(os.environ)
    rdzv = rendezvous_from_env(os.environ, torch.cuda.device_count() if torch.cuda.is_available() else 0)
    if rdzv is None:
        return run_worker(args)

    # The workers run `python3 -m ringlab_worker`: make the package importable wherever it lives.
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH")) if p)

    for name, value in compat.TORCHRUN_ENV.items():
        os.environ.setdefault(name, value)
    os.environ[AGENT_PID_ENV] = str(os.getpid())
    torchrun = torchrun_argv(
        rdzv, args.timeout_seconds, job_argv, getattr(args, "max_restarts", 0), getattr(args, "min_nodes", None)
    )
    shown = " ".join(torchrun)
    print(
        f"ringlab-worker: node {rdzv.node_rank} of {rdzv.num_nodes}: "
        f"{os.path.basename(sys.executable)} -m torch.distributed.run {shown}",
        file=sys.stderr,
        flush=True,
    )
    _run_torchrun(torchrun, rdzv, args.timeout_seconds)
    return 0


def _run_torchrun(torchrun: List[str], rdzv: Rendezvous, timeout_seconds: float) -> None:
    from torch.distributed import run as torch_run
    from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous import (
        RendezvousClosedError,
        RendezvousConnectionError,
        RendezvousError,
        RendezvousTimeoutError,
    )
    from torch.distributed.launcher import api as launcher_api

    signed_rendezvous.register()
    endpoint = f"{rdzv.head_addr}:{rdzv.port}"
    try:
        # torch_run.run(), with the agent below swapped in.
        config, entrypoint, entrypoint_args = torch_run.config_from_args(torch_run.parse_args(torchrun))
        # After its workers end, an agent waits for the other nodes' agents (the "exit barrier"), 300 s
        # in torch and not settable from the command line: a dead peer would hold this node for 5 min.
        launcher_api.LocalElasticAgent = functools.partial(
            LocalElasticAgent, exit_barrier_timeout=max(1.0, timeout_seconds)
        )
        launcher_api.elastic_launch(config=config, entrypoint=entrypoint)(*entrypoint_args)
    except RendezvousTimeoutError as error:
        raise PeerTimeout(
            f"rendezvous at {endpoint} (run id '{rdzv.run_id}') did not gather all {rdzv.num_nodes} nodes "
            f"within {timeout_seconds:g} s. Check that every node was started with RINGLAB_NUM_NODES="
            f"{rdzv.num_nodes}, the same RINGLAB_RUN_ID, {RDZV_SECRET_ENV} and RINGLAB_HEAD_ADDR, that each reaches "
            f"{endpoint}, and that --timeout-seconds covers the slowest node's start-up."
        ) from error
    except RendezvousConnectionError as error:
        if rdzv.node_rank == 0:
            raise WorkerError(
                f"node 0 could not serve the rendezvous on port {rdzv.port} ({error.__cause__ or error}); "
                "is another run still using it? Set RINGLAB_RDZV_PORT to a free port."
            ) from error
        raise PeerTimeout(
            f"could not reach the rendezvous on node 0 at {endpoint} within {timeout_seconds:g} s "
            f"({str(error.__cause__ or error).rstrip('.')}). Check that node 0 is running, that "
            f"RINGLAB_HEAD_ADDR resolves on this node and that port {rdzv.port} is open to it."
        ) from error
    except RendezvousClosedError as error:
        raise PeerFailed(f"the rendezvous at {endpoint} was closed: another node failed and left the run") from error
    except RendezvousError as error:
        raise WorkerError(f"rendezvous at {endpoint} failed: {error}") from error
    except ChildFailedError as error:
        raise _child_failure(error.failures) from None
    except SignalException as error:
        raise WorkerError(
            f"interrupted by {signal.Signals(error.sigval).name}", exit_code=128 + int(error.sigval)
        ) from None


def _child_failure(failures) -> WorkerError:
    """One error for the workers of this node that failed.

    A worker that exits by itself already printed why, with its exit code; prefer it over the ones the
    agent then stopped with a signal.
    """
    exited = {rank: f for rank, f in failures.items() if f.exitcode > 0}
    rank = min(exited) if exited else min(failures, key=lambda r: failures[r].timestamp)
    code = failures[rank].exitcode
    if code > 0:
        meaning = MEANING.get(code, "failed")
        return WorkerError(
            f"rank {rank} on this node exited with code {code}, {meaning} (its error is above)", exit_code=code
        )
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return WorkerError(f"rank {rank} on this node ended with status {code}", exit_code=EXIT_OTHER)
    return WorkerError(
        f"rank {rank} on this node was killed by {name}; out of memory? (check `dmesg`, `docker inspect` OOMKilled)",
        exit_code=EXIT_PEER_FAILED,
    )

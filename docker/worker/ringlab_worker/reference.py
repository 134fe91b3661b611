"""What no library can beat on the probe's link: one TCP stream, measured by iperf3 between node 0 and node 1 just
before the probe (`allreduce --reference iperf3`), through the same shaping and under the same CPU quota. Node 0's
first rank serves once; node 1's first rank sends for SECONDS; the rate iperf3's server received at reaches every
rank. The report sets each library's rate beside it."""

import json
import os
import subprocess
import time

from .errors import BadArguments, WorkerError
from .exchange import broadcast_json

PORT = 5201  # iperf3's own; the worker container shares its node's network, where nothing else listens on it
SECONDS = 3
_START_TIMEOUT = 10
_NOT_INSTALLED = "--reference iperf3: iperf3 is not installed in the worker image (Debian's iperf3)"


def measure_reference(world, env=os.environ):
    """iperf3's rate in Gbit/s from node 1 to node 0, on every rank; None on one node (no link)."""
    if world.nodes < 2:
        return None
    head = env.get("RINGLAB_HEAD_ADDR", "")
    if not head:
        raise BadArguments("--reference iperf3 needs RINGLAB_HEAD_ADDR, the address of node 0 (the launcher sets it)")
    client_rank = world.procs_per_node  # node 1's first rank
    server = _start_server() if world.rank == 0 else None
    world.barrier()  # the server listens before the client connects
    rate = None
    try:
        if world.rank == client_rank:
            rate = _send(head)
    finally:
        rate = broadcast_json(rate, client_rank, world.device)
        if server is not None:
            _stop(server)
    if rate is None:
        raise WorkerError("iperf3 measured nothing between node 1 and node 0 (see node 1's output)")
    return rate


def _start_server():
    try:
        # Its output is not read: piped, iperf3 holds "Server listening" in its buffer. The socket table says instead.
        server = subprocess.Popen(
            ["iperf3", "--server", "--one-off", "--port", str(PORT)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise WorkerError(_NOT_INSTALLED) from None
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline and server.poll() is None:
        if _listening(PORT):
            return server
        time.sleep(0.05)
    server.kill()
    server.wait()
    raise WorkerError(
        f"iperf3's server on port {PORT} did not start listening within {_START_TIMEOUT} s "
        f"(exit code {server.returncode}; is the port taken?)"
    )


def _listening(port: int) -> bool:
    """Whether a TCP socket of this network namespace listens on `port` (/proc/net/tcp and tcp6: state 0A)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as rows:
                next(rows, None)
                for row in rows:
                    fields = row.split()
                    if len(fields) > 3 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            continue
    return False


def _send(head: str) -> float:
    try:
        done = subprocess.run(
            ["iperf3", "--client", head, "--port", str(PORT), "--time", str(SECONDS), "--json"],
            capture_output=True,
            text=True,
            timeout=SECONDS + 30,
        )
    except FileNotFoundError:
        raise WorkerError(_NOT_INSTALLED) from None
    try:
        return json.loads(done.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9
    except (ValueError, KeyError, TypeError):
        print(f"iperf3 --client {head} exited with {done.returncode}: {(done.stdout + done.stderr)[-500:]}", flush=True)
        return None


def _stop(server) -> None:
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()

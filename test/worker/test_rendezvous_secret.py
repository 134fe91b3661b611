"""The rendezvous nobody else can join (issue #49): torchrun's c10d rendezvous keeps its state in node 0's TCPStore,
which takes writes from anyone who reaches its port, as a pickle every node's agent unpickles about once a second, under
a key named by the rendezvous id. The id is the run's secret (RINGLAB_RDZV_SECRET), never its run id, and never
shown."""

import base64
import pickle
import time
from datetime import timedelta

from conftest import RunsCode, free_port, node_env, rdzv_secret


def test_a_client_that_knows_the_run_id_cannot_make_a_waiting_node_run_code_through_the_rendezvous(nodes, tmp_path):
    from torch.distributed import TCPStore

    port, run_id, marker = free_port(), "attacked", tmp_path / "pwned"
    # Node 0 of 2 waits for node 1, which never comes: its store is open on the port all the while.
    head = nodes.start(["allreduce", "--timeout-seconds", "8"], node_env(0, 2, port, run_id))
    nodes.wait_for([head], "-m torch.distributed.run", timeout=60)
    payload = base64.b64encode(pickle.dumps(RunsCode(marker))).decode()
    store = None
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline and not marker.exists():
        try:
            store = store or TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=2))
            # The key the agents read: torch.rendezvous.<rendezvous id>. Whoever knows the run id knows this one;
            # it is the run's rendezvous id only if that is the public run id.
            store.set(f"torch.rendezvous.{run_id}", payload)
        except RuntimeError:  # the store is not listening yet
            store = None
        time.sleep(0.3)
    code, output = nodes.finish(head, timeout=60)
    assert not marker.exists(), "the rendezvous state written by another client ran code in the agent"
    assert code == 3, output  # the run itself fails as any run whose peer never came
    assert rdzv_secret(run_id) not in output, "the rendezvous secret is in the node's log"
    assert "--rdzv_id $RINGLAB_RDZV_SECRET" in output

"""The rendezvous nobody else can join (issues #49 and #67): torchrun's c10d rendezvous keeps its state in node 0's
TCPStore, which takes writes from anyone who reaches its port and lists its keys to them, as a pickle every node's agent
unpickles about once a second. ringlab signs that state with the run's secret (RINGLAB_RDZV_SECRET), which is in no key
and never shown, and refuses a state that is not signed with it before unpickling anything."""

import base64
import pickle
import time
from datetime import timedelta

from conftest import RunsCode, free_port, node_env, rdzv_secret


def test_a_client_of_the_store_cannot_make_a_waiting_node_run_code_through_the_rendezvous(nodes, tmp_path):
    from torch.distributed import TCPStore

    port, run_id, marker = free_port(), "attacked", tmp_path / "pwned"
    secret = rdzv_secret(run_id)
    # Node 0 of 2 waits for node 1, which never comes: its store is open on the port all the while.
    head = nodes.start(["allreduce", "--timeout-seconds", "8"], node_env(0, 2, port, run_id))
    nodes.wait_for([head], "-m torch.distributed.run", timeout=60)
    payload = base64.b64encode(pickle.dumps(RunsCode(marker))).decode()
    store, attacked, keys = None, set(), set()
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline and not marker.exists():
        try:
            store = store or TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=2))
            # The attacker needs no id: the store lists its keys (torch.rendezvous.<rendezvous id>) to any client.
            keys.update(store.list_keys())
            for key in keys:
                if key.startswith("torch.rendezvous.") and key.count(".") == 2:
                    store.set(key, payload)
                    attacked.add(key)
        except RuntimeError:  # the store is not listening yet
            store = None
        time.sleep(0.3)
    code, output = nodes.finish(head, timeout=60)
    assert attacked, f"the attacker found no rendezvous state in the store (its keys: {sorted(keys)})"
    assert not marker.exists(), "the rendezvous state written by another client ran code in the agent"
    assert all(secret not in key for key in keys), "the rendezvous secret is in a key of the store"
    assert code != 0, output  # the run fails: the forged state is refused, and the peer never came
    assert "not signed with this run's secret" in output, output
    assert secret not in output, "the rendezvous secret is in the node's log"

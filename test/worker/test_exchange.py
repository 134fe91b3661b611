"""What ranks tell each other is JSON in byte tensors (issue #67): no rank unpickles what a peer sent."""

import ast
import json
import subprocess
import sys

from conftest import WORKER_DIR, base_env, free_port

# torch's collectives that pickle on one side and unpickle on the other.
OBJECT_COLLECTIVES = {
    "all_gather_object",
    "gather_object",
    "broadcast_object_list",
    "scatter_object_list",
    "send_object_list",
    "recv_object_list",
}

RANK = """
import json, sys
import torch, torch.distributed as dist
from ringlab_worker.exchange import all_gather_json, broadcast_json
rank, port = int(sys.argv[1]), int(sys.argv[2])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=3)
cpu = torch.device("cpu")
gathered = all_gather_json({"rank": rank, "name": "n" * (rank * 7), "nothing": None}, cpu)
told = broadcast_json({"from": rank, "steps": [1, 2.5, "ü"]} if rank == 2 else "ignored", 2, cpu)
print(json.dumps([gathered, told]))
dist.destroy_process_group()
"""


def test_no_worker_module_calls_an_object_collective():
    calls = [
        f"{path.relative_to(WORKER_DIR)}:{node.lineno} {node.attr}"
        for path in sorted((WORKER_DIR / "ringlab_worker").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute) and node.attr in OBJECT_COLLECTIVES
    ]
    assert calls == []


def test_ranks_gather_and_broadcast_json_values_of_any_length():
    port = free_port()
    ranks = [
        subprocess.Popen(
            [sys.executable, "-c", RANK, str(rank), str(port)], env=base_env(), stdout=subprocess.PIPE, text=True
        )
        for rank in range(3)
    ]
    outputs = [rank.communicate(timeout=120)[0] for rank in ranks]
    assert [rank.returncode for rank in ranks] == [0, 0, 0]
    expected_gathered = [{"rank": r, "name": "n" * (r * 7), "nothing": None} for r in range(3)]
    for output in outputs:
        assert json.loads(output) == [expected_gathered, {"from": 2, "steps": [1, 2.5, "ü"]}]

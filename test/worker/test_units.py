"""The pure parts: sizes, bandwidth formulas, torchrun arguments, error classification, atomic writes."""

import json
import os

import pytest
from ringlab_worker.allreduce import bus_bandwidth_gbps, message_sizes
from ringlab_worker.errors import BadArguments, PeerFailed, PeerTimeout, classify_collective_error
from ringlab_worker.result import write_atomically
from ringlab_worker.signed_rendezvous import public_rendezvous_id
from ringlab_worker.torchrun import configure_network_env, rendezvous_from_env, torchrun_argv

SECRET = "0123456789abcdef0123456789abcdef"


def test_message_sizes_step_by_the_factor_and_stay_whole_float32_elements():
    assert message_sizes(4096, 65536, 2) == [4096, 8192, 16384, 32768, 65536]
    assert message_sizes(4096, 100000, 4) == [4096, 16384, 65536]
    assert message_sizes(10, 100, 3) == [8, 28, 88]


@pytest.mark.parametrize("ranks, factor", [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75)])
def test_bus_bandwidth_is_nccl_tests_2_n_minus_1_over_n(ranks, factor):
    assert bus_bandwidth_gbps(10.0, ranks) == pytest.approx(10.0 * factor)


def test_torchrun_arguments_make_node_0_the_rendezvous_host_and_bound_every_wait():
    env = {
        "RINGLAB_NUM_NODES": "3",
        "RINGLAB_NODE_RANK": "0",
        "RINGLAB_HEAD_ADDR": "node-a",
        "RINGLAB_RUN_ID": "r7",
        "RINGLAB_RDZV_SECRET": SECRET,
    }
    rdzv = rendezvous_from_env(env, gpu_count=0)
    assert (rdzv.port, rdzv.nproc_per_node, rdzv.run_id) == (29400, 1, "r7")
    assert SECRET not in repr(rdzv)
    argv = torchrun_argv(rdzv, 12.5, ["allreduce", "--iters", "2"])
    assert argv[-5:] == ["-m", "ringlab_worker", "allreduce", "--iters", "2"]
    pairs = dict(zip(argv[:-5:2], argv[1:-5:2], strict=True))
    assert pairs["--rdzv_backend"] == "ringlab-c10d" and pairs["--rdzv_endpoint"] == "node-a:29400"
    # The store shows the rendezvous id to any client: it is derived from the secret one way, and the secret itself
    # (the key the state is signed with) is in no argument.
    assert pairs["--rdzv_id"] == public_rendezvous_id(SECRET) and all(SECRET not in word for word in argv)
    assert pairs["--max_restarts"] == "0" and pairs["--nnodes"] == "3"
    assert pairs["--rdzv_conf"] == "is_host=true,join_timeout=13,read_timeout=13"
    other = rendezvous_from_env({**env, "RINGLAB_NODE_RANK": "2"}, gpu_count=4)
    other_argv = torchrun_argv(other, 5, [])
    assert other_argv[other_argv.index("--rdzv_conf") + 1].startswith("is_host=false,")
    assert other.nproc_per_node == 4  # one process per GPU


def test_an_elastic_run_lets_the_rendezvous_go_on_with_min_nodes_and_notice_a_lost_node_within_seconds():
    rdzv = rendezvous_from_env(
        {"RINGLAB_NUM_NODES": "4", "RINGLAB_NODE_RANK": "1", "RINGLAB_HEAD_ADDR": "h", "RINGLAB_RDZV_SECRET": SECRET}, 0
    )
    argv = torchrun_argv(rdzv, 30, ["train"], max_restarts=2, min_nodes=2)
    pairs = dict(zip(argv[:-3:2], argv[1:-3:2], strict=True))
    assert pairs["--nnodes"] == "2:4" and pairs["--max_restarts"] == "2"
    assert pairs["--rdzv_conf"] == (
        "is_host=false,join_timeout=30,read_timeout=30,last_call_timeout=5,"
        "keep_alive_interval=1,keep_alive_max_attempt=3"
    )


@pytest.mark.parametrize("secret", [None, "", "r7", "0123456789abcdef", "0123456789ABCDEF0123456789ABCDEF", "g" * 32])
def test_a_multi_node_run_without_a_rendezvous_secret_of_32_or_more_hex_digits_is_refused(secret):
    env = {"RINGLAB_NUM_NODES": "2", "RINGLAB_NODE_RANK": "0", "RINGLAB_HEAD_ADDR": "h", "RINGLAB_RUN_ID": "r7"}
    if secret is not None:
        env["RINGLAB_RDZV_SECRET"] = secret
    with pytest.raises(BadArguments, match="RINGLAB_RDZV_SECRET must be set to the same unguessable value") as refused:
        rendezvous_from_env(env, gpu_count=0)
    assert refused.value.exit_code == 2 and (not secret or secret not in str(refused.value))


def test_no_num_nodes_means_a_single_process():
    assert rendezvous_from_env({"RINGLAB_HEAD_ADDR": "x"}, gpu_count=8) is None


def test_socket_interface_applies_to_gloo_and_nccl_and_nccl_avoids_docker0_by_default():
    env = {}
    configure_network_env(env)
    assert env["NCCL_SOCKET_IFNAME"] == "^docker0,lo" and "GLOO_SOCKET_IFNAME" not in env
    env = {"RINGLAB_SOCKET_IFNAME": "eth1"}
    configure_network_env(env)
    assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == "eth1"


def test_collective_errors_are_told_apart_by_what_happened_to_the_peer():
    gone = classify_collective_error(
        RuntimeError("[pair.cc:589] Read error [10.0.0.2]:4: Connection reset by peer"), "x"
    )
    late = classify_collective_error(RuntimeError("[pair.cc:598] Timed out waiting 10000ms for recv operation"), "x")
    assert isinstance(gone, PeerFailed) and gone.exit_code == 4
    assert isinstance(late, PeerTimeout) and late.exit_code == 3
    assert classify_collective_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied"), "x") is None


def test_results_are_replaced_atomically_and_readable_by_others(tmp_path):
    path = tmp_path / "nested" / "result.json"
    write_atomically(str(path), {"schema": "ringlab.result/v1", "n": 1})
    write_atomically(str(path), {"schema": "ringlab.result/v1", "n": 2})
    assert json.loads(path.read_text())["n"] == 2
    assert os.listdir(path.parent) == ["result.json"]
    assert path.stat().st_mode & 0o044 == 0o044
    with pytest.raises(ValueError):  # NaN is not JSON: refuse rather than write what parsers reject
        write_atomically(str(path), {"loss": float("nan")})
    assert json.loads(path.read_text())["n"] == 2 and os.listdir(path.parent) == ["result.json"]


def test_the_result_in_the_log_is_one_line_of_strict_json_behind_its_prefix():
    # Kubernetes: ringlab reads rank 0's result from its pod's log (src/targets/kubernetes/follow.ts, resultFromLog).
    from ringlab_worker.jobs import RESULT_LOG_PREFIX, result_log_line

    record = {"schema": "ringlab.result/v1", "job": "train", "metrics": {"note": "two\nlines"}}
    line = result_log_line(record)
    assert "\n" not in line and line.startswith(RESULT_LOG_PREFIX)
    assert json.loads(line[len(RESULT_LOG_PREFIX) :]) == record
    with pytest.raises(ValueError):
        result_log_line({"metrics": {"mean": float("nan")}})

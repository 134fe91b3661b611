"""Two "nodes" (worker processes, torchrun agents) on loopback: real torchrun rendezvous, real Gloo collectives."""

import math
import os
import shutil
import signal
import time
import uuid

import pytest
from conftest import free_port, node_env


def start_two_nodes(nodes, args, tmp_path):
    port, run_id = free_port(), f"test-{uuid.uuid4().hex[:8]}"
    return [nodes.start(args, node_env(rank, 2, port, run_id)) for rank in (0, 1)], run_id


def test_allreduce_across_two_nodes_sums_correctly_and_reports_nccl_tests_bandwidths(nodes, tmp_path, validate_result):
    output = tmp_path / "out" / "allreduce.json"  # parent does not exist yet: the worker creates it
    args = [
        "allreduce",
        "--min-bytes",
        "4K",
        "--max-bytes",
        "1M",
        "--step-factor",
        "4",
        "--warmup-iters",
        "1",
        "--iters",
        "3",
        "--timeout-seconds",
        "60",
        "--output",
        str(output),
    ]
    procs, run_id = start_two_nodes(nodes, args, tmp_path)
    results = [nodes.finish(proc, timeout=120) for proc in procs]
    assert [code for code, _ in results] == [0, 0], results

    record = validate_result(output)
    assert record["job"] == "allreduce" and record["runId"] == run_id
    assert record["world"]["size"] == 2 and record["world"]["nodes"] == 2 and record["world"]["backend"] == "gloo"
    assert len(record["world"]["hostnames"]) == 2
    rows = record["metrics"]["rows"]
    assert [row["sizeBytes"] for row in rows] == [4096, 16384, 65536, 262144, 1048576]
    for row in rows:
        assert row["wrong"] == 0
        assert row["count"] == row["sizeBytes"] // 4
        assert math.isclose(row["algbwGbps"], row["sizeBytes"] * 8 / row["timeSeconds"] / 1e9, rel_tol=1e-9)
        assert math.isclose(row["busbwGbps"], row["algbwGbps"] * 2 * (2 - 1) / 2, rel_tol=1e-9)
        # A process cannot spend more CPU than its 2 threads (Gloo's and the caller's) give it in the call's time.
        assert 0 <= row["cpuSeconds"] <= 2.5 * row["timeSeconds"] * os.cpu_count()
    # Summing 1 MiB from another process takes CPU time (small sizes, timed over 3 calls, are too noisy to order).
    assert rows[-1]["cpuSeconds"] > 0
    assert record["metrics"]["peakBusbwGbps"] == max(row["busbwGbps"] for row in rows)

    # People read the table: only rank 0 prints it, as nccl-tests rows under '#' comment lines.
    all_output = "".join(out for _, out in results)
    table = [line.split() for line in all_output.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert [int(cells[0]) for cells in table] == [4096, 16384, 65536, 262144, 1048576]
    assert all(cells[2:4] == ["float", "sum"] and cells[7] == "0" for cells in table)
    assert "# " in all_output and all_output.count("peak busbw") == 1


def test_the_probe_first_measures_the_link_with_iperf3_from_node_1_to_node_0(nodes, tmp_path, validate_result):
    assert shutil.which("iperf3"), "iperf3 is missing: npm run setup:test installs it"
    output = tmp_path / "allreduce.json"
    args = [
        "allreduce",
        "--reference",
        "iperf3",
        "--min-bytes",
        "4K",
        "--max-bytes",
        "64K",
        "--step-factor",
        "4",
        "--warmup-iters",
        "1",
        "--iters",
        "2",
        "--timeout-seconds",
        "60",
        "--output",
        str(output),
    ]
    procs, _ = start_two_nodes(nodes, args, tmp_path)
    results = [nodes.finish(proc, timeout=120) for proc in procs]
    assert [code for code, _ in results] == [0, 0], results
    metrics = validate_result(output)["metrics"]
    # Loopback has no shaping: one TCP stream moves gigabits a second, far more than any shaped link here.
    assert metrics["referenceGbps"] > 1 and metrics["reference"].startswith(
        "iperf3, one TCP stream from node 1 to node 0"
    )


def test_training_across_two_nodes_reports_throughput_and_a_finite_loss(nodes, tmp_path, validate_result):
    output = tmp_path / "train.json"
    args = [
        "train",
        "--model",
        "tiny",
        "--batch-size",
        "8",
        "--num-warmup-batches",
        "1",
        "--num-batches-per-iter",
        "2",
        "--num-iters",
        "3",
        "--timeout-seconds",
        "60",
        "--output",
        str(output),
    ]
    procs, _ = start_two_nodes(nodes, args, tmp_path)
    results = [nodes.finish(proc, timeout=120) for proc in procs]
    assert [code for code, _ in results] == [0, 0], results

    record = validate_result(output)
    metrics = record["metrics"]
    assert record["job"] == "train" and record["world"]["size"] == 2 and record["world"]["engine"] == "ddp"
    assert record["knobs"]["imageSize"] == 32 and record["knobs"]["batchSize"] == 8
    assert len(metrics["stepSeconds"]) == 2 * 3
    assert math.isfinite(metrics["finalLoss"]) and metrics["finalLoss"] > 0
    assert metrics["imagesPerSecondPerWorker"]["mean"] > 0
    assert math.isclose(metrics["imagesPerSecondTotal"]["mean"], 2 * metrics["imagesPerSecondPerWorker"]["mean"])
    assert metrics["gradientBytes"] == 4 * metrics["parameterCount"]
    assert "Total img/sec on 2 CPU(s)" in "".join(out for _, out in results)
    # The job's whole life is recorded: launched (before torch and the rendezvous) <= started <= ended.
    times = [record["provenance"][key] for key in ("launchedAt", "startedAt", "endedAt")]
    assert times == sorted(times) and times[0] < times[2], times
    # Each rank's CPU check just before the job, gathered to rank 0.
    cpu_check = record["cpuCheck"]
    assert cpu_check["seconds"] == 0.6 and len(cpu_check["computeGflops"]) == 2
    assert all(gflops > 0.05 for gflops in cpu_check["computeGflops"]), cpu_check


def test_fp16_gradient_compression_trains_over_gloo(nodes, tmp_path, validate_result):
    output = tmp_path / "train-fp16.json"
    args = [
        "train",
        "--model",
        "tiny",
        "--batch-size",
        "8",
        "--num-warmup-batches",
        "1",
        "--num-batches-per-iter",
        "1",
        "--num-iters",
        "2",
        "--fp16-allreduce",
        "--timeout-seconds",
        "60",
        "--output",
        str(output),
    ]
    procs, _ = start_two_nodes(nodes, args, tmp_path)
    results = [nodes.finish(proc, timeout=120) for proc in procs]
    assert [code for code, _ in results] == [0, 0], results
    record = validate_result(output)
    assert record["knobs"]["fp16Allreduce"] is True and math.isfinite(record["metrics"]["finalLoss"])


@pytest.mark.parametrize("name", ["parameter-server", "sharded-parameter-server"])
def test_the_probe_and_training_run_over_each_parameter_server_and_record_which(name, nodes, tmp_path, validate_result):
    probe_output, train_output = tmp_path / "probe.json", tmp_path / "train.json"
    probe = [
        "allreduce",
        "--reduction",
        name,
        "--min-bytes",
        "4",
        "--max-bytes",
        "256K",
        "--step-factor",
        "16",
        "--warmup-iters",
        "1",
        "--iters",
        "2",
        "--timeout-seconds",
        "60",
        "--output",
        str(probe_output),
    ]
    procs, _ = start_two_nodes(nodes, probe, tmp_path)
    results = [nodes.finish(proc, timeout=120) for proc in procs]
    assert [code for code, _ in results] == [0, 0], results
    record = validate_result(probe_output)
    assert record["knobs"]["reduction"] == name
    # One element (fewer than ranks: an empty shard) up to 256 KiB, all summed correctly.
    assert [row["sizeBytes"] for row in record["metrics"]["rows"]] == [4, 64, 1024, 16384, 262144]
    assert all(row["wrong"] == 0 for row in record["metrics"]["rows"])

    train = [
        "train",
        "--model",
        "tiny",
        "--reduction",
        name,
        "--batch-size",
        "8",
        "--num-warmup-batches",
        "1",
        "--num-batches-per-iter",
        "1",
        "--num-iters",
        "2",
        "--timeout-seconds",
        "60",
        "--output",
        str(train_output),
    ]
    procs, _ = start_two_nodes(nodes, train, tmp_path)
    results = [nodes.finish(proc, timeout=120) for proc in procs]
    assert [code for code, _ in results] == [0, 0], results
    record = validate_result(train_output)
    assert record["knobs"]["reduction"] == name and math.isfinite(record["metrics"]["finalLoss"])
    assert f"engine ddp, {name}, fp32" in "".join(out for _, out in results)


def test_the_asynchronous_server_applies_every_gradient_alone_and_counts_each_one_s_staleness(
    nodes, tmp_path, validate_result
):
    output = tmp_path / "async.json"
    args = [
        "train",
        "--model",
        "tiny",
        "--reduction",
        "async-parameter-server",
        "--async-staleness",
        "0",
        "--batch-size",
        "8",
        "--num-warmup-batches",
        "1",
        "--num-batches-per-iter",
        "2",
        "--num-iters",
        "3",
        "--timeout-seconds",
        "60",
        "--output",
        str(output),
    ]
    procs, _ = start_two_nodes(nodes, args, tmp_path)
    results = [nodes.finish(proc, timeout=120) for proc in procs]
    assert [code for code, _ in results] == [0, 0], results
    record = validate_result(output)
    metrics = record["metrics"]
    assert record["knobs"]["reduction"] == "async-parameter-server" and record["knobs"]["asyncStaleness"] == 0
    assert math.isfinite(metrics["finalLoss"]) and metrics["wireBytesPerStep"] == metrics["gradientBytes"]
    # Staleness bound 0 on 2 ranks: both compute step t on the parameters after every step t - 1, and the server
    # applies the two gradients one after the other, so of each pair the first is fresh and the second 1 update stale.
    steps = 1 + 2 * 3
    assert metrics["staleness"] == {
        "bound": 0,
        "updates": 2 * steps,
        "max": 1,
        "mean": 0.5,
        "histogram": {"0": steps, "1": steps},
    }
    assert "engine ddp, async-parameter-server, fp32" in "".join(out for _, out in results)


def test_the_asynchronous_server_s_model_is_what_every_rank_evaluates_after_an_epoch(nodes, tmp_path, validate_result):
    from ringlab_worker.data import DatasetSpec, write_dataset

    dataset = str(tmp_path / "shapes")
    write_dataset(
        dataset,
        DatasetSpec(classes=4, images_per_class=30, image_size=32, held_out=0.2, seed=0),
        log=lambda *args, **kwargs: None,
    )
    output = tmp_path / "async-fit.json"
    args = [
        "train",
        "--model",
        "tiny",
        "--reduction",
        "async-parameter-server",
        "--batch-size",
        "16",
        "--data",
        f"folder:{dataset}",
        "--loader-workers",
        "0",
        "--epochs",
        "2",
        "--learning-rate",
        "0.02",
        "--timeout-seconds",
        "60",
        "--output",
        str(output),
    ]
    procs, _ = start_two_nodes(nodes, args, tmp_path)
    results = [nodes.finish(proc, timeout=120) for proc in procs]
    assert [code for code, _ in results] == [0, 0], results
    metrics = validate_result(output)["metrics"]
    # 96 training images, 16 a batch on each of 2 ranks: 3 steps an epoch each, every one applied by the server.
    assert [epoch["steps"] for epoch in metrics["epochs"]] == [3, 6]
    assert metrics["staleness"]["updates"] == 2 * 6 and metrics["staleness"]["bound"] == 1
    # Each epoch ends with every rank holding the server's parameters: no replica is left apart.
    assert metrics["replicaDivergence"] == 0


def test_torchruns_agent_killed_with_sigkill_takes_its_ranks_with_it(nodes):
    """torchrun puts each rank in a session of its own, and a SIGKILLed agent cannot pass anything on: without
    the parent-death signal its ranks trained on, outside a container, until their own end."""
    env = {**node_env(0, 1, free_port(), f"test-{uuid.uuid4().hex[:8]}"), "RINGLAB_NPROC_PER_NODE": "2"}
    agent = nodes.start(
        [
            "train",
            "--model",
            "tiny",
            "--batch-size",
            "8",
            "--num-warmup-batches",
            "1",
            "--num-iters",
            "100000",
            "--timeout-seconds",
            "60",
        ],
        env,
    )
    nodes.wait_for([agent], "Iter #1", timeout=120)  # rank 0 prints progress: both ranks are training
    assert len(nodes.workers(agent)) == 2, nodes.output(agent)
    os.kill(agent.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while nodes.workers(agent) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert nodes.workers(agent) == [], "ranks still running 10 s after their agent was SIGKILLed"


def test_a_peer_that_never_arrives_fails_the_run_with_exit_3_after_the_timeout(nodes):
    port = free_port()
    started = time.monotonic()
    head = nodes.start(["allreduce", "--timeout-seconds", "5"], node_env(0, 2, port, "lonely"))
    code, output = nodes.finish(head, timeout=60)
    elapsed = time.monotonic() - started
    assert code == 3, output
    assert "did not gather all 2 nodes within 5 s" in output and "RINGLAB_RUN_ID" in output
    assert 5 <= elapsed < 30


def test_a_node_without_its_head_fails_with_exit_3_naming_the_head(nodes):
    port = free_port()
    lone = nodes.start(["allreduce", "--timeout-seconds", "5"], node_env(1, 2, port, "headless"))
    code, output = nodes.finish(lone, timeout=60)
    assert code == 3, output
    assert f"could not reach the rendezvous on node 0 at 127.0.0.1:{port}" in output


def test_a_peer_killed_mid_run_fails_the_survivor_with_exit_4_within_the_timeout(nodes, tmp_path):
    args = [
        "train",
        "--model",
        "tiny",
        "--batch-size",
        "8",
        "--num-warmup-batches",
        "1",
        "--num-iters",
        "100000",
        "--timeout-seconds",
        "10",
    ]
    (head, peer), _ = start_two_nodes(nodes, args, tmp_path)
    nodes.wait_for([head], "Iter #1", timeout=120)  # rank 0 prints progress: training is under way on both nodes
    killed_at = time.monotonic()
    nodes.kill(peer)  # the whole node: its launcher and its worker
    code, output = nodes.finish(head, timeout=90)
    assert code == 4, output
    assert "a peer failed during the train job" in output
    assert time.monotonic() - killed_at < 10 + 30  # the exit barrier waits at most --timeout-seconds


@pytest.mark.parametrize("collective, factor", [("all-gather", 0.5), ("reduce-scatter", 0.5), ("sendrecv", 1.0)])
def test_the_probe_times_the_layouts_collectives_with_nccl_tests_bus_factors_and_checks_their_results(
    collective, factor, nodes, tmp_path, validate_result
):
    output = tmp_path / f"{collective}.json"
    args = [
        "allreduce",
        "--collective",
        collective,
        "--min-bytes",
        "4K",
        "--max-bytes",
        "256K",
        "--step-factor",
        "8",
        "--warmup-iters",
        "1",
        "--iters",
        "2",
        "--cpu-check-seconds",
        "0",
        "--timeout-seconds",
        "60",
        "--output",
        str(output),
    ]
    procs, _ = start_two_nodes(nodes, args, tmp_path)
    results = [nodes.finish(proc, timeout=120) for proc in procs]
    assert [code for code, _ in results] == [0, 0], results
    record = validate_result(output)
    assert record["knobs"]["collective"] == collective and record["metrics"]["collective"] == collective
    rows = record["metrics"]["rows"]
    assert [row["sizeBytes"] for row in rows] == [4096, 32768, 262144]
    for row in rows:
        assert row["wrong"] == 0
        assert math.isclose(row["busbwGbps"], row["algbwGbps"] * factor, rel_tol=1e-9)
        assert row["redop"] == ("sum" if collective == "reduce-scatter" else "none")

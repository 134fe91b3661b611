"""The probe's all-reduce through Open MPI (`allreduce --library mpi`): two ranks that a real mpirun starts on
loopback, each running the worker's own launcher (torchrun, then the worker), as ringlab's mpi launcher does inside
the worker containers. Needs Debian's openmpi-bin and python3-mpi4py (npm run setup:test installs them)."""

import math
import shutil
import subprocess
import sys
import uuid

from conftest import free_port, node_env


def test_two_ranks_that_mpirun_started_sum_through_open_mpi_and_say_so(tmp_path, validate_result):
    assert shutil.which("mpirun"), "mpirun is missing: npm run setup:test installs openmpi-bin"
    output = tmp_path / "allreduce.json"
    env = node_env(0, 2, free_port(), f"test-{uuid.uuid4().hex[:8]}")
    # The node's rank is Open MPI's, as ringlab-mpi's placement gives it.
    rank = tmp_path / "rank.sh"
    rank.write_text(
        f'#!/bin/sh\nRINGLAB_NODE_RANK=$OMPI_COMM_WORLD_RANK exec {sys.executable} -m ringlab_worker "$@"\n'
    )
    rank.chmod(0o755)
    forwarded = [
        word for name in sorted(env) if name.startswith(("RINGLAB_", "PYTHON", "OMP_")) for word in ("-x", name)
    ]
    args = [
        "allreduce",
        "--library",
        "mpi",
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
    run = subprocess.run(
        [
            "mpirun",
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            "2",
            "--mca",
            "btl",
            "self,tcp",
            "--mca",
            "btl_tcp_if_include",
            "lo",
            *forwarded,
            str(rank),
            *args,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    # Open MPI counts a rank that leaves without MPI_Finalize as failed: exit 0 means every rank ended MPI.
    assert run.returncode == 0, run.stdout + run.stderr
    record = validate_result(output)
    assert record["world"]["size"] == 2 and record["world"]["nodes"] == 2
    metrics = record["metrics"]
    assert metrics["library"] == "mpi" and metrics["libraryVersion"].startswith("Open MPI v")
    assert [row["sizeBytes"] for row in metrics["rows"]] == [4096, 16384, 65536, 262144, 1048576]
    for row in metrics["rows"]:
        assert row["wrong"] == 0  # the check pattern went through MPI_Allreduce too
        assert math.isclose(row["busbwGbps"], row["sizeBytes"] * 8 / row["timeSeconds"] / 1e9, rel_tol=1e-9)
    # The table's header names the library that summed.
    assert any(
        line.startswith("# ringlab-worker allreduce:") and "Open MPI v" in line for line in run.stdout.splitlines()
    )

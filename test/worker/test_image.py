"""The CPU image: builds with build.sh (from the offline base), runs the smoke job, and runs across containers.

The first build installs PyTorch from its wheels into the image (about a minute here); later runs reuse the cache.
"""

import json
import subprocess
import uuid

import pytest
from conftest import REPO, rdzv_secret

IMAGE = "ringlab/worker:cpu"


def docker(*args, timeout=120, check=True):
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


@pytest.fixture(scope="module")
def image():
    built = subprocess.run(
        [str(REPO / "docker" / "worker" / "build.sh"), "cpu"], capture_output=True, text=True, timeout=1800
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert f"built {IMAGE}" in built.stdout and " MB" in built.stdout
    return IMAGE


@pytest.fixture
def cleanup():
    """Names of rlw- containers and networks to remove after the test, passed or failed."""
    names = {"containers": [], "networks": []}
    yield names
    for name in names["containers"]:
        docker("rm", "-f", name, check=False)
    for name in names["networks"]:
        docker("network", "rm", name, check=False)


def test_the_image_runs_the_smoke_training_job_and_writes_a_valid_record(image, tmp_path, cleanup, validate_result):
    name = f"rlw-test-smoke-{uuid.uuid4().hex[:8]}"
    cleanup["containers"].append(name)
    run = docker(
        "run",
        "--rm",
        "--name",
        name,
        "-v",
        f"{tmp_path}:/out",
        image,
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
        "2",
        "--output",
        "/out/smoke.json",
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    record = validate_result(tmp_path / "smoke.json")
    assert record["provenance"]["image"] == image and record["provenance"]["torch"].startswith("2.13")
    # The image preloads tcmalloc for every process (docker/worker/Dockerfile says why), and the record says so.
    assert record["provenance"]["allocator"] == "tcmalloc"
    assert "Total img/sec on 1 CPU(s)" in run.stdout


def test_the_image_writes_a_dataset_and_trains_a_step_on_it(image, tmp_path, cleanup):
    """The real-data path needs Pillow in the image (it came with Debian's torchvision before the image moved to
    torch's own wheel; the e2e campaign found it missing)."""
    name = f"rlw-test-data-{uuid.uuid4().hex[:8]}"
    cleanup["containers"].append(name)
    run = docker(
        "run",
        "--rm",
        "--name",
        name,
        "-v",
        f"{tmp_path}:/out",
        "--entrypoint",
        "bash",
        image,
        "-c",
        "ringlab-worker dataset --out /out/shapes --classes 2 --images-per-class 5 --image-size 16 "
        "&& ringlab-worker train --model tiny --batch-size 2 --data folder:/out/shapes --loader-workers 0 "
        "--num-warmup-batches 0 --num-batches-per-iter 1 --num-iters 1 --output /out/data.json",
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads((tmp_path / "data.json").read_text())["knobs"]["data"] == "folder:/out/shapes"


def test_the_image_refuses_bad_arguments_with_exit_2(image):
    run = docker("run", "--rm", image, "allreduce", "--step-factor", "1", check=False)
    assert run.returncode == 2 and "--step-factor must be 2 or more" in run.stderr


def test_two_containers_rendezvous_by_hostname_and_all_reduce(image, tmp_path, cleanup):
    """The deployed path: node 0 is found by its name, torchrun's workers by their hostnames, tc is usable."""
    tag = uuid.uuid4().hex[:8]
    network, nodes = f"rlw-test-net-{tag}", [f"rlw-test-node{i}-{tag}" for i in range(2)]
    cleanup["networks"].append(network)
    cleanup["containers"].extend(nodes)
    docker("network", "create", network)
    for rank, name in enumerate(nodes):
        docker(
            "run",
            "-d",
            "--name",
            name,
            "--hostname",
            name,
            "--network",
            network,
            "--cap-add",
            "NET_ADMIN",
            "-v",
            f"{tmp_path}:/out",
            "-e",
            "RINGLAB_NUM_NODES=2",
            "-e",
            f"RINGLAB_NODE_RANK={rank}",
            "-e",
            f"RINGLAB_HEAD_ADDR={nodes[0]}",
            "-e",
            f"RINGLAB_RUN_ID=image-{tag}",
            "-e",
            f"RINGLAB_RDZV_SECRET={rdzv_secret(tag)}",
            "--entrypoint",
            "bash",
            image,
            "-c",
            "tc qdisc add dev eth0 root tbf rate 1gbit burst 256kb latency 50ms && exec ringlab-worker allreduce "
            "--min-bytes 64K --max-bytes 1M --step-factor 4 --warmup-iters 1 --iters 2 --timeout-seconds 60 "
            "--output /out/probe.json",
        )
    codes = [int(docker("wait", name, timeout=180).stdout.strip()) for name in nodes]
    logs = "\n".join(docker("logs", name).stdout + docker("logs", name).stderr for name in nodes)
    assert codes == [0, 0], logs
    record = json.loads((tmp_path / "probe.json").read_text())
    assert sorted(record["world"]["hostnames"]) == sorted(nodes)
    assert all(row["wrong"] == 0 for row in record["metrics"]["rows"])

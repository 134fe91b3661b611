"""ringlab_launcher_lib (ansible/roles/worker/files/ringlab_launcher_lib.py), which ringlab-slurm and ringlab-mpi share:
the worker container is started with the Ansible launcher's settings, through a stand-in for python3-docker. The e2e
tests start it for real."""

import io
import signal
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "ansible" / "roles" / "worker" / "files"))
import ringlab_launcher_lib as lib  # noqa: E402

CONFIG = {
    "image": "ringlab-worker:cpu",
    "container_name": "ringlab-lab-worker-1",
    "network_mode": "container:lab-node-1",
    "shared_dir": "/srv/ringlab",
    "shm_size": "1g",
    "cpu_period_us": "10000",
    "gpus": "0",
    "rdzv_port": "29400",
    "env": {"GLOO_SOCKET_IFNAME": "eth0"},
    "labels": {"ringlab.testbed": "lab", "ringlab.role": "worker", "ringlab.rank": "1", "ringlab.launcher": "mpi"},
}


class FakeDocker:
    """What run_worker_container calls of python3-docker, recorded."""

    def __init__(self, logs, status):
        self.calls = []
        self.existing = {"ringlab-lab-worker-1"}
        fake = self

        class NotFound(Exception):
            pass

        class Container:
            def __init__(self, name):
                self.name = name

            def remove(self, force):
                fake.calls.append(("remove", self.name, force))
                fake.existing.discard(self.name)

            def logs(self, stream, follow):
                return iter(logs)

            def wait(self):
                return {"StatusCode": status}

        class Containers:
            def get(self, name):
                if name not in fake.existing:
                    raise NotFound(name)
                return Container(name)

            def run(self, image, command, **options):
                fake.calls.append(("run", image, command, options))
                fake.existing.add(options["name"])
                return Container(options["name"])

        self.module = types.ModuleType("docker")
        self.module.errors = types.SimpleNamespace(NotFound=NotFound)
        self.module.from_env = lambda: types.SimpleNamespace(containers=Containers())
        self.types = types.ModuleType("docker.types")
        self.types.Mount = lambda **kwargs: ("Mount", kwargs)
        self.types.DeviceRequest = lambda **kwargs: ("DeviceRequest", kwargs)


@pytest.fixture
def fake_docker(monkeypatch):
    def install(logs=(), status=0):
        fake = FakeDocker(list(logs), status)
        monkeypatch.setitem(sys.modules, "docker", fake.module)
        monkeypatch.setitem(sys.modules, "docker.types", fake.types)
        # The handlers that remove the container on SIGTERM are not installed in the test's own process.
        monkeypatch.setattr(signal, "signal", lambda *_args: None)
        return fake

    return install


def test_the_worker_container_gets_the_ansible_launchers_settings_and_is_removed_after(fake_docker):
    fake = fake_docker(logs=[b"node 1 of 2\nIter", b" #1\n"], status=3)
    out = io.BytesIO()
    env = {"RINGLAB_NODE_RANK": "1"}
    assert lib.run_worker_container(CONFIG, "r1", "train", ["--model", "tiny"], 0.5, env, out) == 3
    assert out.getvalue() == b"node 1 of 2\nIter #1\n"
    # A leftover of a killed earlier run is removed first, and the container after it exited.
    assert fake.calls[0] == ("remove", "ringlab-lab-worker-1", True)
    assert fake.calls[-1] == ("remove", "ringlab-lab-worker-1", True)
    _, image, command, options = fake.calls[1]
    assert (image, command) == ("ringlab-worker:cpu", ["train", "--model", "tiny"])
    assert options == {
        "name": "ringlab-lab-worker-1",
        "detach": True,
        "environment": env,
        "network_mode": "container:lab-node-1",
        "mounts": [("Mount", {"target": "/srv/ringlab", "source": "/srv/ringlab", "type": "bind"})],
        "shm_size": "1g",
        "labels": dict(CONFIG["labels"], **{"ringlab.run_id": "r1"}),
        "cpu_period": 10_000,
        "cpu_quota": 5_000,
    }


def test_a_gpu_node_gives_the_container_every_gpu_and_no_quota_means_no_cpu_limit(fake_docker):
    fake = fake_docker()
    lib.run_worker_container(dict(CONFIG, gpus="4"), "r1", "allreduce", [], None, {}, io.BytesIO())
    options = fake.calls[1][3]
    assert options["device_requests"] == [("DeviceRequest", {"count": -1, "capabilities": [["gpu"]]})]
    assert "cpu_period" not in options and "cpu_quota" not in options


def test_the_cpu_quota_comes_in_the_roles_period_not_dockers_100_ms():
    # Docker's --cpus would give 100 ms periods, after which a worker that waited on the network runs faster.
    assert lib.cfs_quota(0.5, 10_000) == (10_000, 5_000)
    assert lib.cfs_quota(1.5, 10_000) == (10_000, 15_000)
    # The least the CLI gives, 0.1 cores: the kernel's smallest quota. Docker's two decimals stay whole microseconds.
    assert lib.cfs_quota(0.1, 10_000) == (10_000, 1_000)
    assert lib.cfs_quota(0.29, 10_000) == (10_000, 2_900)


def test_the_environment_is_the_nodes_then_the_placement_then_the_run():
    env = lib.container_environment(
        CONFIG, {"RINGLAB_NUM_NODES": "2", "RINGLAB_NODE_RANK": "1", "RINGLAB_HEAD_ADDR": "10.0.0.10"}, "r1", 2, 1.5
    )
    assert env == {
        "GLOO_SOCKET_IFNAME": "eth0",
        "RINGLAB_NUM_NODES": "2",
        "RINGLAB_NODE_RANK": "1",
        "RINGLAB_HEAD_ADDR": "10.0.0.10",
        "RINGLAB_RDZV_PORT": "29400",
        "RINGLAB_RUN_ID": "r1",
        "RINGLAB_NPROC_PER_NODE": "2",
        "OMP_NUM_THREADS": "1",
    }


def test_the_secret_on_standard_inputs_first_line_goes_into_the_environment_and_not_into_the_script(monkeypatch):
    secret = "0123456789abcdef" * 2
    monkeypatch.delenv(lib.RDZV_SECRET_ENV, raising=False)
    assert (
        lib.take_secret_line(f"{secret}\n#!/bin/bash\nexec srun x\n", "ringlab-slurm") == "#!/bin/bash\nexec srun x\n"
    )
    assert lib.os.environ[lib.RDZV_SECRET_ENV] == secret


@pytest.mark.parametrize(
    "text", ["", "#!/bin/bash\nexec srun x\n", "0123456789abcdef\n#!/bin/bash\n", "ABCDEF" * 6 + "\n"]
)
def test_standard_input_without_a_secret_on_its_first_line_is_refused_naming_the_program(text, monkeypatch):
    monkeypatch.delenv(lib.RDZV_SECRET_ENV, raising=False)
    with pytest.raises(SystemExit, match="^ringlab-mpi: with --secret-first, standard input's first line must be"):
        lib.take_secret_line(text, "ringlab-mpi")
    assert lib.RDZV_SECRET_ENV not in lib.os.environ

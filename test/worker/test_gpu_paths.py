"""The GPU-only code paths, on a machine without a GPU: arguments, device placement, the AMP switch, the supported torch
releases, the GPU provenance and the NCCL environment. torch's CUDA queries are replaced where the answer
depends on hardware; the ringlab code that uses the answers is the real one."""

import json
import os
import stat
import sys
import types
import warnings

import pytest
import torch
from conftest import SCHEMA_PATH
from ringlab_worker import compat, result
from ringlab_worker.cli import build_parser, check_arguments, check_machine
from ringlab_worker.errors import BadArguments
from ringlab_worker.torchrun import network_env
from ringlab_worker.world import World, cuda_device_index, pick_device

H100 = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", total_memory=85_045_164_032, major=9, minor=0)


@pytest.mark.parametrize(
    "text, expected",
    [("1.13.0a0", (1, 13)), ("2.13.0+cpu", (2, 13)), ("2.14.1", (2, 14)), ("2.8.0a0+5228986c39.nv25.06", (2, 8))],
)
def test_torch_release_reads_major_and_minor_from_every_version_style(text, expected):
    assert compat.release(text) == expected


def test_the_grad_scaler_is_torch_amp_s_device_generic_one_and_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaler = compat.make_grad_scaler(enabled=False)
    assert type(scaler) is torch.amp.GradScaler and not scaler.is_enabled()


@pytest.mark.parametrize(
    "version, refused, warned",
    [
        ("1.13.1", True, False),
        ("2.0.0a0+1767026", True, False),
        ("2.9.1", True, False),
        ("2.10.0", False, True),
        ("2.11.0a0+gitabc", False, True),
        ("2.12.1", False, True),
        ("2.13.0+cpu", False, False),
        ("2.14.1", False, False),
        ("3.0.0", False, False),
    ],
)
def test_torch_below_2_10_is_refused_and_2_10_to_2_12_run_with_a_warning(version, refused, warned):
    refusal, warning = compat.support_problem(version)
    assert (refusal is not None, warning is not None) == (refused, warned)
    if refused:
        assert f"torch {version} is older than 2.10" in refusal and "CVE-2026-24747" in refusal


def test_a_worker_on_an_unsupported_torch_exits_2_before_anything_starts(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "1.13.1")
    with pytest.raises(BadArguments, match="older than 2.10") as refused:
        check_machine(build_parser().parse_args(["train", "--model", "tiny", "--device", "cpu"]))
    assert refused.value.exit_code == 2


def test_train_arguments_for_a_gpu_run_parse_into_the_recorded_knobs():
    args = build_parser().parse_args(
        [
            "train",
            "--model",
            "resnet50",
            "--precision",
            "amp",
            "--channels-last",
            "--device",
            "cuda",
            "--batch-size",
            "96",
        ]
    )
    check_arguments(args)
    knobs = result.knobs_of(args)
    assert knobs["precision"] == "amp" and knobs["channelsLast"] is True and knobs["batchSize"] == 96
    assert build_parser().parse_args(["train"]).channels_last is False


def test_amp_passes_the_machine_check_where_torch_sees_a_gpu_and_is_refused_where_it_sees_none(monkeypatch):
    args = build_parser().parse_args(["train", "--model", "tiny", "--precision", "amp"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    check_machine(args)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(BadArguments, match="--precision amp needs a CUDA GPU"):
        check_machine(args)


def test_every_model_is_ringlab_s_own_and_needs_no_torchvision(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchvision", None)  # makes `import torchvision` raise ImportError
    check_machine(build_parser().parse_args(["train", "--model", "inception_v3", "--device", "cpu"]))
    from ringlab_worker.models import build_model

    assert build_model("resnet50")[1] == 1000


@pytest.mark.parametrize("local_rank, device_count, index", [(0, 8, 0), (7, 8, 7), (3, 2, 1), (0, 1, 0)])
def test_each_process_gets_the_gpu_of_its_local_rank(local_rank, device_count, index):
    assert cuda_device_index(local_rank, device_count) == index


def test_cuda_without_a_gpu_is_a_bad_argument_and_auto_falls_back_to_the_cpu(monkeypatch):
    with pytest.raises(BadArguments):
        cuda_device_index(0, 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device("auto", 3) == torch.device("cpu")
    with pytest.raises(BadArguments, match="sees no GPU"):
        pick_device("cuda", 0)


def test_on_a_gpu_node_the_worker_binds_the_gpu_of_its_local_rank(monkeypatch):
    bound = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(torch.cuda, "set_device", bound.append)
    assert pick_device("auto", 3) == torch.device("cuda", 3)
    assert pick_device("cuda", 6) == torch.device("cuda", 2)
    assert bound == [torch.device("cuda", 3), torch.device("cuda", 2)]
    assert pick_device("cpu", 1) == torch.device("cpu")


@pytest.mark.parametrize("version, expected", [(90100, "9.1.0"), (91002, "9.10.2"), (8902, "8.9.2"), (None, None)])
def test_cudnn_versions_read_as_torch_encodes_them(version, expected):
    assert result.cudnn_version_text(version) == expected


def test_gpu_provenance_names_the_gpu_its_memory_and_every_library_version():
    assert result.gpu_provenance(H100, 90100, (2, 21, 5), "550.54.15") == {
        "deviceModel": "NVIDIA H100 80GB HBM3",
        "gpuMemoryBytes": 85_045_164_032,
        "gpuComputeCapability": "9.0",
        "cudnn": "9.1.0",
        "nccl": "2.21.5",
        "nvidiaDriver": "550.54.15",
    }
    assert result.gpu_provenance(H100, None, None, None)["nccl"] is None  # a torch built without NCCL


def _fake_nvidia_smi(folder, driver):
    script = folder / "nvidia-smi"
    script.write_text(f'#!/bin/sh\n[ "$1" = --query-gpu=driver_version ] && echo {driver}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(folder)


def test_a_record_from_a_gpu_run_carries_the_gpu_fields_and_matches_the_schema(monkeypatch, tmp_path, validate_result):
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: H100)
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 90100)
    monkeypatch.setattr(torch.distributed, "is_nccl_available", lambda: True)
    monkeypatch.setattr(torch.cuda.nccl, "version", lambda: (2, 21, 5))
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setenv("PATH", _fake_nvidia_smi(tmp_path, "550.54.15") + os.pathsep + os.environ["PATH"])
    world = World(
        rank=0,
        local_rank=0,
        size=1,
        nodes=1,
        procs_per_node=1,
        device=torch.device("cuda", 0),
        backend="nccl",
        hostnames=["gpu-node"],
    )
    args = build_parser().parse_args(["train", "--model", "tiny", "--precision", "amp", "--channels-last"])
    args.image_size = 32
    record = result.build_record(
        "train",
        args,
        world,
        "ddp",
        result.utc_now(),
        {
            "imagesPerSecondPerWorker": {"mean": 10.0, "ci95": 0.5},
            "imagesPerSecondTotal": {"mean": 10.0, "ci95": 0.5},
            "stepSeconds": [0.1],
            "parameterCount": 10,
            "gradientBytes": 40,
            "finalLoss": 2.3,
        },
    )
    path = tmp_path / "gpu.json"
    result.write_atomically(str(path), record)
    provenance = validate_result(path)["provenance"]
    assert provenance["device"] == "cuda" and provenance["deviceModel"] == "NVIDIA H100 80GB HBM3"
    assert (provenance["cuda"], provenance["cudnn"], provenance["nccl"], provenance["nvidiaDriver"]) == (
        "12.4",
        "9.1.0",
        "2.21.5",
        "550.54.15",
    )
    assert provenance["gpuComputeCapability"] == "9.0" and provenance["gpuMemoryBytes"] == 85_045_164_032


def test_a_cpu_record_has_the_gpu_fields_as_null():
    fields = result.cpu_provenance()
    assert {
        name: fields[name] for name in ("gpuMemoryBytes", "gpuComputeCapability", "cudnn", "nccl", "nvidiaDriver")
    } == dict.fromkeys(("gpuMemoryBytes", "gpuComputeCapability", "cudnn", "nccl", "nvidiaDriver"))
    assert fields["deviceModel"]


def test_the_schema_accepts_records_written_before_the_gpu_fields_existed():
    provenance = json.loads(SCHEMA_PATH.read_text())["properties"]["provenance"]
    assert not {"cudnn", "gpuMemoryBytes", "gpuComputeCapability"} & set(provenance["required"])


def test_nccl_uses_the_cluster_interface_the_launcher_was_given_and_logs_its_warnings():
    env = network_env({"RINGLAB_SOCKET_IFNAME": "ens5"})
    assert env == {
        "GLOO_SOCKET_IFNAME": "ens5",
        "NCCL_SOCKET_IFNAME": "ens5",
        "NCCL_DEBUG": "WARN",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    }
    # The interface ringlab was told wins over a stale NCCL_SOCKET_IFNAME; other NCCL settings of the user stay.
    env = network_env({"RINGLAB_SOCKET_IFNAME": "ens5", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO"})
    assert env["NCCL_SOCKET_IFNAME"] == "ens5" and "NCCL_DEBUG" not in env


def test_without_an_interface_nccl_excludes_the_docker_bridge_and_loopback():
    assert network_env({})["NCCL_SOCKET_IFNAME"] == "^docker0,lo"
    assert "GLOO_SOCKET_IFNAME" not in network_env({})
    assert network_env({"NCCL_SOCKET_IFNAME": "ib0"}).get("NCCL_SOCKET_IFNAME") is None  # the user's


@pytest.mark.filterwarnings("ignore:.*CUDA is not available")  # expected here: the context is only built
def test_amp_steps_use_fp16_autocast_for_cuda():
    context = compat.autocast("cuda")
    assert isinstance(context, torch.autocast) and context.fast_dtype == torch.float16
    assert context.device == "cuda"


@pytest.mark.parametrize(
    "backend, device, expected",
    [("nccl", torch.device("cuda", 1), {"device_ids": [1]}), ("gloo", torch.device("cpu"), {})],
)
def test_a_barrier_under_nccl_names_the_rank_s_gpu(monkeypatch, backend, device, expected):
    # torch 2.11 on the first GPU run warned "barrier(): using the device under current context" for the probe's
    # barrier: NCCL had to guess the device.
    calls = []
    monkeypatch.setattr(torch.distributed, "barrier", lambda **kwargs: calls.append(kwargs))
    World(
        rank=0, local_rank=1, size=2, nodes=1, procs_per_node=2, device=device, backend=backend, hostnames=["a", "a"]
    ).barrier()
    assert calls == [expected]

"""The command-line contract: bad arguments exit 2 with one clear line; a single process needs no rendezvous."""

import math

import pytest
from conftest import base_env, run_worker


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "--model", "vgg16"], "invalid choice: 'vgg16'"),
        (["train", "--batch-size", "0"], "--batch-size: must be a positive integer"),
        (["allreduce", "--min-bytes", "1M", "--max-bytes", "4K"], "need 4 <= --min-bytes <= --max-bytes"),
        (["allreduce", "--max-bytes", "lots"], "'lots' is not a size in bytes"),
        (["train", "--device", "cpu", "--precision", "amp"], "--precision amp runs on a GPU only"),
        (["benchmark"], "invalid choice: 'benchmark'"),
        (["train", "--reduction", "tree"], "invalid choice: 'tree'"),
        (
            ["train", "--engine", "horovod", "--reduction", "parameter-server"],
            "--reduction parameter-server with --engine horovod: Horovod always uses its own all-reduce",
        ),
        (
            ["allreduce", "--library", "mpi"],
            "--library mpi: this process was not started by mpirun (OMPI_COMM_WORLD_SIZE is unset)",
        ),
        (["allreduce", "--library", "mpi", "--reduction", "parameter-server"], "--library mpi sums with MPI_Allreduce"),
        (["allreduce", "--library", "mpi", "--device", "cuda"], "--library mpi sums host memory"),
        (["allreduce", "--library", "nccl"], "invalid choice: 'nccl'"),
        (["allreduce", "--reference", "ping"], "invalid choice: 'ping'"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message_before_importing_torch(args, message):
    code, output, seconds = run_worker(args)
    assert code == 2, output
    assert output.startswith("ringlab-worker: error: ") and message in output
    assert seconds < 10  # argparse only; no torch import, no rendezvous


def test_amp_without_a_gpu_is_refused_with_exit_2_and_says_why():
    code, output, _ = run_worker(["train", "--model", "tiny", "--precision", "amp"])
    assert code == 2, output
    assert "--precision amp needs a CUDA GPU" in output and "torch.cuda.is_available() is False" in output


def test_horovod_engine_without_horovod_is_refused_with_exit_2_and_the_reason():
    code, output, _ = run_worker(["train", "--model", "tiny", "--engine", "horovod"])
    assert code == 2, output
    assert "import horovod.torch` failed" in output and "does not build against current PyTorch" in output


@pytest.mark.parametrize(
    "env, message",
    [
        ({"RINGLAB_NUM_NODES": "2", "RINGLAB_NODE_RANK": "0"}, "RINGLAB_HEAD_ADDR (the address of node 0) is required"),
        ({"RINGLAB_NUM_NODES": "2", "RINGLAB_HEAD_ADDR": "h"}, "RINGLAB_NODE_RANK is required"),
        (
            {"RINGLAB_NUM_NODES": "2", "RINGLAB_NODE_RANK": "2", "RINGLAB_HEAD_ADDR": "h"},
            "must be below RINGLAB_NUM_NODES=2",
        ),
        ({"RINGLAB_NUM_NODES": "two"}, "RINGLAB_NUM_NODES must be an integer"),
    ],
)
def test_incomplete_rendezvous_environment_exits_2(env, message):
    code, output, _ = run_worker(["allreduce", "--max-bytes", "4K"], env=base_env(**env))
    assert code == 2, output
    assert message in output


def test_without_rendezvous_environment_a_single_process_trains_and_writes_the_record(tmp_path, validate_result):
    output = tmp_path / "single.json"
    code, printed, _ = run_worker(
        [
            "train",
            "--model",
            "tiny",
            "--batch-size",
            "4",
            "--num-warmup-batches",
            "0",
            "--num-batches-per-iter",
            "1",
            "--num-iters",
            "2",
            "--channels-last",
            "--output",
            str(output),
        ],
        env=base_env(RINGLAB_RUN_ID="solo", RINGLAB_IMAGE="ringlab/worker:test"),
    )
    assert code == 0, printed
    record = validate_result(output)
    assert record["runId"] == "solo" and record["provenance"]["image"] == "ringlab/worker:test"
    assert record["provenance"]["allocator"] == "glibc"  # nothing preloaded outside the image
    assert record["world"] == {
        "size": 1,
        "nodes": 1,
        "procsPerNode": 1,
        "backend": "gloo",
        "engine": "ddp",
        "hostnames": record["world"]["hostnames"],
    }
    assert record["provenance"]["device"] == "cpu" and record["provenance"]["nccl"] is None
    assert record["knobs"]["channelsLast"] is True and record["provenance"]["cudnn"] is None
    assert math.isfinite(record["metrics"]["finalLoss"])
    assert [p.name for p in tmp_path.iterdir()] == ["single.json"]  # no temp file left behind


def _main_refuses(argv, monkeypatch, capsys) -> str:
    """cli.main in this process (so that torch can be patched): exit 2, and the one line it printed."""
    from ringlab_worker import cli
    from ringlab_worker.result import LAUNCHED_AT_ENV

    monkeypatch.delenv("RINGLAB_NUM_NODES", raising=False)
    monkeypatch.setenv(LAUNCHED_AT_ENV, "2000-01-01T00:00:00.000Z")
    assert cli.main(argv) == 2
    return capsys.readouterr().err


def test_a_layout_the_installed_torch_lacks_is_refused_with_exit_2_naming_the_flag(monkeypatch, capsys):
    import torch.distributed.fsdp as fsdp
    import torch.distributed.pipelining as pipelining
    from ringlab_worker.cli import build_parser
    from ringlab_worker.parallel import TORCH_NEEDS, torch_problem

    language = ["train", "--model", "gpt-nano", "--device", "cpu", "--batch-size", "4"]
    # The installed torch has every layout's needs.
    for flags in (
        ["--parallelism", "fsdp", "--fsdp-sharding", "grad-op"],
        ["--parallelism", "tensor"],
        ["--parallelism", "pipeline", "--pipeline-schedule", "1f1b"],
    ):
        assert torch_problem(build_parser().parse_args(language + flags)) is None, flags
    assert set(TORCH_NEEDS) == {"fsdp", "tensor", "pipeline"}
    # A fully_shard without reshard_after_forward (an FSDP that cannot keep parameters gathered): grad-op is refused.
    monkeypatch.setattr(fsdp, "fully_shard", lambda module, mesh=None: module)
    said = _main_refuses(language + ["--parallelism", "fsdp", "--fsdp-sharding", "grad-op"], monkeypatch, capsys)
    assert said.startswith(
        "ringlab-worker: error: --parallelism fsdp --fsdp-sharding grad-op needs "
        "torch.distributed.fsdp.fully_shard's reshard_after_forward, which the installed torch "
    ), said
    # A pipelining without 1F1B: that schedule is refused, by its flag.
    monkeypatch.delattr(pipelining, "Schedule1F1B")
    said = _main_refuses(language + ["--parallelism", "pipeline", "--pipeline-schedule", "1f1b"], monkeypatch, capsys)
    assert (
        "error: --pipeline-schedule 1f1b needs torch.distributed.pipelining.Schedule1F1B, which the installed torch"
        in said
    )

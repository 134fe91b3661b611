"""The reduction strategies over real Gloo on loopback: N processes, point-to-point sends and receives."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import base_env, free_port, run_worker
from ringlab_worker import reduction, registry
from ringlab_worker.models import build_model
from ringlab_worker.reductions.sharded_parameter_server import shards

HERE = Path(__file__).resolve().parent


def run_ranks(size: int, out_dir: Path) -> list:
    port = free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "reduction_step.py"), str(rank), str(size), str(port), str(out_dir)],
            env=base_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(size)
    ]
    outputs = [proc.communicate(timeout=240)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * size, outputs
    return [torch.load(out_dir / f"rank{rank}.pt") for rank in range(size)]


# The hooks' use of torch is the same at every size; the ring's bookkeeping per size is ringlab's own. So one size (odd,
# more than two ranks) runs on every torch release, the others on the first.
@pytest.mark.parametrize("size", [2, 3, 4])
def test_every_reduction_leaves_all_ranks_with_the_parameters_the_ring_gives(size, tmp_path):
    ranks = run_ranks(size, tmp_path)
    for fp16 in (False, True):
        ring = ranks[0][f"ring/fp16={fp16}"]
        for name in reduction.PROBED_REDUCTIONS:
            for rank, saved in enumerate(ranks):
                params = saved[f"{name}/fp16={fp16}"]
                # Same on every rank: bit for bit, as data parallelism needs.
                assert all(
                    torch.equal(mine, first)
                    for mine, first in zip(params, ranks[0][f"{name}/fp16={fp16}"], strict=True)
                ), (
                    name,
                    rank,
                )
                # Same as the ring within float rounding (sums in another order; fp16 rounds on the wire).
                tolerance = 1e-3 if fp16 else 1e-5
                assert all(
                    torch.allclose(mine, reference, atol=tolerance, rtol=0)
                    for mine, reference in zip(params, ring, strict=True)
                ), (name, fp16)
        # The step did something: parameters moved away from the seeded start.
        torch.manual_seed(0)
        start = [p.detach() for p in build_model("small")[0].parameters()]
        assert any(not torch.allclose(a, b) for a, b in zip(ring, start, strict=True))
    total = sum(rank + 1 for rank in range(size))
    for count in (1, 3, 10, 1001):
        expected = torch.arange(count, dtype=torch.float32) * total
        for name in reduction.PROBED_REDUCTIONS:
            for saved in ranks:
                assert torch.equal(saved[f"sum/{name}/{count}"], expected), (name, count)
    # PowerSGD: every step synchronous, so every rank holds the same model; the ring's for its two plain steps, then
    # another (the gradients travel as rank-1 factors from step 2 on).
    for step in range(6):
        assert all(
            torch.equal(mine, first)
            for saved in ranks
            for mine, first in zip(saved[f"powersgd/{step}"], ranks[0][f"powersgd/{step}"], strict=True)
        ), step
        assert ranks[0][f"powersgd/divergence/{step}"] == 0
        same_as_ring = all(
            torch.allclose(mine, ring, atol=1e-5, rtol=0)
            for mine, ring in zip(ranks[0][f"powersgd/{step}"], ranks[0][f"ring/{step}"], strict=True)
        )
        assert same_as_ring == (step < 2), step
    # Local SGD: synchronous for the warm-up (steps 0 and 1), then each rank steps alone on its own data, and the
    # averager brings them together every 3 steps (after step 2 and step 5, counting from 0).
    assert [ranks[0][f"local-sgd/divergence/{step}"] == 0 for step in range(6)] == [
        True,
        True,
        True,
        False,
        False,
        True,
    ]
    assert all(
        saved[f"local-sgd/divergence/{step}"] == ranks[0][f"local-sgd/divergence/{step}"]
        for saved in ranks
        for step in range(6)
    )
    # At each of its two averagings the averager recorded how far the replicas had drifted from their average (the
    # largest over ranks, the same on every rank); the synchronous strategies record nothing of the kind.
    drift = ranks[0]["local-sgd/finish"]["averagingDrift"]
    assert len(drift) == 2 and all(value > 0 for value in drift), drift
    assert all(saved["local-sgd/finish"] == {"averagingDrift": drift} for saved in ranks)
    assert ranks[0]["ring/finish"] == {} and ranks[0]["powersgd/finish"] == {}


def test_shards_cover_the_tensor_in_order_with_sizes_differing_by_at_most_one():
    tensor = torch.arange(10)
    parts = shards(tensor, 4)
    assert [part.numel() for part in parts] == [3, 3, 2, 2]
    assert torch.equal(torch.cat(parts), tensor)
    assert [part.numel() for part in shards(torch.arange(2), 4)] == [1, 1, 0, 0]


def test_every_reduction_of_the_registry_is_a_unit_with_what_its_entry_says_and_no_other_unit_exists():
    # One module per registry.json reduction (reductions/), each with its install and its wire bytes; the probe can
    # time exactly those whose probedAs is their own name, so exactly those have a sum of one buffer.
    from ringlab_worker.reductions import UNITS

    folder = Path(reduction.__file__).resolve().parent / "reductions"
    modules = {path.stem for path in folder.glob("*.py")} - {"__init__", "exchange"}
    assert modules == {name.replace("-", "_") for name in registry.REDUCTIONS}
    assert tuple(UNITS) == reduction.REDUCTIONS == registry.REDUCTIONS
    for name, unit in UNITS.items():
        assert callable(unit.install) and callable(unit.wire_bytes_per_step), name
    assert set(reduction.SUMS) == set(registry.PROBED_REDUCTIONS)


def test_the_bytes_on_the_wire_follow_each_strategy():
    from argparse import Namespace

    model, _ = build_model("small")
    args = dict(fp16_allreduce=False, powersgd_rank=1, powersgd_start_iter=2, local_sgd_period=4, local_sgd_warmup=2)
    whole = sum(p.numel() * 4 for p in model.parameters())
    assert reduction.wire_bytes_per_step(model.parameters(), Namespace(reduction="ring", **args)) == whole
    assert (
        reduction.wire_bytes_per_step(
            model.parameters(), Namespace(reduction="ring", **{**args, "fp16_allreduce": True})
        )
        == whole / 2
    )
    assert reduction.wire_bytes_per_step(model.parameters(), Namespace(reduction="local-sgd", **args)) == whole / 4
    # small: conv 32x3x3x3 (32 x 27: (32 + 27)·1·2 = 118 < 864, compressed), conv 64x32x3x3, linear 1024x4096,
    # linear 10x1024 ((10 + 1024)·2 = 2068 < 10240), and four bias vectors, sent whole.
    factors = (32 + 27) + (64 + 288) + (1024 + 4096) + (10 + 1024)
    biases = 32 + 64 + 1024 + 10
    assert reduction.wire_bytes_per_step(model.parameters(), Namespace(reduction="powersgd", **args)) == 4 * (
        factors + biases
    )
    # Rank 8: the first conv ((32 + 27)·8 = 472, not under half of 864) and the classifier ((10 + 1024)·8 = 8272, not
    # under half of 10240) are no longer worth compressing and travel whole.
    rank8 = 32 * 27 + (64 + 288) * 8 + (1024 + 4096) * 8 + 10 * 1024
    assert reduction.wire_bytes_per_step(
        model.parameters(), Namespace(reduction="powersgd", **{**args, "powersgd_rank": 8})
    ) == 4 * (rank8 + biases)


def test_the_asynchronous_server_with_one_worker_is_plain_momentum_sgd(tmp_path):
    # One rank: every update is fresh and applied alone, so the server's momentum SGD must retrace torch's SGD step
    # for step, to the last bit of the loss.
    losses = {}
    for name in ("ring", "async-parameter-server"):
        output = tmp_path / f"{name}.json"
        code, log, _ = run_worker(
            [
                "train",
                "--model",
                "tiny",
                "--reduction",
                name,
                "--batch-size",
                "8",
                "--learning-rate",
                "0.05",
                "--momentum",
                "0.9",
                "--num-warmup-batches",
                "1",
                "--num-batches-per-iter",
                "2",
                "--num-iters",
                "2",
                "--cpu-check-seconds",
                "0",
                "--output",
                str(output),
            ],
            timeout=120,
        )
        assert code == 0, log
        losses[name] = json.loads(output.read_text())["metrics"]
    assert losses["async-parameter-server"]["finalLoss"] == losses["ring"]["finalLoss"]
    assert losses["async-parameter-server"]["staleness"] == {
        "bound": 1,
        "updates": 5,
        "max": 0,
        "mean": 0.0,
        "histogram": {"0": 5},
    }
    assert "staleness" not in losses["ring"]


def test_an_unknown_reduction_is_refused():
    with pytest.raises(ValueError, match="unknown reduction 'tree'"):
        reduction.sum_over_ranks(torch.zeros(2), "tree")

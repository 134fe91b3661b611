"""The layouts (parallel/) on loopback: every one trains the transformer through the real launcher, torchrun and Gloo,
and its loss at every step equals the single worker's on the same batch, to float tolerance. That is what makes a
layout's throughput comparable with another's: the same training, laid out differently.

Two ranks on one "node" (RINGLAB_NPROC_PER_NODE=2). Every rank draws the same synthetic batch, so DDP's and FSDP's
global batch of two equal halves has the single worker's gradient; a tensor group shares one batch; a pipeline takes
the whole batch in micro-batches, whose gradients torch scales by 1/m.
"""

import math
import uuid

import pytest

from conftest import free_port, node_env

MODEL = ["--model", "gpt-nano", "--sequence-length", "32", "--batch-size", "4", "--optimizer", "adamw",
         "--learning-rate", "0.01", "--num-warmup-batches", "1", "--num-batches-per-iter", "2", "--num-iters", "2",
         "--calibration-seconds", "0", "--timeout-seconds", "60"]
STEPS = 1 + 2 * 2


def run_layout(nodes, tmp_path, validate_result, processes, layout_args, name):
    output = tmp_path / f"{name}.json"
    env = {**node_env(0, 1, free_port(), f"test-{uuid.uuid4().hex[:8]}"), "RINGLAB_NPROC_PER_NODE": str(processes)}
    proc = nodes.start(["train", *MODEL, *layout_args, "--output", str(output)], env)
    code, printed = nodes.finish(proc, timeout=180)
    assert code == 0, printed
    return validate_result(output)


LAYOUTS = {
    "ddp": ["--parallelism", "ddp"],
    "fsdp-full": ["--parallelism", "fsdp", "--fsdp-sharding", "full"],
    "fsdp-grad-op": ["--parallelism", "fsdp", "--fsdp-sharding", "grad-op", "--fsdp-prefetch", "1"],
    "fsdp-none": ["--parallelism", "fsdp", "--fsdp-sharding", "none"],
    "tensor": ["--parallelism", "tensor"],
    "pipeline-gpipe": ["--parallelism", "pipeline", "--micro-batches", "2"],
    "pipeline-1f1b": ["--parallelism", "pipeline", "--micro-batches", "2", "--pipeline-schedule", "1f1b"],
}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return {}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_layout_trains_the_transformer_to_the_single_worker_s_losses(layout, nodes, tmp_path, validate_result,
                                                                          reference):
    if "single" not in reference:
        reference["single"] = run_layout(nodes, tmp_path, validate_result, 1, [], "single")["metrics"]["losses"]
    expected = reference["single"]
    record = run_layout(nodes, tmp_path, validate_result, 2, LAYOUTS[layout], layout)
    metrics = record["metrics"]
    assert len(expected) == len(metrics["losses"]) == STEPS
    assert all(math.isfinite(loss) for loss in metrics["losses"])
    # The loss falls (AdamW at 0.01 on one repeated batch) and every layout's follows the single worker's.
    assert expected[-1] < expected[0]
    assert metrics["losses"] == pytest.approx(expected, rel=2e-5, abs=2e-5)
    assert record["knobs"]["parallelism"] == LAYOUTS[layout][1]
    assert metrics["unit"] == "tokens" and metrics["tokensPerSecondTotal"]["mean"] > 0
    assert len(metrics["memory"]["perRank"]) == 2

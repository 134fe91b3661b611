"""The layouts (parallel/) on loopback: every one trains each family's transformer (GPT-2's, and Llama's with grouped-
query attention: llama-nano's 4 query heads share 2 key and value heads, which tensor parallelism splits one a rank)
through the real launcher, torchrun and Gloo, and its loss at every step equals the single worker's on the same batch,
to float tolerance. That is what makes a layout's throughput comparable with another's: the same training, laid out
differently. So does activation checkpointing's: selective and full recompute exactly what they did not keep.

Two ranks on one "node" (RINGLAB_NPROC_PER_NODE=2). Every rank draws the same synthetic batch, so DDP's and FSDP's
global batch of two equal halves has the single worker's gradient; a tensor group shares one batch; a pipeline takes
the whole batch in micro-batches, whose gradients torch scales by 1/m.
"""

import math
import uuid
from pathlib import Path

import pytest
from conftest import WORKER_DIR, free_port, node_env

REPLICA_SHIM = Path(__file__).parent / "replica_shim"

# One small model of each family (registry.json).
MODELS = ("gpt-nano", "llama-nano")
MODEL = [
    "--sequence-length",
    "32",
    "--batch-size",
    "4",
    "--optimizer",
    "adamw",
    "--learning-rate",
    "0.01",
    "--num-warmup-batches",
    "1",
    "--num-batches-per-iter",
    "2",
    "--num-iters",
    "2",
    "--cpu-check-seconds",
    "0",
    "--timeout-seconds",
    "60",
]
STEPS = 1 + 2 * 2


def run_layout(nodes, tmp_path, validate_result, processes, layout_args, name, extra_env=None, model="gpt-nano"):
    output = tmp_path / f"{model}-{name}.json"
    env = {
        **node_env(0, 1, free_port(), f"test-{uuid.uuid4().hex[:8]}"),
        "RINGLAB_NPROC_PER_NODE": str(processes),
        **(extra_env or {}),
    }
    proc = nodes.start(["train", "--model", model, *MODEL, *layout_args, "--output", str(output)], env)
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


def single_worker_losses(reference, model, nodes, tmp_path, validate_result):
    if model not in reference:
        record = run_layout(nodes, tmp_path, validate_result, 1, [], "single", model=model)
        reference[model] = record["metrics"]["losses"]
    return reference[model]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("model", MODELS)
def test_every_layout_trains_the_transformer_to_the_single_worker_s_losses(
    model, layout, nodes, tmp_path, validate_result, reference
):
    expected = single_worker_losses(reference, model, nodes, tmp_path, validate_result)
    record = run_layout(nodes, tmp_path, validate_result, 2, LAYOUTS[layout], layout, model=model)
    metrics = record["metrics"]
    assert len(expected) == len(metrics["losses"]) == STEPS
    assert all(math.isfinite(loss) for loss in metrics["losses"])
    # The loss falls (AdamW at 0.01 on one repeated batch) and every layout's follows the single worker's.
    assert expected[-1] < expected[0]
    assert metrics["losses"] == pytest.approx(expected, rel=2e-5, abs=2e-5)
    assert record["knobs"]["parallelism"] == LAYOUTS[layout][1]
    assert metrics["unit"] == "tokens" and metrics["tokensPerSecondTotal"]["mean"] > 0
    assert len(metrics["memory"]["perRank"]) == 2
    # AdamW in the fastest implementation the CPU has (torch's fused kernel), on plain tensors and DTensor shards.
    assert metrics["optimizerImplementation"] == "fused"


@pytest.mark.parametrize("mode", ["selective", "full"])
@pytest.mark.parametrize("layout", ["ddp", "tensor"])
def test_activation_checkpointing_recomputes_to_the_single_worker_s_losses(
    mode, layout, nodes, tmp_path, validate_result, reference
):
    expected = single_worker_losses(reference, "llama-nano", nodes, tmp_path, validate_result)
    args = [*LAYOUTS[layout], "--activation-checkpointing", mode]
    record = run_layout(nodes, tmp_path, validate_result, 2, args, f"{layout}-{mode}", model="llama-nano")
    assert record["knobs"]["activationCheckpointing"] == mode
    assert record["metrics"]["losses"] == pytest.approx(expected, rel=2e-5, abs=2e-5)


TWO_D_LAYOUTS = {
    # FSDP across the 2 data-parallel ranks of each tensor pair: dp_shard 2 x tp 2.
    "fsdp-x-tensor": ["--parallelism", "fsdp", "--tensor-degree", "2"],
    # Two 2-stage pipelines, their gradients all-reduced between the replicas: pp 2 x dp_replicate 2.
    "pipeline-x-ddp": ["--parallelism", "pipeline", "--pipeline-stages", "2", "--micro-batches", "2"],
}


TWO_D_DIMS = {
    "fsdp-x-tensor": {"pp": 1, "dp_replicate": 1, "dp_shard": 2, "tp": 2},
    "pipeline-x-ddp": {"pp": 2, "dp_replicate": 2, "dp_shard": 1, "tp": 1},
}


@pytest.mark.parametrize("layout", sorted(TWO_D_LAYOUTS))
def test_the_two_dimensional_layouts_train_on_four_ranks_to_the_single_worker_s_losses(
    layout, nodes, tmp_path, validate_result, reference
):
    expected = single_worker_losses(reference, "gpt-nano", nodes, tmp_path, validate_result)
    record = run_layout(nodes, tmp_path, validate_result, 4, TWO_D_LAYOUTS[layout], layout)
    metrics = record["metrics"]
    assert metrics["losses"] == pytest.approx(expected, rel=2e-5, abs=2e-5)
    assert len(metrics["memory"]["perRank"]) == 4
    assert metrics["layout"]["dims"] == TWO_D_DIMS[layout]


def test_a_pipeline_s_replicas_stay_equal_when_their_batches_differ(nodes, tmp_path, validate_result):
    """pipeline x data on 4 ranks: the two replicas of each stage train on batches of their own (replica_shim) and
    must end every step with the same parameters, which only the average of their gradients gives; the last stage's
    too (torch's DDP around a stage left those apart)."""
    sums = tmp_path / "sums"
    sums.mkdir()
    run_layout(
        nodes,
        tmp_path,
        validate_result,
        4,
        TWO_D_LAYOUTS["pipeline-x-ddp"],
        "replicas",
        {"PYTHONPATH": f"{REPLICA_SHIM}:{WORKER_DIR}", "REPLICA_SHIM_OUT": str(sums), "REPLICA_SHIM_REPLICAS": "2"},
    )
    batch = {rank: (sums / f"batch-{rank}.txt").read_text() for rank in range(4)}
    assert batch[0] == batch[2] != batch[1] == batch[3], "the replicas did not draw batches of their own"
    after = {rank: (sums / f"rank-{rank}.txt").read_text().split() for rank in range(4)}
    assert len(after[0]) == STEPS
    assert after[0] == after[1], "stage 0's replicas trained apart"
    assert after[2] == after[3], "stage 1's replicas trained apart"
    assert after[0] != after[2]

"""The pieces of the layouts that need no process group: the degrees (parallel/dims.py), each family's transformer's
size and its pipeline split (models/), and the command line's refusals of layouts a model or a knob cannot take."""

import json
from dataclasses import replace

import pytest
import torch
from conftest import REPO
from ringlab_worker import models
from ringlab_worker.cli import build_parser, check_arguments
from ringlab_worker.config import TrainConfig
from ringlab_worker.errors import BadArguments
from ringlab_worker.models import model_spec
from ringlab_worker.models.transformer import Transformer, TransformerShape
from ringlab_worker.parallel.dims import ParallelDims, dims_of
from ringlab_worker.registry import LANGUAGE_SHAPE, PARAMETER_COUNT

COUNTS = json.loads((REPO / "test" / "fixtures" / "transformer-counts.json").read_text())["cases"]


def train_args(*extra, model="gpt-nano"):
    args = build_parser().parse_args(["train", "--model", model, *extra])
    check_arguments(args)
    return args


def refusal(*extra, model="gpt-nano") -> str:
    with pytest.raises(BadArguments) as refused:
        train_args(*extra, model=model)
    return str(refused.value)


@pytest.mark.parametrize("name", sorted(LANGUAGE_SHAPE))
def test_each_language_model_has_the_parameters_registry_json_says(name):
    """The module the worker builds, its family's count and registry.json's (which test/workload/transformer.test.ts
    holds the TypeScript count and the published counts to) are one number: Llama 3.1 8B's 8,030,261,248 too."""
    spec = model_spec(name)
    config = TrainConfig.from_args(train_args(model=name))
    with torch.device("meta"):  # Llama 3.1 405B's parameters take no memory here
        model = spec.build(config)
    counted = sum(parameter.numel() for parameter in model.parameters())  # a tied head is the embedding's, once
    family = models.transformer if LANGUAGE_SHAPE[name]["family"] == "gpt2" else models.llama
    # gpt2 models learn as many positions as the run's sequence, which by default is the registry's maxPositions.
    assert counted == PARAMETER_COUNT[name] == family.parameter_count(model.shape)


def test_a_llama_model_has_grouped_query_attention_rmsnorm_swiglu_and_a_tied_head_where_registered():
    config = TrainConfig.from_args(train_args(model="llama-micro"))
    model = model_spec("llama-micro").build(config)
    block = model.blocks["0"]
    # 4 query heads of 32 share 2 key and value heads: k and v are 128 x 64.
    assert block.attention.q.weight.shape == (128, 128) and block.attention.k.weight.shape == (64, 128)
    assert isinstance(block.norm1, torch.nn.RMSNorm) and block.mlp.w1.weight.shape == (384, 128)
    assert model.head.weight is model.embedding.weight
    assert not any(layer.bias is not None for layer in model.modules() if isinstance(layer, torch.nn.Linear))
    # --kv-heads 4 switches grouped-query attention off: k and v as wide as q.
    wider = model_spec("llama-micro").build(TrainConfig.from_args(train_args("--kv-heads", "4", model="llama-micro")))
    assert wider.blocks["0"].attention.k.weight.shape == (128, 128)


def test_degrees_place_ranks_with_tensor_parallelism_innermost():
    dims = ParallelDims(pp=2, dp_replicate=1, dp_shard=2, tp=2)
    assert dims.world_size == 8 and dims.data_parallel == 2
    assert [dims.coordinates(rank)["tp"] for rank in range(4)] == [0, 1, 0, 1]
    assert [dims.coordinates(rank)["pp"] for rank in (0, 3, 4, 7)] == [0, 0, 1, 1]
    # Ranks of one tensor group read the same batch; the pipeline's second stage the same as its first.
    assert [dims.data_parallel_rank(rank) for rank in range(8)] == [0, 0, 1, 1, 0, 0, 1, 1]


@pytest.mark.parametrize(
    "flags, world, nodes, expected",
    [
        ([], 4, 4, ParallelDims(dp_replicate=4)),
        (["--parallelism", "fsdp"], 4, 2, ParallelDims(dp_shard=4)),
        (["--parallelism", "fsdp", "--tensor-degree", "2"], 4, 2, ParallelDims(dp_shard=2, tp=2)),
        (["--parallelism", "fsdp", "--fsdp-sharding", "none"], 3, 3, ParallelDims(dp_replicate=3)),
        (["--parallelism", "tensor"], 3, 3, ParallelDims(tp=3)),
        (["--parallelism", "pipeline"], 3, 3, ParallelDims(pp=3)),
        (["--parallelism", "pipeline"], 4, 2, ParallelDims(pp=2, dp_replicate=2)),
        (["--parallelism", "pipeline", "--pipeline-stages", "4"], 4, 2, ParallelDims(pp=4)),
        (["--parallelism", "pipeline"], 1, 1, ParallelDims(pp=1)),
    ],
)
def test_each_parallelism_divides_the_world_as_its_degrees_say(flags, world, nodes, expected):
    assert dims_of(train_args(*flags), world, nodes) == expected


@pytest.mark.parametrize(
    "flags, world, expected",
    [
        (
            ["--parallelism", "fsdp", "--tensor-degree", "3", "--heads", "6", "--width", "96"],
            4,
            "--tensor-degree 3 does not divide the run's 4 workers",
        ),
        (["--parallelism", "tensor", "--tensor-degree", "2"], 4, "use --parallelism fsdp --tensor-degree 2"),
        (["--parallelism", "pipeline", "--pipeline-stages", "3"], 4, "--pipeline-stages 3 does not divide"),
    ],
)
def test_degrees_that_do_not_divide_the_world_are_refused(flags, world, expected):
    with pytest.raises(BadArguments, match=expected.replace("-", r"\-")):
        dims_of(train_args(*flags), world, 2)


@pytest.mark.parametrize(
    "flags, expected",
    [
        (["--fsdp-sharding", "grad-op"], "--fsdp-sharding belongs to --parallelism fsdp"),
        (["--micro-batches", "2"], "--micro-batches belongs to --parallelism pipeline"),
        (["--tensor-degree", "2"], "--tensor-degree belongs to --parallelism tensor or fsdp"),
        (
            ["--parallelism", "fsdp", "--reduction", "powersgd"],
            "--reduction powersgd with --parallelism fsdp: the reductions are DDP's",
        ),
        (
            ["--parallelism", "tensor", "--fp16-allreduce"],
            "--fp16-allreduce with --parallelism tensor: fp16Allreduce compresses",
        ),
        (
            ["--parallelism", "pipeline", "--batch-size", "6", "--micro-batches", "4"],
            "must be a multiple of --micro-batches 4",
        ),
        (["--image-size", "64"], "--image-size belongs to image models; this run's model is language"),
        (["--sequence-length", "4096"], "more than gpt-nano's 128 learned positions: set it to 128 or less"),
        (["--width", "66"], "--width 66 must be a multiple of --heads 4"),
        (["--kv-heads", "2"], "--kv-heads with gpt-nano: a gpt2 model gives every query head its own"),
    ],
)
def test_knobs_a_layout_or_model_cannot_take_are_refused_naming_the_flag(flags, expected):
    assert expected in refusal(*flags)


@pytest.mark.parametrize(
    "model, flags, expected",
    [
        ("llama-nano", ["--kv-heads", "3"], "--kv-heads 3 must divide --heads 4"),
        ("llama-nano", ["--heads", "8", "--kv-heads", "3"], "--kv-heads 3 must divide --heads 8"),
        (
            "llama-nano",
            ["--parallelism", "fsdp", "--tensor-degree", "4"],
            "--tensor-degree 4 must divide the model's 4 heads and 2 key and value heads",
        ),
        ("llama-nano", ["--sequence-length", "1024"], "more than llama-nano's 512 positions (its trained context)"),
        ("llama-micro", ["--parallelism", "pipeline"], "its head is its token embedding's matrix (tied)"),
    ],
)
def test_a_llama_shape_that_does_not_divide_or_fit_is_refused_before_torch_starts(model, flags, expected):
    assert expected in refusal(*flags, model=model)


def test_tensor_and_pipeline_parallelism_refuse_an_image_model_saying_why():
    for layout in ("tensor", "pipeline"):
        args = build_parser().parse_args(["train", "--model", "small", "--parallelism", layout])
        with pytest.raises(
            BadArguments, match=f"--parallelism {layout} with a image model: tensor and pipeline parallelism split"
        ):
            check_arguments(args)
    with pytest.raises(BadArguments, match="--layers belongs to language models"):
        check_arguments(build_parser().parse_args(["train", "--model", "small", "--layers", "2"]))


def test_the_pipeline_stages_together_compute_the_whole_model():
    config = train_args()
    spec = model_spec("gpt-nano")
    torch.manual_seed(0)
    model = Transformer(TransformerShape(3, 64, 4, 32, 256))
    tokens = torch.randint(0, 256, (2, 16))
    stages = [spec.pipeline_stage(model, stage, 2, config) for stage in range(2)]
    assert [list(stage.blocks) for stage in stages] == [["0", "1"], ["2"]]
    assert stages[0].head is None and stages[1].embedding is None
    # Names stay the model's, on whichever stage holds them.
    assert "blocks.2.mlp.fc.weight" in dict(stages[1].named_parameters())
    with torch.no_grad():
        assert torch.allclose(stages[1](stages[0](tokens)), model(tokens), atol=1e-6)


def test_the_worker_divides_the_world_as_the_campaign_side_does():
    """One table for both: test/fixtures/layout-dims.json (src/workload/layout.ts reads it in
    test/workload/layout.test.ts).
    """
    names = {
        "parallelism": "--parallelism",
        "tensorDegree": "--tensor-degree",
        "pipelineStages": "--pipeline-stages",
        "fsdpSharding": "--fsdp-sharding",
    }
    cases = json.loads((REPO / "test" / "fixtures" / "layout-dims.json").read_text())["cases"]
    for case in cases:
        flags = [part for knob, value in case["knobs"].items() for part in (names[knob], str(value))]
        # 12 heads: every tensor degree of the table divides the model's heads; what is left to refuse is the world.
        config = train_args(*flags, "--heads", "12", "--width", "96")
        if case["dims"] is None:
            with pytest.raises(BadArguments):
                dims_of(config, case["workers"], case["nodes"])
        else:
            expected = case["dims"]
            assert dims_of(config, case["workers"], case["nodes"]) == ParallelDims(
                pp=expected["pp"], dp_replicate=expected["dpReplicate"], dp_shard=expected["dpShard"], tp=expected["tp"]
            ), case


def _counted_flops_per_token(name: str, sequence_length: int, mode: str):
    """FLOPs torch's FlopCounterMode counts in one training step of the built model, per token, under activation
    checkpointing `mode`; and the block's few non-matrix weights (norms, biases), which the counter does not count."""
    from ringlab_worker.parallel import checkpointing
    from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

    # The counter has no formula for the CPU's attention kernel: torch's own for attention (GQA included) on its ops.
    aten = torch.ops.aten
    attention = {
        aten._scaled_dot_product_flash_attention_for_cpu: lambda q, k, v, *_, **__: sdpa_flop_count(q, k, v),
        aten._scaled_dot_product_flash_attention_for_cpu_backward: (
            lambda grad, q, k, v, *_, **__: sdpa_backward_flop_count(grad, q, k, v)
        ),
    }

    config = TrainConfig.from_args(train_args("--sequence-length", str(sequence_length), model=name))
    spec = model_spec(name)
    torch.manual_seed(0)
    model = spec.build(config)
    checkpointing.apply(spec.blocks(model), mode)
    tokens, targets = spec.synthetic_batch(replace(config, batch_size=2), torch.device("cpu"))
    with FlopCounterMode(display=False, custom_mapping=attention) as counter:
        spec.loss(model(tokens), targets).backward()
    block = model.blocks["0"]
    non_matrix = sum(p.numel() for p in block.parameters() if p.dim() == 1) * len(model.blocks)
    # torch counts a flash kernel's backward as five products of the scores' size (it computes the scores again),
    # where ringlab's (and PaLM's) 12 L h s counts the four of plain attention's backward: 2 L h s per token more.
    flash_backward = 2 * len(model.blocks) * config.width * sequence_length
    return counter.get_total_flops() / tokens.numel() - flash_backward, non_matrix


@pytest.mark.parametrize("case", COUNTS, ids=[case["model"] for case in COUNTS])
def test_the_built_model_s_flops_are_the_ones_the_typescript_side_counts(case):
    """test/fixtures/transformer-counts.json holds what src/workload/transformer.ts counts (test/workload/
    transformer.test.ts): torch's own counter finds the same in a step of the module the worker builds, forward,
    backward and each checkpointing mode's recomputation (GQA's narrower k and v, SwiGLU's three matrices, a tied
    head that still multiplies)."""
    name, length = case["model"], case["sequenceLength"]
    plain, non_matrix = _counted_flops_per_token(name, length, "none")
    assert plain == case["trainingFlopsPerToken"] - 6 * non_matrix
    selective, _ = _counted_flops_per_token(name, length, "selective")
    assert selective - plain == case["recomputeFlopsPerToken"]["selective"]
    full, _ = _counted_flops_per_token(name, length, "full")
    assert full - plain == case["recomputeFlopsPerToken"]["full"] - 2 * non_matrix


def test_activation_checkpointing_takes_a_mode_and_its_old_bare_flag_reads_as_full():
    """Job scripts saved before the modes (job.sbatch, mpirun.sh) gave the switch alone: they run again as full."""
    assert train_args("--activation-checkpointing").activation_checkpointing == "full"
    assert train_args("--activation-checkpointing", "selective").activation_checkpointing == "selective"
    assert train_args().activation_checkpointing == "none"
    with pytest.raises(SystemExit):
        train_args("--activation-checkpointing", "some")

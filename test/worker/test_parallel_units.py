"""The pieces of the layouts that need no process group: the degrees (parallel/dims.py), the transformer's size and
its pipeline split (models/), and the command line's refusals of layouts a model or a knob cannot take."""

import pytest
import torch
from ringlab_worker.cli import build_parser, check_arguments
from ringlab_worker.errors import BadArguments
from ringlab_worker.models import model_spec
from ringlab_worker.models.transformer import Transformer, TransformerShape, parameter_count
from ringlab_worker.parallel.dims import ParallelDims, dims_of
from ringlab_worker.registry import LANGUAGE_SHAPE, PARAMETER_COUNT


def train_args(*extra):
    args = build_parser().parse_args(["train", "--model", "gpt-nano", *extra])
    check_arguments(args)
    return args


def refusal(*extra) -> str:
    with pytest.raises(BadArguments) as refused:
        train_args(*extra)
    return str(refused.value)


@pytest.mark.parametrize("name", sorted(LANGUAGE_SHAPE))
def test_each_language_model_has_the_parameters_registry_json_says(name):
    shape = LANGUAGE_SHAPE[name]
    with torch.device("meta"):  # GPT-2 XL's 1.6 G parameters take no memory here
        model = Transformer(
            TransformerShape(shape["layers"], shape["width"], shape["heads"], shape["sequenceLength"], shape["vocab"])
        )
    counted = sum(parameter.numel() for parameter in model.parameters())
    assert counted == PARAMETER_COUNT[name] == parameter_count(model.shape)


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
        (["--parallelism", "fsdp", "--tensor-degree", "3"], 4, "--tensor-degree 3 does not divide the run's 4 workers"),
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
        (["--sequence-length", "4096"], "more than gpt-nano's 128 learned positions"),
        (["--width", "66"], "--width 66 must be a multiple of --heads 4"),
    ],
)
def test_knobs_a_layout_or_model_cannot_take_are_refused_naming_the_flag(flags, expected):
    assert expected in refusal(*flags)


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
    import json

    from conftest import REPO

    names = {
        "parallelism": "--parallelism",
        "tensorDegree": "--tensor-degree",
        "pipelineStages": "--pipeline-stages",
        "fsdpSharding": "--fsdp-sharding",
    }
    cases = json.loads((REPO / "test" / "fixtures" / "layout-dims.json").read_text())["cases"]
    for case in cases:
        flags = [part for knob, value in case["knobs"].items() for part in (names[knob], str(value))]
        config = train_args(*flags)
        if case["dims"] is None:
            with pytest.raises(BadArguments):
                dims_of(config, case["workers"], case["nodes"])
        else:
            expected = case["dims"]
            assert dims_of(config, case["workers"], case["nodes"]) == ParallelDims(
                pp=expected["pp"], dp_replicate=expected["dpReplicate"], dp_shard=expected["dpShard"], tp=expected["tp"]
            ), case

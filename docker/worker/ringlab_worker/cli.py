"""Command line: `ringlab-worker train|allreduce|dataset [knobs]`.

Arguments are parsed and checked before torch is imported, so a typo fails in a fraction of a second
with exit code 2 instead of after rendezvous.
"""

import argparse
import os
import re
import sys

from . import compat, torchrun
from .data import import_pil, parse_data_source, run_dataset
from .errors import EXIT_BAD_ARGUMENTS, BadArguments, WorkerError
from .mpi_library import LIBRARIES, check_started_by_mpirun
from .registry import (
    COLLECTIVES,
    LAYOUT_ENTRIES,
    LAYOUTS,
    MODEL_KIND,
    MODELS,
    PROBED_REDUCTIONS,
    REDUCTION_ENTRIES,
    RULES,
    TRAIN_KNOBS,
    knob_choices,
    language_shape,
)
from .result import LAUNCHED_AT_ENV, utc_now


def parse_size(text: str) -> int:
    """Bytes, with an optional binary suffix as nccl-tests accepts it: 4096, 8K, 256M, 1G."""
    match = re.fullmatch(r"(\d+)([KMG]?)B?", text.strip().upper())
    if not match:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size in bytes (examples: 4096, 8K, 256M, 1G)")
    return int(match.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2)]


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or more, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be zero or more, got {text}")
    return value


def fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


class _Parser(argparse.ArgumentParser):
    # argparse prints usage before the message; one clear line is easier to find in a node's log.
    def error(self, message):
        print(f"ringlab-worker: error: {message} (see ringlab-worker {self._job_name()}--help)", file=sys.stderr)
        sys.exit(EXIT_BAD_ARGUMENTS)

    def _job_name(self):
        parts = self.prog.split()
        return f"{parts[-1]} " if len(parts) > 1 else ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ringlab-worker",
        description="Data-parallel training benchmark and all-reduce probe. Rendezvous comes from "
        "RINGLAB_* environment variables (see README).",
    )
    jobs = parser.add_subparsers(dest="job", required=True, metavar="JOB", parser_class=_Parser)
    common = _common_options()
    _add_train(jobs, common)
    _add_dataset(jobs)
    _add_allreduce(jobs, common)
    return parser


def _knob(parser, name: str, **options):
    """Adds the train knob `name` (registry.json's trainKnobs) with its flag and default, and for an enum its
    choices (unless `options` gives them, None for none); a switch is a store_true flag. The type, the worker's
    range, and the help text stay here: the worker's range may be wider than the campaign's."""
    knob = TRAIN_KNOBS[name]
    if knob["type"] == "switch":  # off by default (test_registry.py checks the registry says so)
        return parser.add_argument(knob["flag"], action="store_true", **options)
    if knob["type"] == "enum" and "choices" not in options:
        options["choices"] = knob_choices(name)
    if "legacyValues" in knob:  # the flag alone, as its switch was once given (saved job scripts), is its true
        options.update(nargs="?", const=knob["legacyValues"]["true"])
    if options.get("choices") is None:
        options.pop("choices", None)
    return parser.add_argument(knob["flag"], default=knob["default"], **options)


def _common_options() -> argparse.ArgumentParser:
    """The options of both jobs that run on the process group, train and allreduce."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="cuda uses NCCL, cpu uses Gloo; auto picks cuda when a GPU is present",
    )
    common.add_argument(
        "--timeout-seconds",
        type=positive_float,
        default=300.0,
        help="bounds rendezvous and every collective; a silent peer fails the run after this",
    )
    common.add_argument("--output", default=None, help="path of the JSON result (written by global rank 0)")
    common.add_argument(
        "--cpu-check-seconds",
        "--calibration-seconds",  # its name before 2026-12-06, which saved job scripts may still pass
        dest="cpu_check_seconds",
        type=non_negative_float,
        default=0.6,
        help="before the job, every rank times fixed matrix products for this long (the CPU check: the node's "
        "compute speed at that moment, in the result's cpuCheck); 0: none",
    )
    _knob(
        common,
        "reduction",
        help="how gradients (probe: the buffer) are summed: "
        + "; ".join(
            f"{name}, {entry['about']}"
            + (
                ""
                if entry["probedAs"] == name
                else f" (trains only: the probe measures its link with {entry['probedAs']})"
            )
            for name, entry in REDUCTION_ENTRIES.items()
        ),
    )
    return common


def _add_train(jobs, common) -> None:
    train = jobs.add_parser("train", parents=[common], help="synthetic-data training throughput")
    train.add_argument("--model", choices=MODELS, default="resnet50")
    train.add_argument("--batch-size", type=positive_int, default=32, help="per worker")
    _knob(train, "numWarmupBatches", type=non_negative_int, help="untimed")
    _knob(train, "numBatchesPerIter", type=positive_int)
    _knob(train, "numIters", type=positive_int)
    _knob(
        train,
        "imageSize",
        type=positive_int,
        help="image models; default: the model's native size (32 tiny and small, 299 inception_v3, 224 resnets)",
    )
    _knob(train, "precision", help="amp: fp16 autocast with a gradient scaler, needs a GPU; bf16: bfloat16 autocast")
    _knob(
        train,
        "channelsLast",
        help="NHWC memory format for the model and the batch (faster convolutions with amp on GPUs)",
    )
    _knob(train, "bucketCapMb", type=positive_float, help="DDP gradient bucket size (Horovod: tensor fusion threshold)")
    _knob(train, "fp16Allreduce", help="compress gradients to fp16 for the all-reduce")
    _knob(train, "powersgdRank", type=positive_int, help="--reduction powersgd: rank of each matrix's factors")
    _knob(
        train,
        "powersgdStartIter",
        type=positive_int,
        help="--reduction powersgd: plain all-reduce steps first (at least 2, with error feedback and warm start)",
    )
    _knob(train, "localSgdPeriod", type=positive_int, help="--reduction local-sgd: steps between averagings (H)")
    _knob(train, "localSgdWarmup", type=positive_int, help="--reduction local-sgd: synchronous steps first")
    _knob(
        train,
        "asyncStaleness",
        type=non_negative_int,
        help="--reduction async-parameter-server: steps a rank may run ahead of the slowest (0: none)",
    )
    _knob(train, "ncclAlgoRing", help="set NCCL_ALGO=Ring (NCCL only)")
    _knob(train, "engine")
    _knob(train, "optimizer", help="sgd (with --momentum) or adamw")
    _knob(train, "learningRate", type=positive_float, help="the optimizer's")
    _knob(train, "momentum", type=non_negative_float, help="SGD's")
    _add_language_options(train)
    _add_layout_options(train)
    _add_real_data_options(train)


def _add_language_options(train) -> None:
    language = train.add_argument_group(
        "language models", "The transformer's shape (default: the named model's, registry.json) and memory."
    )
    _knob(language, "sequenceLength", type=positive_int, help="tokens per sequence (at most the model's)")
    _knob(language, "layers", type=positive_int, help="transformer blocks")
    _knob(language, "width", type=positive_int, help="hidden width (a multiple of --heads)")
    _knob(language, "heads", type=positive_int, help="attention heads")
    _knob(
        language,
        "kvHeads",
        type=positive_int,
        help="llama models: key and value heads, each shared by heads / kv-heads query heads (a divisor of --heads)",
    )
    _knob(
        language,
        "activationCheckpointing",
        help="what each block keeps for backward: none; selective (torchtitan's per-op policy: attention's and every "
        "other matrix product's outputs); full (its input only, the block recomputed)",
    )


def _add_layout_options(train) -> None:
    layout = train.add_argument_group(
        "layout",
        "How the model is laid out over the workers (parallel/): ddp, a full replica each; fsdp, its state "
        "sharded; tensor, each block's matrices split; pipeline, its blocks cut into stages. Tensor and pipeline "
        "parallelism split language models only.",
    )
    _knob(layout, "parallelism")
    _knob(layout, "fsdpSharding", help="fsdp: full (ZeRO-3), grad-op (ZeRO-2) or none (the control: all-reduce)")
    _knob(layout, "fsdpPrefetch", type=non_negative_int, help="fsdp: blocks whose all-gathers are issued ahead")
    _knob(layout, "fsdpCpuOffload", help="fsdp on GPUs: shards in host memory")
    _knob(
        layout,
        "tensorDegree",
        type=positive_int,
        help="workers per tensor-parallel group (tensor: default all; fsdp: default 1, more makes FSDP x tensor)",
    )
    _knob(layout, "pipelineStages", type=positive_int, help="pipeline: stages (default: the run's nodes)")
    _knob(layout, "microBatches", type=positive_int, help="pipeline: micro-batches per batch")
    _knob(layout, "pipelineSchedule", help="pipeline: gpipe or 1f1b")


def _add_real_data_options(train) -> None:
    real = train.add_argument_group(
        "real data and time to train",
        "Read an ImageFolder dataset (PATH/train/<class>/*.jpg and PATH/val/<class>/*.jpg, ImageNet's layout; "
        "`ringlab-worker dataset` writes one) instead of synthetic tensors. With --epochs the job trains to a "
        "result and records time to train, the loss curve and held-out accuracy per epoch.",
    )
    # The campaign's data knob is synthetic or dataset; the worker takes a source, checked by parse_data_source.
    _knob(
        real,
        "data",
        choices=None,
        metavar="synthetic|folder:PATH|dataset:NAME",
        help="where batches come from (default synthetic: one random batch, as Horovod's benchmark); "
        "dataset:NAME is $RINGLAB_SHARED_DIR/datasets/NAME, the testbed's shared storage",
    )
    _knob(
        real,
        "loaderWorkers",
        type=non_negative_int,
        help="DataLoader worker processes per rank (0: load in the training process)",
    )
    _knob(real, "epochs", type=positive_int, help="train this many epochs over the dataset (needs --data folder:PATH)")
    _knob(
        real,
        "targetAccuracy",
        type=fraction,
        help="stop at the first epoch whose held-out accuracy reaches this (0-1; needs --epochs, the most epochs "
        "to try)",
    )
    real.add_argument(
        "--checkpoint-dir",
        default=None,
        help="rank 0 checkpoints here (storage every node shares); a restarted run resumes from the "
        "newest readable checkpoint (needs --epochs; default with --checkpoint-every: a folder "
        "checkpoints beside --output)",
    )
    _knob(real, "checkpointEvery", type=positive_int, help="steps between checkpoints")
    _knob(
        real,
        "maxRestarts",
        type=non_negative_int,
        help="torchrun restarts every worker this many times after one fails (multi-node runs)",
    )
    _add_fault_options(real)


def _add_fault_options(real) -> None:
    _knob(
        real,
        "failAtStep",
        type=positive_int,
        help="fault injection: rank --fail-rank's process kills itself (SIGKILL) after this step, once (needs "
        "--epochs)",
    )
    _knob(real, "failRank", type=non_negative_int, help="the rank --fail-at-step kills (default 0)")
    _knob(
        real,
        "failNode",
        type=positive_int,
        help="fault injection: instead of one rank, node FAIL_NODE (RINGLAB_NODE_RANK; not node 0, which holds "
        "the rendezvous) is lost after --fail-at-step, as a machine that dies: its launcher and every rank on it "
        "are SIGKILLed, so its worker container exits",
    )
    _knob(
        real,
        "minNodes",
        type=positive_int,
        help="elastic node count (torchrun --nnodes MIN_NODES:RINGLAB_NUM_NODES): after a node is lost the others "
        "restart (--max-restarts) without it and go on from the newest checkpoint, as long as MIN_NODES remain",
    )


def _add_dataset(jobs) -> None:
    dataset = jobs.add_parser(
        "dataset",
        help="write a deterministic, learnable ImageFolder dataset of JPEG files, or a text corpus",
        description="--kind images writes OUT/train/<class>/*.jpg, OUT/val/<class>/*.jpg (the held-out split) and "
        "OUT/ringlab-dataset.json; each class is a colour and a stripe pattern under noise. --kind text writes "
        "OUT/train.bin and OUT/val.bin, the bytes of this Python's standard library source (a byte-level corpus for "
        "the language models; --held-out applies, the image options do not). The same arguments give the same "
        "files; a dataset already there with the same arguments is left as it is.",
    )
    dataset.add_argument("--out", required=True, help="absolute path of the dataset folder (created)")
    dataset.add_argument("--kind", choices=("images", "text"), default="images")
    dataset.add_argument("--classes", type=positive_int, default=10)
    dataset.add_argument("--images-per-class", type=positive_int, default=100, help="both splits together")
    dataset.add_argument("--image-size", type=positive_int, default=32, help="pixels, square")
    dataset.add_argument("--held-out", type=fraction, default=0.2, help="fraction of each class in val/")
    dataset.add_argument("--seed", type=non_negative_int, default=0)


def _add_allreduce(jobs, common) -> None:
    probe = jobs.add_parser("allreduce", parents=[common], help="all-reduce bandwidth probe (nccl-tests style)")
    probe.add_argument("--min-bytes", type=parse_size, default=parse_size("4K"))
    probe.add_argument("--max-bytes", type=parse_size, default=parse_size("256M"))
    probe.add_argument("--step-factor", type=positive_int, default=2)
    probe.add_argument("--warmup-iters", type=non_negative_int, default=5)
    probe.add_argument("--iters", type=positive_int, default=20)
    probe.add_argument("--nccl-algo-ring", action="store_true", help="set NCCL_ALGO=Ring (NCCL only)")
    probe.add_argument(
        "--library",
        choices=LIBRARIES,
        default="torch",
        help="what sums: torch (torch.distributed: Gloo on CPU, NCCL on GPUs) or mpi (Open MPI's "
        "MPI_Allreduce through mpi4py; the process must be started by mpirun, one per node, on CPU)",
    )
    probe.add_argument(
        "--collective",
        choices=COLLECTIVES,
        default="all-reduce",
        help="what is timed: the all-reduce (default), or the all-gather, reduce-scatter or sendrecv (every "
        "rank sending to the next) a sharded or pipelined layout's step is made of, as nccl-tests has them",
    )
    probe.add_argument(
        "--reference",
        choices=("iperf3",),
        default=None,
        help="first measure one TCP stream from node 1 to node 0 with iperf3 (3 s), the rate no library "
        "can beat on this link; recorded as metrics.referenceGbps",
    )


def check_arguments(args) -> None:
    """Checks across knobs that argparse cannot express; raises BadArguments."""
    if args.job == "allreduce":
        if args.min_bytes < 4 or args.max_bytes < args.min_bytes:
            raise BadArguments(f"need 4 <= --min-bytes <= --max-bytes, got {args.min_bytes} and {args.max_bytes}")
        if args.step_factor < 2:
            raise BadArguments("--step-factor must be 2 or more")
        if args.collective != "all-reduce" and (args.library != "torch" or args.reduction != "ring"):
            raise BadArguments(
                f"--collective {args.collective} runs on torch.distributed's own collective: use it with "
                "--library torch and --reduction ring (the reductions and Open MPI are all-reduces)"
            )
        if args.library == "mpi" and args.reduction != "ring":
            raise BadArguments(
                f"--library mpi sums with MPI_Allreduce (Open MPI picks its algorithm): --reduction {args.reduction} "
                "is one of ringlab's own over torch.distributed; use --library torch with it"
            )
        if args.library == "mpi":
            if args.device == "cuda":
                raise BadArguments(
                    "--library mpi sums host memory: run it with --device cpu (mpi4py here is not CUDA-aware)"
                )
            check_started_by_mpirun()
    if args.job == "allreduce" and args.reduction not in PROBED_REDUCTIONS:
        raise BadArguments(
            f"--reduction {args.reduction} is a training strategy, not a sum of one buffer: the probe "
            "measures its link with --reduction ring"
        )
    if args.job == "train":
        check_registry_rules(args)
    if args.job == "train" and args.reduction not in PROBED_REDUCTIONS:
        check_strategy_arguments(args)
    if args.job == "train" and args.precision == "amp" and args.device == "cpu":
        raise BadArguments("--precision amp runs on a GPU only; use --precision fp32 with --device cpu")
    if args.job == "train":
        check_model_arguments(args)
        check_layout_arguments(args)
        check_training_arguments(args)


def check_model_arguments(args) -> None:
    """A language model's shape (src/config/shape-problems.ts says the same to a campaign): its sequence within its
    positions, its width a multiple of its heads, its key and value heads a divisor of its heads (llama only), a
    tensor degree a divisor of both, and no pipeline across tied embeddings."""
    shape = language_shape(args.model)
    if shape is None:
        return
    for problem in shape_problems(args, shape):
        raise BadArguments(problem)


def shape_problems(args, shape: dict):
    """Each thing wrong with the run's shape, as a refusal naming the flag and what would work."""
    length = args.sequence_length or shape["sequenceLength"]
    if length > shape["maxPositions"]:
        positions = "learned positions" if shape["family"] == "gpt2" else "positions (its trained context)"
        yield (
            f"--sequence-length {length} is more than {args.model}'s {shape['maxPositions']} {positions}: "
            f"set it to {shape['maxPositions']} or less"
        )
    width, heads = args.width or shape["width"], args.heads or shape["heads"]
    if width % heads:
        yield f"--width {width} must be a multiple of --heads {heads}"
    if args.kv_heads is not None and shape["family"] == "gpt2":
        yield (
            f"--kv-heads with {args.model}: a gpt2 model gives every query head its own key and value head; "
            "grouped-query attention is the llama models' (llama-nano, llama-micro, ...)"
        )
        return
    kv_heads = args.kv_heads or (heads if shape["family"] == "gpt2" else shape["kvHeads"])
    if heads % kv_heads:
        yield f"--kv-heads {kv_heads} must divide --heads {heads} (each key and value head serves as many query heads)"
    tensor = args.tensor_degree if args.parallelism in ("tensor", "fsdp") else None
    if tensor is not None and tensor > 1 and (heads % tensor or kv_heads % tensor):
        yield (
            f"--tensor-degree {tensor} must divide the model's {heads} heads and {kv_heads} key and value heads "
            "(each rank computes whole heads, and the query heads that share them): choose a divisor of both"
        )
    untied_only = LAYOUT_ENTRIES[args.parallelism].get("refusesTiedEmbeddings")
    if untied_only is not None and shape["tiedEmbeddings"]:
        tied = [name for name in LAYOUTS if "refusesTiedEmbeddings" not in LAYOUT_ENTRIES[name]]
        yield (
            f"--parallelism {args.parallelism} with {args.model}: {untied_only}; use an untied model, or "
            f"{', '.join(tied[:-1])} or {tied[-1]}"
        )


def check_layout_arguments(args) -> None:
    """A pipeline's batch cuts into its micro-batches (the layouts' other rules are registry.json's)."""
    if args.parallelism == "pipeline" and args.batch_size % args.micro_batches:
        raise BadArguments(f"--batch-size {args.batch_size} must be a multiple of --micro-batches {args.micro_batches}")


# What a knob's belongsTo names (registry.json): the run's value on each axis, and how a message names the owners.
_AXES = {
    "model": lambda args: MODEL_KIND[args.model],
    "parallelism": lambda args: args.parallelism,
    "reduction": lambda args: args.reduction,
}
_OWNERS = {
    "model": lambda owners: f"{' and '.join(owners)} models",
    "parallelism": lambda owners: f"--parallelism {' or '.join(owners)}",
    "reduction": lambda owners: f"--reduction {' or '.join(owners)}",
}


def knob_is_set(args, name: str) -> bool:
    """A train knob is set when its value is not the registry's default (what the worker does without it)."""
    knob = TRAIN_KNOBS[name]
    return getattr(args, knob["flag"][2:].replace("-", "_")) != knob["default"]


def _axis_value(args, axis: str):
    return MODEL_KIND[args.model] if axis == "model" else getattr(args, TRAIN_KNOBS[axis]["flag"][2:].replace("-", "_"))


def _shown(axis: str, value) -> str:
    """How a message names a knob's value: --flag value, a switch by its flag alone, the model by its name."""
    if axis == "model":
        return f"a {value} model"
    flag = TRAIN_KNOBS[axis]["flag"]
    return flag if value is True else f"{flag} {value}"


def check_registry_rules(args) -> None:
    """What registry.json declares of each train knob, enforced as declared (the campaign's schema reads the same
    declarations): the models, layouts or reductions it belongs to, the knobs it needs, the knobs it excludes, and the
    combinations its rules refuse."""
    for rule in RULES:
        if all(_axis_value(args, axis) in values for axis, values in rule["if"].items()):
            for knob, allowed in rule["then"].items():
                value = _axis_value(args, knob)
                if value not in allowed:
                    when = " and ".join(_shown(axis, _axis_value(args, axis)) for axis in rule["if"])
                    raise BadArguments(f"{_shown(knob, value)} with {when}: {rule['because']}")
    for name, knob in TRAIN_KNOBS.items():
        if not knob_is_set(args, name):
            continue
        flag = knob["flag"]
        for axis, owners in knob.get("belongsTo", {}).items():
            value = _AXES[axis](args)
            if value not in owners:
                raise BadArguments(f"{flag} belongs to {_OWNERS[axis](owners)}; this run's {axis} is {value}")
        for other in knob.get("needs", []):
            if not knob_is_set(args, other):
                label = TRAIN_KNOBS[other].get("label")
                raise BadArguments(f"{flag} needs {TRAIN_KNOBS[other]['flag']}" + (f" ({label})" if label else ""))
        for other in knob.get("excludes", []):
            if knob_is_set(args, other):
                raise BadArguments(f"{flag} and {TRAIN_KNOBS[other]['flag']} exclude each other: set one")


def check_strategy_arguments(args) -> None:
    """PowerSGD, local SGD and the asynchronous server: what torch 1.13's hooks accept, and what ringlab does not do
    with them yet."""
    if args.reduction == "powersgd" and args.powersgd_start_iter < 2:
        raise BadArguments(
            "--powersgd-start-iter must be 2 or more: torch's PowerSGD with error feedback and warm "
            "start compresses from its second step at the earliest"
        )
    if args.checkpoint_dir is not None:
        raise BadArguments(
            f"--reduction {args.reduction} keeps state of its own (PowerSGD's error feedback, local "
            "SGD's step count, the server's parameters) that ringlab's checkpoints do not hold yet: run "
            "it without checkpoints"
        )


def check_training_arguments(args) -> None:
    """--data, time to train, checkpoints and fault injection; sets args.data_folder (None: synthetic)."""
    args.data_folder = parse_data_source(args.data, os.environ)
    if args.epochs is None and args.checkpoint_dir is not None:  # a worker-only flag: the knobs' needs are declared
        raise BadArguments("--checkpoint-dir needs --epochs (time to train)")
    if args.epochs is not None and args.data_folder is None:
        raise BadArguments("--epochs trains over a dataset: add --data folder:PATH")
    if args.checkpoint_every is not None and args.checkpoint_dir is None:
        if args.output is None:
            raise BadArguments("--checkpoint-every needs --checkpoint-dir (or --output, beside which they go)")
        args.checkpoint_dir = os.path.join(os.path.dirname(os.path.abspath(args.output)), "checkpoints")
    if args.checkpoint_dir is not None and not os.path.isabs(args.checkpoint_dir):
        raise BadArguments(f"--checkpoint-dir must be an absolute path, got '{args.checkpoint_dir}'")
    if args.checkpoint_dir is not None:
        args.checkpoint_dir = os.path.normpath(args.checkpoint_dir)
    check_fault_arguments(args, os.environ)
    if args.data_folder is not None and not os.path.isdir(args.data_folder):
        raise BadArguments(
            f"--data {args.data}: no folder {args.data_folder} (on this node); is the shared "
            "storage mounted, and is the dataset there? Write one with `ringlab dataset <campaign>` "
            "(or `ringlab-worker dataset --out PATH`), or copy yours there in ImageNet's layout"
        )


def check_fault_arguments(args, env) -> None:
    """--fail-rank, --fail-node and --min-nodes against each other and the run's node count (RINGLAB_NUM_NODES)."""
    if args.fail_node is None and args.min_nodes is None:
        return
    nodes_text = env.get("RINGLAB_NUM_NODES", "")
    flag = "--fail-node" if args.fail_node is not None else "--min-nodes"
    if not nodes_text.isdigit():
        raise BadArguments(f"{flag} needs a multi-node run (RINGLAB_NUM_NODES, set by the launcher)")
    nodes = int(nodes_text)
    if args.fail_node is not None and args.fail_node >= nodes:
        raise BadArguments(
            f"--fail-node {args.fail_node}: this run has nodes 0 to {nodes - 1}, and node 0 holds "
            "the rendezvous (its loss ends the run); choose 1 or more"
        )
    if args.min_nodes is not None:
        if args.min_nodes > nodes:
            raise BadArguments(f"--min-nodes {args.min_nodes} is more than this run's {nodes} nodes")
        if args.max_restarts < 1 or args.checkpoint_dir is None:
            raise BadArguments(
                "--min-nodes: the nodes left go on only by restarting from a checkpoint; add "
                "--max-restarts 1 (or more) and --checkpoint-every"
            )


def check_machine(args) -> None:
    """Checks that need torch: is what was asked for possible on this machine?"""
    import torch

    refusal, warning = compat.support_problem(torch.__version__)
    if refusal:
        raise BadArguments(refusal)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    wants_gpu = args.device == "cuda" or getattr(args, "precision", "fp32") == "amp"
    if wants_gpu and not torch.cuda.is_available():
        what = "--precision amp" if args.device != "cuda" else "--device cuda"
        raise BadArguments(
            f"{what} needs a CUDA GPU, but torch {torch.__version__} sees none (torch.cuda.is_available() "
            "is False: no GPU, no NVIDIA driver, the container was started without --gpus, or this is the "
            "cpu image). Use --device cpu --precision fp32."
        )
    if args.job == "train":
        from .parallel import torch_problem

        problem = torch_problem(args)
        if problem:
            raise BadArguments(problem)
    if args.job == "train" and getattr(args, "data_folder", None) is not None:
        import_pil()
    if getattr(args, "engine", "ddp") == "horovod":
        try:
            import horovod.torch  # noqa: F401
        except Exception as error:  # ImportError, or a Horovod built against another torch
            raise BadArguments(
                f"--engine horovod needs Horovod, but `import horovod.torch` failed ({error}). Horovod's "
                "last release (0.28.1, 2023) does not build against current PyTorch; use --engine ddp, or "
                "the gpu image built with INSTALL_HOROVOD=1 on an NVIDIA PyTorch base Horovod supports."
            ) from error


def main(argv=None) -> int:
    os.environ.setdefault(LAUNCHED_AT_ENV, utc_now())
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        check_arguments(args)
        if args.job == "dataset":  # no torch, no rendezvous: files on (shared) storage
            return run_dataset(args)
        # torch is imported only from here on (check_machine, the launcher, the job): after the cheap checks.
        if torchrun.is_torchrun_worker():
            return torchrun.run_worker(args)
        check_machine(args)
        return torchrun.launch(args, argv)
    except WorkerError as error:
        rank = os.environ.get("RANK") if "TORCHELASTIC_RUN_ID" in os.environ else None
        where = f" [rank {rank}]" if rank is not None else ""
        print(f"ringlab-worker{where}: error: {error}", file=sys.stderr, flush=True)
        return error.exit_code

"""What one training run was asked to do, checked and resolved once: the typed configuration every part of the train
job reads (the model spec, the layouts in parallel/, the training loop, time to train), instead of argparse's
namespace.

The command line (cli.py) checks each flag and the combinations argparse cannot express, before torch is imported;
`TrainConfig.from_args` then resolves what a flag leaves to the model (the image size, the transformer's shape) and
freezes the result. Field names are the flags' (--batch-size is batch_size), so the record's knobs are read from here
(result.knobs_of) under the names they always had.
"""

from dataclasses import dataclass, fields, replace
from typing import Optional

from .registry import NATIVE_IMAGE_SIZE, language_shape


@dataclass(frozen=True)
class TrainConfig:
    job: str
    model: str
    batch_size: int  # samples per data-parallel replica and step: images, or sequences of sequence_length tokens
    device: str
    timeout_seconds: float
    output: Optional[str]
    cpu_check_seconds: float
    # Measurement protocol (Horovod's synthetic benchmark)
    num_warmup_batches: int
    num_batches_per_iter: int
    num_iters: int
    # The model's input
    image_size: Optional[int]  # image models: resolved to the model's native size when not given
    sequence_length: Optional[int]  # language models: resolved to the model's
    layers: Optional[int]
    width: Optional[int]
    heads: Optional[int]
    kv_heads: Optional[int]  # llama models: resolved to the model's
    # Numbers
    precision: str
    channels_last: bool
    optimizer: str
    learning_rate: float
    momentum: float
    activation_checkpointing: str  # none, selective or full
    # Layout (parallel/)
    parallelism: str
    engine: str
    tensor_degree: Optional[int]
    pipeline_stages: Optional[int]
    micro_batches: int
    pipeline_schedule: str
    fsdp_sharding: str
    fsdp_prefetch: int
    fsdp_cpu_offload: bool
    # Data parallelism's exchange (reductions)
    reduction: str
    bucket_cap_mb: float
    fp16_allreduce: bool
    nccl_algo_ring: bool
    powersgd_rank: int
    powersgd_start_iter: int
    local_sgd_period: int
    local_sgd_warmup: int
    async_staleness: int
    # Real data and time to train (time_to_train.py)
    data: str
    data_folder: Optional[str]  # the folder --data names; None: synthetic
    loader_workers: int
    epochs: Optional[int]
    target_accuracy: Optional[float]
    checkpoint_dir: Optional[str]
    checkpoint_every: Optional[int]
    max_restarts: int
    fail_at_step: Optional[int]
    fail_rank: Optional[int]
    fail_node: Optional[int]
    min_nodes: Optional[int]

    @classmethod
    def from_args(cls, args) -> "TrainConfig":
        """The configuration of `train` from its checked arguments (cli.check_arguments has run)."""
        values = {field.name: getattr(args, field.name) for field in fields(cls)}
        config = cls(**values)
        shape = language_shape(config.model)
        if shape is None:
            return replace(config, image_size=config.image_size or NATIVE_IMAGE_SIZE[config.model])
        heads = config.heads or shape["heads"]
        return replace(
            config,
            sequence_length=config.sequence_length or shape["sequenceLength"],
            layers=config.layers or shape["layers"],
            width=config.width or shape["width"],
            heads=heads,
            # gpt2: a key and value head per query head.
            kv_heads=config.kv_heads or (heads if shape["family"] == "gpt2" else shape["kvHeads"]),
        )

    @property
    def technique(self) -> str:
        """The layout's name in parallel.TECHNIQUES: the parallelism, or horovod for data parallelism through
        Horovod's engine."""
        return "horovod" if self.engine == "horovod" else self.parallelism

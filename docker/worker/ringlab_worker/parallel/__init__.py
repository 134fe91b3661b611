"""How the model is laid out over the workers, one module per technique, after pytorch/torchtitan's
torchtitan/distributed/ and its models' parallelize functions:

    ddp.py       every rank a full replica; gradients summed by a reduction (DDP's ring, or a communication hook)
    horovod.py   the same through Horovod's DistributedOptimizer
    fsdp.py      parameters, gradients and optimizer state sharded (FSDP2's fully_shard: ZeRO-3, ZeRO-2, or none)
    tensor.py    each block's matrices split (Megatron's column- and row-parallel layers on DTensor)
    pipeline.py  the blocks cut into stages, batches into micro-batches (torch.distributed.pipelining)

`parallelize` builds the model (seeded, so every rank starts from the same weights), puts it on the device, applies
what every layout shares (activation checkpointing, checkpointing.py) and hands it to the technique's `apply_*`
function, which returns a Layout (layout.py): this rank's part of the model, its optimizer (built after the wrapping,
as FSDP needs) and its step. dims.py says how the ranks divide among pipeline stages, data-parallel replicas or
shards, and tensor groups. A new technique is a module here and its line in TECHNIQUES (and in TORCH_NEEDS, where it
needs more of torch than DDP does: torch_api.py checks it before the model is built).
"""

import torch

from ..models import model_spec
from . import checkpointing, fsdp, pipeline, tensor, torch_api
from .ddp import apply_ddp
from .dims import ParallelDims, dims_of
from .fsdp import apply_fsdp
from .horovod import apply_horovod
from .layout import Layout
from .pipeline import apply_pipeline
from .tensor import apply_tensor

TECHNIQUES = {
    "ddp": apply_ddp,
    "horovod": apply_horovod,
    "fsdp": apply_fsdp,
    "tensor": apply_tensor,
    "pipeline": apply_pipeline,
}

TORCH_NEEDS = {"fsdp": fsdp.torch_needs, "tensor": tensor.torch_needs, "pipeline": pipeline.torch_needs}

__all__ = ["Layout", "ParallelDims", "TECHNIQUES", "TORCH_NEEDS", "dims_of", "parallelize", "torch_problem"]


def torch_problem(config):
    """What the run's layout and its activation checkpointing need of the installed torch and it lacks (a refusal),
    or None."""
    needs = TORCH_NEEDS.get(config.parallelism)
    needs = [*([] if needs is None else needs(config)), *checkpointing.torch_needs(config)]
    return torch_api.missing(needs, torch.__version__) if needs else None


def parallelize(config, world) -> Layout:
    """The run's model, built and laid out over the world as config.parallelism (or Horovod) says."""
    spec = model_spec(config.model)
    dims = dims_of(config, world.size, world.nodes)
    torch.manual_seed(0)
    with torch.device(world.device):  # made and initialised where it trains: a 7 G-parameter model never in host memory
        model = spec.build(config)
    memory_format = torch.channels_last if config.channels_last else torch.contiguous_format
    model.to(world.device, memory_format=memory_format)
    checkpointing.apply(spec.blocks(model), config.activation_checkpointing)
    parameter_count = sum(parameter.numel() for parameter in model.parameters())  # before any shards are made
    layout = TECHNIQUES[config.technique](config, world, dims, spec, model)
    layout.memory_format, layout.parameter_count = memory_format, parameter_count
    return layout

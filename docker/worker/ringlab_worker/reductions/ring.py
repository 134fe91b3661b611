"""ring: torch.distributed's all-reduce (DDP's default). Every link carries 2(N-1)/N of the gradient."""

import torch.distributed as dist

from .exchange import fp16_factor, whole_bytes


def sum_over_ranks(tensor) -> None:
    dist.all_reduce(tensor)


def install(ddp, optimizer, config):
    """DDP's built-in all-reduce stays in place; --fp16-allreduce puts torch's fp16 compression hook on it."""
    if config.fp16_allreduce:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        ddp.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)
    return optimizer


def wire_bytes_per_step(tensors, config) -> float:
    return whole_bytes(tensors) * fp16_factor(config)

"""parameter-server: every rank sends its gradient to rank 0, which sums and sends the sum back, as in the parameter
servers of the seed lecture. Rank 0's link carries (N-1) gradients each way, so it stops scaling. Point-to-point
sends and receives: the bytes on each link are exactly the model's."""

import torch
import torch.distributed as dist

from .exchange import GATHER_TAG, SCATTER_TAG, SERVER_RANK, exchange, fp16_factor, register_averaging_hook, whole_bytes


def sum_over_ranks(tensor: torch.Tensor) -> None:
    """Sums `tensor` over all ranks in place through the server rank."""
    rank, size = dist.get_rank(), dist.get_world_size()
    if size == 1:
        return
    if rank != SERVER_RANK:
        exchange([dist.P2POp(dist.isend, tensor, SERVER_RANK, tag=GATHER_TAG)])
        exchange([dist.P2POp(dist.irecv, tensor, SERVER_RANK, tag=SCATTER_TAG)])
        return
    others = [peer for peer in range(size) if peer != SERVER_RANK]
    received = [torch.empty_like(tensor) for _ in others]
    exchange(
        [dist.P2POp(dist.irecv, buffer, peer, tag=GATHER_TAG) for buffer, peer in zip(received, others, strict=True)]
    )
    for buffer in received:  # in rank order, so the sum is the same on every run
        tensor.add_(buffer)
    exchange([dist.P2POp(dist.isend, tensor, peer, tag=SCATTER_TAG) for peer in others])


def install(ddp, optimizer, config):
    register_averaging_hook(ddp, "parameter-server", sum_over_ranks, fp16=config.fp16_allreduce)
    return optimizer


def wire_bytes_per_step(tensors, config) -> float:
    return whole_bytes(tensors) * fp16_factor(config)

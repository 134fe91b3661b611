"""sharded-parameter-server: rank r serves the r-th of N shards: every rank sends shard r to rank r, which sums it and
sends it back to everyone. Each link carries 2(N-1)/N of the gradient, as in the ring."""

from typing import List

import torch
import torch.distributed as dist

from .exchange import GATHER_TAG, SCATTER_TAG, exchange, fp16_factor, register_averaging_hook, whole_bytes


def shards(tensor: torch.Tensor, count: int) -> List[torch.Tensor]:
    """`count` contiguous views of a tensor's elements, sizes differing by at most one (some may be empty)."""
    return list(torch.tensor_split(tensor.view(-1), count))


def sum_over_ranks(tensor: torch.Tensor) -> None:
    """Sums `tensor` over all ranks in place; rank r sums shard r (a reduce-scatter), then everyone gets every
    summed shard from its server (an all-gather)."""
    rank, size = dist.get_rank(), dist.get_world_size()
    if size == 1:
        return
    if not tensor.is_contiguous():
        raise ValueError("sharded-parameter-server needs a contiguous tensor")
    parts = shards(tensor, size)
    mine = parts[rank]
    peers = [peer for peer in range(size) if peer != rank]
    if mine.numel() > 0:
        received = [torch.empty_like(mine) for _ in peers]
        gather = [
            dist.P2POp(dist.irecv, buffer, peer, tag=GATHER_TAG) for buffer, peer in zip(received, peers, strict=True)
        ]
    else:
        received, gather = [], []
    gather += [dist.P2POp(dist.isend, parts[peer], peer, tag=GATHER_TAG) for peer in peers if parts[peer].numel() > 0]
    exchange(gather)
    for buffer in received:
        mine.add_(buffer)
    scatter = [dist.P2POp(dist.isend, mine, peer, tag=SCATTER_TAG) for peer in peers if mine.numel() > 0]
    scatter += [dist.P2POp(dist.irecv, parts[peer], peer, tag=SCATTER_TAG) for peer in peers if parts[peer].numel() > 0]
    exchange(scatter)


def install(ddp, optimizer, config):
    register_averaging_hook(ddp, "sharded-parameter-server", sum_over_ranks, fp16=config.fp16_allreduce)
    return optimizer


def wire_bytes_per_step(tensors, config) -> float:
    return whole_bytes(tensors) * fp16_factor(config)

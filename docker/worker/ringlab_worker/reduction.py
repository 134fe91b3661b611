"""How gradients are summed across ranks: ring all-reduce, a parameter server, or a sharded parameter server.

- ring: torch.distributed's all-reduce (DDP's default). Every link carries 2(N-1)/N of the gradient.
- parameter-server: every rank sends its gradient to rank 0, which sums and sends the sum back, as in the
  parameter servers of the seed lecture. Rank 0's link carries (N-1) gradients each way, so it stops scaling.
- sharded-parameter-server: rank r serves the r-th of N shards: every rank sends shard r to rank r, which sums
  it and sends it back to everyone. Each link carries 2(N-1)/N of the gradient, as in the ring.

The two servers are point-to-point sends and receives, so the bytes on each link are exactly the model's.
`register_ddp_hook` installs them as a DDP communication hook: the same model, buckets and optimizer step
run whatever the strategy, and the exchange runs on a thread of its own while backward goes on, as DDP's
own all-reduce does.
"""

import concurrent.futures
from typing import List

import torch
import torch.distributed as dist

from .registry import REDUCTIONS  # the names, as the command line offers them (registry.json)

SERVER_RANK = 0
_GATHER_TAG, _SCATTER_TAG = 1, 2


def _exchange(ops: List["dist.P2POp"]) -> None:
    """Starts every send and receive together (NCCL needs them grouped to avoid deadlock) and waits for all."""
    if ops:
        for request in dist.batch_isend_irecv(ops):
            request.wait()


def parameter_server_sum(tensor: torch.Tensor) -> None:
    """Sums `tensor` over all ranks in place through the server rank."""
    rank, size = dist.get_rank(), dist.get_world_size()
    if size == 1:
        return
    if rank != SERVER_RANK:
        _exchange([dist.P2POp(dist.isend, tensor, SERVER_RANK, tag=_GATHER_TAG)])
        _exchange([dist.P2POp(dist.irecv, tensor, SERVER_RANK, tag=_SCATTER_TAG)])
        return
    others = [peer for peer in range(size) if peer != SERVER_RANK]
    received = [torch.empty_like(tensor) for _ in others]
    _exchange([dist.P2POp(dist.irecv, buffer, peer, tag=_GATHER_TAG) for buffer, peer in zip(received, others)])
    for buffer in received:  # in rank order, so the sum is the same on every run
        tensor.add_(buffer)
    _exchange([dist.P2POp(dist.isend, tensor, peer, tag=_SCATTER_TAG) for peer in others])


def shards(tensor: torch.Tensor, count: int) -> List[torch.Tensor]:
    """`count` contiguous views of a tensor's elements, sizes differing by at most one (some may be empty)."""
    return list(torch.tensor_split(tensor.view(-1), count))


def sharded_parameter_server_sum(tensor: torch.Tensor) -> None:
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
        gather = [dist.P2POp(dist.irecv, buffer, peer, tag=_GATHER_TAG) for buffer, peer in zip(received, peers)]
    else:
        received, gather = [], []
    gather += [dist.P2POp(dist.isend, parts[peer], peer, tag=_GATHER_TAG) for peer in peers if parts[peer].numel() > 0]
    _exchange(gather)
    for buffer in received:
        mine.add_(buffer)
    scatter = [dist.P2POp(dist.isend, mine, peer, tag=_SCATTER_TAG) for peer in peers if mine.numel() > 0]
    scatter += [dist.P2POp(dist.irecv, parts[peer], peer, tag=_SCATTER_TAG) for peer in peers if parts[peer].numel() > 0]
    _exchange(scatter)


def _ring_sum(tensor: torch.Tensor) -> None:
    dist.all_reduce(tensor)


# Each reduction's in-place sum over all ranks: one entry per name in REDUCTIONS (a test keeps them the same).
SUMS = {"ring": _ring_sum, "parameter-server": parameter_server_sum,
        "sharded-parameter-server": sharded_parameter_server_sum}


def sum_over_ranks(tensor: torch.Tensor, reduction: str) -> None:
    """Sums `tensor` over all ranks in place, the way `reduction` names."""
    if reduction not in SUMS:
        raise ValueError(f"unknown reduction '{reduction}' (expected one of {', '.join(REDUCTIONS)})")
    SUMS[reduction](tensor)


def register_ddp_hook(ddp, reduction: str, fp16: bool) -> None:
    """Makes DDP average each gradient bucket with `reduction`; fp16 sends the bucket as float16.

    For ring, DDP's built-in all-reduce (or torch's fp16 hook) stays in place.
    """
    if reduction == "ring":
        if fp16:
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

            ddp.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)
        return
    if reduction not in REDUCTIONS:
        raise ValueError(f"unknown reduction '{reduction}' (expected one of {', '.join(REDUCTIONS)})")
    # One thread: buckets are exchanged one after another, in the order DDP hands them over, which is the same
    # on every rank, so every send meets its receive. The current GPU is per thread, and NCCL's point-to-point
    # calls hang on the wrong one: the thread takes this process's.
    device = next(ddp.parameters()).device
    on_gpu = device.type == "cuda"
    executor = concurrent.futures.ThreadPoolExecutor(
        max_workers=1, thread_name_prefix=f"ringlab-{reduction}",
        **({"initializer": torch.cuda.set_device, "initargs": (device,)} if on_gpu else {}))

    def average(bucket_buffer: torch.Tensor, done: torch.futures.Future) -> None:
        try:
            # Divided before the sum, as DDP's own hooks do: an fp16 sum of N gradients could overflow.
            bucket_buffer.div_(dist.get_world_size())
            wire = bucket_buffer.to(torch.float16) if fp16 else bucket_buffer
            sum_over_ranks(wire, reduction)
            if wire is not bucket_buffer:
                bucket_buffer.copy_(wire)
            done.set_result(bucket_buffer)
        except Exception as error:  # DDP's backward raises it on the main thread
            done.set_exception(error)

    def hook(_state, bucket) -> torch.futures.Future[torch.Tensor]:  # DDP checks this annotation
        # A future that knows the GPU records CUDA events, so DDP's stream waits for the exchange's work.
        done = torch.futures.Future(devices=[device]) if on_gpu else torch.futures.Future()
        executor.submit(average, bucket.buffer(), done)
        return done

    ddp.register_comm_hook(state=None, hook=hook)

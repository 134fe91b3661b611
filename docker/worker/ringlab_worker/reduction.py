"""How gradients are summed across ranks: one entry per strategy (registry.json's reductions).

- ring: torch.distributed's all-reduce (DDP's default). Every link carries 2(N-1)/N of the gradient.
- parameter-server: every rank sends its gradient to rank 0, which sums and sends the sum back, as in the
  parameter servers of the seed lecture. Rank 0's link carries (N-1) gradients each way, so it stops scaling.
- sharded-parameter-server: rank r serves the r-th of N shards: every rank sends shard r to rank r, which sums
  it and sends it back to everyone. Each link carries 2(N-1)/N of the gradient, as in the ring.

- powersgd: torch's PowerSGD hook (Vogels et al. 2019) with error feedback and warm start: after
  --powersgd-start-iter steps of plain all-reduce, each gradient matrix (m x n, a weight reshaped to 2D) travels as
  two all-reduced rank-r factors, (m + n)·r numbers instead of m·n; vectors (biases) travel as they are.
- async-parameter-server: no barrier; rank 0 applies each rank's gradient as it arrives and sends the parameters
  back, no rank more than --async-staleness steps ahead of the slowest (async_server.py).
- local-sgd: torch's post-local SGD (Lin et al. 2020): --local-sgd-warmup steps of plain all-reduce, then every
  rank steps alone (DDP's hook sums over a group of the rank itself) and PeriodicModelAverager averages the
  parameters over all ranks every --local-sgd-period steps (H): one all-reduce of the parameters per H steps.

The two servers are point-to-point sends and receives, so the bytes on each link are exactly the model's.
`install` puts a strategy in place (a DDP communication hook, and for local SGD the optimizer wrapper): the same
model, buckets and step run whatever the strategy, and the exchange runs while backward goes on, as DDP's own
all-reduce does. `wire_bytes_per_step` is what one rank sends into the ring per step, for the cost model.
"""

import concurrent.futures
from typing import List

import torch
import torch.distributed as dist

from .registry import PROBED_REDUCTIONS, REDUCTIONS  # the names, as the command line offers them (registry.json)

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


# Each probed reduction's in-place sum over all ranks: one entry per name in PROBED_REDUCTIONS (a test keeps them the
# same); powersgd and local-sgd are not sums of one tensor, and their link is the ring's.
SUMS = {"ring": _ring_sum, "parameter-server": parameter_server_sum,
        "sharded-parameter-server": sharded_parameter_server_sum}


def sum_over_ranks(tensor: torch.Tensor, reduction: str) -> None:
    """Sums `tensor` over all ranks in place, the way `reduction` names."""
    if reduction not in SUMS:
        raise ValueError(f"unknown reduction '{reduction}' (expected one of {', '.join(PROBED_REDUCTIONS)})")
    SUMS[reduction](tensor)


def install(ddp, optimizer, args):
    """Puts args.reduction in place on `ddp`; returns the optimizer the training step uses (local SGD's wrapper)."""
    if args.reduction == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook

        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                            start_powerSGD_iter=args.powersgd_start_iter,
                                            use_error_feedback=True, warm_start=True)
        # torch's hook, one bucket at a time (see _register_one_bucket_at_a_time).
        _register_one_bucket_at_a_time(ddp, "powersgd", lambda bucket: powerSGD_hook.powerSGD_hook(state, bucket).wait())
        return optimizer
    if args.reduction == "local-sgd":
        return _local_sgd(ddp, optimizer, args)
    if args.reduction == "async-parameter-server":
        from .async_server import AsyncParameterServerOptimizer

        # DDP sums nothing (each rank's gradient stays its own) and broadcasts no buffers (BatchNorm's running
        # statistics stay each rank's own): no collective in a step after DDP's one-off bucket rebuild at step 2.
        ddp.register_comm_hook(None, _keep_local)
        ddp.broadcast_buffers = False
        return AsyncParameterServerOptimizer(optimizer, ddp.module, args)
    register_ddp_hook(ddp, args.reduction, fp16=args.fp16_allreduce)
    return optimizer


# The averagings whose drift a result keeps (the last ones), as it keeps the last step times.
MOST_AVERAGINGS = 1000


def _local_sgd(ddp, optimizer, args):
    """torch's post-local SGD, its averager recording at each averaging how far the replicas had drifted: the largest
    difference of a parameter from the average, taken on each rank without traffic (a copy before averaging) and the
    largest over ranks gathered once, at the end (finish)."""
    from torch.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook
    from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
    from torch.distributed.optim import PostLocalSGDOptimizer

    class DriftRecordingAverager(PeriodicModelAverager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.drift = []

        def average_parameters(self, params):
            groups = list(params)  # parameters, or an optimizer's parameter groups
            tensors = [p for group in groups for p in (group["params"] if isinstance(group, dict) else [group])]
            averaging = self.step >= self.warmup_steps and (self.step - self.warmup_steps) % self.period == 0
            before = [p.detach().clone() for p in tensors] if averaging else []
            super().average_parameters(groups)
            if averaging:
                self.drift.append(max(float((p.detach() - old).abs().max()) for p, old in zip(tensors, before)))

    class LocalSGDOptimizer(PostLocalSGDOptimizer):
        def finish(self) -> dict:
            # Every rank averaged at the same steps: the same number of entries, maximised over ranks in one call.
            drift = torch.tensor(self.averager.drift[-MOST_AVERAGINGS:], dtype=torch.float32, device=device)
            if drift.numel():
                dist.all_reduce(drift, op=dist.ReduceOp.MAX)
            return {"averagingDrift": drift.tolist()}

    device = next(ddp.parameters()).device
    # After the warm-up DDP sums over this rank's own group (no traffic): torch builds its default intra-node
    # subgroups only with CUDA, so every rank makes every one-rank group (new_group is collective).
    groups = [dist.new_group([rank]) for rank in range(dist.get_world_size())]
    state = post_localSGD_hook.PostLocalSGDState(process_group=None, subgroup=groups[dist.get_rank()],
                                                 start_localSGD_iter=args.local_sgd_warmup)
    ddp.register_comm_hook(state, post_localSGD_hook.post_localSGD_hook)
    averager = DriftRecordingAverager(period=args.local_sgd_period, warmup_steps=args.local_sgd_warmup)
    return LocalSGDOptimizer(optim=optimizer, averager=averager)


def _keep_local(_state, bucket):
    """A DDP communication hook that leaves the bucket as it is: this rank's own gradient."""
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def synchronize_replicas(optimizer) -> None:
    """Before evaluation: a strategy whose ranks hold different parameters (the asynchronous server's stale
    replicas) gives every rank the one model it trains."""
    if hasattr(optimizer, "synchronize"):
        optimizer.synchronize()


def finish(optimizer) -> dict:
    """After the last step, before the result: ends what a strategy runs beside the steps (the asynchronous
    server's threads) and returns what it measured for the result's metrics (the server's staleness, local SGD's
    drift at each averaging; {} for the others). Collective where the strategy's is: every rank calls it."""
    return optimizer.finish() if hasattr(optimizer, "finish") else {}


def wire_bytes_per_step(parameters, args) -> float:
    """Bytes one rank all-reduces per step, on average: what the ring cost model takes as S. fp16 halves the ring's
    and the servers'; PowerSGD sends (m + n)·r per m x n matrix (a weight viewed as shape[0] x the rest) where that
    is under half of m·n (torch's hook compresses a matrix only then: min_compression_rate 2) and every other
    tensor whole; local SGD all-reduces the parameters once per H steps."""
    tensors = [p for p in parameters if p.requires_grad]
    whole = sum(p.numel() * p.element_size() for p in tensors)
    if args.reduction == "powersgd":
        total = 0
        for p in tensors:
            if p.dim() <= 1:
                total += p.numel() * p.element_size()
                continue
            rows = p.shape[0]
            columns = p.numel() // rows
            compressed = (rows + columns) * min(args.powersgd_rank, rows, columns)
            total += (compressed if 2 * compressed < rows * columns else rows * columns) * p.element_size()
        return float(total)
    if args.reduction == "local-sgd":
        return whole / args.local_sgd_period
    return whole * (0.5 if args.fp16_allreduce else 1.0)


# Parameters compared at once by replica_divergence: a copy of this many numbers at a time, never of the whole model
# (a 7 G-parameter model's flat copy and its clone would need 56 GB more than its training).
DIVERGENCE_CHUNK_NUMBERS = 1 << 24


def replica_divergence(model) -> float:
    """The largest difference of any parameter from rank 0's, over all ranks: exactly 0 where every step was
    synchronous (every rank holds the same model), more where ranks stepped alone (local SGD between averagings).
    Parameters are compared in chunks of DIVERGENCE_CHUNK_NUMBERS, each broadcast from rank 0 in one call."""
    parameters = [p.detach() for p in model.parameters()]
    gap = torch.zeros(1, dtype=torch.float32, device=parameters[0].device)
    chunk, numbers = [], 0
    for index, parameter in enumerate(parameters):
        chunk.append(parameter)
        numbers += parameter.numel()
        if numbers >= DIVERGENCE_CHUNK_NUMBERS or index == len(parameters) - 1:
            flat = torch.cat([p.reshape(-1).float() for p in chunk])
            first = flat.clone()
            dist.broadcast(first, src=0)
            gap = torch.maximum(gap, first.sub_(flat).abs_().max().reshape(1))
            chunk, numbers = [], 0
    dist.all_reduce(gap, op=dist.ReduceOp.MAX)
    return float(gap.item())


def register_ddp_hook(ddp, reduction: str, fp16: bool) -> None:
    """Makes DDP average each gradient bucket with `reduction`; fp16 sends the bucket as float16.

    For ring, DDP's built-in all-reduce (or torch's fp16 hook) stays in place.
    """
    if reduction == "ring":
        if fp16:
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

            ddp.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)
        return
    if reduction not in SUMS:
        raise ValueError(f"unknown reduction '{reduction}' (expected one of {', '.join(PROBED_REDUCTIONS)})")

    def average(bucket) -> torch.Tensor:
        bucket_buffer = bucket.buffer()
        # Divided before the sum, as DDP's own hooks do: an fp16 sum of N gradients could overflow.
        bucket_buffer.div_(dist.get_world_size())
        wire = bucket_buffer.to(torch.float16) if fp16 else bucket_buffer
        sum_over_ranks(wire, reduction)
        if wire is not bucket_buffer:
            bucket_buffer.copy_(wire)
        return bucket_buffer

    _register_one_bucket_at_a_time(ddp, reduction, average)


def _register_one_bucket_at_a_time(ddp, name: str, exchange) -> None:
    """Registers a DDP hook that runs `exchange(bucket)` (the bucket's averaged gradient) on a thread of its own,
    one bucket after another, in the order DDP hands them over, which is the same on every rank: every send meets its
    receive, and every collective is issued in the same order on every rank (Gloo pairs them by order; PowerSGD's
    hook, whose later all-reduces start in callbacks, interleaves two buckets' differently on two ranks and fails
    with "op.preamble.length <= op.nbytes"). Backward goes on meanwhile. The current GPU is per thread, and NCCL's
    point-to-point calls hang on the wrong one: the thread takes this process's."""
    device = next(ddp.parameters()).device
    on_gpu = device.type == "cuda"
    executor = concurrent.futures.ThreadPoolExecutor(
        max_workers=1, thread_name_prefix=f"ringlab-{name}",
        **({"initializer": torch.cuda.set_device, "initargs": (device,)} if on_gpu else {}))

    def run(bucket, done: torch.futures.Future) -> None:
        try:
            done.set_result(exchange(bucket))
        except Exception as error:  # DDP's backward raises it on the main thread
            done.set_exception(error)

    def hook(_state, bucket) -> torch.futures.Future[torch.Tensor]:  # DDP checks this annotation
        # A future that knows the GPU records CUDA events, so DDP's stream waits for the exchange's work.
        done = torch.futures.Future(devices=[device]) if on_gpu else torch.futures.Future()
        executor.submit(run, bucket, done)
        return done

    ddp.register_comm_hook(state=None, hook=hook)

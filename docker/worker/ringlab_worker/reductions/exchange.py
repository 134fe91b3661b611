"""What several reductions share: grouped point-to-point exchanges, DDP hooks that run one bucket at a time on a
thread of their own, and the gradient's size."""

import concurrent.futures
from typing import List

import torch
import torch.distributed as dist

SERVER_RANK = 0
GATHER_TAG, SCATTER_TAG = 1, 2


def exchange(ops: List["dist.P2POp"]) -> None:
    """Starts every send and receive together (NCCL needs them grouped to avoid deadlock) and waits for all."""
    if ops:
        for request in dist.batch_isend_irecv(ops):
            request.wait()


def whole_bytes(tensors) -> int:
    """The gradient's bytes: every tensor whole, in its own dtype."""
    return sum(t.numel() * t.element_size() for t in tensors)


def fp16_factor(config) -> float:
    """--fp16-allreduce sends the ring's and the synchronous servers' buckets as float16: half the bytes."""
    return 0.5 if config.fp16_allreduce else 1.0


def register_averaging_hook(ddp, name: str, sum_over_ranks, fp16: bool) -> None:
    """Makes DDP average each gradient bucket with `sum_over_ranks` (an in-place sum over all ranks); fp16 sends
    the bucket as float16."""

    def average(bucket) -> torch.Tensor:
        bucket_buffer = bucket.buffer()
        # Divided before the sum, as DDP's own hooks do: an fp16 sum of N gradients could overflow.
        bucket_buffer.div_(dist.get_world_size())
        wire = bucket_buffer.to(torch.float16) if fp16 else bucket_buffer
        sum_over_ranks(wire)
        if wire is not bucket_buffer:
            bucket_buffer.copy_(wire)
        return bucket_buffer

    register_one_bucket_at_a_time(ddp, name, average)


def register_one_bucket_at_a_time(ddp, name: str, exchange_bucket) -> None:
    """Registers a DDP hook that runs `exchange_bucket(bucket)` (the bucket's averaged gradient) on a thread of its
    own, one bucket after another, in the order DDP hands them over, which is the same on every rank: every send meets
    its receive, and every collective is issued in the same order on every rank (Gloo pairs them by order; PowerSGD's
    hook, whose later all-reduces start in callbacks, interleaves two buckets' differently on two ranks and fails
    with "op.preamble.length <= op.nbytes"). Backward goes on meanwhile. The current GPU is per thread, and NCCL's
    point-to-point calls hang on the wrong one: the thread takes this process's."""
    device = next(ddp.parameters()).device
    on_gpu = device.type == "cuda"
    executor = concurrent.futures.ThreadPoolExecutor(
        max_workers=1,
        thread_name_prefix=f"ringlab-{name}",
        **({"initializer": torch.cuda.set_device, "initargs": (device,)} if on_gpu else {}),
    )

    def run(bucket, done: torch.futures.Future) -> None:
        try:
            done.set_result(exchange_bucket(bucket))
        except Exception as error:  # DDP's backward raises it on the main thread
            done.set_exception(error)

    def hook(_state, bucket) -> torch.futures.Future[torch.Tensor]:  # DDP checks this annotation
        # A future that knows the GPU records CUDA events, so DDP's stream waits for the exchange's work.
        done = torch.futures.Future(devices=[device]) if on_gpu else torch.futures.Future()
        executor.submit(run, bucket, done)
        return done

    ddp.register_comm_hook(state=None, hook=hook)

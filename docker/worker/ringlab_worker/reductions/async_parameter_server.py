"""async-parameter-server: no barrier; rank 0 applies each rank's gradient as it arrives and sends the parameters
back, no rank more than --async-staleness steps ahead of the slowest (async_server.py). Trains only: the probe
measures its link with parameter-server."""

import torch

from .exchange import whole_bytes


def _keep_local(_state, bucket):
    """A DDP communication hook that leaves the bucket as it is: this rank's own gradient."""
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def install(ddp, optimizer, config):
    from ..async_server import AsyncParameterServerOptimizer

    # DDP sums nothing (each rank's gradient stays its own) and broadcasts no buffers (BatchNorm's running
    # statistics stay each rank's own): no collective in a step after DDP's one-off bucket rebuild at step 2.
    ddp.register_comm_hook(None, _keep_local)
    ddp.broadcast_buffers = False
    return AsyncParameterServerOptimizer(optimizer, ddp.module, config)


def wire_bytes_per_step(tensors, config) -> float:
    """The gradient in and the parameters out, each whole (fp16Allreduce does not go with it: registry.json)."""
    return float(whole_bytes(tensors))

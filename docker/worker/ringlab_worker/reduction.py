"""How gradients are summed across ranks: registry.json's reductions, each a unit of its own in reductions/ (its
install, its wire bytes, and for those the probe times, its sum of one buffer).

- ring: torch.distributed's all-reduce (DDP's default). Every link carries 2(N-1)/N of the gradient.
- parameter-server and sharded-parameter-server: point-to-point sums through rank 0, or through every rank for its
  shard, as in the parameter servers of the seed lecture.
- powersgd, local-sgd and async-parameter-server: strategies that train only (the probe measures their link with
  the reduction registry.json names as their probedAs).

`install` puts a strategy in place (a DDP communication hook, and for local SGD and the asynchronous server an
optimizer wrapper): the same model, buckets and step run whatever the strategy, and the exchange runs while backward
goes on, as DDP's own all-reduce does. `wire_bytes_per_step` is what one rank sends per step, for the cost model.
Here too: what every strategy's training loop calls after the steps (synchronize_replicas, finish), and
replica_divergence.
"""

import torch
import torch.distributed as dist

from .reductions import UNITS

# The names, as the command line offers them (registry.json); REDUCTIONS re-exported for the reductions' users.
from .registry import PROBED_REDUCTIONS
from .registry import REDUCTIONS as REDUCTIONS

# Each probed reduction's in-place sum over all ranks (test_reduction.py: exactly PROBED_REDUCTIONS).
SUMS = {name: unit.sum_over_ranks for name, unit in UNITS.items() if hasattr(unit, "sum_over_ranks")}


def sum_over_ranks(tensor: torch.Tensor, reduction: str) -> None:
    """Sums `tensor` over all ranks in place, the way `reduction` names."""
    if reduction not in SUMS:
        raise ValueError(f"unknown reduction '{reduction}' (expected one of {', '.join(PROBED_REDUCTIONS)})")
    SUMS[reduction](tensor)


def install(ddp, optimizer, config):
    """Puts config.reduction in place on `ddp`; returns the optimizer the training step uses (local SGD's wrapper,
    the asynchronous server's)."""
    return UNITS[config.reduction].install(ddp, optimizer, config)


def wire_bytes_per_step(parameters, config) -> float:
    """Bytes one rank sends per step, on average, over the link its probe measures: what the cost model takes as S."""
    return float(UNITS[config.reduction].wire_bytes_per_step([p for p in parameters if p.requires_grad], config))


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

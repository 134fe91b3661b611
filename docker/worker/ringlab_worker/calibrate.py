"""A fixed compute micro-benchmark that every rank runs just before its job, under the same CPU quota (or on the same
GPU): how fast this node computes at this moment. The local testbed's nodes share one machine whose speed drifts
(and whose VM reports no steal time), so a run's throughput is read next to the speed its nodes had when it ran."""

import time

import torch
import torch.distributed as dist

# Big enough to be compute-bound on a CPU core, small enough that 0.1 s holds a few products.
_SIZE = 256


def compute_gflops(device: torch.device, seconds: float, synchronize=lambda: None) -> float:
    """GFLOP/s of repeated fp32 matrix products for about `seconds` (after one untimed product)."""
    a = torch.randn(_SIZE, _SIZE, device=device)
    b = torch.randn(_SIZE, _SIZE, device=device)
    torch.mm(a, b)
    synchronize()
    products = 0
    started = time.perf_counter()
    while True:
        torch.mm(a, b)
        products += 1
        if products % 8 == 0:
            synchronize()
            elapsed = time.perf_counter() - started
            if elapsed >= seconds:
                return products * 2 * _SIZE ** 3 / elapsed / 1e9


def calibrate(world, seconds: float):
    """Every rank's GFLOP/s, in rank order (all ranks at once, as their job computes), or None when `seconds` is 0."""
    if seconds <= 0:
        return None
    mine = compute_gflops(world.device, seconds, world.synchronize)
    if world.size == 1:
        return {"seconds": seconds, "computeGflops": [round(mine, 3)]}
    gathered = [torch.zeros(1, device=world.device) for _ in range(world.size)]
    dist.all_gather(gathered, torch.tensor([mine], device=world.device))
    return {"seconds": seconds, "computeGflops": [round(float(value.item()), 3) for value in gathered]}

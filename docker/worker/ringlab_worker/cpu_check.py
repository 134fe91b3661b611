"""The CPU check: a fixed compute micro-benchmark that every rank runs just before its job, under the same CPU
quota (or on the same GPU): how fast this node computes at this moment. The local testbed's nodes share one machine
whose speed drifts (and whose VM reports no steal time), so a run's throughput is read next to the speed its nodes had
when it ran.

On a CPU the speed is per second of the process's CPU time, not of the wall clock: under a CPU quota in Docker's CFS
periods of 100 ms (ringlab's are 10 ms since 2026-11-26) a 0.6 s window holds six or seven periods' worth of running,
which alone moves a wall-clock rate by up to a sixth, while a slower host (a noisy neighbour, a lower clock) lowers the
rate per CPU-second just as well (measured: docker --cpus 0.5, 0.6 s windows: 2.7-3.9 GFLOP/s by the wall clock, 7.3 per
CPU-second, 5.4-5.8 in a slow minute). On a GPU, the wall clock (after synchronizing) is the GPU's time."""

import time

import torch
import torch.distributed as dist

# Big enough to be compute-bound on a CPU core, small enough that 0.1 s holds a few products.
_SIZE = 256


def clock_of(device: torch.device) -> str:
    """What the speed is per: "cpu" (seconds of the process's CPU time) or "wall" (on a GPU)."""
    return "wall" if device.type == "cuda" else "cpu"


def compute_gflops(device: torch.device, seconds: float, synchronize=lambda: None) -> float:
    """GFLOP per second (of CPU time on a CPU, of wall time on a GPU) of repeated fp32 matrix products, for about
    `seconds` of wall time after one untimed product."""
    a = torch.randn(_SIZE, _SIZE, device=device)
    b = torch.randn(_SIZE, _SIZE, device=device)
    torch.mm(a, b)
    synchronize()
    products = 0
    clock = time.perf_counter if clock_of(device) == "wall" else time.process_time
    started, wall_started = clock(), time.perf_counter()
    while True:
        torch.mm(a, b)
        products += 1
        if products % 8 == 0:
            synchronize()
            if time.perf_counter() - wall_started >= seconds:
                return products * 2 * _SIZE**3 / (clock() - started) / 1e9


def measure_cpu_check(world, seconds: float):
    """Every rank's GFLOP/s, in rank order (all ranks at once, as their job computes), or None when `seconds` is 0.

    The record keeps it as `cpuCheck` (`calibration` in records before 2026-12-06, which ringlab still reads);
    `ringlab calibrate`'s calibration file is another thing."""
    if seconds <= 0:
        return None
    mine = compute_gflops(world.device, seconds, world.synchronize)
    clock = clock_of(world.device)
    if world.size == 1:
        return {"seconds": seconds, "clock": clock, "computeGflops": [round(mine, 3)]}
    gathered = [torch.zeros(1, device=world.device) for _ in range(world.size)]
    dist.all_gather(gathered, torch.tensor([mine], device=world.device))
    return {"seconds": seconds, "clock": clock, "computeGflops": [round(float(value.item()), 3) for value in gathered]}

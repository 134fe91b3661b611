"""All-reduce bandwidth probe after NVIDIA/nccl-tests' all_reduce_perf (float32, sum, in place).

For each size: warm-up, one barrier so every rank starts the timed loop together, --iters timed
all-reduces on a buffer allocated once, then (untimed) a correctness check with known data.
time = slowest rank's mean time per all-reduce; algbw = bytes / time; busbw = algbw * 2(n-1)/n.
cpuSeconds = the CPU time one rank's process spent per all-reduce (user and system, all its threads), the mean over
ranks: on CPU nodes that is what communication takes from the compute of a training step on the same cores.
"""

import time
from typing import List

import torch
import torch.distributed as dist

from .mpi_library import mpi_sum
from .reference import SECONDS as REFERENCE_SECONDS, measure_reference
from .reduction import sum_over_ranks

FLOAT32_BYTES = 4
PATTERN_PERIOD = 7
PATTERN_TILE_ELEMENTS = 1 << 20  # check data is written tile by tile: no second buffer of the largest size


def message_sizes(min_bytes: int, max_bytes: int, step_factor: int) -> List[int]:
    """min, min*f, min*f^2, ... up to max, each a whole number of float32 elements."""
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size - size % FLOAT32_BYTES)
        size *= step_factor
    return sizes


def bus_bandwidth_gbps(algbw_gbps: float, world_size: int) -> float:
    """nccl-tests' busbw: what each link carries in a ring, so comparable with the link rate for any n."""
    return algbw_gbps * 2 * (world_size - 1) / world_size


def _fill_check_pattern(view: torch.Tensor, tile: torch.Tensor, offset: float) -> None:
    for start in range(0, view.numel(), tile.numel()):
        chunk = view[start:start + tile.numel()]
        chunk.copy_(tile[:chunk.numel()]).add_(offset)


def _count_wrong(view: torch.Tensor, tile: torch.Tensor, world_size: int) -> int:
    """Elements that differ from sum over ranks r of (pattern + r + 1); the data is destroyed."""
    rank_sum = world_size * (world_size + 1) / 2
    for start in range(0, view.numel(), tile.numel()):
        chunk = view[start:start + tile.numel()]
        chunk.sub_(tile[:chunk.numel()], alpha=world_size).sub_(rank_sum)
    # Small integers only, so float32 sums are exact and any difference is an error.
    return int(torch.count_nonzero(view).item())


def run_allreduce(args, world) -> dict:
    sizes = message_sizes(args.min_bytes, args.max_bytes, args.step_factor)
    device = world.device
    buffer = torch.zeros(sizes[-1] // FLOAT32_BYTES, dtype=torch.float32, device=device)
    tile = (torch.arange(PATTERN_TILE_ELEMENTS, dtype=torch.int32, device=device) % PATTERN_PERIOD).float()
    stats = torch.zeros(3, dtype=torch.float64, device=device)  # slowest time, wrong elements, CPU seconds

    # The reference first, on a quiet link: iperf3's one TCP stream between node 1 and node 0.
    reference = measure_reference(world) if getattr(args, "reference", None) == "iperf3" else None
    library = getattr(args, "library", "torch")
    if library == "mpi":
        sum_, library_version, finish = mpi_sum(world)
    else:
        sum_, library_version, finish = (lambda view: sum_over_ranks(view, args.reduction)), None, (lambda: None)
    say = print if world.is_reporter else (lambda *a, **k: None)
    say(f"# ringlab-worker allreduce: {world.size} ranks on {world.nodes} node(s), "
        f"{library_version or world.backend} on {device.type}, {args.reduction}, warmup {args.warmup_iters}, iters {args.iters}")
    say("# time in us; algbw and busbw in Gbit/s (bits; nccl-tests prints GB/s); "
        "#wrong = wrong elements summed over ranks")
    say(f"# {'size':>10} {'count':>12} {'type':>6} {'redop':>6} {'time':>12} {'algbw':>9} {'busbw':>9} {'#wrong':>7}",
        flush=True)

    rows = []
    for size in sizes:
        view = buffer[:size // FLOAT32_BYTES]
        for _ in range(args.warmup_iters):
            sum_(view)
        world.barrier()
        world.synchronize()
        started, cpu_started = time.perf_counter(), time.process_time()
        for _ in range(args.iters):
            sum_(view)
        world.synchronize()
        seconds = (time.perf_counter() - started) / args.iters
        cpu_seconds = (time.process_time() - cpu_started) / args.iters

        _fill_check_pattern(view, tile, world.rank + 1)
        sum_(view)
        stats[0] = seconds
        dist.all_reduce(stats[:1], op=dist.ReduceOp.MAX)  # the collective ends when the slowest rank does
        stats[1] = _count_wrong(view, tile, world.size)
        stats[2] = cpu_seconds
        dist.all_reduce(stats[1:])
        view.zero_()  # timed iterations sum zeros: no overflow, no slow denormals
        seconds, wrong, cpu_seconds = float(stats[0].item()), int(stats[1].item()), float(stats[2].item()) / world.size

        algbw = size * 8 / seconds / 1e9
        row = {"sizeBytes": size, "count": view.numel(), "dtype": "float32", "redop": "sum",
               "timeSeconds": seconds, "algbwGbps": algbw,
               "busbwGbps": bus_bandwidth_gbps(algbw, world.size), "wrong": wrong, "cpuSeconds": cpu_seconds}
        rows.append(row)
        say(f"  {size:>10} {row['count']:>12} {'float':>6} {'sum':>6} {seconds * 1e6:>12.1f} "
            f"{algbw:>9.3f} {row['busbwGbps']:>9.3f} {wrong:>7}", flush=True)

    finish()
    peak = max(row["busbwGbps"] for row in rows)
    total_wrong = sum(row["wrong"] for row in rows)
    say(f"# peak busbw: {peak:.3f} Gbit/s; wrong elements: {total_wrong}", flush=True)
    # Which library summed: torch.distributed's backend (world.backend in the record) or Open MPI, with its version.
    return {"rows": rows, "peakBusbwGbps": peak, "library": library,
            **({"libraryVersion": library_version} if library_version else {}),
            **({"referenceGbps": reference, "reference": f"iperf3, one TCP stream from node 1 to node 0 for {REFERENCE_SECONDS} s"}
               if reference is not None else {})}

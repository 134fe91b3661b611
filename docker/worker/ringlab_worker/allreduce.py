"""Bandwidth probe after NVIDIA/nccl-tests: all_reduce_perf (float32, sum, in place), and with --collective the other
collectives a layout's step is made of, as all_gather_perf, reduce_scatter_perf and sendrecv_perf have them.

For each size: warm-up, one barrier so every rank starts the timed loop together, --iters timed
calls on buffers allocated once, then (untimed) a correctness check with known data.
time = slowest rank's mean time per call; algbw = bytes / time, bytes being the whole buffer (an all-gather's gathered
output, a reduce-scatter's input, a send's message); busbw = algbw × 2(n-1)/n for an all-reduce, × (n-1)/n for an
all-gather or a reduce-scatter, × 1 for sendrecv (each rank sends to the next and receives from the one before):
nccl-tests' factors, which make busbw comparable with the link rate.
cpuSeconds = the CPU time one rank's process spent per call (user and system, all its threads), the mean over
ranks: on CPU nodes that is what communication takes from the compute of a training step on the same cores.
"""

import time
from typing import List

import torch
import torch.distributed as dist

from .mpi_library import mpi_sum
from .reduction import sum_over_ranks
from .reference import SECONDS as REFERENCE_SECONDS
from .reference import measure_reference

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


def bus_bandwidth_gbps(algbw_gbps: float, world_size: int, collective: str = "all-reduce") -> float:
    """nccl-tests' busbw: what each link carries in a ring, so comparable with the link rate for any n."""
    return algbw_gbps * BUS_FACTOR[collective](world_size)


# nccl-tests' bus bandwidth factors (doc/PERFORMANCE.md), by collective.
BUS_FACTOR = {
    "all-reduce": lambda n: 2 * (n - 1) / n,
    "all-gather": lambda n: (n - 1) / n,
    "reduce-scatter": lambda n: (n - 1) / n,
    "sendrecv": lambda n: 1.0,
}


class Gathered:
    """An all-gather of the whole buffer: each rank contributes its 1/n (all_gather_into_tensor)."""

    def __init__(self, buffer, tile, world):
        self.world, self.tile = world, tile
        self.whole = buffer
        self.mine = None

    def view(self, numbers: int):
        self.output = self.whole[:numbers]
        self.mine = torch.empty(numbers // self.world.size, dtype=self.whole.dtype, device=self.whole.device)
        return self.output

    def run(self):
        dist.all_gather_into_tensor(self.output, self.mine)

    def fill(self, rank: int):
        _fill_check_pattern(self.mine, self.tile, rank + 1)

    def wrong(self) -> int:
        """Segment r must be the pattern + r + 1."""
        share = self.mine.numel()
        wrong = 0
        for rank in range(self.world.size):
            segment = self.output[rank * share : (rank + 1) * share]
            _fill_subtract(segment, self.tile, rank + 1)
            wrong += int(torch.count_nonzero(segment).item())
        return wrong

    def clear(self):
        self.mine.zero_()


class Scattered(Gathered):
    """A reduce-scatter of the whole buffer: rank r gets the sum of every rank's r-th 1/n (reduce_scatter_tensor)."""

    def view(self, numbers: int):
        self.input = self.whole[:numbers]
        self.mine = torch.empty(numbers // self.world.size, dtype=self.whole.dtype, device=self.whole.device)
        return self.input

    def run(self):
        dist.reduce_scatter_tensor(self.mine, self.input)

    def fill(self, rank: int):
        share = self.mine.numel()
        for part in range(self.world.size):
            _fill_check_pattern(self.input[part * share : (part + 1) * share], self.tile, rank + 1)

    def wrong(self) -> int:
        """The sum over ranks r of (pattern + r + 1): n × pattern + n(n+1)/2."""
        rank_sum = self.world.size * (self.world.size + 1) / 2
        for start in range(0, self.mine.numel(), self.tile.numel()):
            chunk = self.mine[start : start + self.tile.numel()]
            chunk.sub_(self.tile[: chunk.numel()], alpha=self.world.size).sub_(rank_sum)
        return int(torch.count_nonzero(self.mine).item())

    def clear(self):
        self.input.zero_()


class SendReceive(Gathered):
    """Every rank sends the buffer to the next and receives the one before's (sendrecv_perf), all at once."""

    def view(self, numbers: int):
        self.output = self.whole[:numbers]
        self.mine = torch.empty(numbers, dtype=self.whole.dtype, device=self.whole.device)
        size, rank = self.world.size, self.world.rank
        self.ops = lambda: [
            dist.P2POp(dist.isend, self.mine, (rank + 1) % size),
            dist.P2POp(dist.irecv, self.output, (rank - 1) % size),
        ]
        return self.output

    def run(self):
        for request in dist.batch_isend_irecv(self.ops()):
            request.wait()

    def wrong(self) -> int:
        """The one before's pattern: + (rank - 1) mod n + 1."""
        _fill_subtract(self.output, self.tile, (self.world.rank - 1) % self.world.size + 1)
        return int(torch.count_nonzero(self.output).item())


def _fill_subtract(view: torch.Tensor, tile: torch.Tensor, offset: float) -> None:
    for start in range(0, view.numel(), tile.numel()):
        chunk = view[start : start + tile.numel()]
        chunk.sub_(tile[: chunk.numel()]).sub_(offset)


PATTERNS = {"all-gather": Gathered, "reduce-scatter": Scattered, "sendrecv": SendReceive}


def _fill_check_pattern(view: torch.Tensor, tile: torch.Tensor, offset: float) -> None:
    for start in range(0, view.numel(), tile.numel()):
        chunk = view[start : start + tile.numel()]
        chunk.copy_(tile[: chunk.numel()]).add_(offset)


def _count_wrong(view: torch.Tensor, tile: torch.Tensor, world_size: int) -> int:
    """Elements that differ from sum over ranks r of (pattern + r + 1); the data is destroyed."""
    rank_sum = world_size * (world_size + 1) / 2
    for start in range(0, view.numel(), tile.numel()):
        chunk = view[start : start + tile.numel()]
        chunk.sub_(tile[: chunk.numel()], alpha=world_size).sub_(rank_sum)
    # Small integers only, so float32 sums are exact and any difference is an error.
    return int(torch.count_nonzero(view).item())


class Summed(Gathered):
    """The all-reduce in place, by ringlab's reduction or Open MPI: what the probe measured before it knew other
    collectives."""

    def __init__(self, buffer, tile, world, sum_):
        super().__init__(buffer, tile, world)
        self.sum = sum_

    def view(self, numbers: int):
        self.mine = self.whole[:numbers]
        return self.mine

    def run(self):
        self.sum(self.mine)

    def wrong(self) -> int:
        return _count_wrong(self.mine, self.tile, self.world.size)


def run_allreduce(args, world) -> dict:
    collective = getattr(args, "collective", "all-reduce")
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
    pattern = (
        Summed(buffer, tile, world, sum_) if collective == "all-reduce" else PATTERNS[collective](buffer, tile, world)
    )
    redop = "sum" if collective in ("all-reduce", "reduce-scatter") else "none"
    say = print if world.is_reporter else (lambda *a, **k: None)
    say(
        f"# ringlab-worker allreduce: {collective}, {world.size} ranks on {world.nodes} node(s), "
        f"{library_version or world.backend} on {device.type}, {args.reduction}, "
        f"warmup {args.warmup_iters}, iters {args.iters}"
    )
    say(
        "# time in us; algbw and busbw in Gbit/s (bits; nccl-tests prints GB/s); "
        "#wrong = wrong elements summed over ranks"
    )
    say(
        f"# {'size':>10} {'count':>12} {'type':>6} {'redop':>6} {'time':>12} {'algbw':>9} {'busbw':>9} {'#wrong':>7}",
        flush=True,
    )

    rows = []
    # An all-gather's or a reduce-scatter's whole buffer holds one equal share per rank.
    granule = world.size if collective in ("all-gather", "reduce-scatter") else 1
    for size in sizes:
        numbers = size // FLOAT32_BYTES // granule * granule
        if numbers == 0:
            continue
        size = numbers * FLOAT32_BYTES
        view = pattern.view(numbers)
        for _ in range(args.warmup_iters):
            pattern.run()
        world.barrier()
        world.synchronize()
        started, cpu_started = time.perf_counter(), time.process_time()
        for _ in range(args.iters):
            pattern.run()
        world.synchronize()
        seconds = (time.perf_counter() - started) / args.iters
        cpu_seconds = (time.process_time() - cpu_started) / args.iters

        pattern.fill(world.rank)
        pattern.run()
        stats[0] = seconds
        dist.all_reduce(stats[:1], op=dist.ReduceOp.MAX)  # the collective ends when the slowest rank does
        stats[1] = pattern.wrong()
        stats[2] = cpu_seconds
        dist.all_reduce(stats[1:])
        view.zero_()
        pattern.clear()  # timed iterations move zeros: no overflow, no slow denormals
        seconds, wrong, cpu_seconds = float(stats[0].item()), int(stats[1].item()), float(stats[2].item()) / world.size

        algbw = size * 8 / seconds / 1e9
        row = {
            "sizeBytes": size,
            "count": numbers,
            "dtype": "float32",
            "redop": redop,
            "timeSeconds": seconds,
            "algbwGbps": algbw,
            "busbwGbps": bus_bandwidth_gbps(algbw, world.size, collective),
            "wrong": wrong,
            "cpuSeconds": cpu_seconds,
        }
        rows.append(row)
        say(
            f"  {size:>10} {numbers:>12} {'float':>6} {redop:>6} {seconds * 1e6:>12.1f} "
            f"{algbw:>9.3f} {row['busbwGbps']:>9.3f} {wrong:>7}",
            flush=True,
        )

    finish()
    peak = max(row["busbwGbps"] for row in rows)
    total_wrong = sum(row["wrong"] for row in rows)
    say(f"# peak busbw: {peak:.3f} Gbit/s; wrong elements: {total_wrong}", flush=True)
    # Which library summed: torch.distributed's backend (world.backend in the record) or Open MPI, with its version.
    return {
        "rows": rows,
        "peakBusbwGbps": peak,
        "library": library,
        "collective": collective,
        **({"libraryVersion": library_version} if library_version else {}),
        **(
            {
                "referenceGbps": reference,
                "reference": f"iperf3, one TCP stream from node 1 to node 0 for {REFERENCE_SECONDS} s",
            }
            if reference is not None
            else {}
        ),
    }

"""The CPU check, the compute micro-benchmark every rank runs before its job (ringlab_worker/cpu_check.py)."""

import time
from types import SimpleNamespace

import torch
from ringlab_worker.cpu_check import compute_gflops, measure_cpu_check


def test_the_speed_is_timed_for_about_the_seconds_asked_and_is_a_real_rate_per_cpu_second_on_a_cpu():
    started = time.perf_counter()
    gflops = compute_gflops(torch.device("cpu"), 0.3)
    elapsed = time.perf_counter() - started
    assert 0.3 <= elapsed < 2.0
    # 2 n^3 flops per product per second of this process's CPU time: the same products timed here, by the CPU clock.
    assert abs(gflops / _cpu_rate_of_products(256) - 1) < 0.5


def _cpu_rate_of_products(size: int) -> float:
    """GFLOP per CPU-second of `size` x `size` fp32 products, timed independently of cpu_check.py."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    products, started = 0, time.process_time()
    while time.process_time() - started < 0.3:
        torch.mm(a, b)
        products += 1
    return products * 2 * size**3 / (time.process_time() - started) / 1e9


def test_a_world_of_one_reports_its_own_speed_and_zero_seconds_means_none():
    world = SimpleNamespace(device=torch.device("cpu"), size=1, synchronize=lambda: None)
    result = measure_cpu_check(world, 0.2)
    assert result["seconds"] == 0.2 and result["clock"] == "cpu"
    assert len(result["computeGflops"]) == 1 and result["computeGflops"][0] > 0
    assert measure_cpu_check(world, 0) is None


def test_a_quota_slows_the_wall_clock_but_not_the_speed_per_cpu_second(monkeypatch):
    """What a CPU quota does to a process (it runs half of each period), simulated: the process clock advances half
    as fast as the wall clock. The rate per CPU-second stays that of the unthrottled product."""
    import ringlab_worker.cpu_check as cpu_check_module

    wall = {"now": 0.0}
    real_mm = torch.mm

    def mm(a, b):
        wall["now"] += 0.01  # every product: 10 ms of wall time, 5 ms of CPU time
        return real_mm(a, b)

    monkeypatch.setattr(cpu_check_module.time, "perf_counter", lambda: wall["now"])
    monkeypatch.setattr(cpu_check_module.time, "process_time", lambda: wall["now"] / 2)
    monkeypatch.setattr(cpu_check_module.torch, "mm", mm)
    gflops = compute_gflops(torch.device("cpu"), 0.5)
    assert abs(gflops - 2 * 256**3 / 0.005 / 1e9) < 1e-6


def test_the_cpu_check_flag_parses_under_its_old_name_too():
    """Job scripts saved before the rename (job.sbatch, mpirun.sh) pass --calibration-seconds."""
    from ringlab_worker.cli import build_parser

    for flag in ("--cpu-check-seconds", "--calibration-seconds"):
        assert build_parser().parse_args(["allreduce", flag, "0.2"]).cpu_check_seconds == 0.2
    assert build_parser().parse_args(["allreduce"]).cpu_check_seconds == 0.6

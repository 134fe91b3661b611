"""The compute micro-benchmark every rank runs before its job (ringlab_worker/calibrate.py)."""

import time
from types import SimpleNamespace

import torch

from ringlab_worker.calibrate import calibrate, compute_gflops


def test_the_speed_is_timed_for_about_the_seconds_asked_and_is_a_real_rate():
    started = time.perf_counter()
    gflops = compute_gflops(torch.device("cpu"), 0.3)
    elapsed = time.perf_counter() - started
    assert 0.3 <= elapsed < 2.0
    # 2 n^3 flops per product: any CPU that runs torch does well over 0.05 GFLOP/s, and no CPU core 10 000.
    assert 0.05 < gflops < 10_000


def test_a_world_of_one_reports_its_own_speed_and_zero_seconds_means_none():
    world = SimpleNamespace(device=torch.device("cpu"), size=1, synchronize=lambda: None)
    result = calibrate(world, 0.2)
    assert result["seconds"] == 0.2 and len(result["computeGflops"]) == 1 and result["computeGflops"][0] > 0
    assert calibrate(world, 0) is None

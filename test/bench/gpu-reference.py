"""The plain-PyTorch reference for test/bench/gpu.sh: ResNet-50 trained on one synthetic batch with nothing of
ringlab around it (no torchrun, no DDP, no NCCL), so the benchmark's figure can be told apart from what the GPU
and this torch do by themselves. Then a profile of five AMP steps: where the GPU's time goes.

Usage (on a machine with an NVIDIA GPU, torch and torchvision): python3 test/bench/gpu-reference.py OUT_DIR
Writes OUT_DIR/reference.json (img/s and peak memory per setting) and OUT_DIR/profile.txt (the profiler's
kernels by CUDA time). About a minute on an H200.
"""

import json
import os
import sys
import time

import torch
import torch.nn.functional as F
import torchvision
from torch.profiler import ProfilerActivity, profile

# (precision, batch, cudnn.benchmark, channels-last): AMP with and without channels-last and cuDNN's autotuner,
# fp32 with and without the autotuner, and a batch twice gpu.sh's largest.
SETTINGS = [
    ("amp", 256, True, True),
    ("amp", 256, False, True),
    ("amp", 256, True, False),
    ("fp32", 256, True, False),
    ("fp32", 256, False, False),
    ("amp", 512, True, True),
]


def training_step(precision: str, batch: int, channels_last: bool):
    """One SGD step of ResNet-50 on a fixed random batch, as the worker's Trainer.step does it."""
    torch.manual_seed(0)
    layout = torch.channels_last if channels_last else torch.contiguous_format
    model = torchvision.models.resnet50(weights=None).cuda().to(memory_format=layout)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=precision == "amp")
    images = torch.randn(batch, 3, 224, 224, device="cuda").contiguous(memory_format=layout)
    labels = torch.randint(0, 1000, (batch,), device="cuda")

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=precision == "amp"):
            loss = F.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    return step


def measure(precision: str, batch: int, benchmark: bool, channels_last: bool, warmup=10, steps=30) -> dict:
    torch.backends.cudnn.benchmark = benchmark
    step = training_step(precision, batch, channels_last)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    row = {
        "precision": precision,
        "batch": batch,
        "cudnnBenchmark": benchmark,
        "channelsLast": channels_last,
        "imagesPerSecond": round(batch * steps / seconds, 1),
        "maxMemoryGiB": round(torch.cuda.max_memory_allocated() / 2**30, 2),
    }
    del step
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return row


def main(out_dir: str) -> None:
    rows = []
    for setting in SETTINGS:
        rows.append(measure(*setting))
        print(json.dumps(rows[-1]), flush=True)
    with open(os.path.join(out_dir, "reference.json"), "w", encoding="utf-8") as stream:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, stream, indent=1)

    torch.backends.cudnn.benchmark = True
    step = training_step("amp", 256, channels_last=True)
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiler:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    with open(os.path.join(out_dir, "profile.txt"), "w", encoding="utf-8") as stream:
        stream.write(profiler.key_averages().table(sort_by="cuda_time_total", row_limit=25))


if __name__ == "__main__":
    main(sys.argv[1])

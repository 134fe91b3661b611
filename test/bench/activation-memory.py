#!/usr/bin/env python3
"""Measures what src/campaign/gpu-memory.ts assumes: the bytes a training step keeps for the backward pass, per image.

For each image model as the worker builds it (docker/worker/ringlab_worker/models/) at its native image size, it runs
one forward pass in training mode with torch.autograd.graph.saved_tensors_hooks and adds up the distinct tensors
autograd saves (parameters excluded), at two batch sizes; the difference per image is the activation memory per image.
fp32 as is; amp as autocast to a 16-bit type (bfloat16 on the CPU, float16 on a GPU: both 2 bytes, and the same
operations run in 16 bits). Runs on a CPU in about a minute: /usr/bin/python3 test/bench/activation-memory.py
"""

import os
import sys

import torch

# The models exactly as the worker builds them.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docker", "worker"))
from ringlab_worker.models import build_model  # noqa: E402
from ringlab_worker.registry import NATIVE_IMAGE_SIZE as NATIVE  # noqa: E402


def build(name):
    return build_model(name)[0]


def saved_bytes(model, batch, size, amp):
    params = {p.data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        ptr = t.data_ptr()
        if ptr not in params:
            seen[ptr] = max(seen.get(ptr, 0), t.numel() * t.element_size())
        return t

    data = torch.randn(batch, 3, size, size)
    context = torch.autocast("cpu", dtype=torch.bfloat16) if amp else torch.autocast("cpu", enabled=False)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), context:
        model(data).float().sum()
    return sum(seen.values())


def main():
    torch.manual_seed(0)
    for name in sys.argv[1:] or NATIVE:
        model = build(name).train()
        row = [name]
        for amp in (False, True):
            small, large = saved_bytes(model, 2, NATIVE[name], amp), saved_bytes(model, 4, NATIVE[name], amp)
            row.append(f"{'amp' if amp else 'fp32'} {(large - small) / 2 / 2**20:.1f} MiB/image")
        print("  ".join(row), flush=True)


if __name__ == "__main__":
    main()

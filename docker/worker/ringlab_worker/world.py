"""Joins the process group and describes who is in it."""

import os
import socket
import sys
from dataclasses import dataclass
from datetime import timedelta
from typing import List

import torch
import torch.distributed as dist

from .errors import BadArguments, classify_collective_error
from .exchange import all_gather_json


@dataclass(frozen=True)
class World:
    rank: int
    local_rank: int
    size: int
    nodes: int
    procs_per_node: int
    device: torch.device
    backend: str  # "gloo" | "nccl"
    hostnames: List[str]

    @property
    def is_reporter(self) -> bool:
        """Only global rank 0 prints results and writes the record, as in Horovod's benchmark."""
        return self.rank == 0

    def synchronize(self) -> None:
        """Waits for queued GPU work, so host timers measure it; nothing to wait for on CPU."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def barrier(self) -> None:
        """dist.barrier() on this rank's GPU under NCCL: without device_ids NCCL guesses the device, and torch 2.x
        warns that it does (seen on the first GPU run, torch 2.11)."""
        if self.backend == "nccl":
            dist.barrier(device_ids=[self.device.index])
        else:
            dist.barrier()


def cuda_device_index(local_rank: int, device_count: int) -> int:
    """The GPU of the process torchrun numbered LOCAL_RANK: one GPU per process, wrapping around when a
    node runs more processes than it has GPUs (they then share)."""
    if device_count < 1:
        raise BadArguments("--device cuda asked for, but torch sees no GPU")
    return local_rank % device_count


def pick_device(requested: str, local_rank: int) -> torch.device:
    if requested == "cpu" or (requested == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():  # the launcher checks this too; a worker may run elsewhere
        raise BadArguments("--device cuda asked for, but torch sees no GPU")
    device = torch.device("cuda", cuda_device_index(local_rank, torch.cuda.device_count()))
    torch.cuda.set_device(device)
    return device


def join(args) -> World:
    """The process group of this run: from torchrun's environment, or a group of one."""
    under_torchrun = "TORCHELASTIC_RUN_ID" in os.environ
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = pick_device(args.device, local_rank)
    backend = "nccl" if device.type == "cuda" else "gloo"
    if getattr(args, "nccl_algo_ring", False):
        # NCCL reads it when the communicator is created, i.e. after this. Ring makes busbw comparable
        # with the link rate (tree can report more than the link on 2 nodes).
        os.environ["NCCL_ALGO"] = "Ring"
        if backend == "gloo" and os.environ.get("LOCAL_RANK", "0") == "0":
            print("ringlab-worker: note: --nccl-algo-ring has no effect on Gloo (CPU)", file=sys.stderr)
    timeout = timedelta(seconds=args.timeout_seconds)
    try:
        if under_torchrun:
            dist.init_process_group(backend, timeout=timeout)  # MASTER_ADDR, RANK, ... set by torchrun
        else:
            dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
        hostnames: List[str] = all_gather_json(socket.gethostname(), device)
    except RuntimeError as error:
        classified = classify_collective_error(error, "joining the process group")
        if classified is None:
            raise
        raise classified from error
    return World(
        rank=dist.get_rank(),
        local_rank=local_rank,
        size=dist.get_world_size(),
        nodes=int(os.environ.get("GROUP_WORLD_SIZE", "1")),
        procs_per_node=int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
        device=device,
        backend=backend,
        hostnames=hostnames,
    )


def leave() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()

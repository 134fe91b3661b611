"""One rank of test_reduction.py: joins a Gloo group on loopback, takes two DDP steps with each summing reduction
from the same start and rank-dependent data, and saves the parameters after each (and raw sums) for the test; then
six steps with each training strategy (PowerSGD, local SGD) installed as the worker installs it, saving the
parameters and the replicas' divergence after each step."""

import sys
from argparse import Namespace
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ringlab_worker.models import build_model
from ringlab_worker.reduction import PROBED_REDUCTIONS, finish, install, replica_divergence, sum_over_ranks
from torch.nn.parallel import DistributedDataParallel


def main(rank: int, size: int, port: int, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size, timeout=timedelta(seconds=60)
    )
    saved = {}
    for reduction in PROBED_REDUCTIONS:
        for fp16 in (False, True):
            torch.manual_seed(0)
            model, classes = build_model("small")
            # Small buckets: several per step, so bucket order and the exchange thread are exercised.
            ddp = DistributedDataParallel(model, bucket_cap_mb=1)
            optimizer = install(
                ddp, torch.optim.SGD(ddp.parameters(), lr=0.1), Namespace(reduction=reduction, fp16_allreduce=fp16)
            )
            generator = torch.Generator().manual_seed(100 + rank)
            data = torch.randn(4, 3, 32, 32, generator=generator)
            target = torch.randint(0, classes, (4,), generator=generator)
            for _ in range(2):
                optimizer.zero_grad()
                F.cross_entropy(ddp(data), target).backward()
                optimizer.step()
            saved[f"{reduction}/fp16={fp16}"] = [p.detach().clone() for p in model.parameters()]
    # Odd sizes, fewer elements than ranks included: shards of unequal and zero length.
    for count in (1, 3, 10, 1001):
        for reduction in PROBED_REDUCTIONS:
            tensor = torch.arange(count, dtype=torch.float32) * (rank + 1)
            sum_over_ranks(tensor, reduction)
            saved[f"sum/{reduction}/{count}"] = tensor
    # The strategies, with the worker's own defaults of their knobs but a short warm-up: PowerSGD compresses from
    # step 2, local SGD steps alone from step 2 and averages every 3 steps.
    for strategy in ("ring", "powersgd", "local-sgd"):
        args = Namespace(
            reduction=strategy,
            fp16_allreduce=False,
            powersgd_rank=1,
            powersgd_start_iter=2,
            local_sgd_period=3,
            local_sgd_warmup=2,
        )
        torch.manual_seed(0)
        model, classes = build_model("small")
        ddp = DistributedDataParallel(model, bucket_cap_mb=1)
        optimizer = install(ddp, torch.optim.SGD(ddp.parameters(), lr=0.1), args)
        generator = torch.Generator().manual_seed(100 + rank)
        for step in range(6):
            data = torch.randn(4, 3, 32, 32, generator=generator)
            target = torch.randint(0, classes, (4,), generator=generator)
            optimizer.zero_grad()
            F.cross_entropy(ddp(data), target).backward()
            optimizer.step()
            saved[f"{strategy}/{step}"] = [p.detach().clone() for p in model.parameters()]
            saved[f"{strategy}/divergence/{step}"] = replica_divergence(model)
        saved[f"{strategy}/finish"] = finish(optimizer)
    torch.save(saved, f"{out_dir}/rank{rank}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])

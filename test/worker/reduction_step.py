"""One rank of test_reduction.py: joins a Gloo group on loopback, takes one DDP step with each reduction from
the same start and rank-dependent data, and saves the parameters after each (and raw sums) for the test."""

import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from ringlab_worker.reduction import REDUCTIONS, register_ddp_hook, sum_over_ranks
from ringlab_worker.train import build_model


def main(rank: int, size: int, port: int, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size,
                            timeout=timedelta(seconds=60))
    saved = {}
    for reduction in REDUCTIONS:
        for fp16 in (False, True):
            torch.manual_seed(0)
            model, classes = build_model("small")
            # Small buckets: several per step, so bucket order and the exchange thread are exercised.
            ddp = DistributedDataParallel(model, bucket_cap_mb=1)
            register_ddp_hook(ddp, reduction, fp16=fp16)
            optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
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
        for reduction in REDUCTIONS:
            tensor = torch.arange(count, dtype=torch.float32) * (rank + 1)
            sum_over_ranks(tensor, reduction)
            saved[f"sum/{reduction}/{count}"] = tensor
    torch.save(saved, f"{out_dir}/rank{rank}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])

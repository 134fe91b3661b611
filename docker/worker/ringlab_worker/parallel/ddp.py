"""Data parallelism through PyTorch's DistributedDataParallel: every rank a full replica, the gradients summed by one
of ringlab's reductions (reductions/: DDP's own ring all-reduce, or a communication hook) while backward goes on."""

import math

from torch.nn.parallel import DistributedDataParallel

from .. import reduction
from .layout import Layout


class DataParallel(Layout):
    name = "ddp"

    def __init__(self, config, world, dims, spec, model):
        on_gpu = world.device.type == "cuda"
        ddp = DistributedDataParallel(
            model, device_ids=[world.device.index] if on_gpu else None, bucket_cap_mb=config.bucket_cap_mb
        )
        super().__init__(config, world, dims, spec, ddp, model)
        self.optimizer = reduction.install(ddp, self.optimizer, config)  # local SGD wraps it

    def wire_bytes_per_step(self) -> float:
        return reduction.wire_bytes_per_step(self.model.parameters(), self.config)

    def traffic(self):
        # The reduction's bytes as all-reduces (PowerSGD's factors, local SGD's 1/H): what the ring model takes; one
        # call per gradient bucket.
        wire = reduction.wire_bytes_per_step(self.model.parameters(), self.config)
        return [
            {
                "op": "all_reduce",
                "bytes": wire,
                "calls": buckets(self.gradient_bytes(), self.config.bucket_cap_mb),
                "group": "dp_replicate",
            }
        ]

    def synchronize_replicas(self) -> None:
        reduction.synchronize_replicas(self.optimizer)

    def finish(self) -> dict:
        return reduction.finish(self.optimizer)

    def replica_divergence(self) -> float:
        return reduction.replica_divergence(self.model)

    def supports_time_to_train(self) -> None:
        pass


def buckets(gradient_bytes: int, bucket_cap_mb: float) -> int:
    """DDP's gradient buckets: the gradient in bucket_cap_mb MiB pieces (its first bucket is smaller, 1 MiB; the count
    is what the latency term needs)."""
    return max(1, math.ceil(gradient_bytes / (bucket_cap_mb * 2**20)))


def apply_ddp(config, world, dims, spec, model) -> Layout:
    return DataParallel(config, world, dims, spec, model)

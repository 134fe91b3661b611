"""Data parallelism through Horovod's DistributedOptimizer (its ring all-reduce, tensor fusion and fp16 compression),
started without horovodrun: rank 0 serves Horovod's Gloo rendezvous, torch.distributed tells the others where."""

import os

from ..errors import WorkerError
from ..exchange import broadcast_json
from .layout import Layout


class HorovodDataParallel(Layout):
    name = "horovod"

    def __init__(self, config, world, dims, spec, model):
        super().__init__(config, world, dims, spec, model, model)
        self.optimizer = _distributed_optimizer(config, world, model, self.optimizer)

    def _optimizer_step(self) -> None:
        self.optimizer.synchronize()  # Horovod's all-reduce must finish before the scaler looks at gradients
        with self.optimizer.skip_synchronize():
            self.scaler.step(self.optimizer)
        self.scaler.update()

    def wire_bytes_per_step(self) -> float:
        return self.gradient_bytes() * (0.5 if self.config.fp16_allreduce else 1.0)

    def traffic(self):
        return [{"op": "all_reduce", "bytes": self.wire_bytes_per_step(), "calls": 1, "group": "dp_replicate"}]


def apply_horovod(config, world, dims, spec, model) -> Layout:
    return HorovodDataParallel(config, world, dims, spec, model)


def _distributed_optimizer(config, world, model, optimizer):
    """Rank order matches torchrun's (node by node), so hvd.rank() equals the torch rank."""
    import horovod.torch as hvd
    from horovod.runner.common.util.hosts import get_host_assignments, parse_hosts
    from horovod.runner.http.http_server import RendezvousServer

    hosts = ",".join(f"node{i}:{world.procs_per_node}" for i in range(world.nodes))
    plan = get_host_assignments(parse_hosts(hosts), world.size)
    port = None
    if world.rank == 0:
        server = RendezvousServer()
        port = server.start()
        server.init(plan)
    port = broadcast_json(port, 0, world.device)
    slot = plan[world.rank]
    os.environ.update(
        {
            "HOROVOD_GLOO_RENDEZVOUS_ADDR": os.environ.get("MASTER_ADDR", "127.0.0.1"),
            "HOROVOD_GLOO_RENDEZVOUS_PORT": str(port),
            "HOROVOD_GLOO_TIMEOUT_SECONDS": str(int(config.timeout_seconds)),
            "HOROVOD_CONTROLLER": "gloo",
            "HOROVOD_CPU_OPERATIONS": "gloo",
            "HOROVOD_FUSION_THRESHOLD": str(int(config.bucket_cap_mb * 1024 * 1024)),  # DDP buckets' analogue
            "HOROVOD_HOSTNAME": slot.hostname,
            "HOROVOD_RANK": str(slot.rank),
            "HOROVOD_SIZE": str(slot.size),
            "HOROVOD_LOCAL_RANK": str(slot.local_rank),
            "HOROVOD_LOCAL_SIZE": str(slot.local_size),
            "HOROVOD_CROSS_RANK": str(slot.cross_rank),
            "HOROVOD_CROSS_SIZE": str(slot.cross_size),
        }
    )
    if os.environ.get("GLOO_SOCKET_IFNAME"):
        os.environ["HOROVOD_GLOO_IFACE"] = os.environ["GLOO_SOCKET_IFNAME"]
    hvd.init()
    if hvd.rank() != world.rank or hvd.size() != world.size:
        raise WorkerError(
            f"Horovod placed this process at rank {hvd.rank()} of {hvd.size()}, torch at {world.rank} of {world.size}"
        )
    compression = hvd.Compression.fp16 if config.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(), compression=compression)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    return optimizer

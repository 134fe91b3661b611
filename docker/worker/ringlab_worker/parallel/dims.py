"""How a run's ranks are laid out: pytorch/torchtitan's ParallelDims in small.

Four degrees, whose product is the world size: pp pipeline stages; dp_replicate data-parallel replicas that each hold
the whole model state (DDP's way); dp_shard data-parallel ranks that share one copy of it (FSDP's way); tp ranks that
split each layer's matrices. The device mesh has them in that order, tensor parallelism innermost, so that with
several processes per node a tensor-parallel group stays inside a node (its all-reduces are on every layer) and a
pipeline's stages lie across nodes (one send per micro-batch and boundary).
"""

from dataclasses import dataclass
from typing import Optional

from ..errors import BadArguments

MESH_DIMENSIONS = ("pp", "dp_replicate", "dp_shard", "tp")


@dataclass(frozen=True)
class ParallelDims:
    pp: int = 1
    dp_replicate: int = 1
    dp_shard: int = 1
    tp: int = 1

    @property
    def world_size(self) -> int:
        return self.pp * self.dp_replicate * self.dp_shard * self.tp

    @property
    def data_parallel(self) -> int:
        """Replicas of the model that see different batches: what global batch and throughput count."""
        return self.dp_replicate * self.dp_shard

    def describe(self) -> dict:
        """For the record: each degree by its mesh name."""
        return {name: getattr(self, name) for name in MESH_DIMENSIONS}

    def coordinates(self, rank: int) -> dict:
        """Where a global rank sits in the mesh (row-major, tp innermost)."""
        place = {}
        for name in reversed(MESH_DIMENSIONS):
            degree = getattr(self, name)
            place[name] = rank % degree
            rank //= degree
        return place

    def data_parallel_rank(self, rank: int) -> int:
        """Which data-parallel replica a rank's batches belong to (ranks of one tensor group or pipeline share it)."""
        place = self.coordinates(rank)
        return place["dp_replicate"] * self.dp_shard + place["dp_shard"]

    def mesh(self, device_type: str):
        """The device mesh of every degree (size-1 dimensions included: each layout takes the ones it needs)."""
        from torch.distributed.device_mesh import init_device_mesh

        return init_device_mesh(
            device_type, tuple(getattr(self, name) for name in MESH_DIMENSIONS), mesh_dim_names=MESH_DIMENSIONS
        )


def _degree(flag: str, value: Optional[int], default: int, world_size: int) -> int:
    degree = default if value is None else value
    if degree < 1 or world_size % degree:
        raise BadArguments(f"{flag} {degree} does not divide the run's {world_size} workers")
    return degree


def dims_of(config, world_size: int, nodes: int) -> ParallelDims:
    """The layout a run's parallelism and degrees ask for, checked against its world size."""
    parallelism = config.parallelism
    if parallelism in ("ddp", "pipeline") and config.tensor_degree not in (None, 1):
        raise BadArguments(
            f"--tensor-degree with --parallelism {parallelism}: tensor parallelism goes with fsdp "
            "(FSDP x tensor, the 2-D layout torch supports) or --parallelism tensor"
        )
    if parallelism != "pipeline" and config.pipeline_stages is not None:
        raise BadArguments("--pipeline-stages belongs to --parallelism pipeline")
    if parallelism == "ddp":
        return ParallelDims(dp_replicate=world_size)
    if parallelism == "fsdp":
        tp = _degree("--tensor-degree", config.tensor_degree, 1, world_size)
        if config.fsdp_sharding == "none":
            if tp > 1:
                raise BadArguments("--fsdp-sharding none with --tensor-degree: the control shards nothing; use full")
            return ParallelDims(dp_replicate=world_size)
        return ParallelDims(dp_shard=world_size // tp, tp=tp)
    if parallelism == "tensor":
        tp = _degree("--tensor-degree", config.tensor_degree, world_size, world_size)
        if tp < world_size:
            raise BadArguments(
                f"--parallelism tensor with --tensor-degree {tp} of {world_size} workers: the other "
                "dimension would be data-parallel; use --parallelism fsdp --tensor-degree "
                f"{tp} (FSDP x tensor, the 2-D layout torch supports)"
            )
        return ParallelDims(tp=tp)
    if parallelism == "pipeline":
        pp = _degree("--pipeline-stages", config.pipeline_stages, max(nodes, 2) if world_size > 1 else 1, world_size)
        return ParallelDims(pp=pp, dp_replicate=world_size // pp)
    raise BadArguments(f"unknown --parallelism {parallelism}")

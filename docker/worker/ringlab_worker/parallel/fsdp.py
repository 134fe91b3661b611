"""Sharded data parallelism through PyTorch's FSDP2 (`torch.distributed.fsdp.fully_shard`), ZeRO's stages by another
name (Rajbhandari et al. 2020):

- full (ZeRO-3): every rank keeps 1/N of each parameter, gradient and optimizer state. A block's parameters are
  all-gathered before its forward and freed after it, gathered again for its backward, and its gradients
  reduce-scattered: 3 collectives of the parameters' bytes a step, each sending (N-1)/N of them (1.5x DDP's ring).
- grad-op (ZeRO-2; reshard_after_forward=False): the parameters stay gathered from forward to backward, so one
  all-gather and one reduce-scatter a step (DDP's bytes), at the memory of the whole parameters during the step.
- none: the control. A 2-D mesh of N replicas by a shard group of one (FSDP's hybrid mode) shards nothing and
  all-reduces the gradients: DDP's traffic and memory, through FSDP's code.

Each block is a unit of its own (the transformer's blocks, a CNN's stages), then the root (embeddings, head), as
torchtitan applies it. With --tensor-degree the blocks are first split by tensor parallelism on the mesh's tp
dimension (tensor.py) and FSDP shards over dp_shard: the 2-D layout.
"""

from ..errors import BadArguments
from .layout import Layout, gradient_bytes, local_bytes


def torch_needs(config):
    """What FSDP's options ask of torch (torch_api.py)."""
    sharding = f"--parallelism fsdp --fsdp-sharding {config.fsdp_sharding}"
    needs = [
        (sharding, "torch.distributed.fsdp", "fully_shard", "reshard_after_forward"),
        (sharding, "torch.distributed.device_mesh", "init_device_mesh", None),
    ]
    if config.fsdp_cpu_offload:
        needs.append(("--fsdp-cpu-offload", "torch.distributed.fsdp", "CPUOffloadPolicy", None))
    if (config.tensor_degree or 1) > 1:
        from .tensor import torch_needs as tensor_needs

        needs += tensor_needs(config)
    return needs


class FullyShardedDataParallel(Layout):
    name = "fsdp"

    def __init__(self, config, world, dims, spec, model, mesh):
        from torch.distributed.fsdp import CPUOffloadPolicy, OffloadPolicy, fully_shard

        if config.fsdp_cpu_offload and world.device.type != "cuda":
            raise BadArguments(
                "--fsdp-cpu-offload moves a GPU's shards into host memory; on CPU workers they are "
                "there already: leave it out"
            )
        self.full_bytes = gradient_bytes([model])  # before sharding: the whole model's
        blocks = spec.blocks(model)
        # FSDP's units: each block, then the root with what no block holds (bytes of this rank's part, before sharding).
        self.units = [*blocks, model]
        self.unit_bytes = [local_bytes([block]) for block in blocks]
        self.unit_bytes.append(local_bytes([model]) - sum(self.unit_bytes))
        self.gathers = 2 if config.fsdp_sharding == "full" else 1
        shard_mesh = mesh["dp_replicate", "dp_shard"] if config.fsdp_sharding == "none" else mesh["dp_shard"]
        options = {
            "mesh": shard_mesh,
            "reshard_after_forward": config.fsdp_sharding == "full",
            "offload_policy": CPUOffloadPolicy() if config.fsdp_cpu_offload else OffloadPolicy(),
        }
        for block in blocks:
            fully_shard(block, **options)
        fully_shard(model, **options)
        if config.fsdp_prefetch > 0:
            _prefetch(blocks, config.fsdp_prefetch)
        super().__init__(config, world, dims, spec, model, model)

    def traffic(self):
        # Under tensor parallelism FSDP shards each rank's part of the matrices: the unit's bytes on this rank.
        units, whole = len(self.units), sum(self.unit_bytes)
        collectives = (
            [{"op": "all_reduce", "bytes": whole, "calls": units, "group": "dp_replicate"}]
            if self.config.fsdp_sharding == "none"
            else [
                {"op": "all_gather", "bytes": self.gathers * whole, "calls": self.gathers * units, "group": "dp_shard"},
                {"op": "reduce_scatter", "bytes": whole, "calls": units, "group": "dp_shard"},
            ]
        )
        return collectives + (self.tensor_traffic if self.dims.tp > 1 else [])

    def gradient_bytes(self) -> int:
        return self.full_bytes

    def state_dict(self) -> dict:
        """Every rank's shards gathered into whole tensors (collective): what a single worker's model holds."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(self.model, options=StateDictOptions(full_state_dict=True))


def _prefetch(blocks, ahead: int) -> None:
    """Each block asks for the all-gathers of the next `ahead` blocks in forward and the previous ones in backward."""
    for index, block in enumerate(blocks):
        following = blocks[index + 1 : index + 1 + ahead]
        preceding = blocks[max(0, index - ahead) : index][::-1]
        if following:
            block.set_modules_to_forward_prefetch(following)
        if preceding:
            block.set_modules_to_backward_prefetch(preceding)


def apply_fsdp(config, world, dims, spec, model) -> Layout:
    mesh = dims.mesh(world.device.type)
    tensor_traffic = []
    if dims.tp > 1:
        from .tensor import split_matrices, tensor_parallel_traffic

        split_matrices(config, spec, model, mesh["tp"])
        tensor_traffic = tensor_parallel_traffic(config)
    layout = FullyShardedDataParallel(config, world, dims, spec, model, mesh)
    layout.tensor_traffic = tensor_traffic
    return layout

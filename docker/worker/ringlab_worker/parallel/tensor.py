"""Tensor parallelism (Shoeybi et al. 2019, Megatron-LM) through PyTorch's DTensor API
(`torch.distributed.tensor.parallel.parallelize_module`): each transformer block's q, k, v and first MLP layer split
by columns and its two projections by rows over the mesh's tp dimension (models.LanguageModel.tensor_parallel_plan).

Every rank of a tensor-parallel group takes the same batch. Per block and step: one all-reduce of the activations
(batch x sequence x width) after the attention's projection and one after the MLP's in forward; in backward one
for the gradient of the attention's input and one for the MLP's. The attention receives its input as one replicated
DTensor (PrepareModuleInput), so that the gradients of q, k and v add up before the one all-reduce instead of three.
With full activation checkpointing, backward runs each block's forward again, and its two all-reduces with it.
"""

from ..errors import BadArguments
from .layout import Layout, gradient_bytes


def torch_needs(config):
    """What tensor parallelism asks of torch (torch_api.py)."""
    return [
        ("--parallelism tensor", "torch.distributed.tensor.parallel", name, None)
        for name in ("parallelize_module", "ColwiseParallel", "RowwiseParallel", "PrepareModuleInput")
    ]


def split_matrices(config, spec, model, tp_mesh) -> None:
    """Applies the model's tensor-parallel plan on `tp_mesh` (in place)."""
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import PrepareModuleInput, parallelize_module

    plan = spec.tensor_parallel_plan(model, config)
    tp = tp_mesh.size()
    if config.heads % tp or config.kv_heads % tp:
        raise BadArguments(
            f"{tp} tensor-parallel workers must divide the model's {config.heads} attention heads and its "
            f"{config.kv_heads} key and value heads: set --tensor-degree (or the run's workers) to a divisor of both"
        )
    for index in model.blocks:
        plan[f"blocks.{index}.attention"] = PrepareModuleInput(
            input_layouts=(Replicate(),), desired_input_layouts=(Replicate(),), use_local_output=False
        )
    parallelize_module(model, tp_mesh, plan)


def activation_bytes(config, micro_batches: int = 1) -> int:
    """One block boundary's activations for one micro-batch: batch x sequence x width numbers, 2 bytes each under
    bf16 or amp autocast, 4 in fp32."""
    element = 4 if config.precision == "fp32" else 2
    return config.batch_size // micro_batches * config.sequence_length * config.width * element


def tensor_parallel_traffic(config) -> list:
    """Two all-reduces of the activations per block in forward and two in backward (two more with full activation
    checkpointing, whose backward runs the forward again; selective keeps the all-reduces' outputs)."""
    calls = (4 + (2 if config.activation_checkpointing == "full" else 0)) * config.layers
    return [{"op": "all_reduce", "bytes": calls * activation_bytes(config), "calls": calls, "group": "tp"}]


class TensorParallel(Layout):
    name = "tensor"

    def __init__(self, config, world, dims, spec, model, mesh):
        self.full_bytes = gradient_bytes([model])
        split_matrices(config, spec, model, mesh["tp"])
        super().__init__(config, world, dims, spec, model, model)

    def gradient_bytes(self) -> int:
        return self.full_bytes

    def traffic(self):
        return tensor_parallel_traffic(self.config)

    def state_dict(self) -> dict:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(self.model, options=StateDictOptions(full_state_dict=True))


def apply_tensor(config, world, dims, spec, model) -> Layout:
    return TensorParallel(config, world, dims, spec, model, dims.mesh(world.device.type))

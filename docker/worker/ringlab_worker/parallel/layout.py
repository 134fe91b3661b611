"""What every layout (a module of parallel/) gives the training loop: this rank's part of the model, its optimizer,
one training step, and what the record needs to know of the layout (its traffic, its state, its memory).

`Layout` is the data-parallel default: one module that takes the whole batch and returns the loss, an optimizer over
its parameters, and the step torch's examples write (zero the gradients, forward under autocast, backward through
the gradient scaler, step). A technique overrides what it does differently: Horovod synchronizes before the scaler
looks at the gradients, a pipeline stage runs its schedule and has the loss only on the last stage.
"""

import contextlib
from typing import List, Optional

import torch

from .. import compat
from ..errors import BadArguments


def adamw_implementation(device) -> str:
    """Which of torch's AdamW implementations the device has, the fastest first: fused (one kernel for every
    parameter's update: CUDA's, and the CPU's since torch 2.4), foreach (a few kernels over lists of tensors), or the
    for-loop over parameters. What users run (torch's own default picks foreach on CUDA, and torchtitan fused)."""
    from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices, _get_fused_kernels_supported_devices

    if device.type in _get_fused_kernels_supported_devices():
        return "fused"
    return "foreach" if device.type in _get_foreach_kernels_supported_devices() else "for-loop"


def _alike_groups(parameters) -> List[dict]:
    """The parameters in groups of one kind each, DTensors (tensor parallelism's matrices, FSDP's shards) apart from
    plain tensors (what tensor parallelism leaves whole): a fused or foreach step takes a group's tensors in one call,
    which refuses the two kinds mixed."""
    from torch.distributed.tensor import DTensor

    kinds = [[p for p in parameters if isinstance(p, DTensor)], [p for p in parameters if not isinstance(p, DTensor)]]
    return [{"params": kind} for kind in kinds if kind]


def make_optimizer(config, parameters, device):
    """Built after the model is wrapped (FSDP's parameters are the shards it made): SGD as before, or AdamW, whose two
    state tensors per parameter are what sharding the optimizer state divides, in the device's fastest
    implementation (the record's optimizerImplementation)."""
    parameters = list(parameters)
    if config.optimizer == "adamw":
        implementation = adamw_implementation(device)
        options = {"fused": True} if implementation == "fused" else {"foreach": implementation == "foreach"}
        return torch.optim.AdamW(_alike_groups(parameters), lr=config.learning_rate, **options), implementation
    return torch.optim.SGD(parameters, lr=config.learning_rate, momentum=config.momentum), None


def autocast_of(config, device):
    """amp: float16 autocast (with a gradient scaler, layout.scaler); bf16: bfloat16 autocast, which needs none."""
    if config.precision == "amp":
        return lambda: compat.autocast(device.type)
    if config.precision == "bf16":
        return lambda: torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext


def gradient_bytes(modules) -> int:
    """Bytes of the gradients of these modules' trainable parameters, counted in full (a shard counts as its whole)."""
    return sum(p.numel() * p.element_size() for module in modules for p in module.parameters() if p.requires_grad)


def local_bytes(modules) -> int:
    """The same of this rank's part: a tensor-parallel DTensor's local shard, a plain tensor whole."""
    return sum(
        (p.to_local() if hasattr(p, "to_local") else p).numel() * p.element_size()
        for module in modules
        for p in module.parameters()
        if p.requires_grad
    )


class Layout:
    """A model laid out over the ranks: the data-parallel default of every method (see the module's docstring)."""

    name = "ddp"

    def __init__(self, config, world, dims, spec, module, model):
        """`module` is what the step calls (the wrapped model), `model` the model itself as built."""
        self.config, self.world, self.dims, self.spec = config, world, dims, spec
        self.module, self.model = module, model
        self.optimizer, self.optimizer_implementation = make_optimizer(config, module.parameters(), world.device)
        self.scaler = compat.make_grad_scaler(enabled=config.precision == "amp")
        self.autocast = autocast_of(config, world.device)

    # --- the step ---------------------------------------------------------------------------------------------

    def step(self, inputs, targets) -> Optional[torch.Tensor]:
        """One optimizer step over this rank's batch; the loss, where this rank computes it."""
        self.optimizer.zero_grad(set_to_none=True)
        with self.autocast():
            loss = self.spec.loss(self.module(inputs), targets)
        self.scaler.scale(loss).backward()
        self._optimizer_step()
        return loss

    def _optimizer_step(self) -> None:
        self.scaler.step(self.optimizer)
        self.scaler.update()

    @property
    def loss_rank(self) -> int:
        """The global rank whose losses the record reports (rank 0's, except where only a pipeline's last stage has
        one).
        """
        return 0

    # --- what the record says of it -------------------------------------------------------------------------

    @property
    def data_parallel_rank(self) -> int:
        return self.dims.data_parallel_rank(self.world.rank)

    def traffic(self) -> List[dict]:
        """The collectives of one step on this layout, each {op, bytes, calls, group}: bytes of all the step's calls
        together (an all-reduce's S, an all-gather's gathered whole, summed over the calls), calls the times the step
        pays the collective's latency, group the mesh dimension it runs over. ringlab's src/workload/traffic.ts
        predicts the same before the run."""
        return [{"op": "all_reduce", "bytes": self.gradient_bytes(), "calls": 1, "group": "dp_replicate"}]

    def wire_bytes_per_step(self) -> float:
        """What one rank sends per step in all-reduce equivalents (the ring cost model's S: an all-reduce of S sends
        2S(N-1)/N, an all-gather or reduce-scatter of S sends S(N-1)/N, half of it)."""
        equivalent = {"all_reduce": 1.0, "all_gather": 0.5, "reduce_scatter": 0.5, "send": 0.5}
        return float(sum(equivalent[item["op"]] * item["bytes"] for item in self.traffic()))

    def gradient_bytes(self) -> int:
        return gradient_bytes([self.model])

    def state_dict(self) -> dict:
        """The whole model's state on every rank, as a single worker would hold it (checkpoints, evaluation)."""
        return self.model.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state)

    # What a checkpoint holds of the training state (time_to_train.py), saved and restored here only: the model's
    # weights, the optimizer's state (momentum buffers) and the gradient scaler's (amp; {} when off). The reductions'
    # DDP hooks and fp16 compression keep no state of their own (reductions/ registers them with state=None); a
    # strategy that did would save and restore it here, under a key of its own.
    def checkpoint_state(self) -> dict:
        return {
            "model": self.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
        }

    def restore(self, state: dict) -> None:
        self.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])

    def evaluation_model(self):
        """The model to evaluate held-out data with (time to train): the plain model, every rank holding all of it."""
        return self.model

    def synchronize_replicas(self) -> None:
        """Before evaluation: every rank holds the model it trains (a strategy with stale replicas syncs them)."""

    def finish(self) -> dict:
        """After the last step: what the layout measured itself, for the record's metrics (collective)."""
        return {}

    def replica_divergence(self) -> Optional[float]:
        """The largest difference of a parameter from rank 0's over all ranks; None where ranks hold other parts."""
        return None

    def supports_time_to_train(self) -> None:
        """Raises where time to train (time_to_train.py: checkpoints, evaluation of the plain model) is not written for
        this layout.
        """
        raise BadArguments(f"--epochs (time to train) runs with --parallelism ddp only, not {self.name}")

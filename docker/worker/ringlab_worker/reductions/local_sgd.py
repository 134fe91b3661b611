"""local-sgd: torch's post-local SGD (Lin et al. 2020): --local-sgd-warmup steps of plain all-reduce, then every rank
steps alone (DDP's hook sums over a group of the rank itself) and PeriodicModelAverager averages the parameters over
all ranks every --local-sgd-period steps (H): one all-reduce of the parameters per H steps. Trains only: the probe
measures its link with ring."""

import torch
import torch.distributed as dist

from .exchange import whole_bytes

# The averagings whose drift a result keeps (the last ones), as it keeps the last step times.
MOST_AVERAGINGS = 1000


def install(ddp, optimizer, config):
    """torch's post-local SGD, its averager recording at each averaging how far the replicas had drifted: the largest
    difference of a parameter from the average, taken on each rank without traffic (a copy before averaging) and the
    largest over ranks gathered once, at the end (finish)."""
    from torch.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook
    from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
    from torch.distributed.optim import PostLocalSGDOptimizer

    class DriftRecordingAverager(PeriodicModelAverager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.drift = []

        def average_parameters(self, params):
            groups = list(params)  # parameters, or an optimizer's parameter groups
            tensors = [p for group in groups for p in (group["params"] if isinstance(group, dict) else [group])]
            averaging = self.step >= self.warmup_steps and (self.step - self.warmup_steps) % self.period == 0
            before = [p.detach().clone() for p in tensors] if averaging else []
            super().average_parameters(groups)
            if averaging:
                self.drift.append(
                    max(float((p.detach() - old).abs().max()) for p, old in zip(tensors, before, strict=True))
                )

    class LocalSGDOptimizer(PostLocalSGDOptimizer):
        def finish(self) -> dict:
            # Every rank averaged at the same steps: the same number of entries, maximised over ranks in one call.
            drift = torch.tensor(self.averager.drift[-MOST_AVERAGINGS:], dtype=torch.float32, device=device)
            if drift.numel():
                dist.all_reduce(drift, op=dist.ReduceOp.MAX)
            return {"averagingDrift": drift.tolist()}

    device = next(ddp.parameters()).device
    # After the warm-up DDP sums over this rank's own group (no traffic): torch builds its default intra-node
    # subgroups only with CUDA, so every rank makes every one-rank group (new_group is collective).
    groups = [dist.new_group([rank]) for rank in range(dist.get_world_size())]
    state = post_localSGD_hook.PostLocalSGDState(
        process_group=None, subgroup=groups[dist.get_rank()], start_localSGD_iter=config.local_sgd_warmup
    )
    ddp.register_comm_hook(state, post_localSGD_hook.post_localSGD_hook)
    averager = DriftRecordingAverager(period=config.local_sgd_period, warmup_steps=config.local_sgd_warmup)
    return LocalSGDOptimizer(optim=optimizer, averager=averager)


def wire_bytes_per_step(tensors, config) -> float:
    """The parameters, all-reduced once every H steps."""
    return whole_bytes(tensors) / config.local_sgd_period

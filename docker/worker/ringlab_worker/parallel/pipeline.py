"""Pipeline parallelism through `torch.distributed.pipelining`: the model's blocks cut into stages (one per rank of the
mesh's pp dimension; models.LanguageModel.pipeline_stage), each batch cut into --micro-batches, run by a schedule:

- gpipe (Huang et al. 2019): every micro-batch's forward, then every backward; a stage holds all of them.
- 1f1b (PipeDream-Flush, Narayanan et al. 2021): after a warm-up, one forward and one backward in turn; a stage holds at
  most as many micro-batches as there are stages after it.

Both idle for (p-1)/(m+p-1) of a step (the bubble). A stage boundary carries each micro-batch's activations forward
and their gradients back: batch/m x sequence x width numbers each way. The loss exists on the last stage only; each
micro-batch's is the mean over its tokens, and torch scales the gradients by 1/m (scale_grads), so the step equals
the single worker's on the whole batch. With more ranks than stages, each stage is replicated over the mesh's
dp_replicate dimension and its gradients are averaged there after the schedule's backward, in --bucket-cap-mb pieces
(pipeline x data). Not through DDP: torch's DDP around a stage either failed its bucket rebuild ("rebuilt parameter
indices size is not same", torch 2.13) or, with static_graph, left the last stage's replicas apart
(test/worker/test_layouts.py's pipeline-x-ddp case found both); torchtitan does not offer DDP with a second
dimension either.
"""

from ..errors import BadArguments
from .ddp import buckets
from .layout import Layout, gradient_bytes
from .tensor import activation_bytes

SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B"}


def torch_needs(config):
    """What a pipeline and its schedule ask of torch (torch_api.py)."""
    return [
        ("--parallelism pipeline", "torch.distributed.pipelining", "PipelineStage", None),
        (
            f"--pipeline-schedule {config.pipeline_schedule}",
            "torch.distributed.pipelining",
            SCHEDULES[config.pipeline_schedule],
            None,
        ),
    ]


class Pipeline(Layout):
    name = "pipeline"

    def __init__(self, config, world, dims, spec, model, mesh):
        import torch.distributed.pipelining as pipelining

        stages, micro_batches = dims.pp, config.micro_batches
        if config.batch_size % micro_batches:
            raise BadArguments(
                f"--batch-size {config.batch_size} must be a multiple of --micro-batches {micro_batches}"
            )
        if config.pipeline_schedule == "1f1b" and micro_batches < stages:
            raise BadArguments(
                f"--pipeline-schedule 1f1b needs at least as many micro-batches as stages: "
                f"--micro-batches {micro_batches} < {stages} stages (torch's Schedule1F1B refuses it)"
            )
        self.full_bytes = gradient_bytes([model])
        self.stage_index = dims.coordinates(world.rank)["pp"]
        part = spec.pipeline_stage(model, self.stage_index, stages, config)
        self.replicas = mesh["dp_replicate"].get_group() if dims.dp_replicate > 1 else None
        super().__init__(config, world, dims, spec, part, part)
        stage = pipelining.PipelineStage(part, self.stage_index, stages, world.device, group=mesh["pp"].get_group())
        schedule = getattr(pipelining, SCHEDULES[config.pipeline_schedule])
        self.schedule = schedule(stage, n_microbatches=micro_batches, loss_fn=self._loss)
        self.is_first, self.is_last = self.stage_index == 0, self.stage_index == stages - 1

    def _loss(self, output, targets):
        with self.autocast():
            return self.spec.loss(output, targets)

    def step(self, inputs, targets):
        self.optimizer.zero_grad(set_to_none=True)
        losses = [] if self.is_last else None
        with self.autocast():
            if self.is_first:
                self.schedule.step(inputs, target=targets if self.is_last else None, losses=losses)
            elif self.is_last:
                self.schedule.step(target=targets, losses=losses)
            else:
                self.schedule.step()
        if self.replicas is not None:
            self._average_over_replicas()
        self._optimizer_step()
        return sum(losses) / len(losses) if self.is_last else None

    def _average_over_replicas(self):
        """This stage's gradients, flattened, summed over its replicas in --bucket-cap-mb pieces (as many all-reduces
        as traffic() counts), and divided by their number: DDP's average, after the backward instead of during it."""
        import torch
        import torch.distributed as dist

        grads = [p.grad for p in self.model.parameters() if p.grad is not None]
        flat = torch.cat([grad.reshape(-1) for grad in grads])
        piece = max(1, int(self.config.bucket_cap_mb * 2**20) // flat.element_size())
        for part in flat.split(piece):
            dist.all_reduce(part, group=self.replicas)
        flat /= self.dims.dp_replicate
        offset = 0
        for grad in grads:
            grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
            offset += grad.numel()

    @property
    def loss_rank(self) -> int:
        """The last stage of the first data-parallel replica: pp is the mesh's outermost dimension."""
        return (self.dims.pp - 1) * (self.dims.world_size // self.dims.pp)

    def gradient_bytes(self) -> int:
        return self.full_bytes

    def traffic(self):
        """Across each of the pp - 1 boundaries, every micro-batch's activations forward and their gradients back; DDP
        of each stage over its replicas (the first stage's, as ringlab's model counts it)."""
        calls = 2 * self.config.micro_batches
        sends = (
            []
            if self.dims.pp < 2
            else [
                {
                    "op": "send",
                    "bytes": calls * activation_bytes(self.config, self.config.micro_batches),
                    "calls": calls,
                    "group": "pp",
                    "boundaries": self.dims.pp - 1,
                }
            ]
        )
        if self.dims.dp_replicate == 1:
            return sends
        stage_bytes = gradient_bytes([self.model])
        return sends + [
            {
                "op": "all_reduce",
                "bytes": stage_bytes,
                "calls": buckets(stage_bytes, self.config.bucket_cap_mb),
                "group": "dp_replicate",
            }
        ]

    def state_dict(self):
        raise BadArguments("a pipeline's stages hold different blocks: ringlab does not gather them into one model")


def apply_pipeline(config, world, dims, spec, model) -> Layout:
    return Pipeline(config, world, dims, spec, model, dims.mesh(world.device.type))

"""Training throughput, after Horovod's examples/pytorch/pytorch_synthetic_benchmark.py.

Same measurement: untimed warm-up, then --num-iters iterations of --num-batches-per-iter batches; throughput per
worker as mean +- 1.96 std over iterations (rank 0's), total = the data-parallel replicas x batch size / step time.
Throughput counts images for the CNNs and tokens for the language models (models/: each spec's unit). The batches
are synthetic (one random batch, as Horovod's) or read from an ImageFolder dataset (--data folder:PATH), in which case
every step's wait for its batch is recorded too. With --epochs the job trains to a result instead (time_to_train.py).
How the model is laid out over the workers (DDP, FSDP, tensor or pipeline parallelism) is parallel/'s business.
"""

import statistics
import time

import torch
import torch.distributed as dist

from .data import describe_folder_data, open_training_data
from .memory import PeakMemory
from .models import model_spec
from .parallel import parallelize
from .result import finite_or_none
from .text import TokenBatches
from .time_to_train import run_time_to_train

# At most this many step losses in the record (every step's, warm-up included, from the first).
MOST_LOSSES = 1000


class Trainer:
    """The run's model laid out over the workers (parallel.Layout) and what the throughput benchmark and time to train
    (time_to_train.py) share: batches on the device, one step, and what the record says of the model and its layout."""

    def __init__(self, config, world):
        self.config = self.args = config  # time_to_train.py and data.py read the flags by their names
        self.world = world
        self.spec = model_spec(config.model)
        self.num_classes = getattr(self.spec, "classes", None)
        self.memory = PeakMemory(world.device)  # its baseline is taken before the model exists
        self.layout = parallelize(config, world)
        self.parameter_count = self.layout.parameter_count
        self.gradient_bytes = self.layout.gradient_bytes()
        self.memory_format = self.layout.memory_format
        self.autocast = self.layout.autocast

    def to_device(self, data, target):
        non_blocking = self.world.device.type == "cuda"  # from pinned memory, overlapping the copy
        data = data.to(self.world.device, non_blocking=non_blocking).contiguous(memory_format=self.memory_format)
        return data, target.to(self.world.device, non_blocking=non_blocking)

    def step(self, data, target):
        """One optimizer step; the loss where this rank computes one (None on a pipeline's other stages)."""
        return self.layout.step(data, target)

    def checkpoint_state(self) -> dict:
        return self.layout.checkpoint_state()

    def restore(self, state: dict) -> None:
        self.layout.restore(state)

    @property
    def plain_model(self):
        """What evaluation runs (time to train): the model every rank holds whole."""
        return self.layout.evaluation_model()

    def synchronize_replicas(self) -> None:
        """Before evaluation: every rank holds the model the strategy trains (reduction.synchronize_replicas)."""
        self.layout.synchronize_replicas()

    def strategy_metrics(self) -> dict:
        """After the last step, for the result (the throughput benchmark's and time to train's): the bytes the
        layout sends a step, how far the replicas ended apart (local SGD lets them drift between averagings), and
        what the strategy measured itself, its own threads ended first (Layout.finish)."""
        measured = self.layout.finish()
        divergence = self.layout.replica_divergence()
        return {
            "wireBytesPerStep": self.layout.wire_bytes_per_step(),
            **({} if divergence is None else {"replicaDivergence": divergence}),
            **measured,
        }

    def layout_metrics(self) -> dict:
        """The record's `layout` and `memory` (collective)."""
        layout = self.layout
        return {
            "layout": {
                "parallelism": self.config.parallelism,
                "dims": layout.dims.describe(),
                "traffic": layout.traffic(),
            },
            "memory": self.memory.result(),
        }

    def describe(self) -> str:
        config, world = self.config, self.world
        if self.spec.kind == "image":
            model = f"{config.model}, image size {config.image_size}, batch size {config.batch_size} per worker"
        else:
            model = (
                f"{config.model} ({config.layers} layers, width {config.width}, {config.heads} heads), sequence "
                f"length {config.sequence_length}, batch size {config.batch_size} per replica"
            )
        layout = "" if config.parallelism == "ddp" else f", {config.parallelism} {self.layout.dims.describe()}"
        return (
            f"Model: {model}, {world.size} {self.unit}(s), engine {config.engine}{layout}, {config.reduction}, "
            f"{config.precision}{', channels-last' if config.channels_last else ''}"
            f"{', adamw' if config.optimizer == 'adamw' else ''}"
        )

    @property
    def unit(self) -> str:
        return "GPU" if self.world.device.type == "cuda" else "CPU"


class SyntheticBatches:
    """One random batch on the device, used for every step: the benchmark measures compute and exchange only."""

    def __init__(self, trainer):
        self.batch = trainer.spec.synthetic_batch(trainer.config, trainer.world.device, trainer.memory_format)

    def next(self):
        return self.batch

    def describe(self) -> dict:
        return {"kind": "synthetic"}


class FolderBatches:
    """Batches of this rank's share of an ImageFolder dataset, epoch after epoch, copied to the device."""

    def __init__(self, trainer, root: str):
        self.info, self.loader = open_training_data(trainer, root)
        self.trainer, self.epoch, self.batches = trainer, 0, iter(())

    def next(self):
        batch = next(self.batches, None)
        if batch is None:
            self.loader.sampler.set_epoch(self.epoch)
            self.epoch += 1
            self.batches = iter(self.loader)
            batch = next(self.batches)
        return self.trainer.to_device(*batch)

    def describe(self) -> dict:
        return describe_folder_data(self.info, self.trainer.args)


def run_train(config, world) -> dict:
    trainer = Trainer(config, world)
    if config.epochs is not None:
        trainer.layout.supports_time_to_train()
        return run_time_to_train(config, world, trainer)
    if config.data_folder is None:
        batches = SyntheticBatches(trainer)
    else:
        batches = (FolderBatches if trainer.spec.kind == "image" else TokenBatches)(trainer, config.data_folder)
    real_data = config.data_folder is not None
    log = print if world.is_reporter else (lambda *a, **k: None)
    log(trainer.describe() + (f", data {config.data_folder}" if real_data else ""), flush=True)
    losses = []
    log("Running warmup...", flush=True)
    for _ in range(config.num_warmup_batches):
        losses.append(trainer.step(*batches.next()))
    world.synchronize()

    log("Running benchmark...", flush=True)
    step_seconds, data_wait_seconds, rates = [], [], []
    # What throughput counts on one worker: its replica's samples (images, or sequences' tokens) shared by the ranks
    # that compute them together (a tensor group, a pipeline), so that total = world size x per worker.
    units_per_step = (
        config.batch_size * trainer.spec.units_per_sample(config) * trainer.layout.dims.data_parallel / world.size
    )
    name = "img" if trainer.spec.unit == "images" else "tok"
    for iteration in range(config.num_iters):
        for _ in range(config.num_batches_per_iter):
            started = time.perf_counter()
            batch = batches.next()
            loaded = time.perf_counter()
            losses.append(trainer.step(*batch))
            world.synchronize()
            step_seconds.append(time.perf_counter() - started)
            data_wait_seconds.append(loaded - started)
        rate = units_per_step * config.num_batches_per_iter / sum(step_seconds[-config.num_batches_per_iter :])
        rates.append(rate)
        log(f"Iter #{iteration}: {rate:.1f} {name}/sec per {trainer.unit}", flush=True)

    mean = statistics.fmean(rates)
    ci95 = 1.96 * statistics.pstdev(rates)  # numpy's std, as Horovod computes it
    log(f"{name.capitalize()}/sec per {trainer.unit}: {mean:.1f} +-{ci95:.1f}")
    log(
        f"Total {name}/sec on {world.size} {trainer.unit}(s): {world.size * mean:.1f} +-{world.size * ci95:.1f}",
        flush=True,
    )
    if real_data:
        waited = sum(data_wait_seconds) / sum(step_seconds)
        log(f"Waiting for data: {100 * waited:.1f} % of step time", flush=True)
    layout_metrics = trainer.layout_metrics()
    step_losses = reported_losses(losses, trainer.layout.loss_rank, world)
    unit = trainer.spec.unit
    return {
        "unit": unit,
        f"{unit}PerSecondPerWorker": {"mean": mean, "ci95": ci95},
        f"{unit}PerSecondTotal": {"mean": world.size * mean, "ci95": world.size * ci95},
        "stepSeconds": step_seconds,
        # The part of each step spent waiting for the batch (with synthetic data: taking the same tensor).
        "dataWaitSeconds": data_wait_seconds,
        "data": batches.describe(),
        "parameterCount": trainer.parameter_count,
        "gradientBytes": trainer.gradient_bytes,
        **optimizer_metrics(trainer.layout),
        # The layout's and its memory first: the peak is the training's, before what the strategy checks afterwards.
        **layout_metrics,
        **trainer.strategy_metrics(),
        "losses": step_losses[:MOST_LOSSES],
        "finalLoss": step_losses[-1],
    }


def reported_losses(losses, loss_rank: int, world) -> list:
    """Every step's loss as the rank that computes it has it (rank 0, or a pipeline's last stage), on every rank; read
    after the clock stopped (reading a loss waits for the GPU)."""
    values = torch.tensor(
        [float("nan") if loss is None else float(loss.detach()) for loss in losses],
        dtype=torch.float64,
        device=world.device,
    )
    if loss_rank != 0:
        dist.broadcast(values, src=loss_rank)
    return [finite_or_none(value) for value in values.tolist()]


def optimizer_metrics(layout) -> dict:
    """Which AdamW implementation stepped (none to say for SGD)."""
    implementation = layout.optimizer_implementation
    return {} if implementation is None else {"optimizerImplementation": implementation}

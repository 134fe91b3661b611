"""Training throughput, after Horovod's examples/pytorch/pytorch_synthetic_benchmark.py.

Same measurement: untimed warm-up, then --num-iters iterations of --num-batches-per-iter batches;
img/s per worker as mean +- 1.96 std over iterations (rank 0's), total = world size x that. The batches are
synthetic (one random tensor, as Horovod's) or read from an ImageFolder dataset (--data folder:PATH), in which
case every step's wait for its batch is recorded too. With --epochs the job trains to a result instead (fit.py).
"""

import contextlib
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import compat, reduction
from .data import describe_folder_data, open_training_data
from .errors import BadArguments, WorkerError
from .fit import run_fit
from .models import build_model
from .registry import NATIVE_IMAGE_SIZE
from .result import finite_or_none


class Trainer:
    """The model, wrapped for data parallelism, and one optimizer step over a batch: what the throughput
    benchmark and time to train (fit.py) share."""

    def __init__(self, args, world):
        if args.image_size is None:
            args.image_size = NATIVE_IMAGE_SIZE[args.model]  # so the record holds the size actually used
        torch.manual_seed(0)
        model, self.num_classes = build_model(args.model)
        # NHWC: what cuDNN's tensor-core convolutions want, so AMP runs without layout transposes.
        self.memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
        model.to(world.device, memory_format=self.memory_format)
        self.parameter_count = sum(p.numel() for p in model.parameters())
        self.gradient_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
        self.scaler = compat.make_grad_scaler(enabled=args.precision == "amp")
        self.optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=args.momentum)
        if args.engine == "horovod":
            self.model, self.optimizer = _wrap_horovod(args, world, model, self.optimizer)
        else:
            self.model = _wrap_ddp(args, world, model)
            self.optimizer = reduction.install(self.model, self.optimizer, args)
        # What one rank sends into the ring per step, on average, for the report's cost model.
        self.wire_bytes_per_step = (reduction.wire_bytes_per_step(model.parameters(), args) if args.engine != "horovod"
                                    else self.gradient_bytes * (0.5 if args.fp16_allreduce else 1.0))
        self.plain_model = model  # without the wrapper: what checkpoints hold and evaluation runs
        self.args, self.world = args, world
        self.autocast = (lambda: compat.autocast("cuda")) if args.precision == "amp" else contextlib.nullcontext

    def to_device(self, data, target):
        non_blocking = self.world.device.type == "cuda"  # from pinned memory, overlapping the copy
        data = data.to(self.world.device, non_blocking=non_blocking).contiguous(memory_format=self.memory_format)
        return data, target.to(self.world.device, non_blocking=non_blocking)

    def step(self, data, target):
        optimizer, scaler = self.optimizer, self.scaler
        optimizer.zero_grad(set_to_none=True)
        with self.autocast():
            loss = F.cross_entropy(self.model(data), target)
        scaler.scale(loss).backward()
        if self.args.engine == "horovod":
            optimizer.synchronize()  # Horovod's all-reduce must finish before the scaler looks at gradients
            with optimizer.skip_synchronize():
                scaler.step(optimizer)
        else:
            scaler.step(optimizer)
        scaler.update()
        return loss

    # What a checkpoint holds of the training state (time to train, fit.py), saved and restored here only: the
    # model's weights, the optimizer's state (momentum buffers) and the gradient scaler's (amp; {} when off). The
    # reductions' DDP hooks and fp16 compression keep no state of their own (reduction.py registers them with
    # state=None); a strategy that did would save and restore it here, under a key of its own.
    def checkpoint_state(self) -> dict:
        return {"model": self.plain_model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "scaler": self.scaler.state_dict()}

    def restore(self, state: dict) -> None:
        self.plain_model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])

    def synchronize_replicas(self) -> None:
        """Before evaluation: every rank holds the model the strategy trains (reduction.synchronize_replicas)."""
        reduction.synchronize_replicas(self.optimizer)

    def strategy_metrics(self) -> dict:
        """After the last step, for the result (the throughput benchmark's and time to train's): the bytes the
        reduction sends a step, how far the replicas ended apart (local SGD lets them drift between averagings), and
        what the strategy measured itself, its own threads ended first (reduction.finish)."""
        measured = reduction.finish(self.optimizer)
        return {"wireBytesPerStep": self.wire_bytes_per_step,
                "replicaDivergence": reduction.replica_divergence(self.plain_model), **measured}

    def describe(self) -> str:
        args, world = self.args, self.world
        return (f"Model: {args.model}, image size {args.image_size}, batch size {args.batch_size} per worker, "
                f"{world.size} {self.unit}(s), engine {args.engine}, {args.reduction}, {args.precision}"
                f"{', channels-last' if args.channels_last else ''}")

    @property
    def unit(self) -> str:
        return "GPU" if self.world.device.type == "cuda" else "CPU"


class SyntheticBatches:
    """One random batch on the device, used for every step: the benchmark measures compute and exchange only."""

    def __init__(self, trainer):
        args, world = trainer.args, trainer.world
        data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=world.device)
        self.batch = (data.contiguous(memory_format=trainer.memory_format),
                      torch.randint(0, trainer.num_classes, (args.batch_size,), device=world.device))

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


def run_train(args, world) -> dict:
    trainer = Trainer(args, world)
    if args.epochs is not None:
        return run_fit(args, world, trainer)
    batches = FolderBatches(trainer, args.data_folder) if args.data_folder else SyntheticBatches(trainer)
    real_data = args.data_folder is not None
    unit = trainer.unit
    log = print if world.is_reporter else (lambda *a, **k: None)
    log(trainer.describe() + (f", data {args.data_folder}" if real_data else ""), flush=True)
    log("Running warmup...", flush=True)
    for _ in range(args.num_warmup_batches):
        trainer.step(*batches.next())
    world.synchronize()

    log("Running benchmark...", flush=True)
    step_seconds, data_wait_seconds, images_per_second = [], [], []
    for iteration in range(args.num_iters):
        for _ in range(args.num_batches_per_iter):
            started = time.perf_counter()
            batch = batches.next()
            loaded = time.perf_counter()
            loss = trainer.step(*batch)
            world.synchronize()
            step_seconds.append(time.perf_counter() - started)
            data_wait_seconds.append(loaded - started)
        rate = args.batch_size * args.num_batches_per_iter / sum(step_seconds[-args.num_batches_per_iter:])
        images_per_second.append(rate)
        log(f"Iter #{iteration}: {rate:.1f} img/sec per {unit}", flush=True)

    mean = statistics.fmean(images_per_second)
    ci95 = 1.96 * statistics.pstdev(images_per_second)  # numpy's std, as Horovod computes it
    log(f"Img/sec per {unit}: {mean:.1f} +-{ci95:.1f}")
    log(f"Total img/sec on {world.size} {unit}(s): {world.size * mean:.1f} +-{world.size * ci95:.1f}", flush=True)
    if real_data:
        waited = sum(data_wait_seconds) / sum(step_seconds)
        log(f"Waiting for data: {100 * waited:.1f} % of step time", flush=True)
    return {
        "imagesPerSecondPerWorker": {"mean": mean, "ci95": ci95},
        "imagesPerSecondTotal": {"mean": world.size * mean, "ci95": world.size * ci95},
        "stepSeconds": step_seconds,
        # The part of each step spent waiting for the batch (with synthetic data: taking the same tensor).
        "dataWaitSeconds": data_wait_seconds,
        "data": batches.describe(),
        "parameterCount": trainer.parameter_count,
        "gradientBytes": trainer.gradient_bytes,
        **trainer.strategy_metrics(),
        "finalLoss": finite_or_none(float(loss.item())),
    }


def _wrap_ddp(args, world, model):
    from torch.nn.parallel import DistributedDataParallel

    on_gpu = world.device.type == "cuda"
    ddp = DistributedDataParallel(model, device_ids=[world.device.index] if on_gpu else None,
                                  bucket_cap_mb=args.bucket_cap_mb)
    return ddp


def _wrap_horovod(args, world, model, optimizer):
    """Horovod without horovodrun: rank 0 serves Horovod's Gloo rendezvous, torch.distributed tells the
    others where. Rank order matches torchrun's (node by node), so hvd.rank() equals the torch rank."""
    import horovod.torch as hvd
    import torch.distributed as dist
    from horovod.runner.common.util.hosts import get_host_assignments, parse_hosts
    from horovod.runner.http.http_server import RendezvousServer

    hosts = ",".join(f"node{i}:{world.procs_per_node}" for i in range(world.nodes))
    plan = get_host_assignments(parse_hosts(hosts), world.size)
    port = [None]
    if world.rank == 0:
        server = RendezvousServer()
        port[0] = server.start()
        server.init(plan)
    dist.broadcast_object_list(port, src=0)
    slot = plan[world.rank]
    os.environ.update({
        "HOROVOD_GLOO_RENDEZVOUS_ADDR": os.environ.get("MASTER_ADDR", "127.0.0.1"),
        "HOROVOD_GLOO_RENDEZVOUS_PORT": str(port[0]),
        "HOROVOD_GLOO_TIMEOUT_SECONDS": str(int(args.timeout_seconds)),
        "HOROVOD_CONTROLLER": "gloo",
        "HOROVOD_CPU_OPERATIONS": "gloo",
        "HOROVOD_FUSION_THRESHOLD": str(int(args.bucket_cap_mb * 1024 * 1024)),  # DDP buckets' analogue
        "HOROVOD_HOSTNAME": slot.hostname,
        "HOROVOD_RANK": str(slot.rank), "HOROVOD_SIZE": str(slot.size),
        "HOROVOD_LOCAL_RANK": str(slot.local_rank), "HOROVOD_LOCAL_SIZE": str(slot.local_size),
        "HOROVOD_CROSS_RANK": str(slot.cross_rank), "HOROVOD_CROSS_SIZE": str(slot.cross_size),
    })
    if os.environ.get("GLOO_SOCKET_IFNAME"):
        os.environ["HOROVOD_GLOO_IFACE"] = os.environ["GLOO_SOCKET_IFNAME"]
    hvd.init()
    if hvd.rank() != world.rank or hvd.size() != world.size:
        raise WorkerError(f"Horovod placed this process at rank {hvd.rank()} of {hvd.size()}, "
                          f"torch at {world.rank} of {world.size}")
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    return model, optimizer

"""Time to train: `train --data folder:PATH --epochs E [--target-accuracy A]`.

Trains over the dataset epoch by epoch and, after each, measures accuracy on the held-out split (val/), as
MLPerf measures time to train: wall time from the first step until the target accuracy is reached (or the
last epoch ends), restarts included. With --checkpoint-dir, rank 0 checkpoints every --checkpoint-every steps
and a restarted run (torchrun --max-restarts, see torchrun.py) resumes from the newest readable checkpoint at
the same step, epoch and position in the epoch. --fail-at-step kills one rank's process once, to measure
recovery; the record says how many restarts there were, which steps were redone and what they cost.

Not a "fit": in ringlab that word is the alpha-beta fit of a link (src/results/comm-model.ts, fitAlphaBeta), and
whether a run fits memory is a plan's check (src/campaign/fits.ts).
"""

import os
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import List, Optional

import torch
import torch.distributed as dist
import torch.nn.functional as F

from . import checkpoint, data
from .errors import BadArguments, PeerTimeout
from .exchange import broadcast_json
from .guard import outlive_agent
from .result import finite_or_none

# At most this many points of the loss curve per epoch, and of step times in the record.
CURVE_POINTS_PER_EPOCH = 50
MOST_STEP_TIMES = 1000
# How often rank 0 records its progress (the step reached) for a restart's accounting; steps redone are counted
# from it, so they may be undercounted by the steps of up to this long.
PROGRESS_EVERY_SECONDS = 1.0


def attempt_number() -> int:
    """Which attempt this is: torchrun counts restarts in TORCHELASTIC_RESTART_COUNT (0 the first time)."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") or 0)


@dataclass
class TimeToTrainState:
    """Where time to train stands, carried from step to step: what a checkpoint and progress.json record (config to
    restarts; when resumed, from the checkpoint and the last attempt's progress) and this attempt's own (from
    progress on)."""

    config: dict  # the run's configuration: a checkpoint of another one is refused
    attempt: int
    first_started_at: float
    epoch_started_at: float
    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    epochs: List[dict] = field(default_factory=list)  # a record per epoch done
    curve: list = field(default_factory=list)  # [step, loss] points
    restarts: List[dict] = field(default_factory=list)
    progress: Optional[checkpoint.ProgressWriter] = None  # with --checkpoint-dir
    resumed: Optional[dict] = None  # the checkpoint this attempt resumed from
    step_seconds: List[float] = field(default_factory=list)
    data_wait_seconds: List[float] = field(default_factory=list)
    reached_at_epoch: Optional[int] = None  # the epoch whose held-out accuracy reached --target-accuracy

    def saved_state(self, world, trainer) -> dict:
        """What rank 0 saves every --checkpoint-every steps (the file format: keys and their order)."""
        return {
            "step": self.step,
            "epoch": self.epoch,
            "batchInEpoch": self.batch_in_epoch,
            "worldSize": world.size,
            "config": self.config,
            **trainer.checkpoint_state(),
            "epochs": self.epochs,
            "lossCurve": self.curve,
            "firstStartedAt": self.first_started_at,
            "epochStartedAt": self.epoch_started_at,
        }

    def progress_record(self, world, now: float, **extra) -> dict:
        """progress.json: how far this attempt got and when, for the accounting of the next one."""
        return {
            "attempt": self.attempt,
            "step": self.step,
            "time": now,
            "firstStartedAt": self.first_started_at,
            "restarts": self.restarts,
            "nodes": world.nodes,
            "worldSize": world.size,
            **extra,
        }


def run_time_to_train(args, world, trainer) -> dict:
    root = args.data_folder
    info, loader = data.open_training_data(trainer, root)
    val_set = data.ImageFolderDataset(os.path.join(root, "val"), args.image_size)
    log = print if world.is_reporter else (lambda *a, **k: None)
    run = _resume(args, world, trainer, log)
    log(
        trainer.describe() + f", data {root} ({info['trainImages']} training images, {len(loader)} steps per "
        f"epoch), {args.epochs} epochs"
        + (f" or {100 * args.target_accuracy:g} % held-out accuracy" if args.target_accuracy else ""),
        flush=True,
    )
    curve_every = max(1, len(loader) // CURVE_POINTS_PER_EPOCH)
    for record in run.epochs:
        if args.target_accuracy is not None and record["heldOutAccuracy"] >= args.target_accuracy:
            run.reached_at_epoch = record["epoch"]
    while run.epoch < args.epochs and run.reached_at_epoch is None:
        loss_sum, losses_counted, training_seconds = _train_epoch(args, world, trainer, loader, run, curve_every)
        _end_epoch(args, world, trainer, val_set, run, loss_sum, losses_counted, training_seconds, log)

    ended_at = checkpoint.now()
    if run.progress and world.is_reporter:
        run.progress.write(run.progress_record(world, ended_at, finished=True), now=True)
    time_to_train = ended_at - run.first_started_at
    log(
        f"Time to train: {time_to_train:.1f} s"
        + (f" (target reached at epoch {run.reached_at_epoch})" if run.reached_at_epoch else ""),
        flush=True,
    )
    return _metrics(args, world, trainer, info, run, time_to_train)


def _resume(args, world, trainer, log) -> TimeToTrainState:
    """This attempt's start: from scratch, or (a restart, with --checkpoint-dir) from the newest checkpoint, with
    the restart accounted for."""
    # A checkpoint of another configuration is refused rather than resumed (train longer: more epochs is allowed;
    # an elastic run, --min-nodes, goes on at another world size).
    config = {
        "model": args.model,
        "batchSize": args.batch_size,
        "data": args.data_folder,
        "imageSize": args.image_size,
        "learningRate": args.learning_rate,
        "momentum": args.momentum,
    }
    if args.min_nodes is None:
        config["worldSize"] = world.size
    attempt = attempt_number()
    previous = _unfinished_attempt(args.checkpoint_dir) if args.checkpoint_dir else None
    if args.min_nodes is not None and previous is None:
        _wait_for_every_node(args, world, log)
    progress = checkpoint.ProgressWriter(args.checkpoint_dir, PROGRESS_EVERY_SECONDS) if args.checkpoint_dir else None
    state = _restore(args, world, trainer, config) if args.checkpoint_dir else None
    first_started_at = previous["firstStartedAt"] if previous else checkpoint.now()
    run = TimeToTrainState(
        config=config,
        attempt=attempt,
        first_started_at=first_started_at,
        epoch_started_at=state["epochStartedAt"] if state else first_started_at,
        progress=progress,
        restarts=list(previous["restarts"]) if previous else [],
        resumed=state,
    )
    if state:
        run.step, run.epoch = state["step"], state["epoch"]
        run.batch_in_epoch = resumed_batch_in_epoch(state, args.batch_size, world.size)
        run.epochs, run.curve = list(state["epochs"]), list(state["lossCurve"])
    if previous:
        _count_restart(previous, run, world, log)
    return run


def _count_restart(previous: dict, run: TimeToTrainState, world, log) -> None:
    """Adds this restart to run.restarts: where the last attempt stopped, where this one resumes, what it cost."""
    resumed_at = checkpoint.now()
    recovery = round(resumed_at - previous["time"], 3)
    run.restarts.append(
        {
            "restart": len(run.restarts) + 1,
            "failedAfterStep": previous["step"],
            "resumedFromStep": run.step,
            "stepsRedone": max(0, previous["step"] - run.step),
            "stoppedAt": previous["time"],
            "recoverySeconds": recovery,
            "secondsLost": recovery if run.step >= previous["step"] else None,
            "nodesBefore": previous.get("nodes"),
            "nodesAfter": world.nodes,
            "worldSizeBefore": previous.get("worldSize"),
            "worldSizeAfter": world.size,
        }
    )
    fewer = (
        f"; {previous['nodes'] - world.nodes} node(s) lost, going on with {world.nodes}"
        if previous.get("nodes", world.nodes) > world.nodes
        else ""
    )
    log(
        f"Restart {len(run.restarts)}: the last attempt reached step {previous['step']}; resuming from step "
        f"{run.step} ({recovery:.1f} s after it stopped){fewer}",
        flush=True,
    )


def _train_epoch(args, world, trainer, loader, run: TimeToTrainState, curve_every: int):
    """The steps of one epoch (the rest of it, when resumed mid-epoch): (loss sum, losses counted, seconds)."""
    loader.sampler.set_epoch(run.epoch)
    loader.sampler.skip = run.batch_in_epoch * args.batch_size
    loss_sum, losses_counted, training_seconds = 0.0, 0, 0.0
    batches = iter(loader)
    while True:
        started = time.perf_counter()
        batch = next(batches, None)
        if batch is None:
            break
        batch = trainer.to_device(*batch)
        loaded = time.perf_counter()
        loss = trainer.step(*batch)
        world.synchronize()
        finished = time.perf_counter()
        run.step_seconds.append(finished - started)
        run.data_wait_seconds.append(loaded - started)
        training_seconds += finished - started
        run.step += 1
        run.batch_in_epoch += 1
        loss_value = float(loss.item())
        loss_sum, losses_counted = loss_sum + loss_value, losses_counted + 1
        if run.step % curve_every == 0:
            run.curve.append([run.step, finite_or_none(loss_value)])
        if args.checkpoint_dir:
            _after_step(args, world, trainer, run)
        _maybe_fail(args, world, run.step, run.restarts)
    return loss_sum, losses_counted, training_seconds


def _end_epoch(args, world, trainer, val_set, run: TimeToTrainState, loss_sum, losses_counted, training_seconds, log):
    """Held-out accuracy after an epoch, and its record."""
    trainer.synchronize_replicas()
    accuracy, held_out_loss = evaluate(trainer, val_set, args, world)
    ended_at = checkpoint.now()
    run.epoch += 1
    record = {
        "epoch": run.epoch,
        "seconds": round(ended_at - run.epoch_started_at, 3),
        "trainingSeconds": round(training_seconds, 3),
        # This attempt's steps of the epoch (a restart may have cut it), rank 0's.
        "imagesPerSecondPerWorker": (
            losses_counted * args.batch_size / training_seconds if training_seconds > 0 else None
        ),
        "trainLoss": finite_or_none(loss_sum / losses_counted) if losses_counted else None,
        "heldOutAccuracy": accuracy,
        "heldOutLoss": finite_or_none(held_out_loss),
        "steps": run.step,
    }
    run.epochs.append(record)
    log(
        f"Epoch {run.epoch}/{args.epochs}: {record['seconds']:.1f} s, training loss "
        f"{record['trainLoss'] if record['trainLoss'] is None else round(record['trainLoss'], 4)}, held-out "
        f"accuracy {100 * accuracy:.1f} %",
        flush=True,
    )
    if args.target_accuracy is not None and accuracy >= args.target_accuracy:
        run.reached_at_epoch = run.epoch
    run.epoch_started_at, run.batch_in_epoch = ended_at, 0


def _metrics(args, world, trainer, info, run: TimeToTrainState, time_to_train: float) -> dict:
    rates = [record["imagesPerSecondPerWorker"] for record in run.epochs if record["imagesPerSecondPerWorker"]]
    mean = statistics.fmean(rates) if rates else 0.0
    ci95 = 1.96 * statistics.pstdev(rates) if len(rates) > 1 else 0.0
    restarts = run.restarts
    return {
        "imagesPerSecondPerWorker": {"mean": mean, "ci95": ci95},
        "imagesPerSecondTotal": {"mean": world.size * mean, "ci95": world.size * ci95},
        "stepSeconds": run.step_seconds[-MOST_STEP_TIMES:] or [sys.float_info.min],
        "dataWaitSeconds": run.data_wait_seconds[-MOST_STEP_TIMES:],
        "data": data.describe_folder_data(info, args),
        "parameterCount": trainer.parameter_count,
        "gradientBytes": trainer.gradient_bytes,
        **trainer.strategy_metrics(),  # after the clock stopped
        "finalLoss": run.curve[-1][1] if run.curve else None,
        "timeToTrainSeconds": round(time_to_train, 3),
        "targetAccuracy": args.target_accuracy,
        "reachedTargetAtEpoch": run.reached_at_epoch,
        "epochs": run.epochs,
        "lossCurve": run.curve,
        "restarts": len(restarts),
        "recovery": restarts,
        "stepsRedone": sum(event["stepsRedone"] for event in restarts),
        "secondsLost": round(sum(event["secondsLost"] or 0 for event in restarts), 3),
        # Nodes this run started with and lost (elastic runs, --min-nodes, go on without them).
        "nodesAtStart": next((event["nodesBefore"] for event in restarts if event.get("nodesBefore")), world.nodes),
        "checkpoints": {
            "directory": args.checkpoint_dir,
            "every": args.checkpoint_every,
            "resumedFromStep": run.resumed["step"] if run.resumed else None,
        },
    }


def _wait_for_every_node(args, world, log) -> None:
    """An elastic run starts with every node. Its first rendezvous round goes ahead without a node that starts more
    than last_call_timeout after the others; training then would make the late node's arrival (torchrun restarts
    the round to let it in) look like a failure, and the run would start at fewer nodes. So the ranks of such a
    round wait to be restarted, and fail at the run's timeout if the node never comes."""
    expected = int(os.environ.get("RINGLAB_NUM_NODES") or world.nodes)
    if world.nodes >= expected:
        return
    log(
        f"Elastic run: {world.nodes} of {expected} nodes joined the first rendezvous; waiting for the others "
        "(torchrun restarts the round to let them in)",
        flush=True,
    )
    time.sleep(args.timeout_seconds)
    raise PeerTimeout(
        f"only {world.nodes} of {expected} nodes joined within {args.timeout_seconds:g} s; an elastic "
        "run (--min-nodes) starts with every node: check that all were started with the same "
        "RINGLAB_RUN_ID and RINGLAB_RDZV_SECRET and reach node 0"
    )


def _unfinished_attempt(directory: str):
    """The progress of an attempt that stopped before the end (this run is a restart), or None."""
    progress = checkpoint.read_progress(directory)
    if progress is not None and progress.get("finished"):
        raise BadArguments(f"{directory} holds a run that has finished; use an empty --checkpoint-dir for a new run")
    return progress


def _restore(args, world, trainer, config):
    """Every rank loads the checkpoint rank 0 found newest and readable (None: start from scratch)."""
    chosen = None
    if world.rank == 0:
        state = checkpoint.load_newest(args.checkpoint_dir)
        chosen = state["step"] if state else None
    chosen = broadcast_json(chosen, 0, world.device)
    if chosen is None:
        return None
    unreadable = torch.zeros(1, device=world.device)  # NCCL reduces GPU tensors only
    if world.rank != 0:
        path = checkpoint.path_of(args.checkpoint_dir, chosen)
        try:
            state = checkpoint.load(args.checkpoint_dir, chosen)
        except Exception as error:  # missing here (not shared storage), or unreadable
            print(f"ringlab-worker [rank {world.rank}]: cannot read {path}: {error}", file=sys.stderr, flush=True)
            unreadable[0] = 1
    dist.all_reduce(unreadable)  # every rank fails together, none waits for the others
    if unreadable.item():
        raise BadArguments(
            f"rank 0 resumes from {checkpoint.path_of(args.checkpoint_dir, chosen)}, but "
            f"{int(unreadable.item())} other rank(s) cannot read it; --checkpoint-dir must be on "
            "storage every node shares"
        )
    differences = {
        key: (state["config"].get(key), value) for key, value in config.items() if state["config"].get(key) != value
    }
    if differences:
        described = ", ".join(f"{key} {old} -> {new}" for key, (old, new) in differences.items())
        raise BadArguments(
            f"{args.checkpoint_dir} holds checkpoints of another run ({described}); use an empty "
            "--checkpoint-dir for this one"
        )
    trainer.restore(state)
    if world.is_reporter:
        print(
            f"Resuming from checkpoint at step {state['step']} (epoch {state['epoch'] + 1}, batch "
            f"{state['batchInEpoch']})",
            flush=True,
        )
    return state


def _after_step(args, world, trainer, run: TimeToTrainState) -> None:
    """Rank 0, after every step with --checkpoint-dir: a checkpoint every --checkpoint-every steps, and progress."""
    if not world.is_reporter:
        return
    now = checkpoint.now()
    newest = run.restarts[-1] if run.restarts else None  # an older restart still open was cut short by this one
    if newest and newest["secondsLost"] is None and run.step >= newest["failedAfterStep"]:
        newest["secondsLost"] = round(now - newest["stoppedAt"], 3)  # back where it stopped: what the failure cost
    saved = bool(args.checkpoint_every and run.step % args.checkpoint_every == 0)
    if saved:
        checkpoint.save(args.checkpoint_dir, run.step, run.saved_state(world, trainer))
    # Right away at checkpoints and at the injected failure, where a restart's accounting starts.
    run.progress.write(run.progress_record(world, now), now=saved or run.step == args.fail_at_step)


def resumed_batch_in_epoch(state: dict, batch_size: int, world_size: int) -> int:
    """Where in its epoch a run resumes from a checkpoint. At the checkpoint's world size, the same batch; at
    another (an elastic run that lost a node), after the images the checkpoint's world had trained on: the
    DistributedSampler deals an epoch's shuffled order out rank by rank, so its first batches x batch x world
    images are the ones done at any world size, and at most part of one batch is trained on again."""
    saved_world = state.get("worldSize", state["config"].get("worldSize", world_size))
    if saved_world == world_size:
        return state["batchInEpoch"]
    return state["batchInEpoch"] * saved_world // world_size


def _maybe_fail(args, world, step, restarts) -> None:
    """--fail-at-step, once (not after a restart). With --fail-rank, that rank's process kills itself (SIGKILL, as
    the kernel's OOM killer does). With --fail-node, that node's first local rank kills torchrun's agent
    and every rank on the node, then itself: the node is gone as a machine that dies, and its container
    exits."""
    if args.fail_at_step != step or attempt_number() != 0 or restarts:
        return
    if args.fail_node is not None:
        if world.local_rank == 0 and os.environ.get("RINGLAB_NODE_RANK") == str(args.fail_node):
            print(
                f"ringlab-worker [rank {world.rank}]: fault injection: node {args.fail_node} is lost after step "
                f"{step}: killing its agent and its {world.procs_per_node} rank(s) (--fail-node)",
                file=sys.stderr,
                flush=True,
            )
            _kill_node()
        return
    if (args.fail_rank or 0) == world.rank:
        print(
            f"ringlab-worker [rank {world.rank}]: fault injection: killing this process after step {step} "
            "(--fail-at-step)",
            file=sys.stderr,
            flush=True,
        )
        os.kill(os.getpid(), signal.SIGKILL)


def _kill_node() -> None:
    """SIGKILLs torchrun's agent (this process's parent) first, so that it restarts nothing, then every other
    process it had started (the node's ranks and their data loaders), then this one."""
    agent = os.getppid()
    started = _descendants(agent)
    outlive_agent()  # the kernel would otherwise end this process with the agent, before the loop below
    os.kill(agent, signal.SIGKILL)
    for pid in started:
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    os.kill(os.getpid(), signal.SIGKILL)


def _descendants(root: int) -> list:
    """The pids below `root` in the process tree, from /proc (Linux)."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", encoding="utf-8") as stat:
                    # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
            children.setdefault(ppid, []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def evaluate(trainer, val_set, args, world):
    """Held-out accuracy and mean loss over the whole val/ split: each rank takes every N-th image, and the
    sums are all-reduced, so every rank gets the same answer."""
    from torch.utils.data import DataLoader, Subset

    model = trainer.plain_model
    model.eval()
    share = Subset(val_set, range(world.rank, len(val_set), world.size))
    loader = DataLoader(share, batch_size=args.batch_size, num_workers=min(args.loader_workers, 1))
    sums = torch.zeros(3, dtype=torch.float64, device=world.device)  # correct, images, loss
    with torch.no_grad(), trainer.autocast():
        for batch in loader:
            images, labels = trainer.to_device(*batch)
            logits = model(images)
            sums[0] += (logits.argmax(dim=1) == labels).sum()
            sums[1] += labels.numel()
            sums[2] += F.cross_entropy(logits.float(), labels, reduction="sum")
    model.train()
    dist.all_reduce(sums)
    correct, images, loss = sums.tolist()
    return (correct / images if images else 0.0), (loss / images if images else float("nan"))

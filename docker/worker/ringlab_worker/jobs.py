"""Runs one job in a worker process: join the group, measure, and let global rank 0 write the record."""

import json
import os

from .allreduce import run_allreduce
from .config import TrainConfig
from .cpu_check import measure_cpu_check
from .errors import WorkerError, classify_collective_error
from .result import build_record, utc_now, write_atomically
from .train import run_train
from .world import join, leave

# Where ringlab cannot read the shared folder (a Kubernetes cluster's claim), it reads the result from rank 0's log.
RESULT_IN_LOG_ENV = "RINGLAB_RESULT_IN_LOG"
RESULT_LOG_PREFIX = "ringlab-result: "


def result_log_line(record: dict) -> str:
    """The record as one line of the log (src/targets/kubernetes/follow.ts, resultFromLog, reads it back)."""
    return RESULT_LOG_PREFIX + json.dumps(record, separators=(",", ":"), allow_nan=False)


def run_job(args) -> int:
    started_at = utc_now()
    world = join(args)
    try:
        cpu_check = measure_cpu_check(world, args.cpu_check_seconds)
        if args.job == "train":
            args = TrainConfig.from_args(args)  # resolved (image size, the transformer's shape) and frozen
            metrics = run_train(args, world)
            engine = args.engine
        else:
            metrics = run_allreduce(args, world)
            engine = "ddp"  # plain torch.distributed collectives, the layer DDP runs on
        if world.is_reporter and args.output:
            record = build_record(args.job, args, world, engine, started_at, metrics, cpu_check)
            write_atomically(args.output, record)
            print(f"result written to {args.output}", flush=True)
            if os.environ.get(RESULT_IN_LOG_ENV) == "1":
                print(result_log_line(record), flush=True)
        wrong = sum(row["wrong"] for row in metrics.get("rows", []))
        if wrong:  # as nccl-tests does: a probe that returns wrong sums must not pass
            raise WorkerError(f"all-reduce returned {wrong} wrong elements (see the #wrong column)")
    except RuntimeError as error:
        classified = classify_collective_error(error, f"the {args.job} job")
        if classified is None:
            raise
        raise classified from error
    finally:
        leave()
    return 0

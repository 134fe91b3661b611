"""Runs one job in a worker process: join the group, measure, and let global rank 0 write the record."""

from .allreduce import run_allreduce
from .calibrate import calibrate
from .errors import WorkerError, classify_collective_error
from .result import build_record, utc_now, write_atomically
from .train import run_train
from .world import join, leave


def run_job(args) -> int:
    started_at = utc_now()
    world = join(args)
    try:
        calibration = calibrate(world, args.calibration_seconds)
        if args.job == "train":
            metrics = run_train(args, world)
            engine = args.engine
        else:
            metrics = run_allreduce(args, world)
            engine = "ddp"  # plain torch.distributed collectives, the layer DDP runs on
        if world.is_reporter and args.output:
            write_atomically(args.output, build_record(args.job, args, world, engine, started_at, metrics, calibration))
            print(f"result written to {args.output}", flush=True)
        wrong = sum(row["wrong"] for row in metrics.get("rows", []))
        if wrong:  # as nccl-tests does: a probe that returns wrong sums must not pass
            raise WorkerError(f"all-reduce returned {wrong} wrong elements (see the #wrong column)")
    except RuntimeError as error:
        raise classify_collective_error(error, f"the {args.job} job") or error
    finally:
        leave()
    return 0

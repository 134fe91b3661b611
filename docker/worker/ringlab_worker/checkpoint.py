"""Checkpoints on shared storage, and what a restarted run needs to know about the attempt that failed.

Rank 0 writes DIR/step-<global step>.pt (temp file, then rename: a reader never sees half a checkpoint) and
keeps the newest KEEP. Every rank restores from the newest readable one; a corrupt or truncated file is skipped
with a warning. DIR/progress.json, rewritten by rank 0 after every step, says how far the last attempt got and
when, and carries the list of restarts so far, so the attempt after a crash can count the steps it redoes and
the seconds the crash cost.

What a checkpoint holds is written in two places only, both of time to train: where training stands
(fit.FitState.saved_state: step, epoch, position in the epoch, records so far) and the training state proper
(train.Trainer.checkpoint_state and .restore: model, optimizer, gradient scaler; the reductions keep none).
"""

import json
import os
import re
import sys
import tempfile
import time
from typing import Optional

from . import compat

KEEP = 2
_NAME = re.compile(r"step-(\d{9})\.pt")
PROGRESS = "progress.json"


def checkpoint_steps(directory: str):
    """Steps of the checkpoints in `directory`, newest first."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted((int(m.group(1)) for m in map(_NAME.fullmatch, names) if m), reverse=True)


def path_of(directory: str, step: int) -> str:
    return os.path.join(directory, f"step-{step:09d}.pt")


def save(directory: str, step: int, state: dict) -> str:
    import torch

    os.makedirs(directory, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=directory, prefix=".step-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            torch.save(state, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path_of(directory, step))
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    for old in checkpoint_steps(directory)[KEEP:]:
        try:
            os.unlink(path_of(directory, old))
        except FileNotFoundError:
            pass
    return path_of(directory, step)


def load_newest(directory: str, warn=None) -> Optional[dict]:
    """The newest checkpoint that loads, or None; the ones that do not are named in a warning and skipped."""
    warn = warn or (lambda text: print(text, file=sys.stderr, flush=True))
    for step in checkpoint_steps(directory):
        path = path_of(directory, step)
        try:
            state = compat.load_checkpoint(path)
            if not isinstance(state, dict) or state.get("step") != step:
                raise ValueError("not a ringlab checkpoint")
            return state
        except Exception as error:  # truncated, corrupt, or not ours: the next older one may do
            warn(f"ringlab-worker: warning: skipping unreadable checkpoint {path} ({type(error).__name__}: "
                 f"{str(error).splitlines()[0] if str(error) else ''})")
    return None


def read_progress(directory: str) -> Optional[dict]:
    try:
        with open(os.path.join(directory, PROGRESS), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write_progress(directory: str, progress: dict) -> None:
    os.makedirs(directory, exist_ok=True)
    temp = os.path.join(directory, f".{PROGRESS}.tmp")
    with open(temp, "w", encoding="utf-8") as out:
        json.dump(progress, out)
    os.replace(temp, os.path.join(directory, PROGRESS))


class ProgressWriter:
    """Rank 0's progress.json, written at most every `every_seconds` (a write to shared storage per step would slow
    NFS and EFS) unless a write is asked for `now`."""

    def __init__(self, directory: str, every_seconds: float):
        self.directory, self.every_seconds, self.last = directory, every_seconds, None

    def write(self, progress: dict, now: bool = False) -> None:
        if now or self.last is None or progress["time"] - self.last >= self.every_seconds:
            write_progress(self.directory, progress)
            self.last = progress["time"]


def now() -> float:
    """Wall-clock seconds, comparable across processes and restarts (unlike perf_counter)."""
    return time.time()

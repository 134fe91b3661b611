"""Checkpoints on shared storage, and what a restarted run needs to know about the attempt that failed.

Rank 0 writes a checkpoint as two files in DIR: step-<global step>.safetensors, the tensors only (a flat dict of
name -> tensor in the safetensors format: a JSON header of dtype, shape and offsets, then raw bytes), and
step-<global step>.json, everything else (step, epoch, counters, optimizer hyperparameters, scaler
scalars) with, in place of each tensor, its name in the tensor file, and that file's size and SHA-256. Each is written
to a new temporary file and renamed into place (a reader never sees half a file), the tensor file first; the newest KEEP
are kept. Every rank restores from the newest readable one; one that is not (truncated, corrupt, a tensor file that does
not match its JSON, a link, or an older ringlab's step-<step>.pt) is skipped with a warning naming the file.

The shared folder may be writable by other users, and the ranks run as root, so nothing read from it can run code:
no unpickler and no TorchScript loader reads it, whatever torch is installed. Tensors come back through the
safetensors parser (bytes into tensors of a declared dtype and shape; it has no way to name code), the rest is JSON.
Checkpoints of ringlab before 2026-11-27 (step-<step>.pt, written with torch.save: a pickle) are never loaded:
torch.load(weights_only=True) was the only guard there, and it could be made to run code before torch 2.6
(CVE-2025-32434) and to corrupt memory before 2.10 (CVE-2026-24747). A link in DIR is never followed, read or
written (os.O_NOFOLLOW, relative to DIR opened once; DIR itself must not be a link), and no file is opened for
writing at a name that exists: a link planted there cannot make the worker overwrite another file.

DIR/progress.json, rewritten by rank 0 after every step, says how far the last attempt got and when, and carries
the list of restarts so far, so the attempt after a crash can count the steps it redoes and the seconds the crash
cost.

What a checkpoint holds is written in two places only, both of time to train: where training stands
(time_to_train.TimeToTrainState.saved_state: step, epoch, position in the epoch, records so far) and the training state
proper (train.Trainer.checkpoint_state and .restore: model, optimizer, gradient scaler; the reductions keep none).
"""

import collections
import errno
import hashlib
import json
import os
import re
import stat
import sys
import time
import uuid
from typing import Optional

from .errors import BadArguments

KEEP = 2
_NAME = re.compile(r"step-(\d{9})\.(?:safetensors|pt)")  # .pt: an older ringlab's, found to be skipped by name
PROGRESS = "progress.json"
FORMAT = "ringlab.checkpoint/v3"
# How the JSON stands for what JSON has no type for: a tensor (its name in the .pt), a tuple, a dict with keys
# other than strings (an optimizer's state, by parameter index), and a state dict's _metadata (module versions).
_TENSOR, _TUPLE, _ITEMS, _DICT, _METADATA = "__tensor__", "__tuple__", "__items__", "__dict__", "__metadata__"
_MARKERS = {_TENSOR, _TUPLE, _ITEMS, _DICT, _METADATA}
_CHUNK = 1 << 20


def checkpoint_steps(directory: str):
    """Steps of the checkpoints in `directory` (in either format), newest first."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted({int(m.group(1)) for m in map(_NAME.fullmatch, names) if m}, reverse=True)


def path_of(directory: str, step: int) -> str:
    """The checkpoint's tensor file (its JSON is beside it: json_path_of)."""
    return os.path.join(directory, f"step-{step:09d}.safetensors")


def old_path_of(directory: str, step: int) -> str:
    """Where ringlab before 2026-11-27 put a checkpoint's tensors (torch.save's pickle): found, never loaded."""
    return os.path.join(directory, f"step-{step:09d}.pt")


def json_path_of(directory: str, step: int) -> str:
    return os.path.join(directory, f"step-{step:09d}.json")


# Files in the shared folder, never through a link.


def _open_folder(directory: str, create: bool) -> int:
    """A descriptor of `directory` (made first when `create`), which must not be a symbolic link itself (the links
    on the way there are the user's own choice)."""
    if create:
        os.makedirs(directory, exist_ok=True)
    if os.path.islink(directory):
        raise BadArguments(
            f"{directory} is a symbolic link; ringlab does not follow links in the shared folder "
            "(another user could have planted it): give the folder it points to instead"
        )
    return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def _open_for_reading(name: str, folder: int):
    """A regular file `name` in `folder`, opened without following a link (nor hanging on a FIFO planted there)."""
    try:
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ValueError(f"{name} is a symbolic link, which is not followed") from None
        raise
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise ValueError(f"{name} is not a regular file")
    return os.fdopen(handle, "rb")


def _write_new(folder: int, name: str, write, mode: int) -> None:
    """Writes `name` in `folder` whole: `write(file)` into a new temporary file (O_EXCL: never one that exists, nor
    through a link), flushed to disk, then renamed over `name` (a link there is replaced, not followed)."""
    temp = f".{name}.{uuid.uuid4().hex[:12]}.tmp"
    handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=folder)
        except FileNotFoundError:
            pass
        raise


# A checkpoint's state: tensors apart, the rest JSON.


def split(state, tensors: dict, path: str = ""):
    """`state` as JSON values, each tensor replaced by {"__tensor__": name} and put in `tensors` under that name."""
    import torch

    if isinstance(state, torch.Tensor):
        name, count = path or "tensor", 1
        while name in tensors:
            count += 1
            name = f"{path}#{count}"
        tensors[name] = state
        return {_TENSOR: name}
    if isinstance(state, dict):
        if all(isinstance(key, str) for key in state) and not _MARKERS.intersection(state):
            plain = {key: split(value, tensors, f"{path}/{key}" if path else key) for key, value in state.items()}
        else:
            plain = {
                _ITEMS: [
                    [_json_key(key, path), split(value, tensors, f"{path}/{key}" if path else str(key))]
                    for key, value in state.items()
                ]
            }
        metadata = getattr(state, "_metadata", None)
        if metadata is not None:
            return {_DICT: plain, _METADATA: split(dict(metadata), {}, f"{path}/_metadata")}
        return plain
    if isinstance(state, tuple):
        return {_TUPLE: [split(value, tensors, f"{path}/{index}") for index, value in enumerate(state)]}
    if isinstance(state, list):
        return [split(value, tensors, f"{path}/{index}") for index, value in enumerate(state)]
    if state is None or isinstance(state, (bool, int, float, str)):
        return state
    raise TypeError(f"a checkpoint holds tensors and JSON values only, not {type(state).__name__} (at {path or '/'})")


def _json_key(key, path):
    if key is None or isinstance(key, (bool, int, float, str)):
        return key
    raise TypeError(f"a checkpoint's keys are JSON values, not {type(key).__name__} (in {path or '/'})")


def join(plain, tensors: dict):
    """split's inverse: the state, with the tensors back in place."""
    if isinstance(plain, list):
        return [join(value, tensors) for value in plain]
    if not isinstance(plain, dict):
        return plain
    if _TENSOR in plain:
        return tensors[plain[_TENSOR]]  # KeyError: the .pt lacks a tensor the JSON names
    if _TUPLE in plain:
        return tuple(join(value, tensors) for value in plain[_TUPLE])
    if _ITEMS in plain:
        return {key: join(value, tensors) for key, value in plain[_ITEMS]}
    if _DICT in plain:
        state = collections.OrderedDict(join(plain[_DICT], tensors))
        state._metadata = join(plain[_METADATA], {})
        return state
    return {key: join(value, tensors) for key, value in plain.items()}


def save(directory: str, step: int, state: dict) -> str:
    """Rank 0's checkpoint of `state` at `step`: the tensor file, then the JSON naming it; the newest KEEP kept."""
    from safetensors.torch import save as safetensors_bytes

    tensors = {}
    plain = split(state, tensors)
    json.dumps(plain)  # a TypeError (not JSON) before anything is written
    # safetensors stores each tensor's own bytes: a copy on the CPU, contiguous and sharing no storage.
    payload = safetensors_bytes(
        {name: tensor.detach().to("cpu", copy=True).contiguous() for name, tensor in tensors.items()}
    )
    tensor_name = os.path.basename(path_of(directory, step))
    written = {"sha256": hashlib.sha256(payload).hexdigest(), "bytes": len(payload)}
    folder = _open_folder(directory, create=True)
    try:
        _write_new(folder, tensor_name, lambda out: out.write(payload), 0o600)
        described = {"format": FORMAT, "step": step, "tensors": {"file": tensor_name, **written}, "state": plain}
        text = json.dumps(described).encode("utf-8")
        _write_new(folder, os.path.basename(json_path_of(directory, step)), lambda out: out.write(text), 0o600)
        for old in checkpoint_steps(directory)[KEEP:]:
            for path in (json_path_of(directory, old), path_of(directory, old), old_path_of(directory, old)):
                try:
                    os.unlink(os.path.basename(path), dir_fd=folder)  # a link is removed itself, never its target
                except FileNotFoundError:
                    pass
    finally:
        os.close(folder)
    return path_of(directory, step)


def load(directory: str, step: int) -> dict:
    """The checkpoint at `step`, or an exception saying why it cannot be read. No unpickler runs: the JSON is JSON,
    and the tensor file must match the hash the JSON holds and parse as safetensors."""
    from safetensors.torch import load as safetensors_tensors

    tensor_name = os.path.basename(path_of(directory, step))
    folder = _open_folder(directory, create=False)
    try:
        if not _exists(tensor_name, folder) and _exists(os.path.basename(old_path_of(directory, step)), folder):
            raise ValueError(
                "a checkpoint in the format of ringlab before 2026-11-27 (torch.save's pickle), which is "
                "never loaded: the run starts from an older checkpoint or from the beginning"
            )
        with _open_for_reading(os.path.basename(json_path_of(directory, step)), folder) as handle:
            described = json.loads(handle.read().decode("utf-8"))
        if not isinstance(described, dict) or described.get("format") != FORMAT or described.get("step") != step:
            raise ValueError("not a ringlab checkpoint of this format")
        expected = described["tensors"]
        if expected.get("file") != tensor_name:
            raise ValueError(f"its JSON describes {expected.get('file')}, not {tensor_name}")
        with _open_for_reading(tensor_name, folder) as handle:
            payload = handle.read()
        if (len(payload), hashlib.sha256(payload).hexdigest()) != (expected.get("bytes"), expected.get("sha256")):
            raise ValueError(f"{tensor_name} is not the file its JSON describes ({len(payload)} bytes, another hash)")
        tensors = safetensors_tensors(payload)
    finally:
        os.close(folder)
    state = join(described["state"], tensors)
    if not isinstance(state, dict) or state.get("step") != step:
        raise ValueError("not a ringlab checkpoint")
    return state


def _exists(name: str, folder: int) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def load_newest(directory: str, warn=None) -> Optional[dict]:
    """The newest checkpoint that loads, or None; the ones that do not are named in a warning and skipped."""
    warn = warn or (lambda text: print(text, file=sys.stderr, flush=True))
    for step in checkpoint_steps(directory):
        path = path_of(directory, step)
        if not os.path.lexists(path) and os.path.lexists(old_path_of(directory, step)):
            path = old_path_of(directory, step)
        try:
            return load(directory, step)
        except BadArguments:
            raise
        except Exception as error:  # truncated, corrupt, planted, or not ours: the next older one may do
            warn(
                f"ringlab-worker: warning: skipping unreadable checkpoint {path} ({type(error).__name__}: "
                f"{str(error).splitlines()[0] if str(error) else ''})"
            )
    return None


def read_progress(directory: str) -> Optional[dict]:
    try:
        folder = _open_folder(directory, create=False)
    except OSError:  # none yet
        return None
    try:
        with _open_for_reading(PROGRESS, folder) as handle:
            return json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        os.close(folder)


def write_progress(directory: str, progress: dict) -> None:
    text = json.dumps(progress).encode("utf-8")
    folder = _open_folder(directory, create=True)
    try:
        _write_new(folder, PROGRESS, lambda out: out.write(text), 0o644)
    finally:
        os.close(folder)


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

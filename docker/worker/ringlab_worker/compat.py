"""Everything that differs between the PyTorch releases the worker supports, and which releases need it.

Tested on Debian's torch 1.13 (the cpu image) and on a current release (2.13 in CI, NVIDIA's images on
GPUs). Each difference is a pure function of the version, so both branches are tested under either torch;
the rest of the package asks here instead of comparing versions itself. Delete a branch when its oldest
release is no longer supported.
"""

import re
import sys
from typing import Tuple

Version = Tuple[int, int]

# torch.amp.GradScaler(device) arrived in 2.3; torch.cuda.amp.GradScaler warns (FutureWarning) from 2.4 on.
DEVICE_GENERIC_GRAD_SCALER_SINCE: Version = (2, 3)
# NCCL_ASYNC_ERROR_HANDLING was renamed TORCH_NCCL_ASYNC_ERROR_HANDLING in 2.2 (the old name warns).
TORCH_PREFIXED_NCCL_ENV_SINCE: Version = (2, 2)
# torchrun's default "--redirects 0" parses to None on Python 3.11 and crashes before starting a worker
# (pytorch/pytorch#92319); fixed in 2.0. From 2.3 on redirects and tee live in config.logs_specs instead.
REDIRECTS_FIXED_IN: Version = (2, 0)
# From 2.4 torchrun's workers share the c10d rendezvous' TCPStore, and after a restart a worker can read the
# previous round's addresses from it and fail to connect (pytorch/pytorch#135712); the variable turns the sharing
# off, and releases before 2.4 ignore it.
SHARED_RDZV_STORE_SINCE: Version = (2, 4)


def release(version_text: str) -> Version:
    """(major, minor) of a version string as torch reports it: '1.13.0a0' -> (1, 13), '2.13.0+cpu' -> (2, 13)."""
    match = re.match(r"(\d+)\.(\d+)", version_text)
    if not match:
        raise ValueError(f"not a torch version: '{version_text}'")
    return int(match.group(1)), int(match.group(2))


def torch_release() -> Version:
    import torch

    return release(torch.__version__)


def needs_redirects_patch(torch_version: Version, python_version: Tuple[int, int] = sys.version_info[:2]) -> bool:
    return torch_version < REDIRECTS_FIXED_IN and python_version >= (3, 11)


def grad_scaler_api(torch_version: Version) -> str:
    """The GradScaler to use: 'torch.amp' (device-generic) or 'torch.cuda.amp' (the only one before 2.3)."""
    return "torch.amp" if torch_version >= DEVICE_GENERIC_GRAD_SCALER_SINCE else "torch.cuda.amp"


def make_grad_scaler(enabled: bool, torch_version: Version = None):
    """A CUDA GradScaler through the API that does not warn on this torch; a no-op when not enabled."""
    import torch

    if grad_scaler_api(torch_version or torch_release()) == "torch.amp":
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def autocast(device_type: str):
    """fp16 autocast; torch.autocast(device_type=...) exists in every supported release (1.10 on)."""
    import torch

    return torch.autocast(device_type=device_type, dtype=torch.float16)


def nccl_async_error_handling_env(torch_version: Version) -> str:
    """The variable that makes NCCL turn a stuck collective into an error after the process-group timeout."""
    if torch_version >= TORCH_PREFIXED_NCCL_ENV_SINCE:
        return "TORCH_NCCL_ASYNC_ERROR_HANDLING"
    return "NCCL_ASYNC_ERROR_HANDLING"


def torchrun_env(torch_version: Version) -> dict:
    """Variables the launcher sets for torchrun (unless the user set them)."""
    if torch_version >= SHARED_RDZV_STORE_SINCE:
        return {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
    return {}


def patch_torchrun_config(config, torch_version: Version) -> None:
    """Works around pytorch#92319 on the config torch.distributed.run.config_from_args returned."""
    if not needs_redirects_patch(torch_version):
        return
    from torch.distributed.elastic.multiprocessing.api import Std

    config.redirects = config.redirects if config.redirects is not None else Std.NONE
    config.tee = config.tee if config.tee is not None else Std.NONE

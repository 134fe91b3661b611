"""Which PyTorch releases the worker runs on, and the one thing a release decides.

ringlab supports torch 2.10 and newer: below 2.10 the weights-only unpickler can corrupt heap memory
(CVE-2026-24747), and below 2.6 torch.load(weights_only=True) hands a TorchScript archive to torch.jit.load
(CVE-2025-32434). The worker's checkpoints no longer go through any unpickler (checkpoint.py, safetensors), but a
floor keeps every other file torch reads (and the fixes after it) on the right side. CI tests 2.13, the release the
cpu image installs; 2.10 to 2.12 run with a warning that says so (NVIDIA's images and the lent GPU machines may
carry one of them). Older releases are refused before anything starts (exit 2).
"""

import re
from typing import Optional, Tuple

Version = Tuple[int, int]

MINIMUM: Version = (2, 10)
TESTED_FROM: Version = (2, 13)


def release(version_text: str) -> Version:
    """(major, minor) of a version string as torch reports it: '2.13.0+cpu' -> (2, 13), '2.11.0a0+gitabc' -> (2, 11)."""
    match = re.match(r"(\d+)\.(\d+)", version_text)
    if not match:
        raise ValueError(f"not a torch version: '{version_text}'")
    return int(match.group(1)), int(match.group(2))


def torch_release() -> Version:
    import torch

    return release(torch.__version__)


def _text(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def support_problem(version_text: str) -> Tuple[Optional[str], Optional[str]]:
    """(refusal, warning) for this torch: a refusal below MINIMUM, a warning from MINIMUM up to TESTED_FROM."""
    version = release(version_text)
    if version < MINIMUM:
        return (
            f"torch {version_text} is older than {_text(MINIMUM)}, the oldest ringlab supports (older releases' "
            "weights-only loader can be made to run code: CVE-2025-32434, CVE-2026-24747); use the cpu image, "
            f"or a GPU image on torch {_text(MINIMUM)} or newer (docker/worker/README.md)"
        ), None
    if version < TESTED_FROM:
        return None, (
            f"ringlab-worker: warning: torch {version_text} is supported but not tested; CI tests "
            f"{_text(TESTED_FROM)} and newer"
        )
    return None, None


def autocast(device_type: str):
    """fp16 autocast."""
    import torch

    return torch.autocast(device_type=device_type, dtype=torch.float16)


def make_grad_scaler(enabled: bool):
    """A CUDA GradScaler (a no-op when not enabled)."""
    import torch

    return torch.amp.GradScaler("cuda", enabled=enabled)


# The variable that makes NCCL turn a stuck collective into an error after the process-group timeout.
NCCL_ASYNC_ERROR_HANDLING_ENV = "TORCH_NCCL_ASYNC_ERROR_HANDLING"
# torchrun's workers share the c10d rendezvous' TCPStore, and after a restart a worker can read the previous round's
# addresses from it and fail to connect (pytorch/pytorch#135712); this turns the sharing off.
TORCHRUN_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}

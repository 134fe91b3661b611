"""Peak memory of one rank's training, measured the same way in every run.

- On a GPU: the caching allocator's peak, allocated (tensors alive) and reserved (what it holds from the driver, what
  an out-of-memory error is about), reset once the process group is up and before the model is built; the baseline is
  what was allocated then (nothing, normally).
- On a CPU: the process's peak resident set (the kernel's VmHWM), reset the same way by writing 5 to
  /proc/self/clear_refs (Linux 4.0 on), over the baseline of its resident set then: torch, Python and the process
  group, which every run of the image has alike. What the run's own tensors, the allocator's slack and its threads
  add is the peak minus the baseline; the node holds the baseline too, and the launcher process (torchrun's agent:
  each node's first rank reads its peak too, `launcherPeakBytes`). RssAnon at the end says how much of the resident
  set is the process's own memory rather than mapped files (torch's libraries), which the kernel can drop under a
  limit.

Where the kernel refuses the reset, VmHWM is the peak since the process started (imports included): the record says
which (`peakSince`).
"""

import os

import torch

from .exchange import all_gather_json


def _status_bytes(field: str, process: str = "self") -> int:
    with open(f"/proc/{process}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB
    raise RuntimeError(f"/proc/{process}/status has no {field}")


def resident_bytes() -> int:
    return _status_bytes("VmRSS")


def _reset_peak_resident() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def _launcher() -> dict:
    """Under torchrun, the node's launcher (torchrun's agent, the process that started this one) holds memory of the
    node too: its peak resident set, read by each node's first rank."""
    if "TORCHELASTIC_RUN_ID" not in os.environ or os.environ.get("LOCAL_RANK", "0") != "0":
        return {}
    try:
        return {"launcherPeakBytes": _status_bytes("VmHWM", str(os.getppid()))}
    except (OSError, RuntimeError):
        return {}


class PeakMemory:
    """Started before the model is built; `result` after the last step (collective: every rank's, gathered)."""

    def __init__(self, device: torch.device):
        self.device = device
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            self.baseline, self.since = torch.cuda.memory_allocated(device), "model"
        else:
            self.baseline = resident_bytes()
            self.since = "model" if _reset_peak_resident() else "process"

    def _mine(self) -> dict:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return {
                "peakBytes": torch.cuda.max_memory_allocated(self.device),
                "peakReservedBytes": torch.cuda.max_memory_reserved(self.device),
                "baselineBytes": self.baseline,
            }
        return {
            "peakBytes": _status_bytes("VmHWM"),
            "baselineBytes": self.baseline,
            "residentAnonymousBytes": _status_bytes("RssAnon"),
            **_launcher(),
        }

    def result(self) -> dict:
        ranks = all_gather_json(self._mine(), self.device)
        return {
            "method": "cuda-allocator" if self.device.type == "cuda" else "resident-set",
            "peakSince": self.since,
            "perRank": ranks,
        }

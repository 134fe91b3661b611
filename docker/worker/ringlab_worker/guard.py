"""The launcher-death guard: a rank started by torchrun dies with its launcher (torchrun's agent, its parent).

The launcher sets LAUNCHER_PID_ENV for the ranks it starts (torchrun.py); each rank calls die_with_launcher first
thing, and a rank that kills its own launcher on purpose (train --fail-node, time_to_train.py) calls outlive_launcher
first.
"""

import os
import signal
import sys
from typing import Mapping

# The launcher's pid, for the ranks it starts (die_with_launcher).
LAUNCHER_PID_ENV = "RINGLAB_LAUNCHER_PID"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_launcher(env: Mapping[str, str] = os.environ) -> None:
    """Makes the kernel SIGKILL this rank when its launcher (torchrun's agent, its parent) dies.

    torchrun starts each rank in a session of its own, so a launcher killed with SIGKILL (which it cannot pass on)
    left its ranks training on, holding their ports and cores. In a container tini's exit ends them; run directly
    (one machine, a GPU host, the loopback tests) nothing did. A launcher that died before this call is noticed
    by the parent pid no longer being its own.
    """
    launcher_pid = env.get(LAUNCHER_PID_ENV, "")
    if launcher_pid.isdigit() and _set_parent_death_signal(signal.SIGKILL) and os.getppid() != int(launcher_pid):
        os.kill(os.getpid(), signal.SIGKILL)


def outlive_launcher() -> None:
    """Undoes die_with_launcher, for a rank that kills its own launcher (train --fail-node) and has more to do."""
    _set_parent_death_signal(0)


def _set_parent_death_signal(signum: int) -> bool:
    """prctl(PR_SET_PDEATHSIG, signum) on Linux (0: none); False where it is not available or failed."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False

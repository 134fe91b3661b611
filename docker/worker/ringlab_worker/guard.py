"""The agent-death guard: a rank started by torchrun dies with torchrun's agent (its parent; not one of ringlab's
launchers, which start the worker on each node).

The agent sets AGENT_PID_ENV for the ranks it starts (torchrun.py); each rank calls die_with_agent first thing, and a
rank that kills its own agent on purpose (train --fail-node, time_to_train.py) calls outlive_agent first.
"""

import os
import signal
import sys
from typing import Mapping

# The agent's pid, for the ranks it starts (die_with_agent).
AGENT_PID_ENV = "RINGLAB_AGENT_PID"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_agent(env: Mapping[str, str] = os.environ) -> None:
    """Makes the kernel SIGKILL this rank when torchrun's agent (its parent) dies.

    torchrun starts each rank in a session of its own, so an agent killed with SIGKILL (which it cannot pass on)
    left its ranks training on, holding their ports and cores. In a container tini's exit ends them; run directly
    (one machine, a GPU host, the loopback tests) nothing did. An agent that died before this call is noticed
    by the parent pid no longer being its own.
    """
    agent_pid = env.get(AGENT_PID_ENV, "")
    if agent_pid.isdigit() and _set_parent_death_signal(signal.SIGKILL) and os.getppid() != int(agent_pid):
        os.kill(os.getpid(), signal.SIGKILL)


def outlive_agent() -> None:
    """Undoes die_with_agent, for a rank that kills its own agent (train --fail-node) and has more to do."""
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

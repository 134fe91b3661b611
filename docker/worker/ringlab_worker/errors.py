"""Exit codes (a stable contract: the orchestrator records them) and the errors that carry them."""

EXIT_OK = 0
EXIT_OTHER = 1  # a bug or an unexpected failure; the traceback is printed
EXIT_BAD_ARGUMENTS = 2  # also: a combination this machine cannot run (amp without a GPU, horovod not installed)
EXIT_TIMEOUT = 3  # rendezvous did not complete, or a peer stopped answering, within --timeout-seconds
EXIT_PEER_FAILED = 4  # a rank crashed, was killed, or dropped its connection

MEANING = {
    EXIT_OTHER: "failed",
    EXIT_BAD_ARGUMENTS: "bad arguments",
    EXIT_TIMEOUT: "a peer did not answer in time",
    EXIT_PEER_FAILED: "a peer failed",
}


class WorkerError(Exception):
    """An expected failure: its message says what happened and what to check; no traceback."""

    exit_code = EXIT_OTHER

    def __init__(self, message: str, exit_code: int = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class BadArguments(WorkerError):
    exit_code = EXIT_BAD_ARGUMENTS


class PeerTimeout(WorkerError):
    exit_code = EXIT_TIMEOUT


class PeerFailed(WorkerError):
    exit_code = EXIT_PEER_FAILED


# torch raises a bare RuntimeError for every collective failure, so the message text is all there is
# to tell a silent peer from a dead one. Keep that guesswork in this one place.
_TIMEOUT_MARKS = ("timed out", "timeout", "deadline")
_PEER_GONE_MARKS = (
    "connection closed by peer",
    "connection reset",
    "broken pipe",
    "connection refused",
    "nccl communicator was aborted",
    "nccl error",
)


def classify_collective_error(error: BaseException, during: str):
    """A PeerFailed or PeerTimeout with advice for a torch.distributed failure; None if it is neither."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    lowered = str(error).lower()
    if any(mark in lowered for mark in _PEER_GONE_MARKS):
        return PeerFailed(
            f"a peer failed during {during}: {text}. Another rank exited, was killed (out of memory?) or "
            "lost its network; its node's log names the cause."
        )
    if any(mark in lowered for mark in _TIMEOUT_MARKS):
        return PeerTimeout(
            f"a peer did not answer within --timeout-seconds during {during}: {text}. Check that every node "
            "is running, that the nodes reach each other on all ports (firewall, security group), and that "
            "RINGLAB_SOCKET_IFNAME names an interface the peers can reach."
        )
    return None

"""async-parameter-server: stale-synchronous parallel training (Ho et al. 2013) over torch.distributed point-to-point.

Rank 0 serves, on a thread of its own and a Gloo group of its own, a copy of the parameters apart from its own
worker's replica. Every rank (rank 0's worker included) sends each step's gradient to the server, which applies
it alone as it arrives (momentum SGD at the worker's learning rate, the gradient divided by the number of workers as
DDP's average divides it: without momentum, one update from each worker moves the parameters as far as one
synchronous step; with it, the momentum decays once per update, N times a round) and sends the parameters back. There is
no barrier: a worker waits only for its own reply, and the server holds that reply while the worker is more than
`staleness` steps ahead of the slowest (the staleness bound s; s = 0: no worker starts step t + 1 before every worker
has sent step t, yet each gradient is still applied alone).

At each epoch's end (time to train) every rank takes the server's parameters before evaluation (synchronize), so the
held-out accuracy is the server's model's. BatchNorm's running statistics are not served: each rank keeps its own.

What each update actually had is counted: its staleness is the number of server updates between the parameters
its gradient was computed on and the parameters it was applied to (0: none), and the result carries the
distribution. Each step sends the gradient in and the parameters out, so the server's link carries what the
parameter server's does; the probe measures that link with --reduction parameter-server.
"""

import queue
import threading
from collections import Counter
from datetime import timedelta

import torch
import torch.distributed as dist

SERVER_RANK = 0
_UPDATE_TAG, _REPLY_TAG = 21, 22
_STOP = -1.0


class AsyncParameterServerOptimizer:
    """What Trainer.step calls for `optimizer`: zero_grad, and step, which trades this rank's gradient for the
    server's parameters. The wrapped optimizer is not stepped: the server holds the momentum."""

    def __init__(self, optimizer, model, args):
        self.optimizer = optimizer
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.rank, self.size = dist.get_rank(), dist.get_world_size()
        # Gradients in on one group, parameters out on another: rank 0 receives and sends on threads of their own.
        timeout = timedelta(seconds=args.timeout_seconds)
        self.groups = tuple(dist.new_group(backend="gloo", timeout=timeout) for _ in range(2))  # every rank makes both
        count = sum(p.numel() for p in self.params)
        self.version = 0  # the server update the parameters held here came from
        self.message = torch.zeros(2 + count)  # [version the gradient was computed on, 0 or _STOP, gradient]
        self.reply = torch.zeros(1 + count)  # [server version, parameters]
        self.server = _Server(self.params, args, self.size, self.groups) if self.rank == SERVER_RANK else None
        self.finished = False

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict:
        return self.optimizer.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state)

    def step(self, closure=None):
        self.message[0], self.message[1] = float(self.version), 0.0
        torch.cat(
            [(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1).cpu() for p in self.params],
            out=self.message[2:],
        )
        if self.server is not None:
            self.reply.copy_(self.server.local_update(self.message))
        else:
            dist.send(self.message, SERVER_RANK, group=self.groups[0], tag=_UPDATE_TAG)
            dist.recv(self.reply, SERVER_RANK, group=self.groups[1], tag=_REPLY_TAG)
        self._load(self.reply)

    def synchronize(self) -> None:
        """Every rank takes the server's parameters (at an epoch's end, before evaluation, so that the held-out
        accuracy is the server's model's, not N stale replicas'): after a barrier, which every rank enters only
        with its last reply, so every gradient has been applied. The reply group is idle then."""
        dist.barrier(group=self.groups[1])
        state = self.server.snapshot() if self.server is not None else torch.zeros_like(self.reply)
        dist.broadcast(state, SERVER_RANK, group=self.groups[1])
        self._load(state)

    def _load(self, state: torch.Tensor) -> None:
        """[server version, parameters] into this rank's replica."""
        self.version = int(state[0].item())
        with torch.no_grad():
            offset = 1
            for p in self.params:
                p.copy_(state[offset : offset + p.numel()].view_as(p))
                offset += p.numel()

    def finish(self) -> dict:
        """After the last step: the other ranks tell the server they are done, and the server's threads end; the
        staleness every update had (the server's count, on rank 0; {} on the others)."""
        if not self.finished:
            self.finished = True
            if self.server is None:
                self.message[1] = _STOP
                dist.send(self.message, SERVER_RANK, group=self.groups[0], tag=_UPDATE_TAG)
            else:
                self.server.join()
        return {} if self.server is None else {"staleness": self.server.staleness()}


class _Server:
    """The parameters, their momentum and every worker's step count, updated by one thread from one inbox: the
    other ranks' gradients come into it from a receiving thread (Gloo completes a receive only in a blocking wait),
    rank 0's own straight from its step."""

    def __init__(self, params, args, size: int, groups):
        self.flat = torch.cat([p.detach().reshape(-1).cpu() for p in params]).clone()
        self.momentum_buffer = None
        self.learning_rate, self.momentum = args.learning_rate, args.momentum
        self.bound, self.size = args.async_staleness, size
        self.incoming, self.outgoing = groups
        self.version = 0
        self.steps = [0] * size  # updates applied from each rank
        self.counts = Counter()  # staleness -> updates
        self.held = []  # ranks whose reply waits for the slowest to catch up
        self.inbox = queue.Queue()  # (rank, message); message None: rank 0's worker is done
        self.local_reply = queue.Queue()
        self.error = None
        self.threads = [
            threading.Thread(target=self._guarded, args=(work,), name=f"ringlab-async-{name}", daemon=True)
            for name, work in (("server", self._serve), ("receiver", self._receive))
        ]
        for thread in self.threads:
            thread.start()

    def local_update(self, message: torch.Tensor) -> torch.Tensor:
        self.inbox.put((SERVER_RANK, message.clone()))
        reply = self.local_reply.get()
        if reply is None:
            raise RuntimeError(f"the asynchronous parameter server stopped: {self.error}")
        return reply

    def join(self) -> None:
        self.inbox.put((SERVER_RANK, None))
        for thread in self.threads:
            thread.join()
        if self.error is not None:
            raise RuntimeError(f"the asynchronous parameter server failed: {self.error}")

    def snapshot(self) -> torch.Tensor:
        return torch.cat([torch.tensor([float(self.version)]), self.flat])

    def staleness(self) -> dict:
        updates = sum(self.counts.values())
        return {
            "bound": self.bound,
            "updates": updates,
            "max": max(self.counts) if self.counts else 0,
            "mean": sum(s * n for s, n in self.counts.items()) / updates if updates else 0.0,
            "histogram": {str(s): self.counts[s] for s in sorted(self.counts)},
        }

    def _guarded(self, work) -> None:
        try:
            work()
        except Exception as error:  # rank 0's own step raises it
            self.error = self.error or repr(error)
            self.local_reply.put(None)
            self.inbox.put((SERVER_RANK, None))

    def _receive(self) -> None:
        """Every other rank's messages, into the inbox, until each has said it is done."""
        running = self.size - 1
        while running:
            message = torch.zeros(2 + self.flat.numel(), dtype=self.flat.dtype)
            source = dist.recv(message, group=self.incoming, tag=_UPDATE_TAG)  # from any rank
            running -= int(message[1].item() == _STOP)
            self.inbox.put((source, message))

    def _serve(self) -> None:
        remote_running, local_running = self.size - 1, True
        while (remote_running or local_running) and self.error is None:
            source, message = self.inbox.get()
            if message is None:
                local_running = False
            elif message[1].item() == _STOP:
                remote_running -= 1
            else:
                self._apply(source, message)

    def _apply(self, source: int, message: torch.Tensor) -> None:
        self.counts[self.version - int(message[0].item())] += 1
        gradient = message[2:] / self.size
        if self.momentum_buffer is None:
            self.momentum_buffer = gradient.clone()
        else:
            self.momentum_buffer.mul_(self.momentum).add_(gradient)
        self.flat.add_(self.momentum_buffer if self.momentum else gradient, alpha=-self.learning_rate)
        self.version += 1
        self.steps[source] += 1
        self.held.append(source)
        slowest = min(self.steps)
        for rank in [rank for rank in self.held if self.steps[rank] - slowest <= self.bound]:
            self.held.remove(rank)
            reply = self.snapshot()
            if rank == SERVER_RANK:
                self.local_reply.put(reply)
            else:
                dist.send(reply, rank, group=self.outgoing, tag=_REPLY_TAG)

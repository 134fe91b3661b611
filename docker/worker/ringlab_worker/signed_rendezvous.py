"""torchrun's c10d rendezvous with its state signed by the run's secret: the backend `ringlab-c10d`.

torchrun's agents keep the rendezvous state in node 0's TCPStore as a pickle that every agent unpickles about once a
second. The store has no authentication, and since torch 2.x any client may list its keys (`Store.list_keys`), so the
key's name (the rendezvous id) hides nothing: whoever reaches the port finds the key and could write a pickle there
that runs code in every node's agent, as root. Here each state is written with an HMAC-SHA256 of it under the run's
secret (RINGLAB_RDZV_SECRET, which never goes into the store), and a state whose HMAC does not match is refused before
anything unpickles it: the rendezvous fails (RendezvousStateError) instead.

Whoever reaches the port can still stop a run (overwrite the state, hold connections): see docs/security.md.
"""

import hashlib
import hmac
import os
from typing import Optional, Tuple

BACKEND_NAME = "ringlab-c10d"
# The run's secret, the HMAC key (torchrun.py checks it is set before torchrun starts).
SECRET_ENV = "RINGLAB_RDZV_SECRET"
_DIGEST = hashlib.sha256
_MAC_BYTES = _DIGEST().digest_size


def public_rendezvous_id(secret: str) -> str:
    """The rendezvous id the store shows, derived from the secret one way: every node of a run (and only of this
    attempt) computes the same, and reading it from the store tells nothing of the secret."""
    return hashlib.sha256(f"ringlab rendezvous id of {secret}".encode()).hexdigest()[:32]


def sign(key: bytes, state: bytes) -> bytes:
    return hmac.new(key, state, _DIGEST).digest() + state


def verified(key: bytes, signed: bytes) -> bytes:
    """The state `signed` carries, when its HMAC is this run's; RendezvousStateError otherwise (nothing unpickled)."""
    from torch.distributed.elastic.rendezvous import RendezvousStateError

    mac, state = signed[:_MAC_BYTES], signed[_MAC_BYTES:]
    if len(signed) < _MAC_BYTES or not hmac.compare_digest(mac, hmac.new(key, state, _DIGEST).digest()):
        raise RendezvousStateError(
            "the rendezvous state in node 0's store is not signed with this run's secret: another client of the "
            "store wrote it (or a node has another RINGLAB_RDZV_SECRET); refused unread"
        )
    return state


def signed_backend(inner, key: bytes):
    """`inner` (torch's C10dRendezvousBackend) with every state signed on the way in and checked on the way out."""
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import RendezvousBackend

    class SignedBackend(RendezvousBackend):
        @property
        def name(self) -> str:
            return BACKEND_NAME

        def get_state(self) -> Optional[Tuple[bytes, object]]:
            stored = inner.get_state()
            return None if stored is None else (verified(key, stored[0]), stored[1])

        def set_state(self, state: bytes, token=None) -> Optional[Tuple[bytes, object, bool]]:
            stored = inner.set_state(sign(key, state), token)
            if stored is None:
                return None
            now, new_token, has_set = stored
            return verified(key, now), new_token, has_set

    return SignedBackend()


def _create_handler(params):
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import create_backend
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import create_handler

    backend, store = create_backend(params)
    return create_handler(store, signed_backend(backend, os.environ[SECRET_ENV].encode()), params)


def register() -> None:
    """Makes `--rdzv_backend ringlab-c10d` torch's c10d rendezvous with states signed under $RINGLAB_RDZV_SECRET, in
    this process (torchrun runs in process: torchrun.py)."""
    from torch.distributed.elastic.rendezvous import rendezvous_handler_registry

    rendezvous_handler_registry.register(BACKEND_NAME, _create_handler)

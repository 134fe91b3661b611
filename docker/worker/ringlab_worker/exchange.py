"""Small values ranks tell each other (host names, a chosen checkpoint step, a port, a measured rate, memory figures),
as JSON in byte tensors.

torch's object collectives (all_gather_object, broadcast_object_list) send pickles, and every receiving rank unpickles
what its peers sent: whoever can stand in for a peer (the workers' TCPStore on node 0 takes writes from anyone who
reaches it, and so may point a rank at another address) could make it run code. JSON is only ever data.
"""

import json
from typing import Any, List

import torch
import torch.distributed as dist


def _encoded(value: Any, device: torch.device) -> torch.Tensor:
    return torch.tensor(list(json.dumps(value).encode()), dtype=torch.uint8, device=device)


def _decoded(data: torch.Tensor) -> Any:
    return json.loads(bytes(data.cpu().tolist()).decode())


def broadcast_json(value: Any, src: int, device: torch.device) -> Any:
    """`value` of rank `src` on every rank (the others' `value` is ignored)."""
    data = _encoded(value, device) if dist.get_rank() == src else None
    length = torch.tensor([0 if data is None else data.numel()], dtype=torch.int64, device=device)
    dist.broadcast(length, src=src)
    if data is None:
        data = torch.empty(int(length.item()), dtype=torch.uint8, device=device)
    dist.broadcast(data, src=src)
    return _decoded(data)


def all_gather_json(value: Any, device: torch.device) -> List[Any]:
    """Every rank's `value`, in rank order, on every rank."""
    mine = _encoded(value, device)
    lengths = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(dist.get_world_size())]
    dist.all_gather(lengths, torch.tensor([mine.numel()], dtype=torch.int64, device=device))
    longest = max(int(length.item()) for length in lengths)
    padded = torch.zeros(longest, dtype=torch.uint8, device=device)
    padded[: mine.numel()] = mine
    gathered = [torch.empty(longest, dtype=torch.uint8, device=device) for _ in lengths]
    dist.all_gather(gathered, padded)
    return [_decoded(data[: int(length.item())]) for data, length in zip(gathered, lengths, strict=True)]

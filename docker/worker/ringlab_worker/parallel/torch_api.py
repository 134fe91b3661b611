"""What each layout needs of the installed torch, checked before the model is built (exit 2, naming the flag).

Every torch ringlab supports (compat.MINIMUM, 2.10) has all of it; a torch built without distributed, a vendor's
fork or a later release that moves an API would otherwise fail deep in the layout's first call, one rank with a
traceback and the others waiting. Each layout module's torch_needs(config) names the module, the attribute and, where
the layout depends on one, the parameter; a value of a flag may need more (FSDP's grad-op is fully_shard's
reshard_after_forward, a pipeline schedule is a class of torch.distributed.pipelining).
"""

import importlib
import inspect
from typing import Iterable, Optional, Tuple

# (flag and value that asks for it, module, attribute, parameter or None)
Need = Tuple[str, str, str, Optional[str]]


def missing(needs: Iterable[Need], torch_version: str) -> Optional[str]:
    """The first need the installed torch does not meet, said as a refusal; None when it meets them all."""
    for asked_by, module_name, attribute, parameter in needs:
        what = f"{module_name}.{attribute}" + (f"'s {parameter}" if parameter else "")
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError):
            found = None
        if found is not None and parameter is not None and not _accepts(found, parameter):
            found = None
        if found is None:
            return (
                f"{asked_by} needs {what}, which the installed torch {torch_version} lacks: run it on a torch that "
                "has it (the cpu image's does), or choose another layout"
            )
    return None


def _accepts(function, parameter: str) -> bool:
    try:
        return parameter in inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature: taken as accepting
        return True

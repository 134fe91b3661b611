"""One unit per reduction (registry.json's reductions), each a module here named after it (`sharded-parameter-server`
is sharded_parameter_server.py). A unit gives:

- `install(ddp, optimizer, config)`: puts the strategy in place on a DDP model (a communication hook, and for local
  SGD and the asynchronous server an optimizer wrapper) and returns the optimizer the training step uses;
- `wire_bytes_per_step(tensors, config)`: the bytes one rank sends into the exchange per step, on average, the
  cost model's S (`tensors`: the parameters that take a gradient);
- `sum_over_ranks(tensor)`, for a reduction the probe can time (registry.json's probedAs is its own name): the
  in-place sum of one buffer over all ranks.

A new reduction is its entry in registry.json and its module here: UNITS follows the registry, and
test_reduction.py checks that every unit has what its entry says it has.
"""

import importlib

from ..registry import REDUCTIONS

UNITS = {name: importlib.import_module(f".{name.replace('-', '_')}", __name__) for name in REDUCTIONS}

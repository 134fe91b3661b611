"""ringlab worker: a Horovod-style data-parallel training benchmark and an all-reduce probe."""

__version__ = "0.1.0"

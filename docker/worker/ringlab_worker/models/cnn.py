"""ringlab's two small CNNs for CPU runs."""

import torch.nn as nn


def tiny():
    """Small enough for CPU smoke runs; adaptive pooling keeps it valid for any --image-size."""
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 10),
    )


def small():
    """CPU-sized compute with a 4.2 M-parameter classifier: its 17 MB gradient costs about as much to all-reduce over
    1 Gbit/s as a step costs to compute on a CPU, so link bandwidth shows on the local testbed as it does for ResNets
    on GPUs."""
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(8),
        nn.Flatten(),
        nn.Linear(64 * 8 * 8, 1024),
        nn.ReLU(),
        nn.Linear(1024, 10),
    )


# The image models this module defines, by their names in registry.json: each one's builder and its number of classes.
# models/__init__.py collects every family's IMAGE_MODELS into SPECS, so a new model is an entry here, not there.
IMAGE_MODELS = {"tiny": (tiny, 10), "small": (small, 10)}

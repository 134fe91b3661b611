"""The models the worker trains, one module per family, each written in plain PyTorch (no torchvision).

The ResNets and Inception v3 have torchvision's architecture, layer for layer and parameter for parameter (the
counts in registry.json are torchvision's, and test/worker/test_models.py checks them), so results compare with
published benchmarks that used torchvision's definitions. They are ringlab's own code because no torchvision build
matches the CPU wheel of current PyTorch the cpu image installs. Weights are random, as in Horovod's benchmark.

BUILDERS maps a registry name to a function returning (model, number of classes); a new model is a module here,
its line in BUILDERS and its entry in registry.json.
"""

from typing import Callable, Dict, Tuple

import torch.nn as nn

from .cnn import small, tiny
from .inception import inception_v3
from .resnet import resnet50, resnet101, resnet152

BUILDERS: Dict[str, Callable[[], Tuple[nn.Module, int]]] = {
    "tiny": tiny,
    "small": small,
    "resnet50": resnet50,
    "resnet101": resnet101,
    "resnet152": resnet152,
    "inception_v3": inception_v3,
}


def build_model(name: str) -> Tuple[nn.Module, int]:
    """The model named `name` in registry.json and its number of classes."""
    return BUILDERS[name]()

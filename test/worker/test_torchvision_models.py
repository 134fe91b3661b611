"""The torchvision models (resnet*, inception_v3). Only the run on Debian's torch 1.13, which has torchvision,
collects this file; the run on the current torch (CPU wheel, no torchvision beside it) leaves it out by name in
package.json's test:python, and covers the refusal without torchvision in test_gpu_paths.py instead."""

import pytest
import torch
import torch.nn.functional as F

from ringlab_worker.registry import PARAMETER_COUNT
from ringlab_worker.train import NATIVE_IMAGE_SIZE, TORCHVISION_MODELS, build_model


def _planning_parameter_counts():
    """ringlab plan's counts (src/campaign/estimate.ts takes them from registry.json through src/config/registry.ts):
    they must count what the worker trains."""
    return PARAMETER_COUNT


@pytest.mark.parametrize("name", TORCHVISION_MODELS)
def test_each_torchvision_model_has_the_parameters_planning_assumes_and_trains_a_step(name):
    model, classes = build_model(name)
    assert sum(p.numel() for p in model.parameters()) == _planning_parameter_counts()[name]
    size = 75 if name == "inception_v3" else 64  # inception_v3's smallest input; native sizes are slow on CPU
    assert NATIVE_IMAGE_SIZE[name] >= size
    model = model.to(memory_format=torch.channels_last)  # the --channels-last path
    images = torch.randn(2, 3, size, size).contiguous(memory_format=torch.channels_last)
    logits = model(images)
    assert logits.shape == (2, classes)
    F.cross_entropy(logits, torch.tensor([0, 1])).backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)



@pytest.mark.parametrize("name", ["tiny", "small"])
def test_the_models_without_torchvision_have_the_parameters_the_registry_says(name):
    model, _ = build_model(name)
    assert sum(p.numel() for p in model.parameters()) == PARAMETER_COUNT[name]

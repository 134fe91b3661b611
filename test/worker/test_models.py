"""The worker's models (models/): ringlab's own definitions of torchvision's ResNets and Inception v3, and its two
small CNNs. Planning counts parameters from registry.json (torchvision's counts), so each model must have exactly
those; each must train a step, also in the channels-last layout."""

import json

import pytest
import torch
import torch.nn.functional as F
from conftest import REPO
from ringlab_worker.models import BUILDERS, SPECS, build_model
from ringlab_worker.registry import MODELS, NATIVE_IMAGE_SIZE, PARAMETER_COUNT

# Every state-dict tensor's name and shape in torchvision's definitions (torchvision 0.14, inception_v3 without the
# aux head), written by test/fixtures/torchvision-state-dicts.py: ringlab's must be the same, so published figures
# (measured on torchvision's models) compare and torchvision's weights load. With those weights loaded, both gave the
# same outputs (checked when the models were written, 2026-11-26).
TORCHVISION = json.loads((REPO / "test" / "fixtures" / "torchvision-state-dicts.json").read_text())


def test_every_registry_model_has_a_spec_and_every_image_model_a_builder():
    # SPECS is collected from the family modules' IMAGE_MODELS, not listed by hand: each registry image model must be
    # defined by a family, and each model a family defines must be in the registry.
    assert tuple(SPECS) == MODELS
    assert set(BUILDERS) == set(NATIVE_IMAGE_SIZE)
    for name in BUILDERS:
        assert SPECS[name].kind == "image" and SPECS[name].classes == BUILDERS[name][1], name


@pytest.mark.parametrize("name", list(NATIVE_IMAGE_SIZE))
def test_each_model_has_the_parameters_planning_assumes_and_as_many_outputs_as_its_classes(name):
    model, classes = build_model(name)
    assert sum(p.numel() for p in model.parameters()) == PARAMETER_COUNT[name]
    # The number of classes is written beside the builder (its family's IMAGE_MODELS): the model's last layer must
    # agree, or synthetic_batch draws labels the loss cannot take.
    assert [layer for layer in model.modules() if isinstance(layer, torch.nn.Linear)][-1].out_features == classes


@pytest.mark.parametrize("name", ["resnet50", "resnet101", "resnet152", "inception_v3"])
def test_the_large_models_hold_torchvision_s_tensors_by_name_and_shape(name):
    ours = {key: list(tensor.shape) for key, tensor in build_model(name)[0].state_dict().items()}
    assert ours == TORCHVISION[name]


@pytest.mark.parametrize("name", ["resnet50", "inception_v3"])
def test_the_large_models_train_a_step_in_the_channels_last_layout(name):
    model, classes = build_model(name)
    size = 75 if name == "inception_v3" else 64  # inception_v3's smallest input; native sizes are slow on CPU
    assert NATIVE_IMAGE_SIZE[name] >= size
    model = model.to(memory_format=torch.channels_last)  # the --channels-last path
    images = torch.randn(2, 3, size, size).contiguous(memory_format=torch.channels_last)
    logits = model(images)
    assert logits.shape == (2, classes)
    F.cross_entropy(logits, torch.tensor([0, 1])).backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)

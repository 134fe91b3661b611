"""The models the worker trains, one module per family, each written in plain PyTorch (no torchvision), and one spec
per model: what the training loop and the layouts (parallel/) need to know of it, after pytorch/torchtitan's model
specs.

Image models: the ResNets and Inception v3 have torchvision's architecture, layer for layer and parameter for parameter
(the counts in registry.json are torchvision's, and test/worker/test_models.py checks them), so results compare with
published benchmarks that used torchvision's definitions; they are ringlab's own code because no torchvision build
matches the CPU wheel of current PyTorch the cpu image installs. Language models: one module per family of
registry.json's, GPT-2's decoder (transformer.py) and Llama's (llama.py), each with its TENSOR_PLAN. Weights are
random (seeded the same on every rank), as in Horovod's benchmark.

A spec says how to build the model, what one synthetic batch is, the loss, what throughput counts (images, or
tokens), the model's blocks (FSDP's units of sharding, and what a pipeline splits), its tensor-parallel plan and its
pipeline split. A layout a model has no plan for is refused with the reason (`Unsupported`). A new image model is its
builder in a family module, listed in that module's IMAGE_MODELS, and its entry in registry.json (with its planning
figures); SPECS follows the registry. A new family is a module here, named in _FAMILIES.
"""

import copy
from typing import Callable, Dict, List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..errors import BadArguments
from ..registry import LANGUAGE_SHAPE, MODEL_KIND, MODELS
from . import cnn, inception, llama, resnet, transformer
from .llama import Llama, LlamaShape
from .transformer import Transformer, TransformerShape, language_model_loss


class ImageModel:
    """A CNN classifying images: batches of (images, labels), throughput in images."""

    kind, unit = "image", "images"

    def __init__(self, build: Callable[[], nn.Module], classes: int):
        self._build, self.classes = build, classes

    def build(self, config) -> nn.Module:
        return self._build()

    def synthetic_batch(self, config, device, memory_format=torch.contiguous_format):
        """One random batch, as Horovod's benchmark has it (drawn after the model's initialisation, under its seed)."""
        data = torch.randn(config.batch_size, 3, config.image_size, config.image_size, device=device)
        return (
            data.contiguous(memory_format=memory_format),
            torch.randint(0, self.classes, (config.batch_size,), device=device),
        )

    @staticmethod
    def loss(output, targets):
        return F.cross_entropy(output, targets)

    @staticmethod
    def units_per_sample(config) -> int:
        return 1

    @staticmethod
    def blocks(model: nn.Module) -> List[nn.Module]:
        """FSDP's units: the top-level children that hold parameters (a ResNet's stages, a small CNN's layers)."""
        return [child for child in model.children() if any(True for _ in child.parameters())]

    @staticmethod
    def tensor_parallel_plan(model, config):
        raise BadArguments(
            f"--parallelism tensor splits a transformer's matrices (Megatron's column- and row-parallel "
            f"attention and MLP); ringlab has no plan for {config.model}'s convolutions: use ddp or fsdp, "
            "or a language model (gpt-*)"
        )

    @staticmethod
    def pipeline_stage(model, stage: int, stages: int, config):
        raise BadArguments(
            f"--parallelism pipeline splits a transformer's blocks; ringlab does not split "
            f"{config.model}: a CNN's early stage boundaries carry its largest activations (ResNet-50's "
            "first: 256x56x56 floats, 3.2 MB per image, 103 MB per batch of 32, as much as its whole "
            "gradient), so a pipeline sends more than DDP would: use ddp or fsdp, or a language model"
        )


class LanguageModel:
    """A decoder-only transformer predicting the next token: batches of (tokens, the tokens one position on),
    throughput in tokens."""

    kind, unit = "language", "tokens"

    def __init__(self, name: str):
        self.name = name

    def shape(self, config):
        """The shape the run builds: the registry's, with the run's layers, width, heads and key and value heads. A
        gpt2 model's learned positions are the run's sequence."""
        registered = LANGUAGE_SHAPE[self.name]
        if registered["family"] == "gpt2":
            return TransformerShape(
                layers=config.layers,
                width=config.width,
                heads=config.heads,
                sequence_length=config.sequence_length,
                vocab=registered["vocab"],
            )
        return LlamaShape(
            layers=config.layers,
            width=config.width,
            heads=config.heads,
            kv_heads=config.kv_heads,
            ffn_width=registered["ffnWidth"],
            vocab=registered["vocab"],
            tied_embeddings=registered["tiedEmbeddings"],
            rope_theta=registered["ropeTheta"],
            max_positions=registered["maxPositions"],
        )

    def build(self, config) -> nn.Module:
        shape = self.shape(config)
        return Llama(shape) if isinstance(shape, LlamaShape) else Transformer(shape)

    def synthetic_batch(self, config, device, memory_format=None):
        """Random tokens from a generator of its own (seed 0, on the CPU): the same batch on every rank and device."""
        generator = torch.Generator().manual_seed(0)
        vocab = LANGUAGE_SHAPE[self.name]["vocab"]
        tokens = torch.randint(0, vocab, (config.batch_size, config.sequence_length + 1), generator=generator)
        tokens = tokens.to(device)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    loss = staticmethod(language_model_loss)

    @staticmethod
    def units_per_sample(config) -> int:
        return config.sequence_length

    @staticmethod
    def blocks(model: nn.Module) -> List[nn.Module]:
        return list(model.blocks.values())

    def tensor_parallel_plan(self, model, config) -> Dict[str, object]:
        """Megatron's plan per block, as its family's module writes it (TENSOR_PLAN: q, k, v and the MLP's first
        layers split by columns, the two projections by rows). Embeddings, norms and the head stay whole on every
        rank."""
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

        styles = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel}
        family = _FAMILY_MODULES[LANGUAGE_SHAPE[self.name]["family"]]
        return {
            f"blocks.{index}.{layer}": styles[style]()
            for index in model.blocks
            for layer, style in family.TENSOR_PLAN.items()
        }

    @staticmethod
    def pipeline_stage(model, stage: int, stages: int, config) -> nn.Module:
        """Stage `stage` of `stages`: a copy holding its share of the blocks (as even as they divide, earlier stages
        taking one more), the embeddings on the first stage, the final LayerNorm and the head on the last."""
        names = list(model.blocks)
        if stages > len(names):
            raise BadArguments(f"--pipeline-stages {stages} is more than the model's {len(names)} blocks")
        per_stage, extra = divmod(len(names), stages)
        start = stage * per_stage + min(stage, extra)
        mine = names[start : start + per_stage + (1 if stage < extra else 0)]
        part = copy.deepcopy(model)
        for name in names:
            if name not in mine:
                del part.blocks[name]
        if stage > 0:
            part.embedding = None
            if hasattr(part, "positions"):  # gpt2's learned positions
                part.positions = None
        if stage < stages - 1:
            part.norm = part.head = None
        return part


# The module that builds each family of language models (registry.json's family).
_FAMILY_MODULES = {"gpt2": transformer, "llama": llama}

# The modules that define image models, each with its IMAGE_MODELS: name -> (builder, number of classes).
_FAMILIES = (cnn, resnet, inception)
BUILDERS = {name: entry for family in _FAMILIES for name, entry in family.IMAGE_MODELS.items()}


def _spec(name: str):
    """The spec of registry.json's model `name`. An image model no family defines stops the import with its name,
    rather than pass for a language model or fail as a bare KeyError."""
    if MODEL_KIND[name] == "language":
        return LanguageModel(name)
    if name not in BUILDERS:
        raise ImportError(
            f"registry.json lists image model {name}, but no module of models/ defines it "
            f"(an entry in its IMAGE_MODELS, a module named in _FAMILIES)"
        )
    build, classes = BUILDERS[name]
    return ImageModel(build, classes)


SPECS = {name: _spec(name) for name in MODELS}


def model_spec(name: str):
    """The spec of the model named `name` in registry.json."""
    return SPECS[name]


def build_model(name: str) -> Tuple[nn.Module, int]:
    """An image model named in registry.json and its number of classes (the checks of torchvision's shapes use it)."""
    build, classes = BUILDERS[name]
    return build(), classes

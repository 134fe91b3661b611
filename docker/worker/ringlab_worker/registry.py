"""What the worker can do, read from registry.json beside this file: its models, its reductions and the train knobs
a campaign sets (each with its worker flag, type, default and campaign range), and the flags only the worker has.

registry.json is the single source: the command line (cli.py) takes its choices and defaults from here, train.py
its models' native image sizes, reductions/ one unit per reduction; ringlab's
TypeScript side reads the same file. No torch here: the command line is checked before torch is imported.
"""

import json
from pathlib import Path

PATH = Path(__file__).resolve().parent / "registry.json"

with PATH.open(encoding="utf-8") as _file:
    _REGISTRY = json.load(_file)

# Models in the file's order (each built by models/), the kind of each (image: a CNN classifying images; language: a
# transformer predicting the next token), the parameter count, an image model's native input size and a language
# model's shape (its family's fields; a gpt2 entry's kvHeads are its heads, its ffnWidth 4 x width, its embeddings
# untied, its maxPositions its sequenceLength).
MODELS = tuple(_REGISTRY["models"])
MODEL_KIND = {name: model["kind"] for name, model in _REGISTRY["models"].items()}
PARAMETER_COUNT = {name: model["parameters"] for name, model in _REGISTRY["models"].items()}
NATIVE_IMAGE_SIZE = {
    name: model["imageSize"] for name, model in _REGISTRY["models"].items() if model["kind"] == "image"
}


def _shape(model: dict) -> dict:
    return {
        "family": model.get("family", "gpt2"),
        "layers": model["layers"],
        "width": model["width"],
        "heads": model["heads"],
        "kvHeads": model.get("kvHeads", model["heads"]),
        "ffnWidth": model.get("ffnWidth", 4 * model["width"]),
        "vocab": model["vocab"],
        "tiedEmbeddings": model.get("tiedEmbeddings", False),
        "ropeTheta": model.get("ropeTheta"),
        "sequenceLength": model["sequenceLength"],
        "maxPositions": model.get("maxPositions", model["sequenceLength"]),
    }


LANGUAGE_SHAPE = {name: _shape(model) for name, model in _REGISTRY["models"].items() if model["kind"] == "language"}


def language_shape(model: str):
    """A language model's shape as registry.json gives it (family, layers, width, heads, kvHeads, ffnWidth, vocab,
    tiedEmbeddings, ropeTheta, sequenceLength, maxPositions); None for an image model."""
    return LANGUAGE_SHAPE.get(model)


# How gradients are summed (communication strategies), in the file's order.
REDUCTIONS = tuple(_REGISTRY["reductions"])
# Each reduction's entry: {about, ddpHook, probedAs}.
REDUCTION_ENTRIES = _REGISTRY["reductions"]
# The reductions the probe can time (a plain sum over ranks); the others train only, over the link of the one named
# by their probedAs.
PROBED_REDUCTIONS = tuple(name for name, entry in _REGISTRY["reductions"].items() if entry["probedAs"] == name)

# How the model is laid out over the ranks (parallelism's values), in the file's order: one module each in parallel/.
LAYOUTS = tuple(_REGISTRY["layouts"])
# Each layout's entry: {about, refusesTiedEmbeddings (why it cannot train a model whose head is its embedding)}.
LAYOUT_ENTRIES = _REGISTRY["layouts"]

# Campaign name -> {flag, type (int, number, enum, switch), default, choices (a list, "reductions" or "layouts"), min,
# max, gt, lt, needs, excludes, about}. Ranges are the campaign's; the worker's own checks may be wider.
TRAIN_KNOBS = _REGISTRY["trainKnobs"]

# What the probe can time (allreduce --collective), as nccl-tests has them, in the file's order.
COLLECTIVES = tuple(_REGISTRY["collectives"])

# Combinations refused, each with why: {if: {axis: values}, then: {knob: allowed values}, because}. An axis is a train
# knob or "model" (the model's kind); null stands for a knob left unset.
RULES = tuple(_REGISTRY["rules"])

# Flags of `train` without a campaign knob -> why.
WORKER_ONLY = _REGISTRY["workerOnly"]


def knob_choices(name: str) -> tuple:
    """An enum knob's values; "reductions" stands for REDUCTIONS, "layouts" for LAYOUTS."""
    choices = TRAIN_KNOBS[name]["choices"]
    named = {"reductions": REDUCTIONS, "layouts": LAYOUTS}
    return named[choices] if isinstance(choices, str) else tuple(choices)


def knob_default(name: str):
    return TRAIN_KNOBS[name]["default"]


def knob_flag(name: str) -> str:
    return TRAIN_KNOBS[name]["flag"]

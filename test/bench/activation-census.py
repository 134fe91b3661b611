#!/usr/bin/env python3
"""The activation census behind ringlab's memory model for language models (src/workload/memory.ts): the bytes autograd
keeps for backward, per token, as a linear function of the transformer's shape, fitted over shapes of the worker's own
model (docker/worker/ringlab_worker/models/transformer.py) and written to src/catalogue/transformer-activations.json.

For each shape and precision it runs one forward pass and the loss in training mode under
torch.autograd.graph.saved_tensors_hooks, adds up the distinct storages autograd saves (parameters excluded) at two
batch sizes, and takes the difference per token. A least-squares fit over the shapes gives, per precision,

    bytes per token = A·L·h + B·L·H + C·h + D·V + E

(L layers, h width, H heads, V vocabulary): A·h + B·H per block (its LayerNorms, q, k, v, attention output and its
copy, the MLP's two wide tensors; B the attention's log-sum-exp per head), C·h + D·V for the final LayerNorm, the head
and the loss (its log-softmax), E the tokens themselves. With activation checkpointing a block keeps its input alone
(its width in fp32) and computes the rest again in backward, one block at a time.

bf16 is autocast to bfloat16 on the CPU, which keeps the same tensors as autocast on a GPU (LayerNorm and the loss in
fp32, matrix products in 16 bits). The attention's saved tensors are those of the CPU's scaled_dot_product_attention
kernel (flash attention: output and log-sum-exp, no score matrix), as the GPU's flash and memory-efficient kernels.

  .venv-worker/bin/python test/bench/activation-census.py            # prints the fit; --write updates the JSON
  .venv-worker/bin/python test/bench/activation-census.py --llama    # the Llama decoder's, shape by shape
test/worker/test_activation_census.py checks the committed coefficients against a fresh census of two shapes.
"""

import json
import os
import sys

import numpy as np
import torch

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(REPO, "docker", "worker"))
from ringlab_worker.models.llama import Llama, LlamaShape  # noqa: E402
from ringlab_worker.models.transformer import Transformer, TransformerShape, language_model_loss  # noqa: E402

OUTPUT = os.path.join(REPO, "src", "catalogue", "transformer-activations.json")
LLAMA_OUTPUT = os.path.join(REPO, "src", "catalogue", "llama-activations.json")
# (layers, width, heads, kvHeads, ffnWidth, vocab) of the worker's Llama decoder, grouped-query attention on and off.
LLAMA_SHAPES = [(1, 64, 4, 2, 192, 256), (2, 64, 4, 2, 192, 256), (2, 128, 8, 2, 384, 512), (1, 256, 8, 8, 512, 1024)]
SHAPES = [
    (1, 64, 4, 256),
    (2, 64, 4, 256),
    (3, 64, 2, 256),
    (1, 128, 4, 256),
    (2, 128, 8, 512),
    (1, 256, 8, 1024),
    (2, 96, 3, 2048),
    (3, 160, 5, 256),
]
SEQUENCE, SMALL, LARGE = 32, 2, 6
TERMS = ("layersTimesWidth", "layersTimesHeads", "width", "vocab", "constant")


def saved_bytes(model, batch: int, precision: str, vocab: int) -> int:
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(tensor):
        key = tensor.untyped_storage().data_ptr()
        if key not in parameters:
            seen[key] = tensor.untyped_storage().nbytes()
        return tensor

    tokens = torch.randint(0, vocab, (batch, SEQUENCE + 1))
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), autocast:
        language_model_loss(model(tokens[:, :-1]), tokens[:, 1:])
    return sum(seen.values())


def bytes_per_token(shape, precision: str) -> float:
    torch.manual_seed(0)
    model = Transformer(TransformerShape(*shape[:3], SEQUENCE, shape[3])).train()
    small, large = (saved_bytes(model, batch, precision, shape[3]) for batch in (SMALL, LARGE))
    return (large - small) / ((LARGE - SMALL) * SEQUENCE)


def llama_bytes_per_token(shape, precision: str) -> float:
    torch.manual_seed(0)
    layers, width, heads, kv_heads, ffn_width, vocab = shape
    model = Llama(LlamaShape(layers, width, heads, kv_heads, ffn_width, vocab, False, 10000.0, 512)).train()
    small, large = (saved_bytes(model, batch, precision, vocab) for batch in (SMALL, LARGE))
    return (large - small) / ((LARGE - SMALL) * SEQUENCE)


def llama_census() -> dict:
    """The worker's Llama decoder measured shape by shape (no fit): what src/workload/activations.ts's terms for the
    family must come to (test/workload/activations.test.ts)."""
    return {
        "$comment": "Written by test/bench/activation-census.py --llama: bytes autograd keeps per token of the "
        f"worker's Llama decoder at sequence {SEQUENCE}, with torch {torch.__version__}, checkpointing none.",
        "torch": torch.__version__,
        "shapes": [
            {
                "layers": shape[0],
                "width": shape[1],
                "heads": shape[2],
                "kvHeads": shape[3],
                "ffnWidth": shape[4],
                "vocab": shape[5],
                "fp32": llama_bytes_per_token(shape, "fp32"),
                "bf16": llama_bytes_per_token(shape, "bf16"),
            }
            for shape in LLAMA_SHAPES
        ],
    }


def features(shape):
    layers, width, heads, vocab = shape
    return [layers * width, layers * heads, width, vocab, 1]


def fit(precision: str) -> dict:
    x = np.array([features(shape) for shape in SHAPES], dtype=float)
    y = np.array([bytes_per_token(shape, precision) for shape in SHAPES])
    coefficients = np.linalg.lstsq(x, y, rcond=None)[0]
    worst = float(np.max(np.abs(x @ coefficients - y) / y))
    return {
        **{term: round(float(value), 3) for term, value in zip(TERMS, coefficients, strict=True)},
        "worstRelativeError": round(worst, 5),
    }


def main():
    if "--llama" in sys.argv:
        write(llama_census(), LLAMA_OUTPUT)
        return
    census = {
        "$comment": "Written by test/bench/activation-census.py (read its docstring): bytes autograd keeps per token, "
        "= layersTimesWidth·L·h + layersTimesHeads·L·H + width·h + vocab·V + constant, fitted over "
        f"{len(SHAPES)} shapes of the worker's transformer with torch {torch.__version__}.",
        "torch": torch.__version__,
        "fp32": fit("fp32"),
        "bf16": fit("bf16"),
    }
    write(census, OUTPUT)


def write(census: dict, path: str) -> None:
    print(json.dumps(census, indent=2))
    if "--write" in sys.argv:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(census, out, indent=2, ensure_ascii=False)
            out.write("\n")


if __name__ == "__main__":
    main()

"""Activation checkpointing of a language model's blocks (torch.utils.checkpoint, non-reentrant), in the modes
torchtitan offers (torchtitan/distributed/activation_checkpoint.py):

- none: every block keeps what autograd saves for backward.
- full: a block keeps only its input; backward computes its whole forward again (its tensor-parallel all-reduces
  too).
- selective: torchtitan's per-op policy (its selective_ac_option "op", through
  torch.utils.checkpoint.create_selective_checkpoint_contexts): a block keeps the outputs of attention's kernel, of
  its collectives and of every other matrix product, in the order its forward multiplies, and recomputes the rest
  (norms, activations, rotations, and the other matrix products). Recomputing is exact: the step's numbers are the
  same in every mode.

src/workload/transformer.ts counts the FLOPs each mode adds (recomputeFlopsPerToken). The block's forward is wrapped
in place, so parameter names (and the plans that use them) stay.
"""

import functools
from collections import defaultdict

import torch


def torch_needs(config):
    """What the mode asks of torch (torch_api.py)."""
    if config.activation_checkpointing != "selective":
        return []
    return [
        (
            "--activation-checkpointing selective",
            "torch.utils.checkpoint",
            "create_selective_checkpoint_contexts",
            None,
        )
    ]


def _matrix_products():
    return {torch.ops.aten.mm.default, torch.ops.aten.addmm.default}


def _kept_whole():
    """Ops whose outputs the policy keeps: attention's kernels (the CPU's and the GPU's) and the collectives whose
    results a recomputation would otherwise fetch again."""
    names = (
        ("aten", "_scaled_dot_product_flash_attention_for_cpu"),
        ("aten", "_scaled_dot_product_flash_attention"),
        ("aten", "_scaled_dot_product_efficient_attention"),
        ("aten", "_scaled_dot_product_cudnn_attention"),
        ("_c10d_functional", "all_reduce"),
        ("_c10d_functional", "reduce_scatter_tensor"),
        ("aten", "max"),
    )
    ops = set()
    for namespace, name in names:
        packet = getattr(getattr(torch.ops, namespace), name, None)
        if packet is not None:
            ops.add(packet.default)
    return ops


def _selective_context():
    """A fresh policy for one checkpointed call: it counts the call's matrix products, so that the 1st, 3rd, ... are
    kept and the 2nd, 4th, ... recomputed."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    products, whole = _matrix_products(), _kept_whole()
    counted = defaultdict(int)

    def policy(ctx, op, *args, **kwargs):
        if op in products:
            pass_name = "recompute" if ctx.is_recompute else "forward"
            counted[pass_name] += 1
            keep = counted[pass_name] % 2 == 1
        else:
            keep = op in whole
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def apply(blocks, mode: str) -> None:
    """Wraps each block's forward as `mode` says (none leaves them)."""
    if mode == "none":
        return
    from torch.utils.checkpoint import checkpoint

    options = {"use_reentrant": False}
    if mode == "selective":
        options["context_fn"] = _selective_context
    for block in blocks:
        block.forward = functools.partial(checkpoint, block.forward, **options)

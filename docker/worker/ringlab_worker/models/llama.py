"""A decoder-only language model with Llama's architecture (Meta's Llama 3; torchtitan's llama3 model), in plain
PyTorch.

Pre-norm blocks (RMSNorm, causal self-attention with rotary positions and grouped-query attention, RMSNorm, a SwiGLU
MLP of its own width), no biases, a final RMSNorm and a head that is its own matrix or the token embedding's (tied, as
Llama 3.2 1B and 3B). What registry.json's llama entries describe; src/workload/families/llama.ts counts the same.
Llama 3.1's RoPE frequency scaling (for contexts past 8192) is left out: it changes no parameter and no FLOP.

As in transformer.py (GPT-2's), q, k and v are three Linear layers and the blocks sit in a ModuleDict keyed "0", "1",
..., so that every layout splits the model without special cases. Attention reads its head counts from the widths it
is given (view(..., -1, head_dim)): under tensor parallelism each rank's q makes heads / tp query heads and its k and
v kv_heads / tp key and value heads, and the query heads of a rank are exactly those that share its key and value
heads (query head i uses key and value head i // (heads / kv_heads)), so a tensor degree that divides kv_heads splits
attention without a collective.
"""

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

# RMSNorm's epsilon in Meta's configs (rms_norm_eps).
NORM_EPS = 1e-5


@dataclass(frozen=True)
class LlamaShape:
    layers: int
    width: int
    heads: int
    kv_heads: int
    ffn_width: int
    vocab: int
    tied_embeddings: bool
    rope_theta: float
    max_positions: int  # the longest sequence the model takes

    def __post_init__(self):
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not a multiple of heads {self.heads}")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads {self.kv_heads} does not divide heads {self.heads}")

    @property
    def head_dim(self) -> int:
        return self.width // self.heads


def parameter_count(shape: LlamaShape) -> int:
    """Exactly the model's: per block q and the output h^2 each, k and v h x kv_heads x head_dim each, w1, w3 and w2
    h x f each, two RMSNorms h each; the token embedding V h, the final RMSNorm h and, untied, the head h V."""
    h, f = shape.width, shape.ffn_width
    kv = shape.kv_heads * shape.head_dim
    block = 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h
    return shape.layers * block + shape.vocab * h + h + (0 if shape.tied_embeddings else h * shape.vocab)


def rotary_tables(length: int, head_dim: int, theta: float, device):
    """cos and sin of each position's angle for each pair of a head's dimensions (RoFormer's rotary embedding, Su et
    al. 2021): (length, head_dim / 2) each, in fp32."""
    frequencies = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(length, device=device, dtype=torch.float32), frequencies)
    return angles.cos(), angles.sin()


def rotate(x, cos, sin):
    """x (batch, heads, length, head_dim) turned by each position's angles, its two halves as the pairs (Hugging
    Face's layout of Llama's rotation)."""
    first, second = x.float().chunk(2, dim=-1)
    turned = torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)
    return turned.type_as(x)


class Attention(nn.Module):
    def __init__(self, shape: LlamaShape):
        super().__init__()
        self.head_dim, self.theta = shape.head_dim, shape.rope_theta
        kv_width = shape.kv_heads * shape.head_dim
        self.q = nn.Linear(shape.width, shape.width, bias=False)
        self.k = nn.Linear(shape.width, kv_width, bias=False)
        self.v = nn.Linear(shape.width, kv_width, bias=False)
        self.proj = nn.Linear(shape.width, shape.width, bias=False)

    def forward(self, x):
        batch, length, _ = x.shape
        q, k, v = (
            layer(x).view(batch, length, -1, self.head_dim).transpose(1, 2) for layer in (self.q, self.k, self.v)
        )
        cos, sin = rotary_tables(length, self.head_dim, self.theta, x.device)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        # Each key and value head serves heads / kv_heads query heads (torch repeats them inside the kernel).
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=q.shape[1] != k.shape[1])
        return self.proj(y.transpose(1, 2).reshape(batch, length, -1))


class SwiGLU(nn.Module):
    """Shazeer 2020's gated MLP: w2(silu(w1 x) * w3 x)."""

    def __init__(self, width: int, ffn_width: int):
        super().__init__()
        self.w1 = nn.Linear(width, ffn_width, bias=False)
        self.w3 = nn.Linear(width, ffn_width, bias=False)
        self.w2 = nn.Linear(ffn_width, width, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, shape: LlamaShape):
        super().__init__()
        self.norm1 = nn.RMSNorm(shape.width, eps=NORM_EPS)
        self.attention = Attention(shape)
        self.norm2 = nn.RMSNorm(shape.width, eps=NORM_EPS)
        self.mlp = SwiGLU(shape.width, shape.ffn_width)

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Llama(nn.Module):
    """tokens (batch, length) -> logits (batch, length, vocab). A pipeline stage without the embedding takes the
    previous stage's hidden states instead, and one without the head returns its own."""

    def __init__(self, shape: LlamaShape):
        super().__init__()
        self.shape = shape
        self.embedding = nn.Embedding(shape.vocab, shape.width)
        self.blocks = nn.ModuleDict({str(index): Block(shape) for index in range(shape.layers)})
        self.norm = nn.RMSNorm(shape.width, eps=NORM_EPS)
        self.head = nn.Linear(shape.width, shape.vocab, bias=False)
        self.apply(_init)
        if shape.tied_embeddings:
            self.head.weight = self.embedding.weight

    def forward(self, x):
        if self.embedding is not None:
            x = self.embedding(x)
        for block in self.blocks.values():
            x = block(x)
        if self.norm is not None:
            x = self.norm(x)
        return self.head(x) if self.head is not None else x


def _init(module):
    """normal(0, 0.02) weights (Hugging Face's initializer_range for Llama), RMSNorms at one (torch's default)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)


# Megatron's split of a block, as torchtitan's parallelize_llama writes it: q, k, v, w1 and w3 by columns (a rank
# computes heads / tp query heads, kv_heads / tp key and value heads, f / tp hidden units), the attention's output
# and w2 by rows, whose partial outputs are summed (one all-reduce each in forward, one each in backward).
TENSOR_PLAN = {
    "attention.q": "colwise",
    "attention.k": "colwise",
    "attention.v": "colwise",
    "attention.proj": "rowwise",
    "mlp.w1": "colwise",
    "mlp.w3": "colwise",
    "mlp.w2": "rowwise",
}

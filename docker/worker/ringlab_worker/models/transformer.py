"""A decoder-only transformer language model with GPT-2's architecture (Radford et al. 2019), in plain PyTorch.

Pre-norm blocks (LayerNorm, causal self-attention, LayerNorm, a 4x-wide GELU MLP), learned positions, a final
LayerNorm and a language-model head. Two choices differ from GPT-2's own code, both as pytorch/torchtitan's models
make them, so that every layout splits the model without special cases:
- q, k and v are three Linear layers (GPT-2 has one of 3x the width): tensor parallelism shards each by columns;
- the head is not tied to the token embedding: a pipeline puts the embedding on its first stage and the head on its
  last.
The blocks sit in a ModuleDict keyed "0", "1", ...: a pipeline stage keeps its own and drops the others, and the
parameters keep their names (blocks.7.mlp.fc.weight) on whatever rank holds them.

Attention reads its head count from the width it is given (view(..., -1, head_dim)): under tensor parallelism each
rank's q, k and v produce width / tp columns, i.e. heads / tp heads.
"""

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class TransformerShape:
    layers: int
    width: int
    heads: int
    sequence_length: int  # the longest context: the learned positions' count
    vocab: int

    def __post_init__(self):
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not a multiple of heads {self.heads}")


def parameter_count(shape: TransformerShape) -> int:
    """Exactly the model's: per block 12 h^2 + 13 h (q, k, v, proj: 4(h^2 + h); fc and its projection: 8 h^2 + 5 h;
    two LayerNorms: 4 h), the embeddings V h + S h, the final LayerNorm 2 h and the head h V (no bias). ringlab's
    TypeScript side computes the same (src/workload/transformer.ts)."""
    h = shape.width
    return shape.layers * (12 * h * h + 13 * h) + shape.vocab * h + shape.sequence_length * h + 2 * h + h * shape.vocab


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.head_dim = width // heads
        self.q = nn.Linear(width, width)
        self.k = nn.Linear(width, width)
        self.v = nn.Linear(width, width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        batch, length, _ = x.shape
        q, k, v = (
            layer(x).view(batch, length, -1, self.head_dim).transpose(1, 2) for layer in (self.q, self.k, self.v)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(batch, length, -1))


class MLP(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.fc = nn.Linear(width, 4 * width)
        self.proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attention = Attention(width, heads)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = MLP(width)

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Transformer(nn.Module):
    """tokens (batch, length) -> logits (batch, length, vocab). A pipeline stage without the embedding takes the
    previous stage's hidden states instead, and one without the head returns its own."""

    def __init__(self, shape: TransformerShape):
        super().__init__()
        self.shape = shape
        self.embedding = nn.Embedding(shape.vocab, shape.width)
        self.positions = nn.Embedding(shape.sequence_length, shape.width)
        self.blocks = nn.ModuleDict({str(index): Block(shape.width, shape.heads) for index in range(shape.layers)})
        self.norm = nn.LayerNorm(shape.width)
        self.head = nn.Linear(shape.width, shape.vocab, bias=False)
        self.apply(_gpt2_init)

    def forward(self, x):
        if self.embedding is not None:
            positions = torch.arange(x.shape[1], device=x.device)
            x = self.embedding(x) + self.positions(positions)
        for block in self.blocks.values():
            x = block(x)
        if self.norm is not None:
            x = self.norm(x)
        return self.head(x) if self.head is not None else x


def _gpt2_init(module):
    """GPT-2's: normal(0, 0.02) weights, zero biases, LayerNorms at one and zero (torch's own default)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if getattr(module, "bias", None) is not None:
            nn.init.zeros_(module.bias)


def language_model_loss(logits, targets):
    """Mean cross-entropy of every position's next token."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


# Megatron's split of a block, as torchtitan writes it: q, k, v and the MLP's first layer by columns (each rank computes
# heads / tp heads and 4h / tp hidden units), the attention's and the MLP's projections by rows, whose partial outputs
# are summed (one all-reduce each in forward, one each in backward).
TENSOR_PLAN = {
    "attention.q": "colwise",
    "attention.k": "colwise",
    "attention.v": "colwise",
    "attention.proj": "rowwise",
    "mlp.fc": "colwise",
    "mlp.proj": "rowwise",
}

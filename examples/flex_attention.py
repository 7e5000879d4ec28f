"""FlexAttention through torch.compile: a user target whose one call launches several
kernels (the compiled attention kernel and small setup kernels), so its report is a
multi-launch report like most users' own code produces.

    make profile TARGET=examples/flex_attention.py:attention MAX_LAUNCHES=16
"""
import torch
from torch.nn.attention.flex_attention import flex_attention

_compiled = torch.compile(flex_attention)


def attention(q, k, v):
    """softmax(q k^T / sqrt(d)) v by FlexAttention (no score_mod, no block mask)."""
    return _compiled(q, k, v)


attention.layout = "bhsd"  # FlexAttention takes (batch, heads, seq, d)
attention.title = "FlexAttention (torch.compile)"

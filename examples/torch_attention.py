"""Plain PyTorch attention in the (batch, heads, seq, d) layout: the example of a target
that sets ``layout = "bhsd"`` and launches several kernels per call (README, "Your own
kernel"). It materialises the seq x seq scores, so it is a baseline, not a contender.

    make profile TARGET=examples/torch_attention.py:attention SEQ=1024 MAX_LAUNCHES=16
"""
import math

import torch


def attention(q, k, v):
    """Plain PyTorch: softmax(q k^T / sqrt(d)) v with the scores in memory."""
    scores = torch.matmul(q, k.transpose(-1, -2))
    scores.mul_(1.0 / math.sqrt(q.shape[-1]))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


attention.layout = "bhsd"  # q, k, v arrive as (batch, heads, seq, d) views; return the same layout
attention.title = "PyTorch example: materialised scores (bhsd)"

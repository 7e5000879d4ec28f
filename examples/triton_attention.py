"""A deliberately simple FlashAttention-style forward pass in Triton: the example for
`make profile TARGET=examples/triton_attention.py:attention` (README, "Your own kernel").

One program per (block of 128 queries, batch x head) walks all keys in blocks of 64 with
the online softmax; scores in float32, P cast to the input dtype for the second product.
No causal mask, no dropout, no tuning, no pipelining hints beyond Triton's defaults.
Layout: q, k, v and the output are (batch, seq, heads, d) contiguous, the suite's layout.
"""
import math

import torch
import triton
import triton.language as tl

BLOCK_M = 128   # queries per program
BLOCK_N = 64    # keys per loop step
LOG2_E = 1.4426950408889634  # exp(x) = exp2(x * log2(e)): the scale folds into one multiply


@triton.jit
def _attn_fwd(Q, K, V, O, qk_scale, stride_b, stride_s, stride_h, seq_len, n_heads,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_D: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = (bh // n_heads) * stride_b + (bh % n_heads) * stride_h
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_D)
    row_ok = rows[:, None] < seq_len
    q = tl.load(Q + base + rows[:, None] * stride_s + dims[None, :], mask=row_ok, other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)   # running row max (log2 units)
    l_i = tl.zeros([BLOCK_M], tl.float32)                 # running row sum of exp2
    acc = tl.zeros([BLOCK_M, HEAD_D], tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        col_ok = cols < seq_len
        k_t = tl.load(K + base + cols[None, :] * stride_s + dims[:, None], mask=col_ok[None, :], other=0.0)
        s = tl.dot(q, k_t) * qk_scale
        s = tl.where(col_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None] * stride_s + dims[None, :], mask=col_ok[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(O + base + rows[:, None] * stride_s + dims[None, :], acc.to(O.dtype.element_ty), mask=row_ok)


def attention(q, k, v):
    """Simple Triton attention (online softmax, 128x64 tiles)."""
    batch, seq, heads, d = q.shape
    if not (q.is_contiguous() and k.is_contiguous() and v.is_contiguous()):
        raise ValueError("q, k, v must be contiguous (batch, seq, heads, d) tensors")
    o = torch.empty_like(q)
    grid = (triton.cdiv(seq, BLOCK_M), batch * heads)
    _attn_fwd[grid](q, k, v, o, LOG2_E / math.sqrt(d), q.stride(0), q.stride(1), q.stride(2), seq, heads,
                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, HEAD_D=d, num_warps=8, num_stages=2)
    return o


attention.title = "Triton example: simple online-softmax attention"

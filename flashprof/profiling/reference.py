"""References: PyTorch SDPA with the FLASH_ATTENTION backend (FlashAttention-2 compiled
into PyTorch, "ref") and the CUDNN_ATTENTION backend (Hopper-native, "cudnn"), plus the
plain-math attention used by the correctness gate at low and high precision."""
from __future__ import annotations

import math

from flashprof.kernels.cli import FlashprofError

REFERENCES = {
    "ref": ("FLASH_ATTENTION", "FlashAttention-2 (PyTorch SDPA flash backend)", "flash_fwd_kernel"),
    "cudnn": ("CUDNN_ATTENTION", "cuDNN SDPA (Hopper-native)", "sdpa|fprop|cudnn"),
}


def sdpa(backend: str):
    """A callable (q, k, v, out=None) -> o on (B, S, H, D) tensors through one SDPA backend."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    if backend not in REFERENCES:
        raise FlashprofError(f"unknown reference {backend!r}: choose one of {', '.join(REFERENCES)}")
    be = getattr(SDPBackend, REFERENCES[backend][0])

    def run(q, k, v, out=None):
        with sdpa_kernel([be]):
            o = scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        o = o.transpose(1, 2)
        if out is not None:
            out.copy_(o)
            return out
        return o

    run.__name__ = f"sdpa_{backend}"
    return run


def math_attention(q, k, v, dtype=None):
    """softmax(q k^T / sqrt(d)) v with every op in ``dtype`` (default: the inputs' dtype).

    At the inputs' 16-bit dtype this is "the low-precision PyTorch" of FA2's test rule;
    at float32 it is the higher-precision reference.
    """
    import torch

    if dtype is not None:
        q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    qh, kh, vh = (x.transpose(1, 2) for x in (q, k, v))  # (B, H, S, D)
    s = torch.matmul(qh, kh.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    p = torch.softmax(s.float(), dim=-1).to(s.dtype)
    return torch.matmul(p, vh).transpose(1, 2)

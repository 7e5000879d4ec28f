"""The correctness gate (FlashAttention-2's rule).

A kernel passes when, on fresh random inputs with its output poisoned (NaN) beforehand,
    max|out - ref_hi| <= 2 * max|ref_lo - ref_hi|
where ref_hi is plain-math attention in float32 on the same inputs and ref_lo the same
math in the inputs' 16-bit dtype: the kernel may be at most twice as wrong as PyTorch
itself at low precision. Any element left unwritten (still NaN) fails.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from flashprof.kernels.cli import FlashprofError
from flashprof.profiling.workload import Shape, make_inputs

TOLERANCE_FACTOR = 2.0


@dataclass
class Verdict:
    ok: bool
    max_err: float          # max |out - ref_hi|
    ref_err: float          # max |ref_lo - ref_hi|
    unwritten: int          # elements still NaN/inf after the call
    reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def verdict(max_err: float, ref_err: float, unwritten: int, factor: float = TOLERANCE_FACTOR) -> Verdict:
    """Pure decision from the three measured numbers (kept free of torch for tests)."""
    if unwritten:
        return Verdict(False, max_err, ref_err, unwritten, f"{unwritten} output elements unwritten or non-finite")
    if not math.isfinite(max_err):
        return Verdict(False, max_err, ref_err, unwritten, "error is not finite")
    if not math.isfinite(ref_err):  # a NaN bound would let any kernel through
        return Verdict(False, max_err, ref_err, unwritten, "low-precision reference error is not finite")
    if max_err > factor * ref_err:
        return Verdict(False, max_err, ref_err, unwritten,
                       f"max error {max_err:.3e} > {factor:g} x low-precision PyTorch error {ref_err:.3e}")
    return Verdict(True, max_err, ref_err, unwritten)


def check(fn, shape: Shape, dtype: str, seed: int | None = None, chunk: int = 4) -> Verdict:
    """Run ``fn(q, k, v, out=o)`` on fresh inputs and judge it against float32 math.

    References are computed ``chunk`` batch entries at a time so large shapes fit.
    """
    import torch

    from flashprof.profiling.reference import math_attention

    q, k, v = make_inputs(shape, dtype, seed=seed)
    out = torch.full_like(q, float("nan"))
    res = fn(q, k, v, out=out)
    if res is not None and res.data_ptr() != out.data_ptr():
        out.copy_(res)
    torch.cuda.synchronize()
    unwritten = int((~torch.isfinite(out)).sum().item())
    max_err = 0.0
    ref_err = 0.0
    for b0 in range(0, shape.batch, chunk):
        sl = slice(b0, b0 + chunk)
        hi = math_attention(q[sl], k[sl], v[sl], dtype=torch.float32)
        lo = math_attention(q[sl], k[sl], v[sl]).float()
        o = out[sl].float()
        max_err = max(max_err, float(torch.nan_to_num(o - hi, nan=float("inf")).abs().max()))
        ref_err = max(ref_err, float((lo - hi).abs().max()))
        del hi, lo, o
    return verdict(max_err, ref_err, unwritten)


def refusal(label: str, shape: Shape, dtype: str, v: Verdict) -> str:
    """The one line that refuses a kernel failing the gate."""
    return (f"{label} fails the correctness check at {shape.batch}x{shape.seq}x"
            f"{shape.heads}x{shape.d_head} {dtype}: {v.reason}; refusing to continue")


def require(fn, shape: Shape, dtype: str, label: str) -> Verdict:
    """Gate used before benchmarking or profiling: a wrong kernel is refused."""
    v = check(fn, shape, dtype)
    if not v.ok:
        raise FlashprofError(refusal(label, shape, dtype, v))
    return v

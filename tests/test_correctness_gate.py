"""The correctness gate: FA2's rule max|out - ref_hi| <= 2 * max|ref_lo - ref_hi|, with
unwritten (NaN) outputs failing. The decision is pure and tested without torch; check()
itself runs on CPU torch when that is installed (CI has no torch: skipped there)."""
from __future__ import annotations

import math

import pytest

from flashprof.profiling import correctness
from flashprof.profiling.correctness import Verdict, require, verdict
from flashprof.kernels.cli import FlashprofError
from flashprof.profiling.workload import Shape


@pytest.mark.parametrize("ref_err", [2.0**-15, 1e-3, 0.25, 3.0])
def test_default_bound_is_fa2s_twice_the_low_precision_error(ref_err):
    # FA2's tests: max|out - ref| <= 2 * max|ref_lowp - ref|. Checked by behaviour at several
    # magnitudes, not by reading the constant back.
    assert verdict(1.999 * ref_err, ref_err, 0).ok
    assert not verdict(2.001 * ref_err, ref_err, 0).ok


def test_passes_exactly_at_the_boundary():
    v = verdict(0.5, 0.25, 0)  # 0.5 == 2 * 0.25, exactly representable
    assert v.ok and v.reason == "" and (v.max_err, v.ref_err, v.unwritten) == (0.5, 0.25, 0)
    ref = 3.0517578125e-05  # 2**-15, a typical fp16 error
    assert verdict(2 * ref, ref, 0).ok


def test_fails_just_above_the_boundary():
    v = verdict(math.nextafter(0.5, 1.0), 0.25, 0)
    assert not v.ok
    assert v.reason == "max error 5.000e-01 > 2 x low-precision PyTorch error 2.500e-01"


def test_well_inside_passes_and_exact_zero():
    assert verdict(1e-4, 1e-3, 0).ok
    assert verdict(0.0, 0.0, 0).ok            # both exact: fine
    assert not verdict(1e-9, 0.0, 0).ok       # PyTorch exact but kernel not: fails


def test_unwritten_elements_fail_even_when_error_is_small():
    v = verdict(0.0, 1e-3, 7)
    assert not v.ok and v.reason == "7 output elements unwritten or non-finite"
    assert not verdict(1e-6, 1e-3, 1).ok


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_non_finite_error_fails(bad):
    v = verdict(bad, 1e-3, 0)
    assert not v.ok and v.reason == "error is not finite"


@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_non_finite_reference_error_fails(bad):
    """A NaN/inf bound would otherwise let any kernel through (nan comparisons are False)."""
    v = verdict(1e-3, bad, 0)
    assert not v.ok and v.reason == "low-precision reference error is not finite"


def test_custom_factor():
    assert verdict(0.75, 0.25, 0, factor=3).ok
    assert not verdict(0.75, 0.25, 0, factor=2).ok


def test_verdict_to_dict_for_sidecars():
    assert verdict(0.5, 0.25, 0).to_dict() == {"ok": True, "max_err": 0.5, "ref_err": 0.25,
                                               "unwritten": 0, "reason": ""}


def test_require_refuses_a_wrong_kernel(monkeypatch):
    bad = Verdict(False, 1.0, 1e-3, 0, "max error 1.000e+00 > 2 x low-precision PyTorch error 1.000e-03")
    monkeypatch.setattr(correctness, "check", lambda fn, shape, dtype: bad)
    with pytest.raises(FlashprofError) as e:
        require(object(), Shape(2, 1024, 4), "fp16", "kernel 6: FP32 instruction fusion")
    assert str(e.value) == ("kernel 6: FP32 instruction fusion fails the correctness check at 2x1024x4x128 fp16: "
                            "max error 1.000e+00 > 2 x low-precision PyTorch error 1.000e-03; refusing to continue")


def test_require_passes_a_good_kernel_through(monkeypatch):
    good = Verdict(True, 1e-4, 1e-3, 0)
    monkeypatch.setattr(correctness, "check", lambda fn, shape, dtype: good)
    assert require(object(), Shape(2, 1024, 4), "bf16", "k") is good


# ------------------------------------------------ check() itself, on CPU torch
@pytest.fixture
def cpu_check(monkeypatch):
    torch = pytest.importorskip("torch", reason="torch is not installed (CPU-only CI); the pure verdict "
                                                "tests above cover the decision")
    from flashprof.profiling import workload

    real = workload.make_inputs
    monkeypatch.setattr(correctness, "make_inputs",
                        lambda shape, dtype, seed=None: real(shape, dtype, seed=seed, device="cpu"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    return torch


SMALL = Shape(1, 64, 2)


def test_check_accepts_plain_math(cpu_check):  # pragma: no cover - needs torch
    from flashprof.profiling.reference import math_attention

    def kernel(q, k, v, out=None):
        out.copy_(math_attention(q, k, v, dtype=cpu_check.float32))
        return out

    v = correctness.check(kernel, SMALL, "bf16", seed=1)
    assert v.ok and v.unwritten == 0 and v.max_err <= 2 * v.ref_err


def test_check_rejects_unwritten_rows(cpu_check):  # pragma: no cover - needs torch
    from flashprof.profiling.reference import math_attention

    def kernel(q, k, v, out=None):
        o = math_attention(q, k, v, dtype=cpu_check.float32)
        out[:, :-1].copy_(o[:, :-1])  # forgets the last row: it stays NaN
        return out

    v = correctness.check(kernel, SMALL, "bf16", seed=1)
    assert not v.ok and v.unwritten == SMALL.heads * SMALL.d_head


def test_check_rejects_wrong_values(cpu_check):  # pragma: no cover - needs torch
    def kernel(q, k, v, out=None):
        out.copy_(v)  # plausible magnitude, wrong answer
        return out

    v = correctness.check(kernel, SMALL, "bf16", seed=1)
    assert not v.ok and "max error" in v.reason

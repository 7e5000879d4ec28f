"""The HMMA-mix microbenchmark (ceilings binary, `mix` mode): its SASS holds what each point
claims (K interleaved instructions per HMMA; operand reuse on or off), and the analysis stage's
bound and missing cost, worked by hand for synthetic records."""
from __future__ import annotations

import json
import math

import pytest

from flashprof.kernels import ceilings as bench
from flashprof.analysis.stages.mma_mix import mix_frame

OPCODE = {1: "FFMA", 2: "IMAD", 3: "MUFU.EX2", 4: "FMNMX"}


@pytest.fixture(scope="module", params=["sm_90", "sm_80"])
def sass(request, toolchain):
    return request.param, bench.listing(bench.build(request.param, cubin=True))


@pytest.mark.parametrize("kind,k", [(1, 1), (1, 4), (1, 8), (2, 2), (2, 6), (3, 1), (3, 4), (4, 1), (4, 3), (4, 8)])
def test_each_point_interleaves_k_instructions_per_hmma(sass, kind, k):
    _arch, listings = sass
    reused = {}
    for reuse in (True, False):
        insns = bench.function(listings, "k_mma_mix", f"ILi{kind}ELi{k}ELb{int(reuse)}E")
        hmma = [ops for mn, ops in insns if mn == "HMMA.16816.F32"]
        other = sum(mn == OPCODE[kind] or (kind == 2 and mn.startswith("IMAD") and "MOV" not in mn) for mn, _ in insns)
        assert len(hmma) >= 8 and len(hmma) % 8 == 0
        # K per HMMA in the loop body, give or take the set-up instructions outside it
        assert k * len(hmma) <= other <= k * len(hmma) + 24, (reuse, other, len(hmma))
        reused[reuse] = sum(".reuse" in ops for ops in hmma) / len(hmma)
    # two operand sets alternating leave little to reuse; one set is reused wherever the
    # interleaved instructions leave the operand slots alone
    assert reused[False] <= 0.25 and reused[True] > reused[False], reused


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_integer_adds_are_k_per_hmma_split_between_alu_and_fma_pipes(sass, k):
    """ptxas neither fuses the chained adds (each one's sum is read by another chain) nor
    keeps them on one pipe: IADD3 (ALU) and IMAD.IADD (FMA) both occur, K per HMMA in all."""
    arch, listings = sass
    for reuse in (True, False):
        insns = bench.function(listings, "k_mma_mix", f"ILi5ELi{k}ELb{int(reuse)}E")
        hmma = sum(mn == "HMMA.16816.F32" for mn, _ in insns)
        iadd3 = sum(mn.startswith("IADD3") for mn, _ in insns)
        imad = sum(mn.startswith("IMAD") and "MOV" not in mn for mn, _ in insns)
        assert hmma >= 8 and k * hmma <= iadd3 + imad <= k * hmma + 24, (arch, reuse, hmma, iadd3, imad)
        if arch == "sm_90":
            assert iadd3 >= k * hmma / 4 and imad >= k * hmma / 4, (reuse, iadd3, imad)


@pytest.mark.parametrize("k", [1, 4, 8])
def test_ffma3_interleaves_k_ffmas_reading_three_registers(sass, k):
    """kind 6: each interleaved FFMA names three source registers, no immediate or constant."""
    import re

    _arch, listings = sass
    for reuse in (True, False):
        insns = bench.function(listings, "k_mma_mix", f"ILi6ELi{k}ELb{int(reuse)}E")
        hmma = sum(mn == "HMMA.16816.F32" for mn, _ in insns)
        ffma = [ops for mn, ops in insns if mn == "FFMA"]
        assert hmma >= 8 and k * hmma <= len(ffma) <= k * hmma + 24, (reuse, hmma, len(ffma))
        three = [ops for ops in ffma if len(re.findall(r"\bR\d+", ops)) == 4]
        assert len(three) >= k * hmma, (reuse, len(three), k * hmma)


def test_k0_reuses_every_operand_it_can(sass):
    _arch, listings = sass
    share = {}
    for reuse in (True, False):
        hmma = [ops for mn, ops in bench.function(listings, "k_mma_mix", f"ILi0ELi0ELb{int(reuse)}E")
                if mn == "HMMA.16816.F32"]
        share[reuse] = sum(".reuse" in ops for ops in hmma) / len(hmma)
    assert share[True] >= 0.8 and share[False] <= 0.1, share


def _rec(name, hmma_per_clk):
    work = 1e9
    return {"record": "measurement", "name": name, "kind": "mix", "work": work,
            "cycles": [work / 4096 / hmma_per_clk] * 3, "check": "ok"}


def test_bound_and_missing_cost_by_hand():
    peaks = {"mma_f16_f32": 2730.5, "ffma": 253.0, "mufu_ex2": 16.0}
    base = 2730.5 / 4096  # HMMA per clk per SM at the tensor roof
    recs = [_rec("mma_mix_none_k0", base), _rec("mma_mix_ex2_k1", 0.5 * base), _rec("mma_mix_ffma_k8", 0.6 * base),
            _rec("mma_mix_ffma_k2", base)]
    df = mix_frame(recs, peaks).set_index("name")
    interval = 4096 * 4 / 2730.5  # 6.0 cycles per HMMA per scheduler
    ex2 = df.loc["mma_mix_ex2_k1"]  # MUFU: 16/32/4 = 0.125 warp-inst/clk/scheduler: 8 cycles per EX2
    assert ex2["bound_by"] == "ex2 pipe" and ex2["bound"] == pytest.approx(interval * 0.125)
    assert ex2["rel"] == pytest.approx(0.5) and ex2["missing_pct"] == pytest.approx(100 * (1 - 0.5 / (interval / 8)))
    ff = df.loc["mma_mix_ffma_k8"]  # 9 issue slots per HMMA > 6 cycles: issue-bound at 6/9
    assert ff["bound_by"] == "issue slots" and ff["bound"] == pytest.approx(interval / 9)
    assert ff["missing_pct"] == pytest.approx(100 * (1 - 0.6 / (interval / 9)))
    mn = mix_frame([_rec("mma_mix_none_k0", base), _rec("mma_mix_fmnmx_k4", 0.5 * base)], peaks).iloc[0]
    # ALU: 64/32/4 = 0.5 warp-inst/clk/scheduler; 4 per 6-cycle HMMA need 8 cycles: ALU-bound at 6/8
    assert mn["bound_by"] == "fmnmx pipe" and mn["bound"] == pytest.approx(interval * 0.5 / 4)
    two = df.loc["mma_mix_ffma_k2"]  # 3 slots per 6-cycle HMMA: nothing should be lost
    assert two["bound"] == 1.0 and two["missing_pct"] == pytest.approx(0.0) and math.isfinite(two["spread_pct"])

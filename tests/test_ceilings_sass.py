"""The ceilings microbenchmarks compiled without a GPU: the SASS holds the instruction each
one means to time, the latency chains are dependent (each link reads the last one's
result) and the throughput loops are not.

Uses the cuda-toolkit wheels like tests/test_sass.py: skips without them, fails under CI=true.
"""
from __future__ import annotations

import os

import pytest

from flashprof.kernels import ceilings as bench

LINKS = 16  # kLinkUnroll in latency.cuh: the shortest chain the loop body holds


@pytest.fixture(scope="module", params=["sm_90", "sm_80"])
def sass(request, toolchain):
    return request.param, bench.listing(bench.build(request.param, cubin=True))


def _count(insns, mnemonic):
    return sum(mn == mnemonic for mn, _ in insns)


# (function name parts, instruction timed, least count in the function)
TIMED = [
    (("k_mma_tput", "Lb0E"), "HMMA.16816.F32", 8),
    (("k_mma_tput", "Lb1E"), "HMMA.16816.F32.BF16", 8),
    (("k_ffma_tput",), "FFMA", 128),
    (("k_ex2_tput",), "MUFU.EX2", 128),
    (("k_smem_ld_tput", "Lb1E"), "LDSM.16.M88.4", 8),
    (("k_smem_ld_tput", "Lb0E"), "LDS.128", 8),
    (("k_smem_st_tput",), "STS.128", 8),
    # kernels/csrc's cp_async_16 (.cg with the .L2::128B hint), as the FA2 kernels issue it
    (("k_cp_async_tput",), "LDGSTS.E.BYPASS.LTC128B.128", 2),
    (("k_l2_read",), "LDG.E.128.STRONG.GPU", 4),
    (("k_copy",), "STG.E.128", 4),
    (("k_lat_hmma",), "HMMA.16816.F32", LINKS),
    (("k_lat_smem", "Lb1E"), "LDSM.16.M88.4", LINKS),
    (("k_lat_smem", "Lb0E"), "LDS", LINKS),
    (("k_lat_fpu",), "MUFU.EX2", LINKS),
    (("k_lat_fpu",), "FFMA", LINKS),
    (("k_lat_bar",), "BAR.SYNC.DEFER_BLOCKING", LINKS),
    (("k_lat_cp_async",), "LDGSTS.E.BYPASS.LTC128B.128", LINKS),
]


@pytest.mark.slow
@pytest.mark.parametrize("parts, mnemonic, least", TIMED, ids=lambda v: v if isinstance(v, str) else None)
def test_sass_holds_the_timed_instruction(sass, parts, mnemonic, least):
    arch, listings = sass
    assert _count(bench.function(listings, *parts), mnemonic) >= least, (arch, parts)


@pytest.mark.slow
def test_wgmma_only_in_the_sm_90a_build(sass):
    """sm_90 builds as sm_90a: the loop issues HGMMA 64x128x16 (fp32 accumulate), 8 per
    group, waiting for all but the last group; elsewhere the kernel is an empty stub."""
    arch, listings = sass
    for rs in ("ILb0E", "ILb1E"):  # SS and RS
        insns = bench.function(listings, "k_wgmma_tput", rs)
        hgmma = _count(insns, "HGMMA.64x128x16.F32")
        if arch != "sm_90":
            assert hgmma == 0
            continue
        assert hgmma >= 8 and bench.target(arch) == "sm_90a"
        waits = [ops for mn, ops in insns if mn == "WARPGROUP.DEPBAR.LE"]
        assert "gsb0, 0x1" in waits and "gsb0, 0x0" in waits
        # RS reads A from registers: the HGMMA's second operand is a register, never a descriptor
        a_ops = {ops.split(",")[1].strip()[:1] for mn, ops in insns if mn == "HGMMA.64x128x16.F32"}
        assert a_ops == ({"R"} if rs == "ILb1E" else {"g"})


def test_wgmma_latency_groups_hold_one_or_eight_dependent_wgmma(sass):
    """The latency probe: per group one fence, G wgmma accumulating into one register set, the
    last closing the group, then a wait for all (gsb0, 0x0): G = 1 and 8, SS and RS."""
    arch, listings = sass
    if arch != "sm_90":
        assert all(_count(bench.function(listings, "k_wgmma_lat", f"ILb{r}ELi{g}E"), "HGMMA.64x128x16.F32") == 0
                   for r in (0, 1) for g in (1, 8))
        return
    for r in (0, 1):
        for g in (1, 8):
            insns = bench.function(listings, "k_wgmma_lat", f"ILb{r}ELi{g}E")
            hg = [ops for mn, ops in insns if mn == "HGMMA.64x128x16.F32"]
            closes = sum("gsb0" in ops for ops in hg)
            waits = [ops for mn, ops in insns if mn == "WARPGROUP.DEPBAR.LE"]
            assert hg and len(hg) == closes * g  # every group: g HGMMA, the last with gsb0
            assert waits and set(waits) == {"gsb0, 0x0"} and len(waits) == closes
            assert len({ops.split(",")[0] for ops in hg}) == 1  # one accumulator: a dependent chain


@pytest.mark.slow
def test_hfma2_loop_issues_packed_half_fma(sass):
    """ptxas splits __hfma2 between HFMA2 and HFMA2.MMA (two pipes): both count as HFMA2."""
    insns = bench.function(sass[1], "k_hfma2_tput")
    assert _count(insns, "HFMA2") + _count(insns, "HFMA2.MMA") >= 128
    assert _count(insns, "FFMA") <= 16 and _count(insns, "HADD2") == 0  # no unpacked fallback


@pytest.mark.parametrize("parts, mnemonic", [
    (("k_lat_hmma",), "HMMA.16816.F32"),
    (("k_lat_smem", "Lb1E"), "LDSM.16.M88.4"),
    (("k_lat_smem", "Lb0E"), "LDS"),
    (("k_lat_fpu",), "MUFU.EX2"),
    (("k_lat_fpu",), "FFMA"),
])
@pytest.mark.slow
def test_latency_chains_are_dependent(sass, parts, mnemonic):
    assert bench.longest_chain(bench.function(sass[1], *parts), mnemonic) >= LINKS


@pytest.mark.parametrize("parts, mnemonic", [
    (("k_mma_tput", "Lb0E"), "HMMA.16816.F32"),
    (("k_mma_tput", "Lb1E"), "HMMA.16816.F32.BF16"),
    (("k_ffma_tput",), "FFMA"),
    (("k_ex2_tput",), "MUFU.EX2"),
])
@pytest.mark.slow
def test_throughput_loops_are_independent(sass, parts, mnemonic):
    assert bench.longest_chain(bench.function(sass[1], *parts), mnemonic) == 1


@pytest.mark.slow
def test_cp_async_latency_waits_for_each_copy(sass):
    """Every LDGSTS of the chain is committed and waited for (DEPBAR to 0) before the next."""
    insns = [mn + " " + ops for mn, ops in bench.function(sass[1], "k_lat_cp_async")]
    copies = [i for i, s in enumerate(insns) if s.startswith("LDGSTS")]
    assert len(copies) >= LINKS
    for a, b in zip(copies, copies[1:]):
        between = insns[a + 1:b]
        if any(s.startswith("BRA") for s in between):
            continue  # loop back edge: the wait sits before the branch
        assert "LDGDEPBAR " in between and "DEPBAR.LE SB0, 0x0" in between, insns[a:b + 1]


@pytest.mark.slow
def test_throughput_kernel_waits_pipelined(sass):
    """The cp.async throughput loop keeps 4 groups in flight (wait_group 3), not 0."""
    insns = [mn + " " + ops for mn, ops in bench.function(sass[1], "k_cp_async_tput")]
    assert "DEPBAR.LE SB0, 0x3" in insns


def test_longest_chain_tells_dependent_from_independent():
    dep = [("FFMA", "R2, R1, R3, R4"), ("IADD3", "R9, R9, 0x1, RZ"), ("FFMA", "R5, R2, R3, R4"),
           ("FFMA", "R6, R5, R3, R4")]
    ind = [("FFMA", "R2, R1, R3, R4"), ("FFMA", "R5, R1, R3, R4"), ("FFMA", "R6, R1, R3, R4")]
    assert bench.longest_chain(dep, "FFMA") == 3
    assert bench.longest_chain(ind, "FFMA") == 1
    assert bench.longest_chain([("LDSM.16.M88.4", "R4, [R4]"), ("LDSM.16.M88.4", "R4, [R4]")],
                               "LDSM.16.M88.4") == 2


@pytest.mark.slow
def test_binary_builds_for_sm_90(toolchain):
    """Host driver and device code link into one program (it runs only on a GPU)."""
    exe = bench.build("sm_90")
    assert exe.exists() and os.access(exe, os.X_OK)

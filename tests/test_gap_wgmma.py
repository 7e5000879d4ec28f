"""Issue 32: the issue model simulates warpgroup MMA (HGMMA) -- the pipe occupancy from the
measured wgmma rate, group completion, WARPGROUP.DEPBAR waits counted as Nsight Compute's
"barrier" -- and the what-if changes to the shipped kernel 7 transform its real loop."""
from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from flashprof.analysis.gap import controls, whatif
from flashprof.analysis.gap.constants import machine
from flashprof.analysis.gap.issue_report import H200, STALL_GROUPS
from flashprof.analysis.gap.loops import LOOP_DIR, kernel_loop
from flashprof.analysis.gap.scheduler import flop_per_warp, hgmma_shape, simulate

REPO = Path(__file__).resolve().parents[1]
K7 = "d128_br64_bc128_w4_async_eager_swz_f000_optsm_wgmma"


def _body(texts, stall=1):
    hi = (stall | 1 << 4 | 7 << 5 | 7 << 8) << 41
    lines = ["Function : f"]
    for k, text in enumerate(texts):
        lines += [f"/*{k * 16:04x}*/ {text} ; /* 0x0000000000000000 */", f"/* 0x{hi:016x} */"]
    return next(iter(controls.parse("\n".join(lines)).values()))


def _gemm(n_hgmma, latency=150.0, backlog=None):
    """One warpgroup's loop: fence, n dependent SS m64n128k16, the last closing the group, wait.
    ``backlog``: Machine.wgmma_issue_backlog (None: an HGMMA issues however far the pipe is booked)."""
    texts = ["WARPGROUP.ARRIVE"] + ["HGMMA.64x128x16.F32 R24, gdesc[UR4], R24"] * (n_hgmma - 1)
    texts += ["HGMMA.64x128x16.F32 R24, gdesc[UR4], R24, gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x0"]
    m = dataclasses.replace(machine(H200), wgmma_group_latency=latency, wgmma_group8_latency=latency + 7 * 64.0,
                            wgmma_issue_backlog=backlog)
    return _body(texts), m


def test_hgmma_shape_and_work_from_the_text():
    rs = _body(["HGMMA.64x128x16.F32 R88, R24, gdesc[UR16].tnspB, R88, gsb0"])[0]
    ss = _body(["HGMMA.64x64x16.F32 R24, gdesc[UR20], RZ, !UPT"])[0]
    assert hgmma_shape(rs) == (128, 16, True, True)
    assert hgmma_shape(ss) == (64, 16, False, False)
    # a quarter of the warpgroup's 2 * 64 * N * K
    assert flop_per_warp(rs) == 2 * 64 * 128 * 16 / 4
    assert flop_per_warp(_body(["HMMA.16816.F32 R0, R4, R8, R0"])[0]) == 4096


def test_a_lone_warpgroup_pays_its_pipe_time_and_the_group_latency():
    body, m = _gemm(8, latency=150.0)
    r = simulate(body, m, ctas=1, warps_per_cta=4, iterations=6)
    own = 2 * 64 * 128 * 16 / m.wgmma_flop_per_clk_sm  # ~64 cycles at the measured rate
    # first HGMMA starts a cycle after issue; 8 back to back; the wait ends `drain` after the
    # last; then ARRIVE and the next HGMMA issue (2 cycles)
    drain = 150.0 - own
    want = 1 + 8 * own + drain + 2
    assert r["cycles_per_iter"] == pytest.approx(want, abs=6)
    # the warps spend the time waiting on the group: the model's 'wgmma wait', Nsight's barrier
    wait = r["warps_per_issue"].get("wgmma wait", 0.0)
    # 10 instructions a pass; the rest of the ~600 cycles each warp waits on the group
    assert wait == pytest.approx((want - 10) / 10, rel=0.05)
    assert wait > 10 * max([v for k, v in r["warps_per_issue"].items() if k != "wgmma wait"], default=0.0)
    assert "wgmma wait" in STALL_GROUPS["barrier"][0]


def test_an_issue_backlog_moves_the_wait_to_dispatch_not_the_time():
    """With Machine.wgmma_issue_backlog (ceilings wgsplit4: 256 cycles on the H200), the HGMMAs
    past the backlog wait to issue ("wgmma dispatch", Nsight's dispatch_stall) instead of the
    group's end; the pipe still bounds the pass, so its time holds."""
    body, free = _gemm(8, latency=150.0)
    _, held = _gemm(8, latency=150.0, backlog=256.0)
    a = simulate(body, free, ctas=1, warps_per_cta=4, iterations=6)
    b = simulate(body, held, ctas=1, warps_per_cta=4, iterations=6)
    assert b["cycles_per_iter"] == pytest.approx(a["cycles_per_iter"], abs=6)
    own = 2 * 64 * 128 * 16 / held.wgmma_flop_per_clk_sm
    # 8 HGMMAs book 8 * own cycles (~512), twice the backlog: the later ones wait their turn
    assert 8 * own > 2 * 256.0 - 8 and a["warps_per_issue"].get("wgmma dispatch", 0.0) == 0.0
    assert b["warps_per_issue"].get("wgmma dispatch", 0.0) > 1.0
    assert b["warps_per_issue"].get("wgmma wait", 0.0) < a["warps_per_issue"]["wgmma wait"]
    assert "wgmma dispatch" in STALL_GROUPS["dispatch"][0]


def test_two_warpgroups_share_the_tensor_pipes():
    body, m = _gemm(8, latency=150.0)
    one = simulate(body, m, ctas=1, warps_per_cta=4, iterations=6)["cycles_per_iter"]
    two = simulate(body, m, ctas=2, warps_per_cta=4, iterations=6)["cycles_per_iter"]
    own = 2 * 64 * 128 * 16 / m.wgmma_flop_per_clk_sm
    # two groups of 8 per pass of both CTAs: at least 16 pipe slots, the drain hidden by the other
    assert two >= 16 * own - 1
    assert two < 2 * one  # not serialised: one warpgroup's drain runs under the other's HGMMAs


def test_no_wgmma_rate_is_a_clear_error():
    body, m = _gemm(2)
    with pytest.raises(ValueError, match="no measured wgmma rate"):
        simulate(body, machine("a100_80gb"), ctas=1, warps_per_cta=4)
    with pytest.raises(ValueError, match="not whole warpgroups"):
        simulate(body, m, ctas=1, warps_per_cta=2)


def _loop_text():
    return (LOOP_DIR / f"{K7}_sm_90.sass").read_text()


def test_the_shipped_kernel7_loop_is_its_wgmma_main_loop():
    text = _loop_text()
    ops = re.findall(r"^/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", text, flags=re.M)
    assert sum(o.startswith("HGMMA") for o in ops) == 16  # 8 for Q K^T, 8 for P V (d = B_c = 128)
    assert sum(o == "WARPGROUP.DEPBAR.LE" for o in ops) == 2
    code = kernel_loop("7", "sm_90", K7)
    assert len(code.body) == len(ops) and (code.B_r, code.B_c, code.warps) == (64, 128, 4)
    # one pass of the body does one KV block of the CTA: 4 * B_r * B_c * d over 4 warps
    assert sum(flop_per_warp(i) for i in code.body) * code.warps == 4 * 64 * 128 * 128


def test_what_if_transformations_of_the_real_loop():
    text = _loop_text()
    base = kernel_loop("7", "sm_90", K7)
    n_ldgsts = text.count(" LDGSTS.")
    assert n_ldgsts == sum(1 for i in base.body if i.base == "LDGSTS") > 0
    ov, opts = whatif.variant_code(base, "overlap")
    assert len(ov.body) == len(base.body) - 1 and opts == ()
    waits = [k for k, i in enumerate(ov.body) if i.op == "WARPGROUP.DEPBAR.LE"]
    commits = [k for k, i in enumerate(ov.body) if i.base == "HGMMA" and "gsb0" in i.operands]
    assert len(waits) == 1 and waits[0] > commits[1]  # only the wait after P V is left
    tma, opts = whatif.variant_code(base, "tma")
    assert not any(i.base in ("LDGSTS", "BAR", "DEPBAR", "LDGDEPBAR") for i in tma.body)
    assert dict(opts)["background_wavefronts"] == 4 * n_ldgsts * base.warps  # 512 B each, per CTA
    big, _ = whatif.variant_code(base, "tile128+pingpong")
    assert (big.B_r, big.warps) == (128, 8)
    assert sum(1 for i in big.body if i.base == "LDGSTS") == (n_ldgsts + 1) // 2
    with pytest.raises(controls.SassError, match="unknown what-if change"):
        whatif.variant_code(base, "tma+warp_magic")


def test_pingpong_makes_the_second_warpgroup_wait_its_turn():
    # two warpgroups of one CTA leave a CTA barrier together: free, both start their GEMM
    # phase at once; in ping-pong the second waits (as "barrier") until the first has issued
    # the HGMMA that closes its group
    gemm = ["WARPGROUP.ARRIVE"] + ["HGMMA.64x128x16.F32 R24, gdesc[UR4], R24"] * 3
    gemm += ["HGMMA.64x128x16.F32 R24, gdesc[UR4], R24, gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x0"]
    body = _body(["BAR.SYNC.DEFER_BLOCKING 0x0"] + gemm + ["FFMA R0, R1, R2, R0"] * 200)
    m = dataclasses.replace(machine(H200), wgmma_group_latency=150.0, wgmma_group8_latency=150.0 + 7 * 64)
    free = simulate(body, m, ctas=1, warps_per_cta=8, iterations=6, seed=1)
    turns = simulate(body, m, ctas=1, warps_per_cta=8, iterations=6, seed=1, pingpong=True)
    assert turns["warps_per_issue"]["barrier"] > free["warps_per_issue"]["barrier"]


def test_what_if_cli_bad_change_is_one_line():
    p = subprocess.run([sys.executable, "-P", "-m", "flashprof", "gap", "--what-if", "tma+bogus"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "unknown what-if change" in p.stderr


def test_tile_loop_is_the_smallest_range_around_the_kv_loop_without_an_exit():
    texts = ["MOV R0, R1", "HMMA.16816.F32 R4, R8, R10, R4", "BRA 0x10",    # KV loop: 0x10-0x20
             "STG.E [R2], R4", "BRA 0x0",                                        # tiles: 0x0-0x40
             "BRA 0x0", "EXIT"]                                                   # a wider range
    insts = _body(texts)
    assert controls.tile_loop(insts, 1, 2) == (0, 4)
    assert controls.tile_loop(_body(["MOV R0, R1", "HMMA.16816.F32 R4, R8, R10, R4", "BRA 0x10", "EXIT"]), 1, 2) is None
    with_exit = _body(["MOV R0, R1", "HMMA.16816.F32 R4, R8, R10, R4", "BRA 0x10", "EXIT", "BRA 0x0"])
    assert controls.tile_loop(with_exit, 1, 2) is None


def test_the_persistent_kernel7s_accounting_is_what_its_report_executed():
    """The shipped kernel 7 loops over tiles in each CTA: per tile and consumer warp, the KV loop
    runs the trips its FLOP leaves after the peeled first / last GEMMs, and the per-tile code
    outside it runs once. Both against the report's own per-instruction execution counts
    (ncu_report's inst_executed per PC) over the loop file's spans."""
    import json as _json
    import ncu_report

    side = _json.loads((REPO / "reports/h200/kernel7.json").read_text())
    code = kernel_loop("7", "sm_90", side["config_slug"])
    head = dict(re.findall(r"^#\s*(\w+):\s*(.*)$", (REPO / code.source).read_text(), re.M))
    lo, hi = (int(x, 16) for x in head["loop_span"].split("-"))
    t_lo, t_hi = (int(x, 16) for x in head["tile_loop_span"].split("-"))
    a = ncu_report.load_report(str(REPO / "reports/h200/kernel7.ncu-rep")).range_by_idx(0).action_by_idx(0)
    m = a.metric_by_name("inst_executed")
    ids = m.correlation_ids()
    per_pc = {int(ids.value(i)): float(m.value(i) or 0) for i in range(m.num_instances())}
    base = min(per_pc)
    in_loop = sum(v for pc, v in per_pc.items() if lo <= pc - base <= hi)
    in_tile = sum(v for pc, v in per_pc.items() if t_lo <= pc - base <= t_hi) - in_loop
    s = side["shape"]
    tiles, warps = s["batch"] * s["heads"] * s["seq"] // code.B_r, code.warps
    trips = (4.0 * code.B_r * s["seq"] * 128 - code.tile_flop_per_warp * warps) / (
        sum(flop_per_warp(i) for i in code.body) * warps)
    assert trips == 31 and in_loop == trips * len(code.body) * warps * tiles
    assert in_tile / (warps * tiles) == pytest.approx(code.tile_insts, rel=0.03)
    assert code.tile_insts < code.total_insts - len(code.body) - 300  # the producer's code is not per tile

"""The HMMA issue interplay (analysis/gap/interplay.py): the scheduler on the mma_mix
microbenchmark's own SASS against its measured rates, recomputed from the raw records."""
import dataclasses
import json
import math

import pytest

from flashprof.analysis.gap import interplay
from flashprof.analysis.gap.constants import machine
from flashprof.analysis.stages.mma_mix import load_records, mix_frame
from flashprof.analysis.gap.data import REPO

RAW = REPO / "reports" / "h200" / "mma_mix" / "mma_mix.raw.jsonl"
CEIL = REPO / "reports" / "h200" / "ceilings.json"


@pytest.fixture(scope="module")
def pts():
    return interplay.points()


@pytest.fixture(scope="module")
def meas():
    """Measured HMMA/clk/SM per point, from the raw benchmark records (not the CSV)."""
    peaks = {m["name"]: m["value"] for m in json.loads(CEIL.read_text())["measurements"] if m["kind"] == "throughput"}
    df = mix_frame(load_records(RAW), peaks)
    return {(r.kind, int(r.k), bool(r.reuse)): float(r.hmma_per_clk_sm) for r in df.itertuples()}


def _bare():
    return machine("h200_sxm", interplay=None)


def test_the_csv_the_model_reads_is_the_raw_records(meas):
    assert interplay.measured(same_chip=()) == pytest.approx(meas, rel=1e-5)  # the CSV keeps 6 digits


def test_a_fractional_pipe_interval_keeps_its_rate(pts, meas):
    # The H200's measured HMMA interval is 6.0004 cycles: rounded up per instruction it ran
    # at 7 (0.571 HMMA/clk/SM on the benchmark's pure-HMMA loop, 11 % under the measured 0.645).
    m = _bare()
    bound = 4 / m.hmma_interval
    r = interplay.rate(pts[("none", 0, True)], m)
    assert r == pytest.approx(bound, rel=0.03)  # the loop's own NOP / BRA / counter cost the rest
    assert abs(r / meas[("none", 0, True)] - 1) < 0.03


def test_the_xu_pipe_keeps_its_measured_rate(pts):
    # eight MUFU.EX2 per HMMA: bound by the XU pipe at 16 op/clk/SM (8.0001 cycles a warp)
    m = _bare()
    r = interplay.rate(pts[("ex2", 8, True)], m)
    assert r == pytest.approx(4 / (8 * m.mufu_interval), rel=0.02)


HELD_OUT = (("imad", 2, True), ("imad", 8, True), ("ex2", 1, True), ("ffma", 4, False), ("ffma", 8, False))


def test_the_costs_predict_points_they_were_not_chosen_on(pts, meas):
    rec = interplay.load()
    assert rec is not None and rec["hmma_issue_cycles"] > 1 and rec["tensor_issue_steal"] > 0
    with_ = interplay.with_costs(_bare(), rec["hmma_issue_cycles"], rec["tensor_issue_steal"])
    err = lambda m, p: abs(interplay.rate(pts[p], m) / meas[p] - 1)
    assert not any(interplay.in_fit(p) for p in HELD_OUT)
    e_with = [err(with_, p) for p in HELD_OUT]
    e_without = [err(_bare(), p) for p in HELD_OUT]
    assert max(e_with) < 0.07
    assert sum(e_with) < sum(e_without) / 2


def test_the_record_matches_a_recomputation(pts, meas):
    rec = interplay.load()
    m = interplay.with_costs(_bare(), rec["hmma_issue_cycles"], rec["tensor_issue_steal"])
    by = {(p["kind"], p["k"], p["reuse"]): p for p in rec["points"]}
    for p in (("ffma", 4, True), ("imad", 4, True)):
        assert by[p]["error_pct"] == pytest.approx(100 * (interplay.rate(pts[p], m) / meas[p] - 1), abs=0.01)
    best = min(rec["grid"], key=lambda g: g["fit_mae_pct"])
    assert (best["hmma_issue_cycles"], best["tensor_issue_steal"]) == (rec["hmma_issue_cycles"], rec["tensor_issue_steal"])
    assert {p["set"] for p in rec["points"]} == {"fit", "held-out"}
    assert sum(p["set"] == "fit" for p in rec["points"]) == 6


def test_every_mma_sync_machine_reads_them_and_says_where_they_were_measured():
    rec = interplay.load()
    h = machine("h200_sxm")
    assert (h.hmma_issue_cycles, h.tensor_issue_steal) == (rec["hmma_issue_cycles"], rec["tensor_issue_steal"])
    assert h.sources["tensor_issue_steal"].startswith("measured") and "assumed" not in h.sources["tensor_issue_steal"]
    assert h.wgmma_issue_steal == 0.0  # nothing measured beside HGMMA
    for key in ("a100_80gb", "rtx3090"):  # carried unmeasured: the source says so, nothing is fitted
        a = machine(key)
        assert (a.hmma_issue_cycles, a.tensor_issue_steal) == (rec["hmma_issue_cycles"], rec["tensor_issue_steal"])
        assert "assumed unchanged" in a.sources["tensor_issue_steal"]
        assert "tensor_issue_steal" not in a.fitted
    none = machine("h200_sxm", interplay=None)
    assert (none.hmma_issue_cycles, none.tensor_issue_steal) == (1.0, 0.0)


def test_the_dispatch_hold_shows_as_dispatch_stalls(pts):
    rec = interplay.load()
    m = interplay.with_costs(_bare(), rec["hmma_issue_cycles"], rec["tensor_issue_steal"])
    from flashprof.analysis.gap.scheduler import simulate
    r = simulate(list(pts[("ffma", 8, True)]), m, 1, 16, iterations=3, seed=1)
    assert r["warps_per_issue"].get("dispatch", 0) > 0.05
    r0 = simulate(list(pts[("ffma", 8, True)]), _bare(), 1, 16, iterations=3, seed=1)
    assert "dispatch" not in r0["warps_per_issue"]
    assert not math.isnan(r["cycles_per_iter"])


# ---- register-file reads (scheduler.rf_reads) and the read cap that was tried and not adopted
def _insts(lines: str):
    from flashprof.analysis.gap.controls import parse

    text = "Function : f\n" + "\n".join(
        f"/*{16 * k:04x}*/ {ln} ; /* 0x0000000000000000 */\n/* 0x000fe20000000000 */"
        for k, ln in enumerate(x.strip() for x in lines.strip().splitlines()))
    return next(iter(parse(text).values()))


def test_rf_reads_counts_hmma_operands_and_the_reuse_cache_by_slot_and_bank():
    from flashprof.analysis.gap.scheduler import rf_reads

    body = _insts("""
        HMMA.16816.F32 R16, R20.reuse, R2.reuse, R16
        FFMA R53, R53, R51.reuse, 0.000244140625
        HMMA.16816.F32 R12, R20, R2, R12
        IADD3 R40, R41, R42, RZ
        FMNMX R30, -R30, -0.25, !PT
        HMMA.1688.F16 R8, R24, R4, R8
    """)
    # worked by hand, steady state (second lap):
    #  HMMA  R20 / R2 were cached by the previous lap's first HMMA? no: the third HMMA read them
    #        without the flag, which releases them, so A 4 + B 2 + C 4 = 10
    #  FFMA  R53 (slot 1) = 1: R51 (slot 2, bank 1; R2 holds bank 0) is served by the entry its
    #        own flag filled on the previous lap
    #  HMMA  R20 (slot 1, bank 0) and R2 (slot 2, bank 0) from the cache; C R12: 4
    #  IADD3 R41 + R42 (RZ is free) = 2;  FMNMX R30 = 1
    #  HMMA.1688.F16: A 16x8/64 = 2, B 8x8/64 = 1, C 2 (F16 accumulate) = 5
    assert rf_reads(body) == [10.0, 1.0, 4.0, 2.0, 1.0, 5.0]


def test_a_read_cap_slows_an_hmma_loop_to_cap_over_reads():
    """HMMA without reuse reads 10 registers: with the register file at half of 10 per HMMA
    interval, the loop runs at half the tensor pipe's rate."""
    from flashprof.analysis.gap.constants import SUBPARTITIONS
    from flashprof.analysis.gap.scheduler import simulate

    body = _insts("\n".join(f"HMMA.16816.F32 R{16 + 4 * (j % 4)}, R{40 + 8 * (j % 2)}, R{60 + 2 * (j % 2)}, "
                            f"R{16 + 4 * (j % 4)}" for j in range(8)))
    m = machine("h200_sxm", interplay=None)
    free = simulate(body, m, 1, 16, iterations=6)["cycles_per_iter"]
    cap = 0.5 * 10 / m.hmma_interval
    capped = simulate(body, dataclasses.replace(m, rf_reads_per_clk=cap), 1, 16, iterations=6)["cycles_per_iter"]
    assert free == pytest.approx(8 * 4 * m.hmma_interval, rel=0.05)  # 4 warps per sub-partition
    assert capped == pytest.approx(8 * 4 * 10 / cap, rel=0.05) and SUBPARTITIONS == 4


def test_the_read_cap_record_is_its_own_grid_and_was_not_adopted(pts, meas):
    rec = interplay.load()
    rf = rec["rf_read_cap"]
    grid = rf["grid"]
    best = min(grid, key=lambda g: g["fit_mae_pct"])
    assert rf["chosen"] == best
    gain = rf["without"]["held_out_mae_pct"] - best["held_out_mae_pct"]
    assert rf["adopted"] == (gain >= rf["adopt_gain_pp"])
    # the noreuse points' reads per cycle, recomputed from the measured rates and the SASS
    allm = interplay.measured()  # with the same-chip points (ffma3 from the H100 run)
    got = sorted(round(interplay.reads_per_hmma(pts[p]) * allm[p] / 4, 3) for p in allm if not p[2] and p in pts)
    assert rf["noreuse_reads_per_clk_sp"] == pytest.approx(got, abs=2e-3)
    if not rf["adopted"]:
        assert machine("h200_sxm").rf_reads_per_clk is None and "rf_reads_per_clk" not in rec
    else:
        h = machine("h200_sxm")
        assert (h.rf_reads_per_clk, h.rf_read_depth) == (best["rf_reads_per_clk"], best["rf_read_depth"])
        assert (rec["rf_reads_per_clk"], rec["rf_read_depth"]) == (best["rf_reads_per_clk"], best["rf_read_depth"])
    # one chosen pair, re-simulated: its fit-set error is what the record says
    m = dataclasses.replace(interplay.with_costs(_bare(), rec["hmma_issue_cycles"], rec["tensor_issue_steal"]),
                            rf_reads_per_clk=best["rf_reads_per_clk"], rf_read_depth=best["rf_read_depth"])
    fit = [p for p in pts if p in meas and interplay.in_rf_fit(p)]
    e = [abs(interplay.rate(pts[p], m) / meas[p] - 1) * 100 for p in fit]
    assert len(fit) == 6 and sum(e) / len(e) == pytest.approx(best["fit_mae_pct"], abs=0.01)


H100_RAW = REPO / "reports" / "h100" / "mma_mix" / "mma_mix.raw.jsonl"


@pytest.mark.skipif(not H100_RAW.is_file(), reason="no H100 mix run in this checkout")
def test_the_h100_run_is_the_h200s_per_clock_and_fills_only_the_missing_points(meas):
    """Same GH100 SM: every point both runs measured agrees within 0.5 % in HMMA per SM clock
    (recomputed here from the raw cycle counts); the model reads only the H100's extra points."""
    import statistics

    h100 = {}
    for rec in load_records(H100_RAW):
        kind, k, reuse = rec["name"].split("_")[2], int(rec["name"].split("_")[3][1:]), not rec["name"].endswith("_noreuse")
        h100[(kind, k, reuse)] = statistics.median(rec["work"] / 4096 / c for c in rec["cycles"])
    shared = [p for p in h100 if p in meas]
    assert len(shared) == 62
    assert max(abs(h100[p] / meas[p] - 1) for p in shared) < 0.005
    allm = interplay.measured()
    extra = set(allm) - set(meas)
    assert extra and all(p[0] == "ffma3" for p in extra)
    assert all(allm[p] == pytest.approx(h100[p], rel=1e-5) for p in extra)
    rec = interplay.load()
    prov = rec["measured_provenance"]["cross_check"]["reports/h100/mma_mix/mma_mix.csv"]
    assert prov["shared_points"] == 62 and prov["max_abs_diff_pct"] < 0.5


@pytest.mark.skipif(not H100_RAW.is_file(), reason="no H100 mix run in this checkout")
def test_the_read_cap_predicts_three_register_ffmas_it_was_not_chosen_on(pts):
    """ffma3 was measured after the cap was chosen on the integer adds (and before its
    adoption): with the committed cap its points are predicted far better than without."""
    rec = interplay.load()
    allm = interplay.measured()
    on = interplay.with_costs(_bare(), rec["hmma_issue_cycles"], rec["tensor_issue_steal"])
    capped = dataclasses.replace(on, rf_reads_per_clk=rec["rf_read_cap"]["chosen"]["rf_reads_per_clk"],
                                 rf_read_depth=rec["rf_read_cap"]["chosen"]["rf_read_depth"])
    sel = [p for p in pts if p[0] == "ffma3" and p[1] in (2, 4) and p in allm]
    err = lambda m: sum(abs(interplay.rate(pts[p], m) / allm[p] - 1) for p in sel) / len(sel)
    assert len(sel) == 4 and err(capped) < 0.5 * err(on)


def test_same_bank_reads_worked_by_hand():
    body = _insts("""
        HMMA.16816.F32 R16, R20, R2, R16
        FFMA R1, R2, R4, R6
        FADD R3, R5, R7
        FMUL R8, R9, R10
        FFMA R11, R12, R12.reuse, R14
        FFMA R13, R15, R12, R17
    """)
    # FFMA R2 R4 R6: three reads in bank 0 -> 2 extra; FADD R5 R7: bank 1 twice -> 1;
    # FMUL R9 / R10: one per bank -> 0; FFMA R12 R12 R14: distinct R12, R14 (bank 0) -> 1;
    # FFMA R15 R12 R17: R12 in slot 2 comes from the cache the previous FFMA filled there,
    # leaving R15 and R17 (bank 1) -> 1. HMMA operands are not counted. 5 extra over 1 HMMA.
    assert interplay.same_bank_reads(body) == 5.0

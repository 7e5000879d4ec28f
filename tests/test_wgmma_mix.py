"""The wgmma mix microbenchmark (ceilings binary, `wgmix` mode) and the cost derived from it
(analysis/gap/wgmma_interplay.py): the SASS holds what each point claims, the committed table
is the raw records, and the FP32 share of a running HGMMA predicts points it was not chosen on."""
from __future__ import annotations

import dataclasses
import json
import re
import statistics

import pytest

from flashprof.analysis.gap import wgmma_interplay as wi
from flashprof.analysis.gap.constants import Machine, machine
from flashprof.analysis.gap.controls import parse
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.scheduler import simulate
from flashprof.analysis.stages import wgmma_mix as wm
from flashprof.kernels import ceilings as bench

RAW = REPO / "reports" / "h100" / "wgmma_mix" / "wgmma_mix.raw.jsonl"
CSV = REPO / "reports" / "h100" / "wgmma_mix" / "wgmma_mix.csv"
OPCODE = {"ffma": "FFMA", "ffma3": "FFMA", "fmnmx": "FMNMX", "ex2": "MUFU.EX2", "imad": "IMAD", "fadd": "FADD",
          "none": None, "softmax": None}


def _raw(name: str) -> dict[str, dict]:
    """Measurement records by name from a raw ceilings file beside the mix table (read here, not
    through the code under test)."""
    out = {}
    for line in (RAW.parent / name).read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "measurement":
            out[r["name"]] = r
    return out


@pytest.fixture(scope="module")
def committed_loops():
    return wi.points()


@pytest.fixture(scope="module")
def meas():
    """FLOP per SM clock per point, straight from the raw records: work / median cycles."""
    out = {}
    for line in RAW.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("record") == "measurement":
            assert rec["check"] == "ok"
            out[rec["name"]] = rec["work"] / statistics.median(rec["cycles"])
    return out


def test_every_point_of_the_run_has_its_loop(committed_loops, meas):
    assert set(meas) == set(committed_loops) and len(meas) == 24


@pytest.mark.parametrize("point", ["wgmma_mix_none_k0", "wgmma_mix_ffma_k16", "wgmma_mix_ffma_k64", "wgmma_mix_ffma_k32_rs",
                                   "wgmma_mix_ffma3_k32", "wgmma_mix_fmnmx_k16", "wgmma_mix_ex2_k8",
                                   "wgmma_mix_imad_k32", "wgmma_mix_fadd_k16", "wgmma_mix_softmax_k30"])
def test_each_loop_is_two_groups_in_flight_with_8k_instructions_each(committed_loops, point):
    """Two groups of 8 HGMMA per pass (the two accumulator sets), each closed (gsb0) and waited
    for down to one in flight; none serialised (no wait for zero inside the loop); 8 x K
    instructions of the kind per group; RS points read A from registers."""
    kind, k, rs = wm.parse_name(point)
    body = committed_loops[point]
    hg = [i for i in body if i.base == "HGMMA"]
    assert len(hg) == 16 and sum("gsb0" in i.operands for i in hg) == 2
    waits = [i.operands.replace(" ", "") for i in body if i.op.startswith("WARPGROUP.DEPBAR")]
    assert waits == ["gsb0,0x1", "gsb0,0x1"]
    assert all(("gdesc" in i.operands.split(",")[1]) != rs for i in hg)  # A: descriptor (SS) or register (RS)
    if OPCODE[kind]:
        n = sum(1 for i in body if i.op == OPCODE[kind] or (kind == "ffma3" and i.base == "FFMA"))
        assert n == 2 * 8 * k
    if kind == "softmax":  # FFMA, FMUL, FADD, FMNMX, MUFU.EX2 in turn: 8 x K / 5 of each per group
        for op in ("FFMA", "FMUL", "FADD", "FMNMX", "MUFU"):
            assert sum(1 for i in body if i.base == op) == 2 * 8 * k // 5, op
    if kind == "ffma3":
        ffma = [i for i in body if i.base == "FFMA"]
        assert all(len(re.findall(r"\bR\d+", i.operands)) == 4 for i in ffma)  # d, a, b, c: three read


def test_the_committed_loops_are_what_the_static_build_gives(toolchain, committed_loops):
    """The venv's nvcc (the device's, 13.0) gives the committed listing, control codes included."""
    from flashprof.analysis.gap.controls import main_loop
    from flashprof.kernels.sass.static import dump_sass

    per_fn = parse(dump_sass(bench.build("sm_90a", cubin=True)))
    for fn, insts in per_fn.items():
        name = wm.point_of_function(fn)
        if name:
            lo, hi = main_loop(insts, "HGMMA")
            got = [(i.op, i.operands, i.low, i.high) for i in insts[lo:hi + 1]]
            assert got == [(i.op, i.operands, i.low, i.high) for i in committed_loops[name]], name


def test_the_table_is_the_raw_records(meas):
    import pandas as pd

    df = pd.read_csv(CSV)
    assert {r.name: r.flop_per_clk_sm for r in df.itertuples()} == pytest.approx(meas, rel=1e-5)
    ffma64 = df.set_index("name").loc["wgmma_mix_ffma_k64"]
    assert ffma64.rel == pytest.approx(meas["wgmma_mix_ffma_k64"] / meas["wgmma_mix_none_k0"], rel=1e-5)
    # independent resources: 2 x 8 HGMMA of 64 cycles a round; 2 x 8 x 64 FFMAs + 16 HGMMA issue slots
    peaks = {m["name"]: m["value"] for m in json.loads((REPO / "reports/h200/ceilings.json").read_text())["measurements"]
             if m["kind"] == "throughput"}
    round_cycles = 16 * 2 * 64 * 128 * 16 / peaks["wgmma_f16_f32"]
    assert ffma64.bound == pytest.approx(round_cycles / (2 * 8 * 64 + 16), rel=1e-6) and ffma64.bound_by == "issue slots"
    assert (df[df.k > 0].missing_pct > 0).sum() >= 12  # hardware falls short of that bound at almost every point


def test_nsight_points_take_the_full_grid_launches_only():
    fn = "_ZN8ceilings11k_wgmma_mixILi1ELi16ELb0EEEvPfPiPNS_9BlockTimeEi"
    key = wm.NSIGHT["dispatch_stall"]
    launches = [(fn, 1, {key: 9.0}), (fn, 132, {key: 2.0}), (fn, 132, {key: 4.0}), (fn, 132, {key: 3.0}),
                ("_Z5other", 132, {key: 7.0})]
    got = wm.nsight_points(launches)
    assert list(got) == ["wgmma_mix_ffma_k16"] and got["wgmma_mix_ffma_k16"]["dispatch_stall"] == 3.0
    assert wm.point_of_function("_ZN8ceilings11k_wgmma_mixILi6ELi32ELb1EEEvPfPiPNS_9BlockTimeEi") == "wgmma_mix_ffma3_k32_rs"


def test_ffma_beside_hgmma_is_sampled_as_dispatch_stall_fmnmx_and_mufu_are_not():
    """The Nsight columns (medians of the timed launches): the FP32 kinds' warps wait in
    dispatch_stall, the ALU kind's in math_pipe_throttle, and MUFU below its pipe's limit costs nothing."""
    import pandas as pd

    df = pd.read_csv(CSV).set_index("name")
    for p in ("wgmma_mix_ffma_k16", "wgmma_mix_ffma_k32", "wgmma_mix_ffma3_k32", "wgmma_mix_ffma_k32_rs"):
        assert df.loc[p, "dispatch_stall"] > 1.0 and df.loc[p, "math_pipe_throttle"] < 0.05
    for p in ("wgmma_mix_fmnmx_k16", "wgmma_mix_fmnmx_k32"):
        assert df.loc[p, "dispatch_stall"] < 0.3 and df.loc[p, "math_pipe_throttle"] > 0.5
    assert df.loc["wgmma_mix_ex2_k4", "rel"] > 0.999


def test_the_share_predicts_points_it_was_not_chosen_on(committed_loops, meas):
    rec = wi.load()
    assert rec["adopted"] and rec["wgmma_fp32_share"] == rec["chosen"]["wgmma_fp32_share"] > 0
    bare = machine("h200_sxm", wgmma_interplay=None)
    with_ = dataclasses.replace(bare, wgmma_fp32_share=rec["wgmma_fp32_share"])
    held = [p for p in meas if wi.held_out(p)]
    assert len(held) == 4 and not any(wi.in_fit(p) for p in held)
    err = lambda m, p: abs(wi.rate(committed_loops[p], m) / meas[p] - 1)
    e_with, e_without = [err(with_, p) for p in held], [err(bare, p) for p in held]
    assert max(e_with) < 0.08 and sum(e_with) < sum(e_without) / 4


def test_the_record_matches_a_recomputation(committed_loops, meas):
    rec = wi.load()
    m = dataclasses.replace(machine("h200_sxm", wgmma_interplay=None), wgmma_fp32_share=rec["wgmma_fp32_share"])
    by = {p["point"]: p for p in rec["points"]}
    for p in ("wgmma_mix_ffma_k32", "wgmma_mix_ffma3_k16"):
        assert by[p]["error_pct"] == pytest.approx(100 * (wi.rate(committed_loops[p], m) / meas[p] - 1), abs=0.01)
    assert min(rec["grid"], key=lambda g: g["fit_mae_pct"]) == rec["chosen"]
    assert sum(p["set"] == "fit" for p in rec["points"]) == 5


def test_only_the_hopper_machine_reads_it_and_says_where_it_was_measured():
    """The adopted exchange (split-role run) replaces the share chosen on mix points."""
    rec = wi.load()
    ex = rec["exchange"]
    assert ex["adopted"]
    h = machine("h200_sxm")
    assert h.wgmma_fp32_share == ex["wgmma_fp32_share"] != rec["wgmma_fp32_share"]
    assert h.wgmma_fp32_steal == ex["wgmma_fp32_steal"] > 0
    for name in ("wgmma_fp32_share", "wgmma_fp32_steal"):
        assert h.sources[name].startswith("measured") and "split-role" in h.sources[name]
        assert name not in h.fitted
    for m in (machine("a100_80gb"), machine("h200_sxm", wgmma_interplay=None)):
        assert m.wgmma_fp32_share == 0.0 and m.wgmma_fp32_steal == 0.0


def test_the_exchange_is_recomputed_from_the_split_run_by_hand():
    """Both sides of the cost from wgmma_split.raw.jsonl, by hand for every K: the FFMA warps'
    cycles lost per HGMMA that ran beside them, and the pipe cycles lost per FFMA one warp issued;
    each holds across K within 10 % (a constant of the hardware, not of the benchmark's density)."""
    recs = _raw("wgmma_split.raw.jsonl")
    med = statistics.median
    n_groups = recs["wgmma_split_ffma_k0"]["n"]
    per_hgmma = med(recs["wgmma_split_ffma_k0"]["cycles_2n"]) / (n_groups * 8)
    ex = wi.load()["exchange"]
    blocks, steals = [], []
    for k in (16, 64, 128):
        both, alone = recs[f"wgmma_split_ffma_k{k}"], recs[f"wgmma_split_ffma_k{k}_alone"]
        ffma, hg = med(both["cycles"]), med(both["cycles_2n"])
        hg_work_during = n_groups * 8 * per_hgmma - (hg - ffma)       # pipe cycles of work done while the FFMAs ran
        blocks.append((ffma - med(alone["cycles"])) / (hg_work_during / per_hgmma))
        steals.append((ffma - hg_work_during) / (n_groups * 8 * k))   # cycles the pipe did not work, per FFMA
        assert ex["per_k"][str(k)]["fp32_cycles_lost_per_hgmma"] == pytest.approx(blocks[-1], rel=1e-6)
        assert ex["per_k"][str(k)]["pipe_cycles_lost_per_fp32"] == pytest.approx(steals[-1], rel=1e-6)
    for xs in (blocks, steals):
        assert max(xs) < 1.1 * min(xs)
    assert ex["wgmma_fp32_share"] == pytest.approx(statistics.fmean(blocks) / per_hgmma)
    assert ex["wgmma_fp32_steal"] == pytest.approx(statistics.fmean(steals))


def test_the_exchange_predicts_mix_points_it_never_saw(committed_loops, meas):
    """Derived from the split run only, the exchange predicts every FP32 mix point (FFMA, FFMA3,
    FADD, IMAD, the softmax mix) at under half the error of the model without it; one point
    recomputed here."""
    ex = wi.load()["exchange"]
    names = [p for p in meas if wi.fp32_point(p)]
    assert ex["n"] == len(names) >= 15 and set(ex["points"]["exchange"]) == set(names)
    mae = {k: statistics.fmean(abs(v) for v in e.values()) for k, e in ex["points"].items()}
    assert mae == pytest.approx(ex["mae_pct"])
    assert mae["exchange"] < mae["none"] / 2
    m = dataclasses.replace(machine("h200_sxm", wgmma_interplay=None), wgmma_fp32_share=ex["wgmma_fp32_share"],
                            wgmma_fp32_steal=ex["wgmma_fp32_steal"])
    p = "wgmma_mix_softmax_k30"
    assert ex["points"]["exchange"][p] == pytest.approx(100 * (wi.rate(committed_loops[p], m) / meas[p] - 1), abs=0.01)


def test_fp32_beside_a_running_hgmma_holds_the_pipe_longer(committed_loops):
    """The steal: on the FFMA loop the same share with a steal takes longer (the HGMMAs finish
    later); on the MUFU loop (no FP32 instruction) it changes nothing."""
    shared = dataclasses.replace(machine("h200_sxm", wgmma_interplay=None), wgmma_fp32_share=0.76)
    stolen = dataclasses.replace(shared, wgmma_fp32_steal=0.95)
    run = lambda m, p: simulate(list(committed_loops[p]), m, 1, 8, iterations=4, seed=1)
    a, b = run(shared, "wgmma_mix_ffma_k32"), run(stolen, "wgmma_mix_ffma_k32")
    assert b["tensor_busy_until"] > 1.05 * a["tensor_busy_until"]
    c, d = run(shared, "wgmma_mix_ex2_k4"), run(stolen, "wgmma_mix_ex2_k4")
    assert d["cycles_per_iter"] == pytest.approx(c["cycles_per_iter"], rel=1e-9)


def test_a_running_hgmma_slows_fp32_only_and_the_wait_counts_as_dispatch(committed_loops):
    """On the benchmark's own FFMA loop the share lengthens the pass and its warps' holds are
    "dispatch"; on the MUFU loop below its pipe's limit it changes nothing."""
    bare = machine("h200_sxm", wgmma_interplay=None)
    shared = dataclasses.replace(bare, wgmma_fp32_share=0.8)
    run = lambda m, p: simulate(list(committed_loops[p]), m, 1, 8, iterations=4, seed=1)
    a, b = run(bare, "wgmma_mix_ffma_k32"), run(shared, "wgmma_mix_ffma_k32")
    assert b["cycles_per_iter"] > 1.15 * a["cycles_per_iter"]
    assert b["warps_per_issue"].get("dispatch", 0) > 0.3 and a["warps_per_issue"].get("dispatch", 0) == 0
    c, d = run(bare, "wgmma_mix_ex2_k4"), run(shared, "wgmma_mix_ex2_k4")
    assert d["cycles_per_iter"] == pytest.approx(c["cycles_per_iter"], rel=1e-9)


def test_the_first_run_is_reproduced_by_the_second(meas):
    """Run 1 (the points the share was chosen on) against run 2's same points."""
    first = {}
    for line in (RAW.parent / "wgmma_mix.run1.raw.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("record") == "measurement":
            first[rec["name"]] = rec["work"] / statistics.median(rec["cycles"])
    assert len(first) == 16 and all(abs(meas[p] / v - 1) < 0.005 for p, v in first.items())


def test_the_second_run_was_predicted_before_it_ran_and_is_recomputed_from_raw(meas):
    """predictions.json was written before run 2 (its time against the sidecar's); the record's
    errors are the predictions against run 2's raw rates; kernel 7's softmax mix, the case the
    share matters for, is predicted within 10 % at every density and at least 3x better than
    without the share."""
    pred = json.loads(wi.PREDICTIONS.read_text())
    side = json.loads((RAW.parent / "wgmma_mix.json").read_text())
    assert pred["created"] < side["created"] and pred["wgmma_fp32_share"] == wi.load()["wgmma_fp32_share"]
    rec = wi.load()["second_run"]
    assert set(rec["points"]) == set(pred["points"]) and len(rec["points"]) == 8
    for n, v in pred["points"].items():
        assert rec["points"][n]["error_pct"] == pytest.approx(100 * (v["predicted"] / meas[n] - 1), abs=1e-3)
    soft = [n for n in pred["points"] if "_softmax_" in n]
    err = [abs(pred["points"][n]["predicted"] / meas[n] - 1) for n in soft]
    err0 = [abs(pred["points"][n]["predicted_without_share"] / meas[n] - 1) for n in soft]
    assert len(soft) == 4 and max(err) < 0.10 and 3 * sum(err) < sum(err0)


def test_a_lone_warpgroup_gets_the_whole_pipe_and_two_issued_together_interleave():
    """Run 5 (wgmma_order.raw.jsonl): a group of 8 HGMMA takes what it takes alone when a second,
    idle warpgroup is resident (within 1.5 %); two warpgroups issuing together finish close to
    each other after both groups' pipe time (16 x 64 cycles), not one after 8 x 64."""
    recs = _raw("wgmma_order.raw.jsonl")
    assert all(r["check"] == "ok" for r in recs.values())
    per_group = lambda r: statistics.median((b - a) / r["n"] for a, b in zip(r["cycles"], r["cycles_2n"]))
    alone = per_group(recs["wgmma_ss_g8"])
    for idle in ("exited", "sleeping"):
        assert per_group(recs[f"wgmma_ss_g8_pair_{idle}"]) == pytest.approx(alone, rel=0.015)
    w0, w1 = recs["wgmma_order_d0_wg0"]["cycles"], recs["wgmma_order_d0_wg1"]["cycles"]
    assert min(w0) > 16 * 64 and min(w1) > 16 * 64 and abs(min(w0) - min(w1)) < 150


def test_who_pays_is_recomputed_from_the_split_run():
    """Run 6 (wgmma_split.raw.jsonl): split_rates from the raw cycles by hand for K = 128, and the
    finding the model does not yet follow: the more FFMAs issue beside the HGMMAs, the more of the
    cost the HGMMAs carry (at K = 128 they keep under a quarter of their rate, the FFMAs over 80 %)."""
    recs = _raw("wgmma_split.raw.jsonl")
    med = statistics.median
    hg_alone = med(recs["wgmma_split_ffma_k0"]["cycles_2n"])
    assert hg_alone == pytest.approx(512 * 8 * 64, rel=0.01)  # the HGMMAs alone keep the pipe full
    both = recs["wgmma_split_ffma_k128"]
    ffma, hg = med(both["cycles"]), med(both["cycles_2n"])
    got = wi.split_rates()[128]
    assert got["ffma_rate"] == pytest.approx(med(recs["wgmma_split_ffma_k128_alone"]["cycles"]) / ffma)
    assert got["hgmma_rate"] == pytest.approx((hg_alone - (hg - ffma)) / ffma)
    rates = wi.split_rates()
    assert rates[128]["hgmma_rate"] < 0.25 < 0.8 < rates[128]["ffma_rate"]
    assert rates[16]["hgmma_rate"] > rates[64]["hgmma_rate"] > rates[128]["hgmma_rate"]


def test_the_split_at_new_densities_was_predicted_before_it_ran():
    """Run 7 (wgsplit.raw.jsonl, K = 8, 32, 256 and 16 again) against split_predictions.json, written
    before it from the exchange alone: recomputed by hand from the raw cycles, K = 8 and 32 (no
    part of the derivation) land within 10 % on both sides; K = 16 repeats the first run."""
    pred = json.loads(wi.SPLIT_PREDICTIONS.read_text())
    side = json.loads((RAW.parent / "wgsplit.json").read_text())
    assert pred["created"] < side["created"] and set(pred["derived_from_k"]) == {"16", "64", "128"}
    share, steal = pred["exchange"]["wgmma_fp32_share"], pred["exchange"]["wgmma_fp32_steal"]
    recs = _raw("wgsplit.raw.jsonl")
    assert all(r["check"] == "ok" for r in recs.values())
    med = statistics.median
    n = recs["wgmma_split_ffma_k0"]["n"]
    hg_alone = med(recs["wgmma_split_ffma_k0"]["cycles_2n"])
    first = _raw("wgmma_split.raw.jsonl")
    assert med(recs["wgmma_split_ffma_k16"]["cycles"]) == pytest.approx(med(first["wgmma_split_ffma_k16"]["cycles"]), rel=2e-3)
    for k in (8, 32):
        ffma, hg = med(recs[f"wgmma_split_ffma_k{k}"]["cycles"]), med(recs[f"wgmma_split_ffma_k{k}"]["cycles_2n"])
        alone = med(recs[f"wgmma_split_ffma_k{k}_alone"]["cycles"])
        fp32 = n * 8 * k
        a = alone / fp32
        t = (a - share * steal) / (1 - share)            # cycles per FFMA beside running HGMMAs
        meas_ffma, meas_hg = alone / ffma, (hg_alone - (hg - ffma)) / ffma
        assert a / t == pytest.approx(meas_ffma, rel=0.10), k
        assert 1 - steal / t == pytest.approx(meas_hg, rel=0.10), k
        assert side["judged"]["per_k"][str(k)]["predicted"]["ffma_rate"] == pytest.approx(a / t, rel=1e-9)


def test_fmnmx_and_the_softmax_mix_beside_hgmmas_cost_themselves_not_the_pipe():
    """Run 8 (wgsplit2.raw.jsonl), by hand from the raw cycles: FMNMX beside running HGMMAs takes
    about twice its time alone and the HGMMAs keep their whole rate; kernel 7's softmax mix (3 of
    5 instructions FP32) slows and the SS HGMMAs keep their rate, where the exchange's steal
    (a fixed cost per FP32 instruction) would take over 10 % of it; the sidecar's table agrees."""
    recs = _raw("wgsplit2.raw.jsonl")
    med = statistics.median
    n16 = recs["wgmma_split_ffma_k0"]["n"] * 8 * 16
    hg_alone = med(recs["wgmma_split_ffma_k0"]["cycles_2n"])
    side = json.loads((RAW.parent / "wgsplit2.json").read_text())["per_record"]
    for kind in ("fmnmx", "softmax"):
        r = recs[f"wgmma_split_{kind}_k16"]
        other, hg = med(r["cycles"]), med(r["cycles_2n"])
        alone = med(recs[f"wgmma_split_{kind}_k16_alone"]["cycles"])
        assert hg == pytest.approx(hg_alone, rel=0.002)           # the HGMMAs lose nothing
        assert other > 1.3 * alone                                 # the other side pays
        assert side[f"wgmma_split_{kind}_k16"]["hgmma_rate_kept"] > 0.99
    fm = recs["wgmma_split_fmnmx_k16"]
    assert med(fm["cycles"]) / med(recs["wgmma_split_fmnmx_k16_alone"]["cycles"]) > 1.8
    soft = med(recs["wgmma_split_softmax_k16"]["cycles"])
    steal = wi.load()["exchange"]["wgmma_fp32_steal"]
    assert steal * (3 / 5) * n16 / soft > 0.10                     # what the steal would have taken


def test_the_alu_factor_is_recomputed_from_the_split_run_by_hand():
    """wgmma_alu_factor: FMNMX beside SS HGMMAs over FMNMX alone, per instruction, from the raw
    cycles of run 8 (both K; where the FMNMX warps outlast the HGMMAs, the instructions left after
    them run at the alone rate); the Hopper machine reads it with its source."""
    recs = _raw("wgsplit2.raw.jsonl")
    med = statistics.median
    ratios = []
    for k in (16, 64):
        r = recs[f"wgmma_split_fmnmx_k{k}"]
        n = r["n"] * 8 * k
        alone = med(recs[f"wgmma_split_fmnmx_k{k}_alone"]["cycles"]) / n
        other, hg = med(r["cycles"]), med(r["cycles_2n"])
        beside = other / n if other <= hg else hg / (n - (other - hg) / alone)
        ratios.append(beside / alone)
    alu = wi.load()["alu"]
    assert alu["wgmma_alu_factor"] == pytest.approx(statistics.fmean(ratios), rel=1e-9)
    assert 1.9 < alu["wgmma_alu_factor"] < 2.1 and alu["hgmma_rate_kept"] > 0.99
    m = machine("h200_sxm")
    assert m.wgmma_alu_factor == pytest.approx(alu["wgmma_alu_factor"]) and "wgsplit2" in m.sources["wgmma_alu_factor"]
    assert machine("a100_80gb").wgmma_alu_factor == 1.0


def _as_derived() -> Machine:
    """The H200 Machine the wgsplit2 / wgsplit3 sections of wgmma_interplay.json were derived
    with: before ceilings smemshare and wgsplit4 were judged (2026-12-07), i.e. without the HGMMA
    issue backlog, with the sub-partition XU scope and the full cp.async charge."""
    return dataclasses.replace(machine("h200_sxm"), wgmma_issue_backlog=None, xu_steal_scope="subpartition",
                               ldgsts_smem_share=1.0, mbar_wait_latency=0.0)


def test_the_alu_factor_predicts_the_fmnmx_mix_points_it_never_saw(committed_loops, meas):
    """Derived from the split run only, the factor brings the FMNMX mix points (the same
    instruction issued by the HGMMAs' own warpgroup, another loop) within 15 %, against 46 %
    without it at K = 32, and leaves the softmax points as they were; the record's errors are
    the scheduler's on the committed loops against the raw table (with the Machine it was
    derived with); the current Machine (with the HGMMA issue backlog) still holds them within
    15 %."""
    alu = wi.load()["alu"]
    base = _as_derived()
    with_f = dataclasses.replace(base, wgmma_alu_factor=alu["wgmma_alu_factor"])
    without = dataclasses.replace(base, wgmma_alu_factor=1.0)
    now = dataclasses.replace(machine("h200_sxm"), wgmma_alu_factor=alu["wgmma_alu_factor"])
    err = lambda m, p: 100 * (wi.rate(committed_loops[p], m) / meas[p] - 1)
    for p in ("wgmma_mix_fmnmx_k16", "wgmma_mix_fmnmx_k32"):
        assert abs(err(with_f, p)) < 15 and abs(err(now, p)) < 15
        assert alu["points"]["with"][p] == pytest.approx(err(with_f, p), abs=0.01)
    assert err(without, "wgmma_mix_fmnmx_k32") > 30
    assert alu["adopted"] and alu["mae_pct"]["with"]["fmnmx"] < alu["mae_pct"]["without"]["fmnmx"] / 2


def test_alu_work_beside_a_running_hgmma_waits_as_dispatch_and_costs_the_pipe_nothing(committed_loops):
    """On the FMNMX loop the factor lengthens the pass, its extra holds are "alu dispatch" and
    the tensor pipe's end does not move; on the FFMA loop (no ALU work in the loop body's
    chains) the pass barely changes."""
    bare = machine("h200_sxm", wgmma_interplay=None)
    slow = dataclasses.replace(bare, wgmma_alu_factor=2.0)
    run = lambda m, p: simulate(list(committed_loops[p]), m, 1, 8, iterations=4, seed=1)
    a, b = run(bare, "wgmma_mix_fmnmx_k32"), run(slow, "wgmma_mix_fmnmx_k32")
    assert b["cycles_per_iter"] > 1.2 * a["cycles_per_iter"]
    assert b["warps_per_issue"].get("alu dispatch", 0) > 0.3 and "alu dispatch" not in a["warps_per_issue"]
    c, d = run(bare, "wgmma_mix_ffma_k32"), run(slow, "wgmma_mix_ffma_k32")
    assert d["cycles_per_iter"] == pytest.approx(c["cycles_per_iter"], rel=0.03)


def test_the_split_listing_is_what_the_static_build_gives(toolchain, tmp_path):
    """Both warpgroups' loops of every split-role kernel, as the venv's nvcc builds them."""
    got = wi.split_loops(wi.write_split_sass(tmp_path / "split.sass"))
    want = wi.split_loops()
    assert set(got) == set(want) and "wgmma_split_softmax_k16_rs" in got
    for rec, roles in want.items():
        for role, body in roles.items():
            assert [(i.op, i.operands, i.low, i.high) for i in got[rec][role]] == \
                   [(i.op, i.operands, i.low, i.high) for i in body], (rec, role)


def test_one_body_given_as_roles_runs_as_the_plain_loop(committed_loops):
    """simulate(roles=[body]) is simulate(body): same cycles, same warp states, every warp
    finishing its passes."""
    m = machine("h200_sxm")
    body = list(committed_loops["wgmma_mix_softmax_k20"])
    a = simulate(body, m, 1, 8, iterations=4, seed=3)
    b = simulate(None, m, 1, 8, iterations=4, seed=3, roles=[body])
    assert a["cycles_per_iter"] == b["cycles_per_iter"] and a["warps_per_issue"] == b["warps_per_issue"]
    assert a["finish_by_warp"] == b["finish_by_warp"] and None not in a["finish_by_warp"].values()


def test_the_split_runs_are_simulated_with_their_own_loops():
    """The scheduler runs each warpgroup of a split-role kernel on its own loop: the FMNMX run
    recomputed here matches the committed record, and its measured side is the raw cycles read by
    hand (the FMNMX warps outlast the HGMMAs slightly; what they issue after them runs at their
    rate alone)."""
    rec = wi.load()["split_sim"]
    loops = wi.split_loops()
    hg_role = loops["wgmma_split_fmnmx_k16"]["hgmma"]
    assert sum(1 for i in hg_role if i.base == "HGMMA") % 8 == 0
    assert all(i.base != "HGMMA" for i in loops["wgmma_split_fmnmx_k16"]["other"])
    row = rec["rows"]["wgmma_split_fmnmx_k16"]
    again = wi.simulate_split(_as_derived(), "wgmma_split_fmnmx_k16", loops)
    for f, v in again.items():
        assert row["model"][f] == pytest.approx(v, rel=1e-9)
    raw = _raw("wgsplit2.raw.jsonl")
    med = statistics.median
    r = raw["wgmma_split_fmnmx_k16"]
    n = r["n"] * 8 * 16
    other, hg = med(r["cycles"]), med(r["cycles_2n"])
    alone = med(raw["wgmma_split_fmnmx_k16_alone"]["cycles"]) / n
    assert hg < other < 1.01 * hg      # they outlast the HGMMAs by under 1 %: the rest ran alone
    assert row["measured"]["beside_cycles_per_inst"] == pytest.approx(hg / (n - (other - hg) / alone), rel=1e-9)
    # the ALU factor (derived from these records) reproduces them; without it the FMNMX side is
    # modelled at its rate alone
    assert abs(row["model"]["beside_cycles_per_inst"] / row["measured"]["beside_cycles_per_inst"] - 1) < 0.05
    assert rec["mae_pct_without_alu_factor"]["fmnmx"]["beside_cycles_per_inst"] > 40
    assert "wgmma_split_ffma_k256" not in rec["rows"] and "wgmma_split_ffma_k256" in rec["skipped"]


def test_mufu_in_mixed_streams_is_recomputed_from_raw_and_refutes_the_flat_rate():
    """Run 9 (wgsplit3.raw.jsonl), by hand from the raw cycles: EX2 alone issues every 8 cycles
    (the pure-MUFU ceiling); one EX2 in five among FFMAs takes about 10.8 cycles an EX2, one in two
    about 8.2-8.8, so the cost grows with the instructions issued between them -- the flat
    'EX2 every 10.6 cycles in any mix', written down before the run (mufu_predictions.json,
    earlier than the run's sidecar), predicted 10.7 for EX2 alone and is refuted. Beside SS HGMMAs
    EX2 takes about 1.33 times as long and the HGMMAs keep their rate; the sidecar's table agrees."""
    recs = _raw("wgsplit3.raw.jsonl")
    med = statistics.median
    per_ex2 = {}
    for name, r in recs.items():
        if name.endswith("_alone"):
            kind, k = name.split("_")[2], int(name.split("_k")[1].split("_")[0])
            share = {"ex2": 1, "ex2ffma4": 5, "softmax": 5}.get(kind, 2)
            per_ex2[name] = med(r["cycles"]) / (r["n"] * 8 * k) * share
    assert 7.9 < per_ex2["wgmma_split_ex2_k16_alone"] < 8.2 and 7.9 < per_ex2["wgmma_split_ex2_k64_alone"] < 8.2
    for k in (16, 64):
        assert 10.5 < per_ex2[f"wgmma_split_ex2ffma4_k{k}_alone"] < 11.0
        for other in ("ffma", "fmnmx", "fmul"):
            assert 8.1 < per_ex2[f"wgmma_split_ex2{other}_k{k}_alone"] < 8.9
    pred = json.loads((wi.RESULT.with_name("mufu_predictions.json")).read_text())
    side = json.loads((RAW.parent / "wgsplit3.json").read_text())
    assert pred["created"] < side["created"]
    assert pred["predicted"]["wgmma_split_ex2_k16_alone"]["mufu_10.6"] > 10.5   # refuted: measured 8.07
    b = recs["wgmma_split_ex2_k16"]
    hg_alone = med(recs["wgmma_split_ffma_k0"]["cycles_2n"])
    assert med(b["cycles_2n"]) == pytest.approx(hg_alone, rel=0.002)           # the HGMMAs lose nothing
    n = b["n"] * 8 * 16
    other, hg, alone = med(b["cycles"]), med(b["cycles_2n"]), per_ex2["wgmma_split_ex2_k16_alone"]
    assert other > hg            # the EX2 warps outlast the HGMMAs: what they issue after runs alone
    beside = hg / (n - (other - hg) / alone)
    assert 1.3 < beside / alone < 1.36
    for name, row in side["per_record"].items():
        if name in per_ex2:
            assert row["cycles_per_ex2"] == pytest.approx(per_ex2[name], rel=1e-9)


def test_the_xu_costs_are_derived_from_their_own_records_and_judged_on_the_rest():
    """wgmma_xu_factor is EX2 beside HGMMAs over EX2 alone (raw, by hand); xu_issue_steal the grid
    point that best fits the two EX2-in-five records; together they lower every held-out error
    in the committed record, and the Hopper machine (only) reads both with their source. One
    held-out figure is recomputed: EX2 + FMNMX alone on the scheduler against the raw cycles."""
    recs = _raw("wgsplit3.raw.jsonl")
    med = statistics.median
    b = recs["wgmma_split_ex2_k16"]
    n = b["n"] * 8 * 16
    alone = med(recs["wgmma_split_ex2_k16_alone"]["cycles"]) / n
    other, hg = med(b["cycles"]), med(b["cycles_2n"])
    factor = hg / (n - (other - hg) / alone) / alone
    cand = json.loads(wi.MUFU_CANDIDATE.read_text())
    assert cand["wgmma_xu_factor"] == pytest.approx(factor, rel=1e-9)
    grid = {float(k): v for k, v in cand["grid_mae_pct"].items()}
    assert cand["xu_issue_steal"] == min(grid, key=grid.get) and 0.4 < cand["xu_issue_steal"] < 0.9
    assert set(cand["fit_steal"]) == {"wgmma_split_ex2ffma4_k16_alone", "wgmma_split_ex2ffma4_k64_alone"}
    j0, j1 = cand["judged"]["without"], cand["judged"]["both"]
    for k in ("alone_mae_pct", "beside_mae_pct", "kept_mae_pct", "mix_mae_pct"):
        assert j1[k] < j0[k], k
    assert not set(cand["fit_steal"]) & set(j1["alone_pct"])
    m = machine("h200_sxm")
    assert m.xu_issue_steal == cand["xu_issue_steal"] and m.wgmma_xu_factor == pytest.approx(factor)
    assert "wgsplit3" in m.sources["xu_issue_steal"] and machine("a100_80gb").xu_issue_steal == 0.0
    name = "wgmma_split_ex2fmnmx_k16_alone"
    body = wi.split_loops()[name]["other"]
    work = sum(1 for i in body if i.base in ("FFMA", "FMUL", "FADD", "FMNMX", "MUFU"))
    its = round(512 * 8 * 16 / 8 / work)
    # judged before the XU rule (analysis/gap/xu_rule.py) narrowed whose issue holds the XU: with
    # one warp a sub-partition every scope of that time charges the warp's own instructions
    then = dataclasses.replace(m, xu_steal_scope="fp32")
    sim = simulate(list(body), then, 1, 4, iterations=its, seed=1)
    got = max(sim["finish_by_warp"].values()) / (its * work)
    want = med(recs[name]["cycles"]) / (recs[name]["n"] * 8 * 16)
    assert j1["alone_pct"][name] == pytest.approx(100 * (got / want - 1), abs=0.01)


def test_issue_beside_a_busy_xu_pipe_holds_it_and_counts_as_dispatch():
    """On the EX2-in-five loop the steal slows the pass (each FFMA issued while an EX2 runs holds
    the XU pipe longer) and the warp's extra wait is "xu dispatch"; on the EX2-only loop it
    changes nothing (no other instruction)."""
    loops = wi.split_loops()
    bare = machine("h200_sxm", wgmma_interplay=None)
    stolen = dataclasses.replace(bare, xu_issue_steal=0.65)
    run = lambda m, name: simulate(list(loops[name]["other"]), m, 1, 4, iterations=40, seed=1)
    a, b = run(bare, "wgmma_split_ex2ffma4_k16_alone"), run(stolen, "wgmma_split_ex2ffma4_k16_alone")
    assert max(b["finish_by_warp"].values()) > 1.15 * max(a["finish_by_warp"].values())
    assert b["warps_per_issue"].get("xu dispatch", 0) > 0.1 and "xu dispatch" not in a["warps_per_issue"]
    c, d = run(bare, "wgmma_split_ex2_k16_alone"), run(stolen, "wgmma_split_ex2_k16_alone")
    assert max(d["finish_by_warp"].values()) == pytest.approx(max(c["finish_by_warp"].values()), rel=0.01)

"""Issue-13 model: control-code decoding on real SASS, occupancy, the scheduler's pipe
limits, and the FA2 loop found in PyTorch's own sm_80/sm_86 code."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flashprof.analysis.gap import controls
from flashprof.analysis.gap.constants import machine, occupancy
from flashprof.analysis.gap.loops import FA2_DIR, fa2_loop
from flashprof.analysis.gap.scheduler import simulate

REPO = Path(__file__).resolve().parents[1]


def test_decode_control_fields_from_known_encoding():
    # S2R R10, SR_CTAID.Y (fa2_sm80.sass, 0x0010): high word 0x000e620000002600.
    # Bits 41.. of the high word: 0x731 -> stall 1, yield 1, write barrier 1, no read barrier.
    c = controls.decode_control(0x000E620000002600)
    assert (c.stall, c.yield_flag, c.write_barrier, c.read_barrier, c.wait_mask) == (1, 1, 1, None, 0)
    # IMAD.WIDE R4, R10, ... (0x00b0): 0x002fc800078e0205 -> 0x17e4: waits on barrier 1, stall 4.
    d = controls.decode_control(0x002FC800078E0205)
    assert (d.stall, d.write_barrier, d.waits_on) == (4, None, (1,))


@pytest.mark.parametrize("arch", ["sm80", "sm86"])
def test_every_variable_latency_result_is_waited_for(arch):
    insts = next(iter(controls.parse_file(FA2_DIR / f"fa2_{arch}.sass").values()))
    pairs = controls.first_consumer_waits(insts)
    assert len(pairs) > 100
    missing = [(hex(p.addr), p.op, q.op) for p, q, ok in pairs if not ok]
    assert not missing, missing[:5]
    # LDSM feeds HMMA through a scoreboard: at least one LDSM -> HMMA pair is among them.
    assert any(p.base == "LDSM" and q.base == "HMMA" for p, q, _ in pairs)


def test_depbar_wait_count_is_decoded_from_text():
    insts = next(iter(controls.parse_file(FA2_DIR / "fa2_sm80.sass").values()))
    dep = [i for i in insts if i.base == "DEPBAR"]
    assert dep and all(i.operands.startswith("SB0") for i in dep)
    ldg = [i for i in insts if i.base == "LDGDEPBAR"]
    assert ldg and all(i.ctrl.write_barrier == 0 for i in ldg)


def test_fa2_loop_holds_the_tile_hmma():
    for arch, bc in (("sm_80", 64), ("sm_86", 32)):
        code = fa2_loop(arch)
        hmma = sum(1 for i in code.body if i.base == "HMMA")
        # per warp: (128/4 rows) x B_c x 128 x 2 GEMMs / (16*8*16 per HMMA)
        assert hmma == 32 * bc * 128 * 2 // (16 * 8 * 16)
        assert code.registers == 255


def test_occupancy_from_registers_and_smem():
    a100, g3090 = machine("a100_80gb"), machine("rtx3090")
    # FA2 on the A100: 255 regs x 128 threads -> 32768 regs per CTA -> 2 CTAs.
    assert occupancy(a100, 255, 64 * 1024, 4)["ctas"] == 2
    # 64 KB + 1 KB reserved does not fit twice in the 3090's 100 KB.
    assert occupancy(g3090, 128, 64 * 1024, 4) == {**occupancy(g3090, 128, 64 * 1024, 4), "ctas": 1,
                                                   "limit": "shared memory"}


def _body(op_hi_pairs):
    lines = ["Function : f"]
    for k, (text, hi) in enumerate(op_hi_pairs):
        lines += [f"/*{k * 16:04x}*/ {text} ; /* 0x0000000000000000 */", f"/* 0x{hi:016x} */"]
    return next(iter(controls.parse("\n".join(lines)).values()))


def _hi(stall=1, wbar=7, rbar=7, wait=0):
    return ((stall | 1 << 4 | wbar << 5 | rbar << 8 | wait << 11) << 41)


@pytest.mark.parametrize("key", ["a100_80gb", "rtx3090"])
def test_independent_hmma_stream_runs_at_the_tensor_interval(key):
    m = machine(key)
    body = _body([("HMMA.16816.F32 R0, R4, R8, R0", _hi())] * 16)
    r = simulate(body, m, ctas=1, warps_per_cta=4, iterations=6)
    # one warp per sub-partition, 16 HMMA per pass: 16 x interval cycles per pass
    assert r["cycles_per_iter"] == pytest.approx(16 * m.hmma_interval, rel=0.05)


def test_stall_counts_bound_a_single_warp():
    m = machine("a100_80gb")
    body = _body([("IADD3 R0, R0, 0x1, RZ", _hi(stall=5))] * 10)
    r = simulate(body, m, ctas=1, warps_per_cta=1, iterations=5)
    assert r["cycles_per_iter"] == pytest.approx(50, rel=0.05)


def test_wait_on_a_load_barrier_adds_its_latency():
    m = machine("a100_80gb")
    body = _body([("LDS R0, [R2]", _hi(stall=1, wbar=0)), ("IADD3 R1, R0, 0x1, RZ", _hi(stall=1, wait=1))])
    r = simulate(body, m, ctas=1, warps_per_cta=1, iterations=6)
    assert r["cycles_per_iter"] == pytest.approx(1 + m.smem_latency + 1, abs=2)


def test_bad_sass_is_a_clear_error():
    with pytest.raises(controls.SassError):
        controls.parse("MOV R1, R2 ;")


def test_rows_keep_the_gap_json_shape_and_fit_nothing(monkeypatch):
    import flashprof.analysis.gap.issue_report as ir
    from flashprof.kernels.config import variant

    monkeypatch.setattr(ir, "SEEDS", (1, 2))
    recs = ir.rows({"rtx3090": {"7": variant(7).slug}}, {}, series_gpus=())
    recs += ir.summaries(recs)
    row = next(r for r in recs if r["kind"] == "row" and r["target"] == "7")
    assert {"gpu_key", "target", "binary", "pred_pct_of_fa2", "pred_pct_sd", "published_pct", "observed_pct",
            "error_pp", "pred_tflops", "pred_pipe_pct", "pred_issue_pct", "pred_stalls", "limiting_resource",
            "explanation"} <= set(row)
    assert row["binary"] == "flashprof" and "never measured" in row["binary_note"]
    # flashprof's kernel divided by the official FA2 the series measured on the 3090 (128x32)
    assert row["fa2_sass"] == "reports/sass/series/fa2_official_sm80_bn32.sass"
    assert row["fitted_parameters"] == [] and row["observed_pct"] == 101.5
    assert row["error_pp"] == pytest.approx(row["pred_pct_of_fa2"] - 101.5)
    assert len(row["pred_cycles_seeds"]) == 2 and row["pred_pct_sd"] >= 0
    # the 3090 runs HMMA.F32 at a quarter of the A100's per-SM rate: tensor-bound there
    assert row["limiting_resource"] == "tensor pipe"
    s = next(r for r in recs if r["kind"] == "summary")
    assert s["mae_pp"] == pytest.approx(abs(row["error_pp"]))


def test_fitted_parameters_are_read_from_the_sources():
    from dataclasses import replace

    from flashprof.analysis.gap.issue_report import fitted_parameters

    m = machine("a100_80gb")
    assert fitted_parameters(m) == [k for k, v in m.sources.items() if v.lower().startswith("fitted")] == []
    tuned = replace(m, sources={**m.sources, "smem_latency": "fitted to the published kernel 7"})
    assert fitted_parameters(tuned) == ["smem_latency"]


def test_series_loops_match_their_provenance():
    from flashprof.analysis.gap.loops import SERIES_DIR, series_file, series_loop

    prov = json.loads((SERIES_DIR / "provenance.json").read_text())["files"]
    for key, tag in (("a100_80gb", "A100"), ("rtx3090", "RTX3090")):
        for t in [str(k) for k in range(1, 17)] + ["ref"]:
            stem = series_file(key, t)
            code = series_loop(t, stem)
            text = (SERIES_DIR / f"{stem}.sass").read_text()
            # registers from the cuobjdump resource line, independently of the header parser
            assert code.registers == int(text.split("REG:", 1)[1].split()[0])
            if t != "ref":
                assert code.registers == prov[f"{stem}.sass"]["registers"]
                assert code.B_r == prov[f"{stem}.sass"]["B_r"] and code.B_c == prov[f"{stem}.sass"]["B_c"]
            hmma = sum(1 for i in code.body if i.base == "HMMA")
            assert hmma == (code.B_r // code.warps) * code.B_c * 128 * 2 // (16 * 8 * 16)
            # every pass loads the next K and V tiles: 2 x B_c x 128 fp16 over the CTA, 16 B per thread
            ldgsts = sum(1 for i in code.body if i.base == "LDGSTS")
            assert ldgsts == 2 * code.B_c * 128 * 2 // (16 * 32 * code.warps), (key, t)
            if t != "ref" and int(t) >= 8:
                assert f"_{tag}_" in stem and code.B_r == 128 and code.B_c == (64 if tag == "A100" else 32)
        assert series_file(key, "7") == "7_64_64_swizzling_sm_80" and series_file(key, "3") == "3_sm_80"


def test_out_of_line_block_is_spliced_into_the_loop():
    from flashprof.analysis.gap.controls import main_loop, parse
    from flashprof.analysis.gap.loops import SERIES_DIR, with_out_of_line

    insts = next(iter(parse((SERIES_DIR / "fa2_official_sm80.sass").read_text()).values()))
    lo, hi = main_loop(insts)
    body = with_out_of_line(insts, lo, hi)
    plain = [i.base for i in insts[lo:hi + 1]].count("LDGSTS")
    # the official FA2's next-K block sits before the loop: 8 more LDGSTS once spliced in
    assert plain == 8 and [i.base for i in body].count("LDGSTS") == 16
    assert len(body) > hi - lo + 1 and all(a in body for a in insts[lo:hi + 1])


def test_l2_bandwidth_paces_an_independent_ldgsts_stream():
    from dataclasses import replace

    m = replace(machine("a100_80gb"), lsu_per_clk_sm=100.0)
    body = _body([("LDGSTS.E.BYPASS.LTC128B.128 [R0], [R2.64]", _hi(stall=1))] * 32
                 + [("LDGDEPBAR", _hi(stall=1)), ("DEPBAR.LE SB0, 0x0", _hi(stall=1))])
    # each pass waits for its copies: 4 warps x 32 x 512 B over the SM's measured share of
    # L2 bandwidth bounds the pass from below; the L2 latency is the most that can add to it.
    # Checked on the whole run (the last warp's end over its passes) under either order the
    # schedulers may take the L2 in; the steady-state window of so bursty a loop (34 issues,
    # then ~1800 cycles of wait) over 6 passes reads a few per cent low under the rotating one.
    want = 4 * 32 * 512 / m.l2_bytes_per_clk_sm
    for order in ("fixed", "rotating"):
        r = simulate(body, replace(m, sp_arbitration=order), ctas=1, warps_per_cta=4, iterations=6)
        per_pass = max(r["finish_by_warp"].values()) / 6
        assert want <= per_pass <= want + m.l2_latency + 64
    r = simulate(body, replace(m, sp_arbitration="fixed"), ctas=1, warps_per_cta=4, iterations=6)
    assert want * 0.97 <= r["cycles_per_iter"] <= want + m.l2_latency + 64
    fast = simulate(body, replace(m, l2_bytes_per_clk_sm=None), ctas=1, warps_per_cta=4, iterations=6)
    assert fast["cycles_per_iter"] < 0.6 * want


def test_a100_ga102_constants_cite_measurements_or_are_marked():
    src = json.loads((REPO / "reports" / "gap" / "constant_sources.json").read_text())["entries"]
    measured = {(e.get("gpu"), e["quantity"]): e["value"] for e in src if e.get("kind") == "measured"}
    gpus = json.loads((REPO / "flashprof" / "analysis" / "gpus.json").read_text())["gpus"]
    for key, gpu, l2 in (("a100_80gb", "A100-SXM4-80GB", "L2 hit latency (near partition)"), ("rtx3090", "A40", "L2 hit latency")):
        im = gpus[key]["issue_model"]
        assert im["l1_latency"]["value"] == measured[(gpu, "L1 hit latency")]
        assert im["l2_latency"]["value"] == measured[(gpu, l2)]
        assert "rrze_gpu_benches" in im["l2_bytes_per_clk_sm"]["source"]
        for name in ("smem_latency", "mufu_latency", "barrier_latency", "mio_queue_depth"):
            s = im[name]["source"]
            assert ("accelsim" in s or "assumed_here" in s) and "sensitivity row" in s, (key, name)
        assert not any("from memory" in v["source"] for v in im.values())
    mach = machine("a100_80gb")
    assert mach.l2_bytes_per_clk_sm == pytest.approx(5410.9e9 / (108 * 1410e6), abs=0.05)


def test_wavefronts_per_shared_memory_access():
    from flashprof.analysis.gap.scheduler import wavefronts

    body = _body([("LDSM.16.M88.4 R0, [R2]", 0), ("LDSM.16.MT88.2 R0, [R2]", 0), ("LDS.128 R0, [R2]", 0),
                  ("LDS R0, [R2]", 0), ("LDGSTS.E.BYPASS.LTC128B.128 [R0], desc[UR4][R2.64]", 0)])
    assert [wavefronts(i) for i in body] == [4, 2, 4, 1, 4]


def test_cli_bad_inputs_are_one_line_errors(capsys, tmp_path):
    from flashprof.analysis.__main__ import main

    assert main(["gap", "--model", "issue", str(tmp_path / "missing.ncu-rep")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.ncu-rep" in err[0]
    assert main(["gap", "--plot", str(tmp_path / "x.png"), str(tmp_path / "missing.ncu-rep")]) == 2
    assert main(["gap", "--model", "pipes", "--plot", str(tmp_path / "x.png")]) == 2
    assert "need --model issue" in capsys.readouterr().err


def test_missing_sass_is_a_clear_error():
    from flashprof.analysis.gap.loops import kernel_loop

    with pytest.raises(controls.SassError, match="no loop SASS"):
        kernel_loop("7", "sm_80", "no_such_config")


def test_plot_issue_gap_has_a_panel_per_gpu():
    import math as _m

    from flashprof.analysis.charts.gap_charts import plot_issue_gap

    def row(key, t, obs, pred, meas=_m.nan):
        return {"kind": "row", "gpu_key": key, "target": t, "observed_pct": obs, "pred_pct": pred,
                "measured_cycles": meas, "pred_cycles": 90.0, "clock_mhz": 1110.0}
    recs = [row("a100_80gb", "7", 80.3, 90.0), row("a100_80gb", "ref", _m.nan, 100.0),
            row("h200_sxm", "7", _m.nan, _m.nan, meas=100.0)]
    fig = plot_issue_gap(recs, title="t")
    gids = {a.get_gid() for ax in fig.axes for a in ax.get_children()}
    assert {"issue:a100_80gb:obs", "issue:a100_80gb:pred", "issue:h200_sxm:cycles"} <= gids
    h200 = [ax for ax in fig.axes if "h200" in ax.get_title()][0]
    bar = [p for p in h200.patches if p.get_gid() == "issue:h200_sxm:cycles"][0]
    assert bar.get_height() == pytest.approx(0.9)  # 90 predicted / 100 measured cycles


def test_h200_constants_come_from_the_measured_ceilings():
    doc = json.loads((REPO / "reports" / "h200" / "ceilings.json").read_text())
    val = {(x["kind"], x["name"]): x["value"] for x in doc["measurements"] if x.get("check") == "ok"}
    m = machine("h200_sxm")
    assert m.smem_latency == pytest.approx(val[("latency", "lds_32")])
    assert m.ldsm_latency == pytest.approx(val[("latency", "ldsm_x4")])
    assert m.mufu_latency == pytest.approx(val[("latency", "mufu_ex2")])
    assert m.barrier_latency == pytest.approx(val[("latency", "bar_sync_128")])
    assert m.bar_latency(8) == pytest.approx(val[("latency", "bar_sync_256")])
    assert m.l2_latency == pytest.approx(val[("latency", "cp_async_wait")])
    # per sub-partition: 4096 FLOP per HMMA.16816 / (FLOP/clk/SM / 4)
    assert m.hmma_interval == pytest.approx(4096 / (val[("throughput", "mma_f16_f32")] / 4))
    assert m.mufu_interval == pytest.approx(32 / (val[("throughput", "mufu_ex2")] / 4))
    assert m.sources["l2_latency"].startswith("measured: h200/ceilings.json latency cp_async_wait")
    # GPUs without a measured file keep the literature values and one barrier latency
    a100 = machine("a100_80gb")
    assert a100.ldsm_latency is None and a100.bar_latency(8) == a100.barrier_latency


def test_a_failed_or_absent_measurement_keeps_the_literature_value(tmp_path):
    lit = machine("h200_sxm", ceilings=None)
    doc = {"measurements": [{"name": "lds_32", "kind": "latency", "value": 99.0, "check": "timed out"},
                            {"name": "mufu_ex2", "kind": "latency", "value": None, "check": "ok"},
                            {"name": "bar_sync_128", "kind": "latency", "value": 21.0, "check": "ok"}]}
    f = tmp_path / "ceilings.json"
    f.write_text(json.dumps(doc))
    m = machine("h200_sxm", ceilings=f)
    assert m.smem_latency == lit.smem_latency and m.mufu_latency == lit.mufu_latency
    assert m.barrier_latency == 21.0 and m.l2_latency == lit.l2_latency


def test_measured_ldsm_latency_sets_the_ldsm_completion():
    m = machine("h200_sxm")
    body = _body([("LDSM.16.M88.4 R0, [R2]", _hi(stall=1, wbar=0)), ("IADD3 R1, R0, 0x1, RZ", _hi(stall=1, wait=1))])
    r = simulate(body, m, ctas=1, warps_per_cta=1, iterations=6)
    # issue, then the conflict-free x4 is usable ldsm_latency cycles after it starts, then the IADD3
    assert r["cycles_per_iter"] == pytest.approx(m.ldsm_latency + 1, abs=2)
    lds = _body([("LDS R0, [R2]", _hi(stall=1, wbar=0)), ("IADD3 R1, R0, 0x1, RZ", _hi(stall=1, wait=1))])
    r = simulate(lds, m, ctas=1, warps_per_cta=1, iterations=6)
    assert r["cycles_per_iter"] == pytest.approx(1 + m.smem_latency + 1, abs=2)

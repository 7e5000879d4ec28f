"""Issue-13 model: control-code decoding on real SASS, occupancy, the scheduler's pipe
limits, and the FA2 loop found in PyTorch's own sm_80/sm_86 code."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flashprof.analysis.gap import controls
from flashprof.analysis.gap.constants import READ, machine, occupancy
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


class _Recording(dict):
    """A gpus.json GPU block that notes every key the model reads from it."""

    def __init__(self, data, seen):
        super().__init__(data)
        self.seen = seen

    def __getitem__(self, key):
        self.seen.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.seen.add(key)
        return super().get(key, default)


def _read_entries(key: str, gpus: dict) -> dict:
    """{name: gpus.json entry} of every value machine() reads for one GPU: the top-level
    keys it actually touches (recorded) and the whole issue_model block."""
    seen: set = set()
    spy = json.loads(json.dumps(gpus))
    spy["gpus"][key] = _Recording(spy["gpus"][key], seen)
    machine(key, gpus=spy, ceilings=None)
    block = gpus["gpus"][key]
    out = {n: block[n] for n in seen if n != "issue_model" and isinstance(block[n], dict) and "value" in block[n]}
    out.update(block["issue_model"])
    return out


def _fitted_by_hand(key: str, gpus: dict | None = None) -> list[str]:
    """The constants with neither a citation (a key of gpus.json's sources, named in the
    entry's source) nor a measurement behind them, read straight from gpus.json."""
    gpus = gpus or json.loads((REPO / "analysis" / "gpus.json").read_text())
    cited = set(gpus["sources"])
    out = []
    for name, entry in _read_entries(key, gpus).items():
        src = entry.get("source") or ""
        words = set(src.replace("(", " ").replace(")", " ").replace(",", " ").replace(";", " ").replace(":", " ").split())
        if not (src.startswith("measured") or words & cited):
            out.append(name)
    return sorted(out)


@pytest.mark.parametrize("key", ["a100_80gb", "rtx3090", "h200_sxm"])
def test_fitted_parameters_are_the_constants_without_a_source(key):
    # the model reads its throughputs from more than the issue_model block; every value it
    # reads (recorded while machine() runs) is one whose source Machine.fitted looks at
    gpus = json.loads((REPO / "analysis" / "gpus.json").read_text())
    read = set(_read_entries(key, gpus)) - set(gpus["gpus"][key]["issue_model"])
    assert {"sm_count", "mma_sync_flop_per_clk_sm", "registers_per_sm"} <= read
    assert read == set(READ)
    assert list(machine(key, ceilings=None).fitted) == _fitted_by_hand(key)


@pytest.mark.slow
def test_a_constant_tuned_to_the_answer_is_reported_as_fitted(monkeypatch):
    from flashprof.analysis.gap import issue_report

    gpus = json.loads((REPO / "analysis" / "gpus.json").read_text())
    g = gpus["gpus"]["rtx3090"]
    g["issue_model"]["mio_queue_depth"]["source"] = "tuned until kernel 7 matched 101.5 %"
    g["alu_lanes_per_clk_sm"]["source"] = "chosen to fit the published numbers"
    expected = _fitted_by_hand("rtx3090", gpus)
    assert expected == ["alu_lanes_per_clk_sm", "mio_queue_depth"]
    m = machine("rtx3090", gpus=gpus, ceilings=None)
    assert list(m.fitted) == expected
    monkeypatch.setattr(issue_report, "machine", lambda key: m)
    recs = issue_report.rows({"rtx3090": {}}, {})  # FA2's row alone: one loop to simulate
    recs += issue_report.summaries(recs)
    assert {r["kind"] for r in recs} == {"row", "summary"}
    assert all(r["fitted_parameters"] == expected for r in recs if r["kind"] in ("row", "summary"))


@pytest.mark.slow
def test_rows_keep_the_gap_json_shape_and_fit_nothing():
    from flashprof.analysis.gap.issue_report import rows, summaries
    from flashprof.kernels.config import variant

    recs = rows({"rtx3090": {"7": variant(7).slug}}, {})
    recs += summaries(recs)
    row = next(r for r in recs if r["kind"] == "row" and r["target"] == "7")
    assert {"gpu_key", "target", "pred_pct", "observed_pct", "error_pp", "limiting_resource",
            "explanation"} <= set(row)
    assert row["fitted_parameters"] == _fitted_by_hand("rtx3090") and row["observed_pct"] == 101.5
    assert row["error_pp"] == pytest.approx(row["pred_pct"] - 101.5)
    # the 3090 runs HMMA.F32 at a quarter of the A100's per-SM rate: tensor-bound there
    assert row["limiting_resource"] == "tensor pipe"
    s = next(r for r in recs if r["kind"] == "summary")
    assert s["mae_pp"] == pytest.approx(abs(row["error_pp"]))


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

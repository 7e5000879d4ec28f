"""Gap model (flashprof.analysis.gap): data files, hand-computed pipe times, the CLI subcommand.

Expected numbers are computed by hand in the tests (tiny frames and toy GPUs), from the
datasheet arithmetic, or from raw ncu_report counters -- never by calling the model twice.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys

import pandas as pd
import pytest

from flashprof.analysis.gap.data import SMEM_METRIC, TARGETS, launch_work, load_gpus, load_published, match_gpu, pipe_of, work_from_opcodes
from flashprof.analysis.gap.legacy_pipes.pipe_table import DEFAULT_GPUS, MODEL_PIPES
from flashprof.analysis.gap.legacy_pipes.throughput import ceilings, combine, fit_alpha, pipe_check, pipe_shares, pipe_times
from flashprof.analysis.gap.legacy_pipes.pipes_report import gap_table, limitations, load_static, model_errors
from flashprof.analysis.gap.legacy_pipes.work import group_ratios, loop_trips, scale_by_loop, scale_opcodes, static_counts
from flashprof.analysis.__main__ import main
from flashprof.analysis.report.parse import FRAME_COLUMNS
from conftest import KERNEL7_MMA, REF, ROOT, raw_metrics

GPUS = load_gpus()
PUB = load_published()


def g(key, field):
    return GPUS["gpus"][key][field]["value"]


# --------------------------------------------------------------------------- data files
def test_datasheet_arithmetic():
    # Datasheet TFLOP/s = SMs x FLOP/clk/SM x boost clock, within 1 %.
    assert 108 * g("a100_80gb", "mma_sync_flop_per_clk_sm") * 1.41e9 == pytest.approx(312e12, rel=0.01)
    assert g("a100_80gb", "tensor_datasheet_tflops") == 312.0
    # GA102 (GeForce) runs fp16 mma with fp32 accumulate at half the fp16-accumulate rate.
    assert 82 * g("rtx3090", "mma_sync_flop_per_clk_sm") * 1.695e9 == pytest.approx(71e12, rel=0.01)
    assert g("rtx3090", "mma_sync_fp16acc_flop_per_clk_sm") == 2 * g("rtx3090", "mma_sync_flop_per_clk_sm")
    assert g("a100_80gb", "mma_sync_fp16acc_flop_per_clk_sm") == g("a100_80gb", "mma_sync_flop_per_clk_sm")
    # H100/H200 dense 989.4 TFLOP/s is wgmma 4096 FLOP/clk/SM at 1.83 GHz.
    for key in ("h100_sxm", "h200_sxm"):
        assert 132 * g(key, "wgmma_flop_per_clk_sm") * g(key, "datasheet_peak_clock_mhz") * 1e6 == \
            pytest.approx(g(key, "tensor_datasheet_tflops") * 1e12, rel=0.01)
    # H200 mma.sync ceiling measured: 360448 FLOP/clk for 132 SMs.
    assert 132 * g("h200_sxm", "mma_sync_flop_per_clk_sm") == pytest.approx(360448, rel=1e-4)
    # H200 DRAM: 1504 B/clk x 3.1995 GHz from the report = the 4.8 TB/s datasheet value.
    assert 1504 * 3.1995e9 == pytest.approx(g("h200_sxm", "dram_gbs") * 1e9, rel=0.01)
    assert g("a100_40gb", "dram_gbs") == 1555 and g("a100_80gb", "dram_gbs") == 2039


def test_the_core_ratios_of_the_question():
    # A100: 4x GA102's tensor rate per SM per clock, half its FP32 lanes, same issue.
    assert g("a100_80gb", "mma_sync_flop_per_clk_sm") == 4 * g("rtx3090", "mma_sync_flop_per_clk_sm")
    assert g("a100_80gb", "fp32_lanes_per_clk_sm") * 2 == g("rtx3090", "fp32_lanes_per_clk_sm")
    assert g("a100_80gb", "issue_warp_inst_per_clk_sm") == g("rtx3090", "issue_warp_inst_per_clk_sm")
    # H200 sits between: mma.sync 2731 with 128 FP32 lanes.
    ratio = {k: g(k, "mma_sync_flop_per_clk_sm") / g(k, "fp32_lanes_per_clk_sm")
             for k in ("rtx3090", "a100_80gb", "h200_sxm")}
    assert ratio["rtx3090"] < ratio["h200_sxm"] < ratio["a100_80gb"]


def test_every_entry_has_a_source():
    keys = set(GPUS["sources"])
    for key, gpu in GPUS["gpus"].items():
        assert gpu["name"] and gpu["arch"] in ("sm_80", "sm_86", "sm_90") and gpu["match"]
        fields = [f for f, e in gpu.items() if isinstance(e, dict) and f != "issue_model"]
        for f, e in gpu.get("issue_model", {}).items():  # issue-13 constants: flags may be 0
            assert isinstance(e["value"], (int, float)) and e["value"] >= 0 and e["unit"], (key, f)
            assert e["source"].split()[0].rstrip(";:,") in keys, (key, f)
        assert {"sm_count", "boost_clock_mhz", "mma_sync_flop_per_clk_sm", "fp32_lanes_per_clk_sm",
                "mufu_lanes_per_clk_sm", "issue_warp_inst_per_clk_sm", "smem_bytes_per_clk_sm",
                "lsu_warp_inst_per_clk_sm", "dram_gbs", "l2_mb", "smem_per_sm_kb"} <= set(fields)
        for f in fields:
            e = gpu[f]
            assert isinstance(e["value"], (int, float)) and e["value"] > 0, (key, f)
            assert e["unit"] and e["source"], (key, f)
            first = e["source"].split()[0].rstrip(";:,")
            assert first in keys or e["source"].startswith(("derived:", "measured here", "assumed")), (key, f)


def test_published_file():
    assert "seed" in PUB["source"] or "Flash Attention from Scratch" in PUB["source"]
    for name, pub in PUB["gpus"].items():
        assert pub["gpu_key"] in GPUS["gpus"]
        assert set(pub["pct_of_fa2"]) == {str(i) for i in range(1, 17)}
        assert all(set(v) == {"seq_4096", "harmonic_mean"} for v in pub["pct_of_fa2"].values())
        assert set(pub["reference_tflops"]) == {"seq_4096", "harmonic_mean"}
    assert PUB["gpus"]["a100"]["pct_of_fa2"]["7"]["seq_4096"] == 80.3
    assert PUB["gpus"]["rtx3090"]["pct_of_fa2"]["7"]["seq_4096"] == 101.5
    assert PUB["gpus"]["a100"]["reference_tflops"]["seq_4096"] == 186.4


# --------------------------------------------------------------------------- mapping
@pytest.mark.parametrize("op,pipe", [
    ("HMMA", "tensor"), ("HMMA.16816.F32", "tensor"), ("FMUL", "fma"), ("FFMA", "fma"),
    ("IMAD", "imad"), ("IMAD.MOV.U32", "imad"), ("FMNMX", "alu"), ("LOP3", "alu"),
    ("F2FP", "alu"), ("MUFU", "xu"), ("MUFU.EX2", "xu"), ("LDSM", "lsu"), ("SHFL", "lsu"),
    ("LDGSTS", "lsu"), ("ULDC", "uniform"), ("BAR", "control"), ("WHATEVER", "other"),
])
def test_pipe_of(op, pipe):
    assert pipe_of(op) == pipe


def test_static_opcodes_are_all_mapped():
    path = ROOT / "reports" / "sass" / "opcodes.csv"
    if not path.is_file():
        pytest.skip("no static opcode CSV yet")
    ops = set(pd.read_csv(path)["opcode"])
    assert {op for op in ops if pipe_of(op) == "other"} == set()


# --------------------------------------------------------------------------- hand cases
TOY = {"sm_count": 2, "clock_hz": 1e9, "mma_sync_flop_per_clk_sm": 1024, "fp32_lanes_per_clk_sm": 128,
       "imad_lanes_per_clk_sm": 16, "alu_lanes_per_clk_sm": 64, "mufu_lanes_per_clk_sm": 16,
       "lsu_warp_inst_per_clk_sm": 1, "issue_warp_inst_per_clk_sm": 4, "smem_bytes_per_clk_sm": 128,
       "dram_bps": 1e12}


def test_pipe_times_by_hand():
    w = work_from_opcodes({"HMMA": 10, "FMUL": 64, "IMAD": 16, "MUFU": 8, "LDSM": 4, "BRA": 2},
                              smem_wavefronts=16, dram_bytes=2000)
    assert w["tensor_flop"] == 10 * 4096 and w["issue_inst"] == 104
    t = pipe_times(w, TOY)
    assert t["tensor"] == pytest.approx(40960 / 1024 / 2)          # 20
    assert t["fma"] == pytest.approx(max(80 * 32 / 128, 16 * 32 / 16) / 2)  # IMAD-bound: 16
    assert t["alu"] == 0
    assert t["xu"] == pytest.approx(8 * 32 / 16 / 2)               # 8
    assert t["lsu"] == pytest.approx(4 / 1 / 2)                    # 2
    assert t["smem"] == pytest.approx(16 * 128 / 128 / 2)          # 8
    assert t["issue"] == pytest.approx(104 / 4 / 2)                # 13
    assert t["dram"] == pytest.approx(2000 * 1e9 / 1e12)           # 2
    cycles, limit = combine(t, 0.5)
    assert limit == "tensor"
    assert cycles == pytest.approx(20 + 0.5 * (16 + 8 + 2 + 8 + 13 + 2))
    assert combine(t, 0.0) == (pytest.approx(20), "tensor")


def test_static_smem_proxy():
    w = work_from_opcodes({"LDSM": 3, "LDS": 2, "STS": 1, "LDGSTS": 5})
    assert w["smem_wavefronts"] == 3 * 4 + 2 + 1 + 5


def test_fit_alpha_recovers_a_known_alpha():
    base = {p: 0.0 for p in MODEL_PIPES}
    a = {**base, "tensor": 10, "smem": 4, "issue": 6}     # max 10, rest 10
    b = {**base, "tensor": 5, "smem": 8, "fma": 2}        # max 8, rest 7
    pts = [(a, 10 + 0.3 * 10), (b, 8 + 0.3 * 7)]
    assert fit_alpha(pts) == pytest.approx(0.3)
    assert fit_alpha([]) == 0.0


def test_scale_opcodes_by_static_mix():
    dyn = {"FMUL": 640, "IMAD": 100, "VIADD": 50}
    out = scale_opcodes(dyn, {"FMUL": 10, "IMAD": 5, "VIADD": 5}, {"FMUL": 10, "IMAD": 10, "IADD3": 4})
    assert out["FMUL"] == 640 and out["IMAD"] == 200 and out["VIADD"] == 0
    # IADD3 only on the target arch: ALU group's executed-per-static on the source (50/5) x 4.
    assert out["IADD3"] == pytest.approx(40)
    assert scale_opcodes(dyn, {}, {"FMUL": 1}) == dyn


def test_scale_by_loop_changes_only_the_loop_part():
    # 10 loop bodies executed (HMMA 20 / 2 per body); prologue IMAD 30 stays as executed.
    dyn = {"HMMA": 20, "IMAD": 30 + 10 * 1, "FMUL": 10 * 4, "VIADD": 10 * 3}
    lf = {"HMMA": 2, "IMAD": 1, "FMUL": 4, "VIADD": 3}
    lt = {"HMMA": 2, "IMAD": 5, "FMUL": 4, "IADD3": 3}
    assert loop_trips(dyn, lf) == 10
    out = scale_by_loop(dyn, lf, lt)
    assert out == {"HMMA": 20, "IMAD": 30 + 10 * 5, "FMUL": 40, "VIADD": 0, "IADD3": 30}
    # Per pipe group, the loop part is scaled by the loop-scope static ratio.
    r = group_ratios(lf, lt)
    assert r["imad"] == 5 and r["alu"] == 1 and r["tensor"] == 1
    assert out["IMAD"] == pytest.approx(30 + 10 * 1 * r["imad"])
    assert scale_by_loop(dyn, {"FMUL": 4}, lt) == dyn  # no HMMA in the loop: unchanged


def test_static_counts_scopes_and_configs(tmp_path):
    (tmp_path / "opcodes.csv").write_text(
        "kernel,arch,dtype,opcode,count\n7,sm_80,fp16,IMAD,50\n7,sm_90,fp16,IMAD,40\n")
    (tmp_path / "opcodes_loop.csv").write_text(
        "kernel,arch,dtype,config,tuned_gpu,opcode,count\n"
        "7,sm_80,fp16,seed,,IMAD,31\n7,sm_80,fp16,big,h200,IMAD,9\n7,sm_90,fp16,seed,,IMAD,2\n")
    o = load_static(tmp_path / "opcodes.csv")
    assert set(o["scope"]) == {"kernel", "loop"}
    assert static_counts(o, "7", "sm_80") == {"IMAD": 50}
    assert static_counts(o, "7", "sm_80", scope="loop") == {"IMAD": 31}           # seed config
    assert static_counts(o, "7", "sm_80", scope="loop", config="big") == {"IMAD": 9}
    assert static_counts(o, "7", "sm_90", scope="loop", config="big") == {"IMAD": 2}  # fallback: seed
    # A plain opcodes.csv frame (no scope column) is all kernel scope.
    plain = pd.read_csv(tmp_path / "opcodes.csv")
    assert static_counts(plain, "7", "sm_90") == {"IMAD": 40}
    assert static_counts(plain, "7", "sm_90", scope="loop") == {}


def _launch_rows(report, variant, gpu, arch, metrics: dict) -> list[dict]:
    ident = {"report": report, "path": f"/x/{report}.ncu-rep", "gpu": gpu, "arch": arch,
             "kernel": "k", "kernel_full": "k", "range_idx": 0, "launch": 0, "variant": variant,
             "title": None, "batch": 16.0, "seq": 4096.0, "heads": 16.0, "d_head": 128.0, "dtype": "fp16"}
    return [{**ident, "metric": m, "unit": "", "value": float(v)} for m, v in metrics.items()]


def _ops(**counts):
    return {f"sass__inst_executed_per_opcode[{k}]": v for k, v in counts.items()}


@pytest.fixture()
def a100_frame():
    """Hand-made frame: FA2 and kernel 7 'profiled on an A100' (so nothing is scaled)."""
    common = {"launch__sm_count": 108, "sm__cycles_elapsed.avg.per_second": 1.41e9}
    ref = _launch_rows("ref", "None", "NVIDIA A100-SXM4-80GB", "sm_80", {
        **common, **_ops(HMMA=108 * 1000, FMUL=108 * 1000),
        SMEM_METRIC: 108 * 1000, "gpu__time_duration.sum": 1000.0, "sm__cycles_elapsed.avg": 3000})
    k7 = _launch_rows("kernel7", "7", "NVIDIA A100-SXM4-80GB", "sm_80", {
        **common, **_ops(HMMA=108 * 1000, FMUL=108 * 4000),
        SMEM_METRIC: 108 * 3000, "gpu__time_duration.sum": 1250.0, "sm__cycles_elapsed.avg": 3750})
    return pd.DataFrame(ref + k7, columns=list(FRAME_COLUMNS))


def test_gap_table_on_a_hand_made_frame(a100_frame):
    t = gap_table(a100_frame, None, GPUS, PUB, None, gpu_keys=["a100_80gb"], alpha=0.0)
    row = t[t["target"] == "7"].iloc[0]
    ref = t[t["target"] == "ref"].iloc[0]
    assert row["work_source"].startswith("measured")
    # Per SM: ref tensor 1000 HMMA x 4096 / 2048 = 2000 cycles; FMA 1000 x 32 / 64 = 500;
    # smem 1000 x 128 / 128 = 1000; issue 2000 / 4 = 500 -> tensor-bound at 2000.
    assert ref["t_tensor"] == pytest.approx(2000) and ref["t_fma"] == pytest.approx(500)
    assert ref["t_smem"] == pytest.approx(1000) and ref["t_issue"] == pytest.approx(500)
    assert ref["limit"] == "tensor"
    # Kernel 7: FMA 4000 x 32 / 64 = 2000; smem 3000 -> smem-bound; 2000/3000 of FA2.
    assert row["t_fma"] == pytest.approx(2000) and row["t_smem"] == pytest.approx(3000)
    assert row["limit"] == "smem"
    assert row["pred_pct"] == pytest.approx(100 * 2000 / 3000)
    assert row["observed_pct"] == 80.3 and row["observed_source"] == "published"
    assert row["error_pp"] == pytest.approx(100 * 2000 / 3000 - 80.3)
    assert row["ncu_pct"] == pytest.approx(100 * 1000 / 1250)   # from the report durations
    # The report's own SM clock replaces the datasheet one (prefer measured data).
    ce = ceilings(GPUS, a100_frame, ["a100_80gb"]).iloc[0]
    assert ce["source"] == "report" and ce["clock_hz"] == 1.41e9


def test_alpha_is_fitted_on_measured_gpus_only(a100_frame):
    t = gap_table(a100_frame, None, GPUS, PUB, None, gpu_keys=["a100_80gb", "rtx3090"])
    # Measured: ref 3000 = 2000 + a x 2000 (rest 500+1000+500), k7 3750 = 3000 + a x (2000 + 2000 + 1250).
    x1, y1 = 2000 / 3000, 1 - 2000 / 3000
    x2, y2 = 5250 / 3750, 1 - 3000 / 3750
    assert t["alpha"].iloc[0] == pytest.approx((x1 * y1 + x2 * y2) / (x1 * x1 + x2 * x2))
    # The 3090 rows are carried over from the A100 counters (no static SASS given: unscaled).
    src = t[(t["gpu_key"] == "rtx3090") & (t["target"] == "7")]["work_source"].iloc[0]
    assert "kernel7" in src and "unscaled" in src


def test_pipe_shares_and_errors(a100_frame):
    t = gap_table(a100_frame, None, GPUS, PUB, None, gpu_keys=["a100_80gb"], alpha=0.0)
    s = pipe_shares(t, "7")
    assert set(s["pipe"]) == set(MODEL_PIPES)
    assert s["share_of_sum"].sum() == pytest.approx(1.0)
    assert s[s["is_limit"]]["pipe"].tolist() == ["smem"]
    e = model_errors(t)
    assert e.iloc[0]["n"] == 1 and e.iloc[0]["mae_pp"] == pytest.approx(abs(100 * 2 / 3 - 80.3))


def test_ceilings_three_gpus():
    c = ceilings(GPUS).set_index("gpu_key")
    assert list(c.index) == list(DEFAULT_GPUS)
    assert c.loc["a100_80gb", "tensor_per_fp32"] == pytest.approx(2048 / 128)
    assert c.loc["rtx3090", "tensor_per_fp32"] == pytest.approx(512 / 256)
    assert c.loc["a100_80gb", "tensor_flops"] == pytest.approx(312e12, rel=0.01)
    assert c.loc["h200_sxm", "ridge_tensor_dram"] == pytest.approx(360448 * 1.98e9 / 4.8e12, rel=1e-3)


def test_match_gpu():
    assert match_gpu("NVIDIA A100-SXM4-40GB", GPUS) == "a100_40gb"
    assert match_gpu("NVIDIA A100-SXM4-80GB", GPUS) == "a100_80gb"
    assert match_gpu("NVIDIA GeForce RTX 3090", GPUS) == "rtx3090"
    assert match_gpu("NVIDIA H200", GPUS) == "h200_sxm"
    assert match_gpu("h200", GPUS) == "h200_sxm"
    assert match_gpu("Tesla T4", GPUS) is None


# --------------------------------------------------------------------------- real report
def test_mapping_reproduces_ncu_pipe_utilisation(full_frame):
    chk = pipe_check(full_frame)
    ref = chk[chk["report"] == "ref"].set_index("pipe")
    for pipe in ("tensor", "fma", "alu", "xu", "lsu", "issue"):
        assert ref.loc[pipe, "model_pct"] == pytest.approx(ref.loc[pipe, "ncu_pct"], abs=1.0), pipe


def test_hmma_flops_match_the_tensor_counter(full_frame, raw_ref):
    w = launch_work(full_frame)
    ref = w[w["target"] == "ref"].iloc[0]
    counter = (raw_ref["sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off.sum.per_cycle_elapsed"]
               * raw_ref["sm__cycles_elapsed.avg"])
    assert ref["tensor_flop"] == pytest.approx(counter, rel=1e-3)
    assert ref["tensor_flop"] == pytest.approx(4 * 16 * 16 * 4096**2 * 128, rel=1e-6)


# --------------------------------------------------------------------------- CLI
def _cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


ROW_FIELDS = {"kind", "target", "gpu_key", "gpu", "limit", "t_tensor", "t_fma", "t_alu", "t_xu",
              "t_lsu", "t_smem", "t_issue", "t_dram", "pred_pct", "pred_pct_max", "observed_pct",
              "observed_source", "error_pp", "work_source", "alpha"}


@pytest.mark.slow
def test_cli_json():
    rc, out, _ = _cli("gap", "--model", "pipes", str(REF), "--format", "json", "--no-cache")
    assert rc == 0
    recs = json.loads(out)
    assert isinstance(recs, list) and all(isinstance(r, dict) for r in recs)
    rows = [r for r in recs if r["kind"] == "row"]
    summ = [r for r in recs if r["kind"] == "summary"]
    assert rows and ROW_FIELDS <= set(rows[0])
    assert {r["gpu_key"] for r in rows} >= set(DEFAULT_GPUS)
    assert {(r["target"], r["gpu_key"]) for r in rows} >= {("7", k) for k in DEFAULT_GPUS}
    assert {s["gpu_key"] for s in summ} == {"rtx3090", "a100_80gb", "h200_sxm"}
    assert all(s["mae_pp"] >= 0 for s in summ)
    ref_h200 = next(r for r in rows if r["target"] == "ref" and r["gpu_key"] == "h200_sxm")
    assert ref_h200["work_source"].startswith("measured") and ref_h200["pred_pct"] == pytest.approx(100)


@pytest.mark.slow
def test_cli_table():
    rc, out, _ = _cli("gap", "--model", "pipes", str(REF), "--no-cache")
    assert rc == 0
    assert "MAE rtx3090" in out and "MAE a100_80gb" in out and "MAE h200_sxm" in out
    assert "alpha" in out and "fitted, superseded" in out
    assert "what this model cannot explain:" in out


@pytest.mark.parametrize("argv", [
    ["gap", "--format", "xml"],
    ["gap", "--format", "csv"],
    ["gap", "nope.ncu-rep"],
    ["gap", "--model", "pipes", str(REF), "--sass", "nope.csv"],
    ["gap", "--model", "pipes", str(REF), "--bench", "nope.csv"],
    ["gap", str(REF), "--sass", "x.csv"],  # the issue model takes no opcode CSV
])
def test_cli_errors_one_line_exit_2(argv):
    rc, out, err = _cli(*argv)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("gap: error: ")
    assert "Traceback" not in err


@pytest.mark.slow
def test_cli_real_process_bad_format():
    proc = subprocess.run([sys.executable, "-m", "flashprof", "gap", "--format", "xml"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- figures
def test_gap_figures_structure(a100_frame):
    from flashprof.analysis.charts import gap_charts as gap_plots
    t = gap_table(a100_frame, None, GPUS, PUB, None, gpu_keys=["a100_80gb", "rtx3090"], alpha=0.0)
    fig = gap_plots.plot_pipe_shares(pipe_shares(t, "7"))
    gids = {a.get_gid() for a in fig.axes[0].get_children()}
    assert {f"share:a100_80gb:{p}" for p in MODEL_PIPES} <= gids
    fig = gap_plots.plot_ceilings(ceilings(GPUS))
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    gids = {a.get_gid() for a in ax.get_children()}
    assert {f"ceiling:{k}:dram" for k in DEFAULT_GPUS} <= gids


# --------------------------------------------------------------------------- real H200 reports
@pytest.fixture(scope="module")
def h200_gap(kernel_frame):
    return gap_table(kernel_frame, None, GPUS, PUB, None)


@pytest.mark.slow
def test_measured_cycles_are_the_raw_counter(h200_gap, raw_kernels, raw_ref):
    h = h200_gap[h200_gap["gpu_key"] == "h200_sxm"].set_index("target")
    assert set(h.index) == set(TARGETS)
    # the models' kernel 7 is its mma.sync form (kernel7mma); the wgmma kernel 7 is not modelled
    for k, raw in {**raw_kernels, "7": raw_metrics(KERNEL7_MMA), "ref": raw_ref}.items():
        assert h.loc[k, "measured_cycles"] == raw["sm__cycles_elapsed.avg"], k
        stem = {"ref": "ref", "7": "kernel7mma"}.get(k, f"kernel{k}")
        assert h.loc[k, "work_source"] == f"measured ({stem})"
    # No other GPU has a measured point.
    assert h200_gap[h200_gap["gpu_key"] != "h200_sxm"]["measured_cycles"].isna().all()


@pytest.mark.slow
def test_alpha_fitted_on_h200_points_only(h200_gap, kernel_frame):
    """Least squares on relative error, by hand, over the eight H200 launches only; the
    published A100/3090 numbers must not move alpha."""
    h = h200_gap[h200_gap["measured_cycles"].notna()]
    assert len(h) == 8 and set(h["gpu_key"]) == {"h200_sxm"}
    num = den = 0.0
    for r in h.to_dict("records"):
        times = [r[f"t_{p}"] for p in MODEL_PIPES]
        x = (sum(times) - max(times)) / r["measured_cycles"]
        y = 1 - max(times) / r["measured_cycles"]
        num, den = num + x * y, den + x * x
    assert h200_gap["alpha"].iloc[0] == pytest.approx(num / den, rel=1e-12)
    fake = json.loads(json.dumps(PUB))
    for pub in fake["gpus"].values():
        for v in pub["pct_of_fa2"].values():
            v["seq_4096"] = 1.0
    other = gap_table(kernel_frame, None, GPUS, fake, None)
    assert other["alpha"].iloc[0] == h200_gap["alpha"].iloc[0]


def test_h200_pipe_mapping_on_kernel_reports(kernel_frame):
    chk = pipe_check(kernel_frame)
    assert set(chk["report"]) == {f"kernel{i}" for i in range(1, 7)} | {"kernel7mma", "ref"}
    for _, r in chk.iterrows():
        assert r["model_pct"] == pytest.approx(r["ncu_pct"], abs=1.5), (r["report"], r["pipe"])


def test_h200_errors_against_bench_and_limitations(kernel_frame):
    bench = pd.read_csv(ROOT / "reports" / "h200" / "bench.csv")
    t = gap_table(kernel_frame, None, GPUS, PUB, bench)
    h = t[(t["gpu_key"] == "h200_sxm") & (t["target"] != "ref")].set_index("target")
    b = bench[(bench["seq"] == 4096) & (bench["dtype"] == "fp16")].set_index("target")
    for k in "1234567":
        assert h.loc[k, "observed_source"] == "bench"
        assert h.loc[k, "observed_pct"] == pytest.approx(b.loc[k, "pct_of_ref"])
        assert h.loc[k, "error_pp"] == pytest.approx(h.loc[k, "pred_pct"] - b.loc[k, "pct_of_ref"])
    e = model_errors(t).set_index("gpu_key")
    assert e.loc["h200_sxm", "mae_pp"] == pytest.approx(h["error_pp"].abs().mean())
    notes = limitations(t)
    assert any(n.startswith("h200_sxm: measured cycles / largest pipe bound") for n in notes)
    assert any("kernel 7 on" in n for n in notes)


def test_carried_kernel7_uses_the_loop_of_the_profiled_config(kernel_frame):
    """Kernel 7 on the A100/3090 is the H200 counters plus the loop-body delta of the config
    the H200 report ran (its sidecar's config_slug), not the seed config's."""
    side = json.loads((ROOT / "reports" / "h200" / "kernel7mma.json").read_text())
    o = load_static(ROOT / "reports" / "sass" / "opcodes.csv")
    t = gap_table(kernel_frame, o, GPUS, PUB, None).set_index(["target", "gpu_key"])
    for key, arch in (("a100_80gb", "sm_80"), ("rtx3090", "sm_86")):
        src = t.loc[("7", key), "work_source"]
        assert "loop-body delta sm_90->" + arch in src and side["config_slug"] in src
        assert "loop-body delta" in t.loc[("6", key), "work_source"]
    # The H200 rows stay measured and alpha stays the H200-only fit.
    assert t.loc[("7", "h200_sxm"), "work_source"] == "measured (kernel7mma)"
    plain = gap_table(kernel_frame, None, GPUS, PUB, None)
    assert t["alpha"].iloc[0] == plain["alpha"].iloc[0]
    notes = limitations(t.reset_index())
    assert any(n.startswith("a100_80gb: worst kernel") for n in notes)

"""CLI: flashprof summary|compare, in-process through main(argv)."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys

import pytest

from flashprof.analysis.__main__ import main
from conftest import CUDNN, GEMM, KERNELS, REF, ROOT, SOL, raw_metrics

REQUIRED = {"report", "kernel", "variant", "gpu", "duration_ns", "sm_clock_hz", "tflops",
            "tensor_tflops_peak", "ai_l1", "ai_l2", "ai_dram", "ai_smem", "tensor_pipe_pct",
            "fma_pipe_pct", "issue_active_pct", "stalls", "smem_bank_conflicts", "pct_of_fa2"}


def _run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def summary_json():
    # One in-process run for several assertions (module scope: capsys is per test).
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["summary", str(REF), str(CUDNN), "--format", "json"])
    assert rc == 0
    return json.loads(buf.getvalue())


def _l2_ai(raw: dict, tensor_name: str) -> float:
    tensor = raw[f"{tensor_name}.sum.per_cycle_elapsed"] * raw["sm__cycles_elapsed.avg.per_second"]
    return tensor / (32 * raw["lts__lts2xbar_cycles_active.sum.per_second"])


def _tflops(raw: dict, tensor_name: str, fp32_too: bool = False) -> float:
    """Tensor (+ FP32 with fp32_too) FLOP/s (ncu-metrics.md formulas) from raw counters, in TFLOP/s."""
    tensor = raw[f"{tensor_name}.sum.per_cycle_elapsed"] * raw["sm__cycles_elapsed.avg.per_second"]
    fp32 = sum(raw[f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"] * w
               for op, w in (("fadd", 1), ("fmul", 1), ("ffma", 2))) * raw["smsp__cycles_elapsed.avg.per_second"]
    return (tensor + (fp32 if fp32_too else 0.0)) / 1e12


HMMA = "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off"
HGMMA = "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off"  # wgmma fp16 (f32 accumulate)


def _path(raw: dict) -> str:
    """The tensor counter of the instruction a kernel ran: HGMMA for the wgmma kernel 7, else HMMA."""
    return HGMMA if raw.get(f"{HGMMA}.sum.per_cycle_elapsed", 0) > 0 else HMMA


def test_summary_json_keys_and_values(summary_json, raw_ref, raw_cudnn):
    assert len(summary_json) == 2
    for rec in summary_json:
        assert REQUIRED <= set(rec)
        assert set(rec["smem_bank_conflicts"]) == {"ld", "st"}
    ref = next(r for r in summary_json if r["report"] == "ref")
    # Issue 12: tflops is the launch's own FLOP kind (tensor here, as the Tensor Core chart);
    # total_tflops keeps the old meaning, tensor + FP32.
    assert ref["flops_kind"] == "tensor"
    assert ref["tflops"] == pytest.approx(_tflops(raw_ref, HMMA), rel=1e-9)
    assert ref["total_tflops"] == pytest.approx(_tflops(raw_ref, HMMA, fp32_too=True), rel=1e-9)
    assert ref["provenance"]["tflops"] == "exact" and ref["missing"] == [] and ref["collect_hint"] is None
    # Sanity: the total is the attention FLOP count over the duration, within 2 % (the FP32
    # softmax FLOPs are ~1 % on top of the 4·B·H·S²·d tensor FLOPs).
    assert ref["total_tflops"] * 1e12 * ref["duration_ns"] * 1e-9 == pytest.approx(4 * 16 * 16 * 4096**2 * 128, rel=0.02)
    assert ref["ai_l2"] == pytest.approx(_l2_ai(raw_ref, HMMA), rel=1e-9)
    assert ref["tensor_pipe_pct"] == raw_ref["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"]
    assert ref["stalls"]["math_pipe_throttle"] == raw_ref[
        "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio"]
    assert ref["variant"] == "ref" and ref["pct_of_fa2"] == pytest.approx(100.0)
    cudnn = next(r for r in summary_json if r["report"] == "cudnn")
    # cudnn.json says it solved the same problem: % of FA2 from the two raw durations.
    assert cudnn["variant"] == "cudnn"
    assert cudnn["pct_of_fa2"] == pytest.approx(
        100 * raw_ref["gpu__time_duration.sum"] / raw_cudnn["gpu__time_duration.sum"], rel=1e-12)


@pytest.mark.slow
def test_no_sidecar_means_no_pct_of_fa2(tmp_path, capsys):
    shutil.copy(CUDNN, tmp_path / "other.ncu-rep")  # no other.json next to it
    shutil.copy(REF, tmp_path / "ref.ncu-rep")
    rc, out, _ = _run(capsys, "summary", tmp_path / "other.ncu-rep", "--format", "json", "--no-cache")
    assert rc == 0
    (rec,) = json.loads(out)
    assert rec["pct_of_fa2"] is None  # nothing says it solved the same problem


@pytest.fixture(scope="module")
def h200_summary():
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["summary", str(ROOT / "reports" / "h200"), "--format", "json"])
    assert rc == 0
    return {r["report"]: r for r in json.loads(buf.getvalue())}


def test_kernel_pct_of_fa2_from_raw_durations(h200_summary, raw_ref, raw_kernels):
    assert set(h200_summary) >= {f"kernel{i}" for i in range(1, 8)} | {"ref", "cudnn"}
    for k, raw in raw_kernels.items():
        rec = h200_summary[f"kernel{k}"]
        assert rec["duration_ns"] == raw["gpu__time_duration.sum"]
        assert rec["pct_of_fa2"] == pytest.approx(
            100 * raw_ref["gpu__time_duration.sum"] / raw["gpu__time_duration.sum"], rel=1e-12), k
        assert rec["tflops"] == pytest.approx(_tflops(raw, _path(raw)), rel=1e-9)
        assert rec["total_tflops"] == pytest.approx(_tflops(raw, _path(raw), fp32_too=True), rel=1e-9)
        assert 0 < rec["pct_of_fa2"] < 250  # the warp-specialised kernel 7 runs at ~180 %


def test_user_target_sits_beside_the_series(h200_summary, raw_ref):
    """The Triton example profiled with TARGET= (examples/triton_attention.py) is summarised
    beside kernels 1-7 with its % of FA2 from the two raw durations."""
    from conftest import raw_metrics
    rep = ROOT / "reports" / "h200" / "triton_attention-attention.ncu-rep"
    if not rep.exists():
        pytest.skip("no user-target report shipped")
    raw = raw_metrics(rep)
    rec = h200_summary["triton_attention-attention"]
    assert rec["pct_of_fa2"] == pytest.approx(
        100 * raw_ref["gpu__time_duration.sum"] / raw["gpu__time_duration.sum"], rel=1e-12)
    assert rec["flops_kind"] == "tensor"


def test_kernel_summary_sanity(h200_summary):
    for name, rec in h200_summary.items():
        # FLOP/s x duration = 4·B·H·S²·d from the summary's own shape columns (within 2 %).
        flops = 4 * rec["batch"] * rec["heads"] * rec["seq"] ** 2 * rec["d_head"]
        assert rec["tensor_tflops"] * 1e12 * rec["duration_ns"] * 1e-9 == pytest.approx(flops, rel=0.01), name
        assert rec["tensor_tflops_peak"] >= rec["tensor_tflops"]
        assert 0 < rec["pct_of_tensor_peak"] <= 100
    # The pipeline's headline ordering: kernel 1 is far slowest; swizzling is the big jump.
    pct = {k: h200_summary[f"kernel{k}"]["pct_of_fa2"] for k in "1234567"}
    assert pct["1"] < 25 < 60 < pct["2"]
    assert max(pct, key=pct.get) == "7"


def test_foreign_gemm_summary(capsys):
    rc, out, err = _run(capsys, "summary", GEMM, REF, "--format", "json")
    assert rc == 0
    gemm = next(r for r in json.loads(out) if r["report"] == "gemm_foreign")
    assert gemm["pct_of_fa2"] is None and gemm["ai_l2"] is None and gemm["duration_ns"] > 0
    # one warning for the missing sections; one because this GEMM ran at 1.57 GHz and FA2 at 1.79
    lines = err.splitlines()
    assert len(lines) == 2 and all(x.startswith("summary: warning: ") for x in lines)
    assert "no tensor FLOP/s" in lines[0] and "SM clocks differ" in lines[1] and "gemm_foreign at 1.57 GHz" in lines[1]


@pytest.mark.slow
def test_pct_of_fa2_from_ref_in_same_directory(tmp_path, capsys):
    shutil.copy(REF, tmp_path / "ref.ncu-rep")
    shutil.copy(SOL, tmp_path / "kernel6.ncu-rep")
    (tmp_path / "kernel6.json").write_text(json.dumps({
        "schema": 1, "kernel": "6", "title": "k6", "shape": {"batch": 16, "seq": 4096, "heads": 16, "d_head": 128},
        "dtype": "fp16"}))
    rc, out, _ = _run(capsys, "summary", tmp_path / "kernel6.ncu-rep", "--format", "json", "--no-cache")
    assert rc == 0
    (rec,) = json.loads(out)
    assert rec["variant"] == "6"
    ref_ns = raw_metrics(REF)["gpu__time_duration.sum"]
    sol_ns = raw_metrics(SOL)["gpu__time_duration.sum"]
    assert rec["pct_of_fa2"] == pytest.approx(100 * ref_ns / sol_ns, rel=1e-12)


def _launches_in(path) -> int:
    """Launches (actions over all ranges) of a report, straight from ncu_report."""
    ncu_report = pytest.importorskip("ncu_report")
    rep = ncu_report.load_report(str(path))
    return sum(rep.range_by_idx(i).num_actions() for i in range(rep.num_ranges()))


def test_directory_argument_and_table(capsys):
    rc, out, _ = _run(capsys, "summary", ROOT / "reports" / "h200")
    assert rc == 0
    lines = out.splitlines()
    # Identity shared by all nine launches is printed once, not nine times.
    assert lines[0].startswith("all launches:") and "NVIDIA H200" in lines[0] and "seq 4096" in lines[0]
    header = next(line for line in lines if line.split()[:1] == ["cudnn"] and "kernel1" in line).split()
    stems = []
    for p in sorted((ROOT / "reports" / "h200").glob("*.ncu-rep")):
        n = _launches_in(p)
        s = p.name[: -len(".ncu-rep")]
        stems += [s] if n == 1 else [f"{s}#{i}" for i in range(n)]
    # one column per launch (report#launch for a report of several), long names
    # shortened in the middle to 16 characters
    assert len(header) == len(stems)
    assert all(h == s or (len(h) == 16 and "…" in h and s.startswith(h.split("…")[0])) for h, s in zip(header, stems))
    one = [h for h, s in zip(header, stems) if "#" not in s]  # single-launch reports
    assert one[:10] == ["cudnn"] + [f"kernel{i}" for i in range(1, 8)] + ["kernel7mma", "ref"]
    assert any(line.startswith("tensor_tflops_peak") for line in lines)
    body = lines[lines.index(next(line for line in lines if line.split() == header)) + 1:]
    # The cells are each report's own numbers, in the header's order: the duration row
    # against Nsight Compute's gpu__time_duration.sum read straight from the reports.
    def _raw(stem):
        name, _, launch = stem.partition("#")
        return raw_metrics(ROOT / "reports" / "h200" / f"{name}.ncu-rep", int(launch or 0))
    want = {s: _raw(s)["gpu__time_duration.sum"] for s in stems}
    cells = next(line for line in body if line.split()[0] == "duration_ns").split()[1:]
    assert cells[1::2] == ["ms"] * len(stems)
    assert [float(c) for c in cells[0::2]] == [pytest.approx(want[s] / 1e6, abs=5e-4) for s in stems]
    assert body and all(len(line.split()) >= 1 + len(stems) for line in body if not line.startswith("duration"))
    assert not any(line.startswith(("gpu ", "seq ", "title ")) for line in body)


def test_table_single_report_keeps_identity(capsys):
    rc, out, _ = _run(capsys, "summary", REF)
    assert rc == 0
    assert any(line.startswith("gpu ") and line.endswith("NVIDIA H200") for line in out.splitlines())


@pytest.mark.slow
def test_summary_csv_and_json_for_all_reports(capsys):
    rc, out, _ = _run(capsys, "summary", ROOT / "reports" / "h200", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    n = sum(_launches_in(p) for p in (ROOT / "reports" / "h200").glob("*.ncu-rep"))
    assert rc == 0 and len(rows) == n >= 9
    assert {"inst_mix.FFMA", "stalls.math_pipe_throttle", "smem_bank_conflicts.ld"} <= set(rows[0])
    rc, out, _ = _run(capsys, "summary", ROOT / "reports" / "h200", "--format", "json")
    assert rc == 0 and len(json.loads(out)) == n


def test_compare_kernel5_kernel6_fp32_fusion(capsys, raw_kernels):
    rc, out, _ = _run(capsys, "compare", KERNELS["5"], KERNELS["6"], "--format", "json")
    assert rc == 0
    (pair,) = json.loads(out)
    rows = {r["field"]: r for r in pair["rows"]}
    r5, r6 = raw_kernels["5"], raw_kernels["6"]
    assert rows["inst_mix.FMUL"]["delta"] < 0 < rows["inst_mix.FFMA"]["delta"]
    assert rows["inst_mix.HMMA"]["delta"] == 0
    assert rows["inst_executed"]["a"] == r5["smsp__inst_executed.sum"]
    assert rows["inst_executed"]["b"] == r6["smsp__inst_executed.sum"]
    d5, d6 = r5["gpu__time_duration.sum"], r6["gpu__time_duration.sum"]
    assert rows["duration_ns"]["delta_pct"] == pytest.approx(100 * (d6 - d5) / d5, rel=1e-12)
    # Kernel 6 is faster: no duration regression. A stall is flagged only when its total
    # warp-cycles (ratio x instructions) grew, not just its per-instruction ratio.
    assert d6 < d5 and not any(r.startswith("duration") for r in pair["regressions"])
    for text in pair["regressions"]:
        reason = text.split()[1]
        key = f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"
        assert r6[key] * r6["smsp__inst_executed.sum"] > 1.1 * r5[key] * r5["smsp__inst_executed.sum"], text
    # mio_throttle per issue rose > 10 % but its total did not: not flagged.
    key = "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio"
    assert r6[key] > 1.1 * r5[key]
    if r6[key] * r6["smsp__inst_executed.sum"] < 1.1 * r5[key] * r5["smsp__inst_executed.sum"]:
        assert not any("mio_throttle" in t for t in pair["regressions"])
    rc, out, _ = _run(capsys, "compare", KERNELS["5"], KERNELS["6"])
    assert rc == 0 and "inst_mix.FFMA" in out


def test_csv(capsys, raw_ref):
    rc, out, _ = _run(capsys, "summary", REF, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 0 and len(rows) == 1
    assert float(rows[0]["ai_l2"]) == pytest.approx(_l2_ai(raw_ref, HMMA), rel=1e-9)
    assert "stalls.math_pipe_throttle" in rows[0]


def test_compare_flags_regressions(capsys, raw_ref, raw_cudnn):
    rc, out, _ = _run(capsys, "compare", CUDNN, REF, "--format", "json")
    assert rc == 0
    (pair,) = json.loads(out)
    dur = next(r for r in pair["rows"] if r["field"] == "duration_ns")
    a, b = raw_cudnn["gpu__time_duration.sum"], raw_ref["gpu__time_duration.sum"]
    assert dur["delta_pct"] == pytest.approx(100 * (b - a) / a, rel=1e-12)
    assert any(r.startswith("duration +") for r in pair["regressions"])
    assert any("math_pipe_throttle" in r for r in pair["regressions"])
    rc, out, _ = _run(capsys, "compare", CUDNN, REF)
    assert rc == 0 and "REGRESSIONS:" in out


def test_compare_no_regression_when_faster(capsys):
    rc, out, _ = _run(capsys, "compare", REF, CUDNN, "--format", "json")
    (pair,) = json.loads(out)
    assert not any(r.startswith("duration") for r in pair["regressions"])


@pytest.mark.parametrize("argv", [
    ["summary", "does/not/exist.ncu-rep"],
    ["summary", str(REF), "--format", "xml"],
    [],
    ["compare", str(REF)],
])
def test_errors_one_line_exit_2(capsys, argv):
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and re.match(r"(summary|compare|gap|flashprof): error: ", err)
    assert "Traceback" not in err


def test_bad_files_one_line_exit_2(tmp_path, capsys):
    png = tmp_path / "picture.ncu-rep"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    empty = tmp_path / "empty"
    empty.mkdir()
    for arg in (png, empty):
        rc, out, err = _run(capsys, "summary", arg)
        assert rc == 2 and err.count("\n") == 1 and str(arg) in err


def test_real_process_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "flashprof", "summary", "nope.ncu-rep"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == "summary: error: nope.ncu-rep: no such file\n"


def test_pct_of_measured_peak_from_raw_counters_and_ceilings_json(h200_summary, raw_kernels):
    """% of the *measured* mma.sync roof: executed tensor FLOPs per SM cycle (raw counter)
    over the measured FLOP/clk/SM x SMs from reports/h200/ceilings.json, both at the
    kernel's own clock (the clock cancels)."""
    doc = json.loads((ROOT / "reports" / "h200" / "ceilings.json").read_text())
    roof = {n: next(m for m in doc["measurements"] if m["name"] == n and m["kind"] == "throughput")
            for n in ("mma_f16_f32", "wgmma_f16_f32")}
    for k in ("1", "6", "7"):
        raw = raw_kernels[k]
        mma = roof["wgmma_f16_f32" if _path(raw) == HGMMA else "mma_f16_f32"]
        want = 100 * raw[f"{_path(raw)}.sum.per_cycle_elapsed"] / (mma["value"] * doc["sm_count"])
        rec = h200_summary[f"kernel{k}"]
        assert rec["pct_of_measured_peak"] == pytest.approx(want, rel=1e-9), k
        assert rec["provenance"]["pct_of_measured_peak"] == "measured"


def test_pct_of_measured_peak_is_null_without_ceilings(tmp_path, capsys):
    rep = tmp_path / "kernel6.ncu-rep"
    rep.write_bytes((ROOT / "reports" / "h200" / "kernel6.ncu-rep").read_bytes())
    rc, out, _ = _run(capsys, "summary", rep, "--format", "json")
    (rec,) = json.loads(out)
    assert rc == 0 and rec["pct_of_measured_peak"] is None and rec["provenance"]["pct_of_measured_peak"] is None

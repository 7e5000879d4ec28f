"""CLI: python -m analysis summary|compare, in-process through main(argv)."""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys

import pytest

from analysis.__main__ import main
from conftest import CUDNN, GEMM, REF, ROOT, SOL

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


def test_summary_json_keys_and_values(summary_json):
    assert len(summary_json) == 2
    for rec in summary_json:
        assert REQUIRED <= set(rec)
        assert set(rec["smem_bank_conflicts"]) == {"ld", "st"}
    ref = next(r for r in summary_json if r["report"] == "ref")
    assert ref["tflops"] == pytest.approx(370.4, abs=0.5)  # tensor 366.6 + FP32 3.8
    assert ref["ai_l2"] == pytest.approx(132, abs=2)
    assert ref["tensor_pipe_pct"] == pytest.approx(57, abs=1)
    assert ref["stalls"]["math_pipe_throttle"] == pytest.approx(0.68, abs=0.01)
    assert ref["variant"] is None and ref["pct_of_fa2"] == pytest.approx(100.0)
    cudnn = next(r for r in summary_json if r["report"] == "cudnn")
    assert cudnn["pct_of_fa2"] is None  # no sidecar: nothing says it solved the same problem


def test_foreign_gemm_summary(capsys):
    rc, out, err = _run(capsys, "summary", GEMM, REF, "--format", "json")
    assert rc == 0
    gemm = next(r for r in json.loads(out) if r["report"] == "gemm_foreign")
    assert gemm["pct_of_fa2"] is None and gemm["ai_l2"] is None and gemm["duration_ns"] > 0
    assert err.count("\n") == 1 and "analysis: warning:" in err


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
    assert rec["pct_of_fa2"] == pytest.approx(100 * 5998176.0 / 6051008.0)


def test_directory_argument_and_table(capsys):
    rc, out, _ = _run(capsys, "summary", ROOT / "reports" / "h200")
    assert rc == 0
    header = out.splitlines()[0].split()
    assert "ref" in header and "cudnn" in header
    assert any(line.startswith("tensor_tflops_peak") for line in out.splitlines())


def test_csv(capsys):
    rc, out, _ = _run(capsys, "summary", REF, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 0 and len(rows) == 1
    assert float(rows[0]["ai_l2"]) == pytest.approx(132, abs=2)
    assert "stalls.math_pipe_throttle" in rows[0]


def test_compare_flags_regressions(capsys):
    rc, out, _ = _run(capsys, "compare", CUDNN, REF, "--format", "json")
    assert rc == 0
    (pair,) = json.loads(out)
    dur = next(r for r in pair["rows"] if r["field"] == "duration_ns")
    assert dur["delta_pct"] == pytest.approx(100 * (5998176.0 - 3299392.0) / 3299392.0)
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
    assert err.count("\n") == 1 and err.startswith("analysis: error: ")
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
    proc = subprocess.run([sys.executable, "-m", "analysis", "summary", "nope.ncu-rep"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == "analysis: error: nope.ncu-rep: no such file\n"

"""Provenance a report carries itself: the Nsight Compute version and command line (and the
clock / cache control it implies), readable names for generic CUTLASS wrappers, one
spelling per GPU, and a warning when the reports' SM clocks differ by 3 % or more."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from report_corpus import PUBLIC, PUBLIC_MISSING

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "reports" / "h200"
CUTLASS = PUBLIC / "panjd123__cutlass__384.ncu-rep"


def _raw_command(path: Path) -> str | None:
    """The bytes after the last path separator before 'ncu ' up to the first control byte."""
    blob = path.read_bytes()
    i = blob.find(b"/ncu --")
    if i < 0:
        return None
    start = blob.rfind(b"\x00", 0, i)
    start = next(j for j in range(i, start, -1) if blob[j - 1] < 0x20) if start >= 0 else 0
    end = next(j for j in range(i, len(blob)) if blob[j] < 0x20)
    return blob[start:end].decode()


def _raw_version(path: Path) -> str:
    blob = path.read_bytes()
    i = blob.find(b"Nsight Compute Target")
    return re.search(rb"\d{4}\.\d+\.\d+\.\d+", blob[i:i + 64]).group().decode()


def summary(*paths, check=True):
    r = subprocess.run([sys.executable, "-P", "-m", "flashprof", "summary", *map(str, paths), "--format", "json"],
                       capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


SHIPPED = sorted(p for p in H200.glob("*.ncu-rep") if p.with_suffix(".json").is_file())


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_embedded_provenance_agrees_with_our_sidecars(path):
    from flashprof.analysis.report.provenance import embedded
    side = json.loads(path.with_suffix(".json").read_text())
    e = embedded(path)
    assert e["ncu_version"] == _raw_version(path) and e["ncu_version"].startswith(side["ncu"]["version"][:8])
    args = side["ncu"]["args"]
    assert e["clock_control"] == args[args.index("--clock-control") + 1]
    assert e["cache_control"] == args[args.index("--cache-control") + 1]
    raw = _raw_command(path)
    assert raw and e["command_line"].endswith(raw.split("/ncu ", 1)[1])


def test_a_foreign_report_names_its_ncu_and_wrapped_kernels():
    if not CUTLASS.is_file():
        pytest.skip(PUBLIC_MISSING)
    import ncu_report
    rows, _err = summary(CUTLASS)
    r = ncu_report.load_report(str(CUTLASS)).range_by_idx(0)
    for row in rows:
        assert row["ncu_version"] == _raw_version(CUTLASS) == "2024.1.1.0"
        cmd = _raw_command(CUTLASS)
        assert "--clock-control base" in cmd and row["clock_control"] == "base" and row["cache_control"] == "all"
        a = r.action_by_idx(row["launch"])
        inner = re.match(r"void cutlass::Kernel<cutlass::(?:\w+::)*(\w+)<", a.name(a.NameBase_DEMANGLED)).group(1)
        assert row["kernel"] == f"Kernel<{inner}>"
    assert {row["kernel"] for row in rows} == {"Kernel<B2bGemm>", "Kernel<Gemm>"}


def test_one_spelling_per_gpu():
    from flashprof.analysis.report.ncu_extract import canonical_gpu
    assert canonical_gpu("GeForce RTX 3080") == canonical_gpu("NVIDIA GeForce RTX 3080") == "NVIDIA GeForce RTX 3080"
    assert canonical_gpu("NVIDIA H200") == "NVIDIA H200" and canonical_gpu(None) is None


def _clock(path):
    import ncu_report
    return ncu_report.load_report(str(path)).range_by_idx(0).action_by_idx(0).metric_by_name(
        "sm__cycles_elapsed.avg.per_second").as_double()


def test_clock_mismatch_is_a_warning():
    """The shipped cuDNN report ran at a lower SM clock than kernel 6: summary and compare say so."""
    a, b = H200 / "kernel6.ncu-rep", H200 / "cudnn.ncu-rep"
    spread = max(_clock(a), _clock(b)) / min(_clock(a), _clock(b)) - 1
    assert spread >= 0.03
    _rows, err = summary(a, b)
    (line,) = [x for x in err.splitlines() if "SM clocks differ" in x]
    assert line.startswith("summary: warning: ") and f"{100 * spread:.1f} %" in line and "cudnn" in line
    r = subprocess.run([sys.executable, "-P", "-m", "flashprof", "compare", str(a), str(b)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and "compare: warning: SM clocks differ" in r.stderr


def test_no_warning_when_clocks_agree():
    a, b = H200 / "kernel5.ncu-rep", H200 / "kernel6.ncu-rep"
    assert abs(_clock(a) / _clock(b) - 1) < 0.03
    _rows, err = summary(a, b)
    assert "SM clocks differ" not in err

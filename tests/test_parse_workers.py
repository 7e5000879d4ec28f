"""Crash isolation: reports are read only in worker processes. A reader that dies (the
SIGSEGV of Nsight Compute 2025.3.1's bundled ncu_report under Python 3.12, an abort) gives
one line naming the report, the signal and the fix; the parent never imports ncu_report."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import warnings

import pytest

from flashprof.analysis.report.errors import FlashprofWarning, ReportError
from flashprof.analysis.report.parse import load_frame, load_source_frame
from conftest import GEMM, ROOT, SOL

CRASHERS = {
    "segv": "import os, signal\ndef load_report(p):\n    os.kill(os.getpid(), signal.SIGSEGV)\n",
    "abort": "import os\ndef load_report(p):\n    os.abort()\n",
}
# Crashes only on reports whose name contains "crash"; reads the rest with the real module.
SELECTIVE = '''import importlib.util, os, signal, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path.remove(here)
del sys.modules["ncu_report"]
import ncu_report as _real
sys.modules[__name__] = _real
_load = _real.load_report
def load_report(p):
    if "crash" in os.path.basename(p):
        os.kill(os.getpid(), signal.SIGSEGV)
    return _load(p)
_real.load_report = load_report
'''


def _fake(tmp_path, monkeypatch, body: str):
    d = tmp_path / "fake_ncu"
    d.mkdir()
    (d / "ncu_report.py").write_text(body)
    monkeypatch.setenv("PYTHONPATH", str(d))
    return d


def _sha(path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


@pytest.mark.slow
@pytest.mark.parametrize("how, sig", [("segv", "SIGSEGV"), ("abort", "SIGABRT")])
def test_crashing_reader_is_one_report_error(tmp_path, monkeypatch, how, sig):
    _fake(tmp_path, monkeypatch, CRASHERS[how])
    report = tmp_path / "k.ncu-rep"
    report.write_bytes(GEMM.read_bytes())
    before = _sha(report)
    with pytest.raises(ReportError) as info:
        load_frame(report, cache=False)
    msg = str(info.value)
    assert str(report) in msg and sig in msg and "pip install ncu-report" in msg and "\n" not in msg
    assert _sha(report) == before  # the report collected is kept, untouched
    with pytest.raises(ReportError, match=sig):
        load_source_frame(report)


@pytest.mark.slow
def test_only_the_crashing_report_is_named(tmp_path, monkeypatch):
    _fake(tmp_path, monkeypatch, SELECTIVE)
    good, bad = tmp_path / "good.ncu-rep", tmp_path / "crash.ncu-rep"
    good.write_bytes(GEMM.read_bytes())
    bad.write_bytes(SOL.read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FlashprofWarning)
        assert len(load_frame(good, cache=False)) > 0  # the wrapper reads healthy reports
        with pytest.raises(ReportError) as info:
            load_frame([good, bad], cache=False)
    assert str(bad) in str(info.value) and str(good) not in str(info.value)


@pytest.mark.slow
def test_cli_crash_is_one_line_exit_2(tmp_path):
    d = tmp_path / "fake_ncu"
    d.mkdir()
    (d / "ncu_report.py").write_text(CRASHERS["segv"])
    report = tmp_path / "kernel6.ncu-rep"
    report.write_bytes(GEMM.read_bytes())
    env = {**os.environ, "PYTHONPATH": str(d), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "flashprof", "summary", str(report)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("summary: error: ") and "SIGSEGV" in lines[0] and str(report) in lines[0]
    assert report.is_file()


@pytest.mark.slow
def test_parent_never_imports_ncu_report(tmp_path):
    code = ("import sys, warnings; warnings.simplefilter('ignore'); "
            "from flashprof.analysis.report.parse import load_frame, load_source_frame; "
            f"load_frame([{str(GEMM)!r}, {str(SOL)!r}], cache=False); load_source_frame({str(SOL)!r}); "
            "assert 'ncu_report' not in sys.modules, 'imported'; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180,
                       env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr

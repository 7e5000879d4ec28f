"""Finding ncu_report: Nsight Compute's bundled copy is tried in a child process first, so
a copy that crashes this Python (seen on the GPU machine) gives one clear error, not a
segmentation fault of the caller."""
import pytest

from flashprof.analysis.report import ncu_import
from flashprof.analysis.report.errors import ReportError


def _fake_install(tmp_path, body: str):
    d = tmp_path / "extras" / "python"
    d.mkdir(parents=True)
    (d / "ncu_report.py").write_text(body)
    return d


def test_probe_accepts_a_working_module(tmp_path):
    d = _fake_install(tmp_path, "class _R:\n    def num_ranges(self): return 1\n"
                                "def load_report(p): return _R()\n")
    assert ncu_import.probe(d) is None


def test_probe_reports_a_crashing_module(tmp_path):
    d = _fake_install(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    why = ncu_import.probe(d)
    assert why is not None and "crashed (signal 11)" in why


def test_probe_reports_a_module_that_cannot_read_reports(tmp_path):
    d = _fake_install(tmp_path, "def load_report(p): raise RuntimeError('bad build')\n")
    assert "bad build" in ncu_import.probe(d)


def test_fallback_skips_a_crashing_copy_with_one_clear_error(tmp_path, monkeypatch):
    d = _fake_install(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    real_import = ncu_import.importlib.import_module

    def no_pypi_package(name):
        if name == "ncu_report":
            raise ImportError("no module named ncu_report")
        return real_import(name)

    monkeypatch.setattr(ncu_import.importlib, "import_module", no_pypi_package)
    monkeypatch.setattr(ncu_import, "_candidate_dirs", lambda: [d])
    ncu_import.ncu_report.cache_clear()
    try:
        with pytest.raises(ReportError, match=r"install the PyPI package 'ncu-report'.*crashed \(signal 11\)"):
            ncu_import.ncu_report()
    finally:
        ncu_import.ncu_report.cache_clear()


def test_probe_report_is_shipped_and_real(tmp_path):
    assert ncu_import.PROBE_REPORT.read_bytes()[:3] == b"NVR"  # Nsight Compute report signature
    # An empty directory: the child falls back to the installed ncu-report package, which
    # must read the probe report (one range), so the probe itself is sound.
    assert ncu_import.probe(tmp_path) is None

"""Work done ahead of need, for `flashprof profile`: report readers started while ncu runs
(parse.prestart_workers) and the in-process memo of loaded frames. Both must give exactly
the frame a cold load gives, and neither may hide a changed report."""
from __future__ import annotations

import os
import shutil
import time

import pandas as pd
import pytest

from flashprof.analysis.report import parse
from conftest import GEMM

pytestmark = pytest.mark.filterwarnings("ignore::flashprof.analysis.report.errors.FlashprofWarning")


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty parse cache, an empty memo, no started readers."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(parse, "_MEMO", {})
    monkeypatch.setattr(parse, "_WARM", [])
    return tmp_path


def _cold(path) -> pd.DataFrame:
    return parse.load_frame([path], cache=False)


def test_a_started_reader_gives_the_cold_frame(fresh):
    rep = fresh / "gemm.ncu-rep"
    shutil.copy(GEMM, rep)
    parse.prestart_workers(1)
    proc = parse._WARM[0]
    got = parse.load_frame([rep])
    assert proc.returncode == 0 and not parse._WARM  # it was the one used, and it finished
    pd.testing.assert_frame_equal(got, _cold(rep))


def test_an_unused_reader_exits_when_its_parent_closes_it(fresh):
    parse.prestart_workers(1)
    proc = parse._WARM.pop()
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0


def test_a_bad_report_through_a_started_reader_is_one_line(fresh):
    bad = fresh / "empty.ncu-rep"
    bad.write_bytes(b"")
    parse.prestart_workers(1)
    with pytest.raises(parse.ReportError) as e:
        parse.load_frame([bad])
    assert "empty.ncu-rep" in str(e.value) and "\n" not in str(e.value)


def test_memo_serves_an_unchanged_report_without_a_reader(fresh, monkeypatch):
    rep = fresh / "gemm.ncu-rep"
    shutil.copy(GEMM, rep)
    first = parse.load_frame([rep])
    calls = []
    monkeypatch.setattr(parse, "_run_worker", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(parse, "_read_cached", lambda *a, **k: calls.append(a))
    again = parse.load_frame([rep])
    assert not calls
    pd.testing.assert_frame_equal(again, first)
    again.loc[:, "value"] = -1.0  # a copy: the caller's edits never reach the memo
    pd.testing.assert_frame_equal(parse.load_frame([rep]), first)


def test_memo_misses_a_changed_report(fresh, monkeypatch):
    rep = fresh / "gemm.ncu-rep"
    shutil.copy(GEMM, rep)
    parse.load_frame([rep])
    # the same bytes under a new mtime: no longer the memo's entry (the parquet cache,
    # keyed by content, still serves it); a reader is not needed
    st = rep.stat()
    os.utime(rep, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    seen = []
    real = parse._read_cached
    monkeypatch.setattr(parse, "_read_cached", lambda t: seen.append(t) or real(t))
    parse.load_frame([rep])
    assert seen, "a report with a new mtime must not come from the memo"
    # and the sidecar is part of the key: a corrected sidecar is re-read
    seen.clear()
    side = parse.sidecar_path(rep)
    side.write_text('{"kernel": "gemm"}')
    parse.load_frame([rep])
    assert seen


def test_background_thread_starts_after_every_import_it_needs(monkeypatch):
    """The machine thread (GPU check, then parse-ahead) and the main thread (extension build)
    must never import at the same time: on the H200 they deadlocked in the import system
    (`make profile KERNEL=7` then `KERNEL=6` hung). So the analysis modules the thread uses are
    in sys.modules before it starts."""
    import sys
    import threading

    from flashprof.profiling import profile as prof
    seen = {}

    import importlib
    asked = []
    real = importlib.import_module

    def recording_import(name, *a, **k):
        asked.append(name)
        return real(name, *a, **k)

    def fake_start(self):  # noqa: F811 - the snapshot at the moment the thread would start
        seen["asked"] = list(asked)

    monkeypatch.setattr(threading.Thread, "start", fake_start)
    monkeypatch.setattr(importlib, "import_module", recording_import)
    m = prof.Machine(["6"], 4096, "ncu", preload=True, out_dir=None)
    m.start(background=True)
    assert set(prof.UP_FRONT_ANALYSIS) <= set(seen["asked"]) and set(prof.UP_FRONT_ANALYSIS) <= set(sys.modules)
    # and the thread's own imports are those modules (nothing else to load later)
    import inspect
    src = inspect.getsource(prof.Machine._preload) + inspect.getsource(prof.Machine._prefetch)
    for line in src.splitlines():
        line = line.strip()
        words = line.split()
        if line.startswith("import flashprof"):
            mods = [words[1]]
        elif line.startswith("from flashprof"):  # from X import a, b: X or X.a is the module
            mods = [words[1] + "." + n.strip(",") for n in words[3:] if not n.startswith("#")]
        else:
            continue
        assert any(m in prof.UP_FRONT_ANALYSIS or words[1] in prof.UP_FRONT_ANALYSIS for m in mods), line


def test_a_hung_machine_check_ends_in_one_line(monkeypatch):
    """Every wait in profiling has a limit: a GPU check that never returns (torch's import
    stuck, a wedged driver) ends in one error naming what was waited for."""
    import threading
    import time

    from flashprof.kernels.cli import FlashprofError
    from flashprof.profiling import env, profile

    release = threading.Event()
    monkeypatch.setattr(env, "gpu_info", lambda: release.wait(30) or {})
    monkeypatch.setenv("FLASHPROF_CHECK_TIMEOUT", "1")
    m = profile.Machine(["6"], 4096, "ncu", preload=False)
    m._thread.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(FlashprofError, match=r"machine check .* did not finish in 1 s"):
            m.result()
        assert time.perf_counter() - t0 < 5
        assert m.join_preload(0.1) is False  # still running: said, not waited on forever
    finally:
        release.set()

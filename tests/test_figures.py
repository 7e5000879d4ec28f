"""`flashprof figures`: the full expected set of PNGs from the shipped reports,
skips with a note, and the one-line error contract (exit 2, no traceback)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from flashprof.analysis.charts import driver as figures

ROOT = figures.ROOT
REPORTS = ROOT / "reports" / "h200"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "flashprof.analysis.charts", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("figs")
    res = _run("--reports", REPORTS, "--out", out)
    return res, out


@pytest.mark.slow
def test_every_registered_figure_is_written(built):
    res, out = built
    assert res.returncode == 0, res.stderr
    inp = figures.make_inputs(REPORTS)
    expected = {f for spec in figures.FIGURES.values() for f in spec.outputs(inp)}
    # what the shipped reports must always give
    assert {"roofline_overlay.png", "roofline_ref.png", "roofline_cudnn.png", "stalls.png",
            "stall_lines_ref.png", "pipes.png", "bank_conflicts.png", "progression.png",
            "autotune.png"} <= expected
    assert {f"roofline_kernel{i}.png" for i in range(1, 8)} <= expected
    # the shipped reports support the gap model: its figures must be drawn, not skipped
    # (a failing model is a skip only for other folders: test_gap_failure_is_a_skip_not_an_error)
    assert {"gap.png", "gpu_ceilings.png", "pipe_shares.png"} <= expected
    assert "flashprof.analysis.gap failed" not in res.stdout
    written = {p.name for p in out.glob("*.png")}
    assert written == expected
    for name in expected:
        data = (out / name).read_bytes()
        assert len(data) > 10_000 and data.startswith(PNG_MAGIC), name
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))  # atomic writes left nothing
    # one progress line per file, and a total
    lines = res.stdout.strip().splitlines()
    assert len([ln for ln in lines if ln.endswith("s)") and ".png" in ln]) == len(expected)
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_only_and_missing_sass_table_is_a_skip(tmp_path):
    res = _run("--reports", REPORTS, "--out", tmp_path, "--sass", tmp_path / "nosass", "--only", "sass_mix", "pipes")
    assert res.returncode == 0, res.stderr
    assert "sass_mix" in res.stdout and "skipped" in res.stdout
    assert {p.name for p in tmp_path.glob("*.png")} == {"pipes.png"}


@pytest.mark.slow
@pytest.mark.parametrize("case", ["missing_dir", "empty_dir", "bad_only", "bad_report"])
def test_errors_are_one_line_exit_2(tmp_path, case):
    if case == "missing_dir":
        args = ["--reports", tmp_path / "nope", "--out", tmp_path / "o"]
    elif case == "empty_dir":
        args = ["--reports", tmp_path, "--out", tmp_path / "o"]
    elif case == "bad_only":
        args = ["--reports", REPORTS, "--out", tmp_path / "o", "--only", "nonsense"]
    else:
        (tmp_path / "junk.ncu-rep").write_bytes(b"not a report at all")
        args = ["--reports", tmp_path, "--out", tmp_path / "o"]
    res = _run(*args)
    assert res.returncode == 2
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("figures: error: "), res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").glob("*.png"))


@pytest.mark.slow
def test_gap_failure_is_a_skip_not_an_error(tmp_path, monkeypatch):
    from flashprof.analysis.gap.legacy_pipes import throughput

    def boom(*a, **k):
        raise RuntimeError("model exploded")

    monkeypatch.setattr(throughput, "gap_table", boom)
    inp = figures.make_inputs(REPORTS)
    lines = []
    written = figures.build(inp, tmp_path, only=["gap", "gpu_ceilings", "pipes"], log=lines.append, jobs=1)
    # gap.png is drawn from the committed issue-model result, not from gap_table
    assert sorted(p.name for p in written) == ["gap.png", "pipes.png"]
    assert sum("skipped: flashprof.analysis.gap failed (RuntimeError: model exploded)" in ln for ln in lines) == 1


def test_gap_figure_without_a_fresh_committed_result_is_a_skip(tmp_path, monkeypatch):
    from flashprof.analysis.gap import frozen

    monkeypatch.setattr(frozen, "DIR", tmp_path / "nothing")
    inp = figures.make_inputs(REPORTS)
    lines = []
    written = figures.build(inp, tmp_path, only=["gap"], log=lines.append, jobs=1)
    assert written == []
    assert any("gap" in ln and "skipped" in ln and "no committed issue-model result" in ln
               and "--write reports/gap/" in ln for ln in lines)



"""A report is complete or refused: a .ncu-rep cut short (25-99 % of its bytes) loads in
ncu_report as one launch with no name and no metrics; flashprof names the file and refuses it,
and a folder command goes on with the folder's good reports, names the bad one and exits 1."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOOD = ROOT / "reports" / "h200" / "kernel5.ncu-rep"
VICTIM = ROOT / "reports" / "h200" / "kernel6.ncu-rep"
pytestmark = pytest.mark.skipif(not (GOOD.is_file() and VICTIM.is_file()), reason="shipped H200 reports absent")


def _cut(dst: Path, pct: int) -> Path:
    data = VICTIM.read_bytes()
    dst.write_bytes(data[: len(data) * pct // 100])
    return dst


def _fp(*args, cwd=ROOT):
    r = subprocess.run([sys.executable, "-P", "-m", "flashprof", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd, timeout=600)
    return r.returncode, r.stdout, r.stderr


def test_ncu_report_itself_reads_a_cut_file_as_one_empty_launch(tmp_path):
    """The premise, from the parser directly: no error, one action, no name, no metrics."""
    ncu_report = pytest.importorskip("ncu_report")
    rep = ncu_report.load_report(str(_cut(tmp_path / "k6.ncu-rep", 50)))
    assert rep.num_ranges() == 1 and rep.range_by_idx(0).num_actions() == 1
    act = rep.range_by_idx(0).action_by_idx(0)
    assert act.name() is None and len(act.metric_names()) == 0


@pytest.mark.parametrize("pct", [25, 50, 90, 99])
@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_summary_refuses_a_cut_report(tmp_path, pct, fmt):
    bad = _cut(tmp_path / f"k6_{pct}.ncu-rep", pct)
    rc, out, err = _fp("summary", bad, "--format", fmt, "--no-cache")
    assert rc == 2 and out == "", (rc, out[:200])
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "incomplete report" in lines[0]
    assert "Traceback" not in err


def test_compare_with_a_cut_side_fails(tmp_path):
    bad = _cut(tmp_path / "k6.ncu-rep", 90)
    for a, b in ((GOOD, bad), (bad, GOOD)):
        rc, out, err = _fp("compare", a, b, "--no-cache")
        assert rc != 0 and "no regressions" not in out and str(bad) in err


@pytest.fixture
def mixed(tmp_path) -> Path:
    d = tmp_path / "mixed"
    d.mkdir()
    shutil.copy(GOOD, d / GOOD.name)
    shutil.copy(GOOD.with_suffix(".json"), d / GOOD.with_suffix(".json").name)
    _cut(d / "kernel6.ncu-rep", 50)
    return d


def test_folder_summary_goes_on_names_the_bad_one_and_exits_1(mixed):
    rc, out, err = _fp("summary", mixed, "--format", "json", "--no-cache")
    assert rc == 1
    recs = json.loads(out)
    assert [r["report"] for r in recs] == ["kernel5"]
    assert "kernel6.ncu-rep" in err and "skipped" in err
    rc, out, _err = _fp("summary", mixed, "--format", "json", "--no-cache", "--keep-going")
    assert rc == 0 and json.loads(out)


def test_folder_figures_and_page_go_on_with_the_rest(mixed, tmp_path):
    figs = tmp_path / "figs"
    rc, out, err = _fp("figures", "--reports", mixed, "--out", figs, "--no-cache", cwd=tmp_path)
    assert rc == 1, err
    assert (figs / "roofline_kernel5.png").is_file() and "kernel6.ncu-rep" in err
    assert "kernel6.ncu-rep not read" in (figs / "index.md").read_text()
    rc, out, err = _fp("report", mixed, "--out", tmp_path / "page.html", "--no-cache", cwd=tmp_path)
    assert rc == 1 and (tmp_path / "page.html").stat().st_size > 100_000 and "kernel6.ncu-rep" in err


def test_a_folder_of_only_cut_reports_overwrites_nothing(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    _cut(d / "kernel6.ncu-rep", 50)
    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "index.md").write_text("the good index\n")
    page = tmp_path / "page.html"
    page.write_text("the good page")
    rc, _out, err = _fp("figures", "--reports", d, "--out", figs, "--no-cache", cwd=tmp_path)
    assert rc == 2 and "kernel6.ncu-rep" in err
    rc, _out, err = _fp("report", d, "--out", page, "--no-cache", cwd=tmp_path)
    assert rc == 2 and "kernel6.ncu-rep" in err
    assert (figs / "index.md").read_text() == "the good index\n" and page.read_text() == "the good page"


def test_every_real_report_passes_the_structure_check():
    """The block walk (flashprof/analysis/report/structure.py) accepts every real report the
    suite can see: shipped, test data and ../shared's foreign ones (other ncu versions)."""
    from report_corpus import report_paths
    from flashprof.analysis.report.structure import check_blocks
    paths = report_paths()
    assert len(paths) >= 15
    for p in paths:
        assert check_blocks(p) >= 1, p


@pytest.mark.parametrize("pct", range(5, 100, 5))
def test_structure_check_refuses_every_cut(tmp_path, pct):
    from flashprof.analysis.report.structure import IncompleteReportError, check_blocks
    bad = _cut(tmp_path / "k6.ncu-rep", pct)
    with pytest.raises(IncompleteReportError, match=str(bad)):
        check_blocks(bad)

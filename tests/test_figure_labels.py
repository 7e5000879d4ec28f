"""Figures of reports other than the shipped ones: the output-folder rule, which figures
apply, and labels that never overlap at 1, 5, 20 and 105 launches (measured with the
renderer's text bounding boxes), on synthetic frames and on real public reports."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from flashprof.analysis.charts import inputs as figure_inputs, driver as figures
from flashprof.analysis.charts.identity import KERNEL_IDS, launches
from flashprof.analysis.charts.style import close, new_fig
from flashprof.analysis.charts.stall_charts import plot_bank_conflicts, plot_pipes, plot_stalls
from flashprof.analysis.charts.roofline_chart import plot_roofline
from flashprof.analysis.charts import labels

ROOT = figures.ROOT
# ../shared beside the clone (CI); FLASHPROF_PUBLIC_REPORTS points elsewhere (a git worktree)
from report_corpus import PUBLIC  # noqa: E402 (../shared beside the checkout)
A10 = PUBLIC / "spymaster2h__spyinfer__report.ncu-rep"
needs_public = pytest.mark.skipif(not A10.is_file(), reason=f"public reports not found at {PUBLIC}")


# --------------------------------------------------------------------------- folder rule
def test_shipped_reports_keep_figures_folder():
    assert figures.out_dir(figures.DEFAULT_REPORTS) == figures.DEFAULT_OUT
    assert figures.out_dir(ROOT / "reports" / ".." / "reports" / "h200") == figures.DEFAULT_OUT


def test_other_folder_gets_its_own_folder(tmp_path):
    other = tmp_path / "my reports"
    assert figures.out_dir(other) == figures.DEFAULT_OUT / "my_reports"
    assert figures.out_dir(other, tmp_path / "x") == tmp_path / "x"
    with pytest.raises(figures.FiguresError, match="shipped reports"):
        figures.out_dir(other, figures.DEFAULT_OUT)
    with pytest.raises(figures.FiguresError):
        figures.out_dir(other, ROOT / "figures" / ".." / "figures")


@pytest.mark.slow
def test_cli_refuses_to_write_foreign_figures_over_the_shipped_ones(tmp_path):
    (tmp_path / "one.ncu-rep").write_bytes(b"whatever")
    before = {p.name: p.stat().st_mtime_ns for p in figures.DEFAULT_OUT.glob("*.png")}
    res = subprocess.run([sys.executable, "-m", "flashprof.analysis.charts", "--reports", tmp_path, "--out",
                          figures.DEFAULT_OUT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and "holds the figures of the shipped reports" in err[0]
    assert before == {p.name: p.stat().st_mtime_ns for p in figures.DEFAULT_OUT.glob("*.png")}


@needs_public
def test_foreign_folder_draws_only_what_applies_and_indexes_it(tmp_path):
    src = tmp_path / "a10"
    src.mkdir()
    (src / A10.name).symlink_to(A10)
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "flashprof.analysis.charts", "--reports", src, "--out", out],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    pngs = {p.name for p in out.glob("*.png")}
    series = [n for n, s in figures.FIGURES.items() if s.series]
    assert set(series) == {"progression", "sass_mix", "autotune", "gap", "gpu_ceilings", "pipe_shares", "hopper_steps",
                           "series_here"}
    for name in series:  # each kernel-series figure says why it is left out
        assert f"{name}" in res.stdout and "holds none of their reports" in res.stdout
    assert not pngs & {"progression.png", "gap.png", "gpu_ceilings.png", "pipe_shares.png", "sass_mix.png",
                       "hopper_steps.png", "series_a10.png"}
    assert {"stalls.png", "pipes.png", "bank_conflicts.png"} <= pngs
    index = (out / "index.md").read_text()
    listed = {ln.split("](", 1)[0][3:] for ln in index.splitlines() if ln.startswith("- [")}
    assert listed == pngs
    assert "105 launch" in index and "Not drawn:" in index and "gap:" in index


# --------------------------------------------------------------------------- tags
def test_tags_short_unique_and_stable():
    stems = ["alpha", "owner__repo__profile", "other__thing__profile", "x" * 40, "x" * 39 + "y"]
    tags = labels.report_tags(stems)
    assert tags["alpha"] == "alpha"
    assert len(set(tags.values())) == len(stems)
    assert all(len(t) <= labels.TAG_WIDTH for t in tags.values())
    assert labels.report_tags(list(reversed(stems))) == tags


def test_short_function_and_runs():
    full = "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<float, 128>>(cutlass::Params<int>)"
    assert labels.short_function(full) == "Kernel"
    assert labels.short_function(None) == "?"
    assert labels.function_runs([0, 1, 2, 3, 4], ["a", "a", "a", "b", "a"]) == "#0\u2013#2 a, #3 b, #4 a"


# --------------------------------------------------------------------------- overlap
def _synthetic(n: int, reports: int = 1):
    """n launches over ``reports`` long-named reports, stall/pipe/bank frames."""
    rows_s, rows_p, rows_b = [], [], []
    rng = np.random.default_rng(n)
    for i in range(n):
        rep = f"someone_else__a_rather_long_project_name__profile_{i % reports}"
        ident = {"report": rep, "range_idx": 0, "launch": i // reports, "kernel": f"gemm_kernel_{i % 3}",
                 "variant": None}
        for r in ("long_scoreboard", "mio_throttle", "wait", "selected"):
            rows_s.append({**ident, "reason": r, "per_issue": float(rng.uniform(0.1, 3))})
        for p in ("tensor", "fma", "alu", "xu", "lsu", "issue_active"):
            rows_p.append({**ident, "category": "issue" if p == "issue_active" else "utilization", "name": p,
                           "value": float(rng.uniform(0, 100))})
        for op in ("ld", "st"):
            rows_b.append({**ident, "op": op, "nway": float(rng.uniform(1, 8)), "ldsm_inst": 1e6 * i})
    idf = pd.DataFrame(rows_s).drop_duplicates(["report", "range_idx", "launch"])[["report", "range_idx", "launch",
                                                                                    "kernel", "variant"]]
    idf = idf.assign(gpu="NVIDIA A10", batch=np.nan, heads=np.nan, seq=np.nan, d_head=np.nan, dtype=None)
    return pd.DataFrame(rows_s), pd.DataFrame(rows_p), pd.DataFrame(rows_b), idf


def _assert_readable(fig, n_launches):
    r = labels.renderer(fig)
    fig.draw(r)
    for ax in fig.axes:
        ticks = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        assert not labels.overlapping(ticks, r), ax.get_title()
        assert not labels.overlapping([t for t in ax.texts], r), ax.get_title()
        fb = fig.bbox
        for b in labels.boxes(ticks, r):  # inside the canvas
            assert b.x0 >= fb.x0 - 1 and b.x1 <= fb.x1 + 1 and b.y0 >= fb.y0 - 1
    low = [ax for ax in fig.axes if any(t.get_visible() and t.get_text() for t in ax.get_xticklabels())]
    shown = [t.get_text() for t in low[-1].get_xticklabels() if t.get_visible() and t.get_text()]
    assert shown and len(shown) <= n_launches
    return shown


@pytest.mark.parametrize("n", [1, 5, 20, pytest.param(105, marks=pytest.mark.slow)])
@pytest.mark.parametrize("chart", ["stalls", "pipes", "banks"])
def test_no_label_overlap_synthetic(n, chart):
    st, pp, bk, ident = _synthetic(n, reports=1 if n < 20 else 3)
    fig = {"stalls": lambda: plot_stalls(st, ident), "pipes": lambda: plot_pipes(pp, ident),
           "banks": lambda: plot_bank_conflicts(bk, ident)}[chart]()
    shown = _assert_readable(fig, n)
    L = launches(st)
    assert set(shown) <= set(L["short"])
    assert all(len(s) <= labels.TAG_WIDTH + 5 for s in shown)
    table = [t.get_text() for t in fig.texts if t.get_gid() == "name-table"]
    assert table, "no table maps the short tags to full names"
    for rep, tag in zip(L["report"], L["tag"]):  # every tag resolves to its full report name
        assert f"{tag} = {rep}" in table[0]


@needs_public
@pytest.mark.parametrize("which", ["a10", "all"])
def test_no_label_overlap_public_reports(tmp_path, which):
    if which == "a10":
        src = tmp_path / "a10"
        src.mkdir()
        (src / A10.name).symlink_to(A10)
    else:
        src = PUBLIC
    inp = figures.make_inputs(src)
    n = len(inp.ident)
    if which == "a10":
        assert n == 105
    for fig in (plot_stalls(inp.stall, inp.ident, inp.roof), plot_pipes(inp.pipe, inp.ident, inp.roof),
                plot_bank_conflicts(inp.banks, inp.ident, inp.roof)):
        _assert_readable(fig, n)
        close(fig)


def test_overlap_detector_catches_crowded_ticks():
    """The measure can fail: 105 long horizontal labels on a 6-inch axis do overlap,
    and fit_xticks turns the same labels into a readable set."""
    fig = new_fig(7, 3)
    ax = fig.add_axes([0.1, 0.3, 0.85, 0.6])
    ax.set_xlim(-0.5, 104.5)
    names = [f"some_report#{i}" for i in range(105)]
    ax.set_xticks(range(105), names, fontsize=7)
    r = labels.renderer(fig)
    assert labels.overlapping(ax.get_xticklabels(), r)
    k = labels.fit_xticks(ax, r, range(105), names, fontsize=7)
    assert k > 1 and not labels.overlapping(ax.get_xticklabels(), r)


# --------------------------------------------------------------------------- roofline legends
def _foreign_roof(full_frame, n_reports: int, blank: int | None = None):
    """The shipped FA2 launch copied under ``n_reports`` long non-series names (one launch
    each); report ``blank`` gets NaN FLOP/s (a report lacking the metrics)."""
    from flashprof.analysis.report.parse import launch_identity
    from flashprof.analysis.stages.roofline import roofline
    roof0 = roofline(full_frame)
    roof0 = roof0[roof0["report"] == "ref"]
    id0 = launch_identity(full_frame)
    id0 = id0[id0["report"] == "ref"]
    parts, ids = [], []
    for i in range(n_reports):
        name = f"someone__a_long_project_name_{i}__profile"
        r = roof0.assign(report=name, variant=None, flops_tensor=roof0["flops_tensor"] * (1 + i / 10),
                         flops=roof0["flops"] * (1 + i / 10))  # the chart plots each launch's own kind
        if i == blank:
            r = r.assign(flops_tensor=np.nan, flops_fp32=np.nan, flops=np.nan)
        parts.append(r)
        ids.append(id0.assign(report=name, variant=None))
    return pd.concat(parts, ignore_index=True), pd.concat(ids, ignore_index=True)


def _legend_texts(fig):
    return [t.get_text() for ax in fig.axes for leg in [ax.get_legend(), *[a for a in ax.artists
            if a.__class__.__name__ == "Legend"]] if leg is not None for t in leg.get_texts()]


@pytest.mark.slow
def test_roofline_of_many_reports_uses_tags_and_a_name_table(full_frame):
    roof, ident = _foreign_roof(full_frame, 9, blank=4)
    fig = plot_roofline(roof, ident, title="nine reports")
    L = launches(roof)
    texts = _legend_texts(fig)
    for tag in L["tag"]:
        assert any(t.startswith(tag + " (") for t in texts), tag
    assert any("1 launch, 0 drawn" in t for t in texts)  # the blank report says it has no point
    table = [t.get_text() for t in fig.texts if t.get_gid() == "name-table"]
    assert table and all(f"{tag} = {rep}" in table[0] for tag, rep in zip(L["tag"], L["report"]))
    r = labels.renderer(fig)
    fig.draw(r)
    assert not labels.overlapping(list(fig.texts), r)  # title, context, caption, table
    assert fig.bbox.y0 <= min(b.y0 for b in labels.boxes(fig.texts, r))


def test_roofline_of_few_reports_names_them_in_full(full_frame):
    roof, ident = _foreign_roof(full_frame, 2)
    fig = plot_roofline(roof, ident, title="two reports")
    texts = [t.replace("\n", "") for t in _legend_texts(fig)]
    for rep in roof["report"].unique():
        assert any(rep in t for t in texts)
    assert not [t for t in fig.texts if t.get_gid() == "name-table"]


@pytest.mark.slow
def test_a_failing_analysis_stage_skips_only_its_figures(tmp_path, monkeypatch):
    def boom(frame):
        raise KeyError("ai_tensor")

    monkeypatch.setattr(figure_inputs, "roofline", boom)
    inp = figures.make_inputs(figures.DEFAULT_REPORTS)
    lines = []
    written = figures.build(inp, tmp_path, only=["roofline", "stalls"], log=lines.append, jobs=1)
    assert [p.name for p in written] == ["stalls.png"]
    assert any("roofline" in ln and "skipped: the roofline analysis failed (KeyError: 'ai_tensor')" in ln
               for ln in lines), lines


def test_caption_facts_come_from_the_data():
    from flashprof.analysis.charts import specs as figure_specs
    sweep = pd.DataFrame({"config": ['{"d_head": 64, "B_r": 64}', '{"d_head": 64}', "not json", None]})
    assert figure_specs._head_dims(sweep) == "d64"
    assert figure_specs._head_dims(pd.DataFrame({"config": ["{}"]})) == "d?"
    inp = figures.make_inputs(figures.DEFAULT_REPORTS)
    want = {(int(r.batch), int(r.heads), int(r.seq), int(r.d_head), r.dtype)
            for r in inp.ident.itertuples() if str(r.variant) in KERNEL_IDS}
    (b, h, s, d, dt), = want
    assert inp.shape == f"{dt}, B{b} H{h} S{s} d{d}"

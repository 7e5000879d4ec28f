"""One pass per launch, and the launch that matters.

* each launch's recipes are evaluated once per frame, however many stages read it;
* a quantity added to the recipe table reaches the summary's JSON and CSV by itself;
* in every multi-launch report (public reports, tests/data, reports/), the dominant launch
  is the longest by gpu__time_duration.sum read straight through ncu_report (in a child
  process), and the per-report charts' captions and titles name it.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import ROOT

from flashprof.analysis.metrics import recipes
from flashprof.analysis.report.errors import FlashprofWarning
from flashprof.analysis.report.parse import load_frame

from report_corpus import PUBLIC  # noqa: E402  (../shared/public-reports beside the checkout)
FLEX = ROOT / "reports" / "h200" / "flex_attention-attention.ncu-rep"

_RAW_DURATIONS = r"""
import json, sys
import ncu_report
out = {}
for path in sys.argv[1:]:
    rep = ncu_report.load_report(path)
    durs, n = [], 0
    for r in range(rep.num_ranges()):
        rng = rep.range_by_idx(r)
        for j in range(rng.num_actions()):
            m = rng.action_by_idx(j).metric_by_name("gpu__time_duration.sum")
            durs.append(None if m is None else float(m.value()))
    out[path] = durs
print(json.dumps(out))
"""


def _raw_durations(paths) -> dict[str, list]:
    """{path: [gpu__time_duration.sum per launch, None where absent]} via ncu_report in a
    child process (its reader has crashed under some Pythons: not in the test process)."""
    pytest.importorskip("ncu_report")
    r = subprocess.run([sys.executable, "-c", _RAW_DURATIONS, *map(str, paths)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return {p: [None if d is None or math.isnan(d) else d for d in ds] for p, ds in json.loads(r.stdout).items()}


def _report_paths() -> list[Path]:
    found = sorted(PUBLIC.glob("*.ncu-rep")) + sorted((ROOT / "tests" / "data").glob("*.ncu-rep"))
    found += sorted((ROOT / "reports").rglob("*.ncu-rep"))
    return found


def _load(paths):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FlashprofWarning)
        return load_frame(paths)


@pytest.fixture
def count_evaluations(monkeypatch):
    calls = []
    real = recipes.evaluate

    def counting(m, arch=None):
        calls.append(id(m))
        return real(m, arch)

    monkeypatch.setattr(recipes, "evaluate", counting)
    return calls


def _multi_launch_paths():
    paths = [p for p in (FLEX, *sorted(PUBLIC.glob("*.ncu-rep"))) if p.is_file()]
    if not paths:
        pytest.skip("no multi-launch report here")
    return paths[:3]


def test_each_launch_evaluated_once(count_evaluations):
    from flashprof.analysis.stages.pipes import pipes
    from flashprof.analysis.stages.roofline import roofline
    from flashprof.analysis.stages.stalls import bank_conflicts, stalls
    from flashprof.analysis.stages.summary import compare, summarize

    paths = _multi_launch_paths()
    frame = _load(paths)  # the load-time missing-metric warning evaluates here
    n = frame.drop_duplicates(["report", "range_idx", "launch"]).shape[0]
    assert n > len(paths)  # several launches per report
    rows = summarize(frame)
    for stage in (roofline, pipes, stalls, bank_conflicts, summarize):
        stage(frame)
    compare(rows, rows)
    assert len(rows) == n
    assert len(count_evaluations) == n, f"{len(count_evaluations)} recipe evaluations for {n} launches"


def test_figure_inputs_evaluate_once(count_evaluations, tmp_path):
    from flashprof.analysis.charts.inputs import make_inputs
    if not FLEX.is_file():
        pytest.skip("no FlexAttention report")
    inp = make_inputs(FLEX.parent)
    for attr in ("frame", "records", "shown", "roof", "stall", "pipe", "banks"):
        getattr(inp, attr)
    assert len(count_evaluations) == len(inp.ident)


def test_changed_frame_is_evaluated_again(count_evaluations):
    from flashprof.analysis.stages.roofline import roofline
    frame = _load([_multi_launch_paths()[0]])
    first = len(count_evaluations)
    sel = frame["metric"] == "gpu__time_duration.sum"
    frame.loc[sel, "value"] = frame.loc[sel, "value"] * 2
    roof = roofline(frame)
    assert len(count_evaluations) == 2 * first
    want = dict(zip(frame.loc[sel, "launch"], frame.loc[sel, "value"]))
    for launch, dur in roof.drop_duplicates("launch")[["launch", "duration_ns"]].itertuples(index=False):
        assert dur == want[launch]


def test_new_recipe_reaches_summary_json_and_csv(monkeypatch):
    from flashprof.analysis.metrics.recipe_kit import make_recipe
    from flashprof.analysis.stages.summary import render_csv, render_json, summarize
    table = dict(recipes.RECIPES)
    table["launches_per_second"] = (
        make_recipe(recipes.DERIVED, "1 / gpu__time_duration.sum", ("gpu__time_duration.sum",), (),
           lambda c: 1e9 / c.m["gpu__time_duration.sum"]),)
    monkeypatch.setattr(recipes, "RECIPES", table)
    path = _multi_launch_paths()[0]
    frame = _load([path])
    raw = _raw_durations([path])[str(path)]
    rows = summarize(frame)
    got = json.loads(render_json(rows))
    for rec in got:
        d = raw[rec["launch"]]
        if d is None:
            assert rec["launches_per_second"] is None and rec["provenance"]["launches_per_second"] is None
        else:
            assert rec["launches_per_second"] == pytest.approx(1e9 / d, rel=1e-12)
            assert rec["provenance"]["launches_per_second"] == "derived"
    header = render_csv(rows).splitlines()[0].split(",")
    assert "launches_per_second" in header and "provenance.launches_per_second" in header


def _by_report(frame):
    out = {}
    for rec in frame.drop_duplicates(["report", "range_idx", "launch"]).to_dict("records"):
        out.setdefault(rec["report"], []).append(rec)
    return out


def test_dominant_is_longest_and_time_share_sums_to_one():
    from flashprof.analysis.stages.summary import summarize
    paths = [p for p in _report_paths()]
    raw = _raw_durations(paths)
    multi = [p for p in paths if len(raw[str(p)]) > 1]
    if not multi:
        pytest.skip("no multi-launch reports")
    for p in multi:
        rows = summarize(_load([p]))
        durs = raw[str(p)]
        assert [r["launch"] for r in rows] == list(range(len(durs)))
        known = {i: d for i, d in enumerate(durs) if d is not None and not math.isnan(d)}
        longest = max(known, key=lambda i: (known[i], -i))
        dominant = [r["launch"] for r in rows if r["dominant"]]
        assert dominant == [longest], (p.name, dominant, longest)
        total = sum(known.values())
        for r in rows:
            if r["launch"] in known:
                assert r["time_share"] == pytest.approx(known[r["launch"]] / total, rel=1e-9)
            else:
                assert r["time_share"] is None or math.isnan(r["time_share"])


def _dominant_of(path) -> tuple[int, float]:
    durs = _raw_durations([path])[str(path)]
    known = {i: d for i, d in enumerate(durs) if d is not None}
    i = max(known, key=lambda k: (known[k], -k))
    return i, known[i] / sum(known.values())


def _check_captions(folder: Path, paths: list[Path]):
    from flashprof.analysis.charts.inputs import make_inputs
    from flashprof.analysis.charts.specs import FIGURES, safe_name
    inp = make_inputs(folder)
    caps = {f: c for f, _t, c in FIGURES["roofline"].jobs(inp)}
    caps.update({f: c for f, _t, c in FIGURES["stall_lines"].jobs(inp)})
    for p in paths:
        report = next(r for r, q in inp.stems.items() if Path(q).resolve() == p.resolve())
        n, share = _dominant_of(p)
        want = f"launch {n} of "
        shown = {(r.key[0], r.key[2]) for r in inp.shown}
        assert (report, n) in shown
        for fname in (f"roofline_{safe_name(report)}.png", f"stall_lines_{safe_name(report)}.png"):
            if fname in caps:
                assert want in caps[fname] and f"{100 * share:.1f} %" in caps[fname], (fname, caps[fname])
                assert "dominant" in caps[fname]
    return inp


def test_captions_name_the_dominant_launch_public():
    paths = sorted(PUBLIC.glob("*.ncu-rep"))
    if not paths:
        pytest.skip("no public reports")
    raw = _raw_durations(paths)
    multi = [p for p in paths if len(raw[str(p)]) > 1]
    _check_captions(PUBLIC, multi)


def test_flex_charts_show_the_attention_kernel():
    if not FLEX.is_file():
        pytest.skip("no FlexAttention report")
    from flashprof.analysis.charts.specs import FIGURES
    inp = _check_captions(FLEX.parent, [FLEX])
    n, share = _dominant_of(FLEX)
    jobs = {f: t for f, t, _c in FIGURES["stall_lines"].jobs(inp) + FIGURES["roofline"].jobs(inp)}
    for fname in ("stall_lines_flex_attention-attention.png", "roofline_flex_attention-attention.png"):
        fig = jobs[fname]()
        text = " ".join(t.get_text() for t in fig.texts) + " " + " ".join(
            a.get_title() for a in fig.axes) + " " + (fig._suptitle.get_text() if fig._suptitle else "")
        assert f"launch {n} of 3" in text and f"{100 * share:.1f} %" in text, (fname, text[:400])
        assert "flex_attention" in text


def test_bad_launch_value_is_one_line(capsys):
    from flashprof.analysis.__main__ import main
    for bad in ("x", "-1", "99"):
        path = FLEX if FLEX.is_file() else _multi_launch_paths()[0]
        rc = main(["summary", str(path), "--launch", bad])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and "--launch" in err[0], (bad, err)
    from flashprof.analysis.charts.driver import main as figures
    rc = figures(["--reports", str(FLEX.parent), "--out", "/tmp/flashprof-bad-launch", "--launch", "nope"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--launch" in err[0], err


def test_summary_launch_dominant_picks_one_per_report():
    from flashprof.analysis.__main__ import main
    path = _multi_launch_paths()[0]
    n, _share = _dominant_of(path)
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["summary", str(path), "--launch", "dominant", "--format", "json"]) == 0
    rows = json.loads(buf.getvalue())
    assert [r["launch"] for r in rows] == [n] and rows[0]["dominant"] is True

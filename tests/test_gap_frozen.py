"""The issue model's committed result (reports/gap/issue_model.json): its inputs' hashes match
the files in the repository (regenerate with ``flashprof gap --model issue --write
reports/gap/``), its numbers are consistent with published.json and with each other, the
CLI and the figures read it without running the model, and a stale file is recomputed.
Nothing here runs the minutes-long model."""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

from flashprof.analysis.gap import frozen

REPO = Path(__file__).resolve().parents[1]
RESULT = REPO / "reports" / "gap" / "issue_model.json"
META = REPO / "reports" / "gap" / "issue_model.meta.json"
REGEN = "flashprof gap --model issue --write reports/gap/"


@pytest.fixture(scope="module")
def committed():
    if not RESULT.is_file():
        pytest.fail(f"{RESULT.relative_to(REPO)} is missing: run {REGEN}")
    return json.loads(RESULT.read_text()), json.loads(META.read_text())


def test_committed_result_matches_the_current_inputs(committed):
    _, meta = committed
    # Hash the inputs here, independently of frozen.input_hashes.
    names = set(meta["inputs"])
    for must in ("analysis/gpus.json", "analysis/published.json", "reports/h200/ceilings.json",
                 "reports/sass/fa2/fa2_sm80.sass", "reports/h200/kernel7.ncu-rep",
                 "analysis/gap/scheduler.py"):
        assert must in names, must
    assert any(n.startswith("reports/sass/loops/") for n in names)
    assert {n for n in names if n.startswith("reports/sass/loops/")} == {
        p.relative_to(REPO).as_posix() for p in (REPO / "reports/sass/loops").glob("*.sass")}
    changed = [n for n, h in meta["inputs"].items()
               if not (REPO / n).is_file() or hashlib.sha256((REPO / n).read_bytes()).hexdigest() != h]
    assert not changed, f"inputs changed since reports/gap/issue_model.json was written: {changed[:5]}; run {REGEN}"
    assert set(meta["inputs"]) == {frozen._rel(p) for p in frozen.input_paths()}
    assert meta["runtime_s"] > 0 and meta["date_utc"] and meta["command"]


def test_committed_rows_keep_the_gap_shape_and_fit_nothing(committed, raw_kernels, raw_ref):
    recs, _ = committed
    pub = json.loads((REPO / "analysis" / "published.json").read_text())["gpus"]
    rows = [r for r in recs if r["kind"] == "row"]
    assert {r["gpu_key"] for r in rows} == {"a100_80gb", "rtx3090", "h200_sxm"}
    # fitted_parameters: the constants each GPU's Machine read without a citation or a
    # measurement (derived from gpus.json and ceilings.json, which the hashes pin); none today.
    from flashprof.analysis.gap.constants import machine
    fitted = {key: list(machine(key).fitted) for key in {r["gpu_key"] for r in rows}}
    for r in recs:
        if r["kind"] in ("row", "summary"):
            assert r["fitted_parameters"] == fitted[r["gpu_key"]], r["gpu_key"]
    assert not any(fitted.values()), fitted
    for key, pk in (("a100_80gb", "a100"), ("rtx3090", "rtx3090")):
        mine = {r["target"]: r for r in rows if r["gpu_key"] == key}
        assert set(mine) == {*map(str, range(1, 8)), "ref"}
        assert mine["ref"]["pred_pct"] == pytest.approx(100.0)
        err = []
        for t in map(str, range(1, 8)):
            r = mine[t]
            assert r["observed_pct"] == pub[pk]["pct_of_fa2"][t]["seq_4096"]
            # % of FA2 = FA2's predicted cycles / the kernel's, same GPU and clock
            assert r["pred_pct"] == pytest.approx(100 * mine["ref"]["pred_cycles"] / r["pred_cycles"])
            assert r["error_pp"] == pytest.approx(r["pred_pct"] - pub[pk]["pct_of_fa2"][t]["seq_4096"])
            err.append(abs(r["error_pp"]))
        s = next(x for x in recs if x["kind"] == "summary" and x["gpu_key"] == key)
        assert s["mae_pp"] == pytest.approx(sum(err) / len(err))
        assert s["k7_error_pp"] == pytest.approx(mine["7"]["error_pp"])
    # The H200 evidence against Nsight Compute's own counter, read straight from the reports.
    raw = {**raw_kernels, "ref": raw_ref}
    h = {r["target"]: r for r in rows if r["gpu_key"] == "h200_sxm" and r["seq"] == 4096}
    assert set(h) == set(raw)
    ref_cycles = raw["ref"]["sm__cycles_elapsed.avg"]
    for t, r in h.items():
        cycles = raw[t]["sm__cycles_elapsed.avg"]
        assert r["measured_cycles"] == pytest.approx(cycles, rel=1e-9), t
        assert r["cycles_error_pct"] == pytest.approx(100 * (r["pred_cycles"] / cycles - 1)), t
        if t != "ref":
            assert r["observed_pct"] == pytest.approx(100 * ref_cycles / cycles), t
    assert any(r["kind"] == "limitation" for r in recs)


def test_stale_inputs_are_named(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("a")
    h = frozen.input_hashes([f])
    assert list(h.values()) == [hashlib.sha256(b"a").hexdigest()]
    meta = {"inputs": h}
    assert frozen.stale_inputs(meta, h) == []
    f.write_text("b")
    assert frozen.stale_inputs(meta, frozen.input_hashes([f])) == list(h)
    assert frozen.stale_inputs(meta, {}) == list(h)  # an input that disappeared
    assert frozen.input_hashes([tmp_path / "gone"]) == {str(tmp_path / "gone"): "missing"}


def test_write_then_read_round_trips_nan_as_null(tmp_path):
    recs = [{"kind": "row", "pred_pct": 90.0, "observed_pct": math.nan, "observed_source": None,
             "fitted_parameters": []}]
    res, side = frozen.write(recs, tmp_path, runtime_s=1.25)
    assert json.loads(res.read_text())[0]["observed_pct"] is None
    back, meta = frozen.read(tmp_path)
    assert math.isnan(back[0]["observed_pct"]) and back[0]["observed_source"] is None
    assert back[0]["pred_pct"] == 90.0 and meta["runtime_s"] == round(1.25, 1)
    assert frozen.fresh(tmp_path / "nowhere")[0] is None


def _forbid_model(monkeypatch):
    import flashprof.analysis.gap.issue_report as ir

    def boom(*a, **k):
        raise AssertionError("the issue model ran")
    monkeypatch.setattr(ir, "gap_issue_paths", boom)


def test_cli_default_reads_the_committed_result(monkeypatch, capsys, committed):
    from flashprof.analysis.__main__ import main

    _forbid_model(monkeypatch)
    assert main(["gap", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    got = json.loads(out)
    assert [r["kind"] for r in got] == [r["kind"] for r in committed[0]]
    a100 = {r["target"]: r for r in got if r["kind"] == "row" and r["gpu_key"] == "a100_80gb"}
    mine = {r["target"]: r for r in committed[0] if r["kind"] == "row" and r["gpu_key"] == "a100_80gb"}
    assert a100["7"]["pred_pct"] == pytest.approx(mine["7"]["pred_pct"])
    assert main(["gap"]) == 0
    assert "nothing fitted" in capsys.readouterr().out


def test_cli_stale_result_is_recomputed_with_a_note(monkeypatch, capsys, tmp_path):
    import flashprof.analysis.gap.issue_report as ir
    from flashprof.analysis.__main__ import main

    frozen.write([{"kind": "limitation", "text": "old"}], tmp_path)
    meta = json.loads((tmp_path / frozen.META).read_text())
    meta["inputs"]["analysis/gpus.json"] = "0" * 64
    (tmp_path / frozen.META).write_text(json.dumps(meta))
    monkeypatch.setattr(frozen, "DIR", tmp_path)
    monkeypatch.setattr(ir, "gap_issue_paths", lambda *a, **k: [{"kind": "limitation", "text": "new"}])
    assert main(["gap", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == [{"kind": "limitation", "text": "new"}]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "stale" in lines[0] and "analysis/gpus.json" in lines[0] and "minutes" in lines[0]


@pytest.mark.parametrize("argv, msg", [
    (["gap", "--model", "pipes", "--write", "x"], "need --model issue"),
    (["gap", "--write", "x", "reports/h200/kernel7.ncu-rep"], "name no reports"),
    (["gap", "--bench", "b.csv"], "--model pipes"),
])
def test_cli_write_misuse_is_one_line(monkeypatch, capsys, argv, msg):
    from flashprof.analysis.__main__ import main

    _forbid_model(monkeypatch)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]


def test_gap_figure_is_drawn_from_the_committed_result(committed):
    from flashprof.analysis.charts.gap_charts import issue_gap_titles, plot_issue_gap

    recs, _ = frozen.read()
    title, sub = issue_gap_titles(recs)
    assert "nothing fitted" in title and "S4096 d128 fp16" in sub
    for key, mhz in (("a100_80gb", 1110), ("rtx3090", 1680)):
        assert f"{key} @ {mhz} MHz" in sub
    fig = plot_issue_gap(recs, title=title, subtitle=sub)
    gids = {a.get_gid() for ax in fig.axes for a in ax.get_children()}
    assert {"issue:a100_80gb:obs", "issue:a100_80gb:pred", "issue:rtx3090:pred", "issue:h200_sxm:cycles"} <= gids
    a100 = next(ax for ax in fig.axes if "A100" in ax.get_title())
    pts = next(line for line in a100.get_lines() if line.get_gid() == "issue:a100_80gb:pred")
    want = [r["pred_pct"] for r in sorted((r for r in committed[0] if r["kind"] == "row"
                                            and r["gpu_key"] == "a100_80gb" and r["target"] != "ref"),
                                           key=lambda r: r["target"])]
    assert list(pts.get_ydata()) == pytest.approx(want)

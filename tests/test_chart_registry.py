"""One chart registry: each FigureSpec of charts/specs.FIGURES says what feeds it, and the
redraw after `flashprof profile` (driver.fed_by) is chosen from the specs alone."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from flashprof.analysis.charts import driver, specs
from flashprof.analysis.charts.specs import FIGURES

ROOT = Path(__file__).resolve().parents[1]


def _inputs(rows):
    """A stand-in for Inputs: the reports of a folder and their identity (report, variant, gpu)."""
    ident = pd.DataFrame(rows, columns=["report", "variant", "gpu"])
    return SimpleNamespace(stems={r: Path(f"{r}.ncu-rep") for r in dict.fromkeys(ident["report"])}, ident=ident)


FOLDER = _inputs([("kernel5", "5", "H200"), ("kernel6", "6", "H200"), ("my_attn-attention", "my_attn-attention", "H200")])
# each figure's files for this folder (the user target's stall lines: two launches)
FILES = {"roofline": ["roofline_kernel5.png", "roofline_kernel6.png", "roofline_my_attn-attention.png",
                      "roofline_overlay.png"],
         "stall_lines": ["stall_lines_kernel5.png", "stall_lines_kernel6.png",
                         "stall_lines_my_attn-attention_launch0.png", "stall_lines_my_attn-attention_launch1.png"]}


def _selection(changed):
    return {name: sorted(f for f in FILES.get(name, [f"{name}.png"]) if keep(f))
            for name, keep in driver.fed_by(FOLDER, changed).items()}


def test_every_spec_says_what_feeds_it():
    assert all(callable(s.feeds) for s in FIGURES.values())
    field = {f.name: f for f in dataclasses.fields(specs.FigureSpec)}["feeds"]
    assert field.default is dataclasses.MISSING  # a new chart cannot forget it


def test_a_series_report_feeds_its_own_files_and_the_models():
    sel = _selection({"kernel6"})
    assert sel.pop("roofline") == ["roofline_kernel6.png", "roofline_overlay.png"]
    assert sel.pop("stall_lines") == ["stall_lines_kernel6.png"]
    # the first series launch of the GPU is kernel5's, so the ceilings are not fed by kernel 6
    assert sel == {n: [f"{n}.png"] for n in ("stalls", "pipes", "bank_conflicts", "gap", "pipe_shares")}


def test_a_user_target_feeds_only_per_launch_charts():
    sel = _selection({"my_attn-attention"})
    assert sel["stall_lines"] == ["stall_lines_my_attn-attention_launch0.png", "stall_lines_my_attn-attention_launch1.png"]
    assert sel["roofline"] == ["roofline_my_attn-attention.png", "roofline_overlay.png"]
    assert set(sel) == {"roofline", "stall_lines", "stalls", "pipes", "bank_conflicts"}  # no model, no bench


def test_the_first_series_report_of_a_gpu_feeds_the_ceilings():
    assert "gpu_ceilings" in _selection({"kernel5"})


def test_the_selection_comes_from_the_specs(monkeypatch):
    seen = []

    def only_progression(inp, changed):
        seen.append(changed)
        return lambda f: f == "progression.png"

    patched = {n: dataclasses.replace(s, feeds=specs.no_report) for n, s in FIGURES.items()}
    patched["progression"] = dataclasses.replace(FIGURES["progression"], feeds=only_progression)
    monkeypatch.setattr(driver, "FIGURES", patched)
    assert _selection(["kernel6"]) == {"progression": ["progression.png"]}
    assert seen == [{"kernel6"}]


def test_the_model_figures_say_what_they_compute_up_front():
    assert FIGURES["gap"].needs == ("gap_issue",)
    assert FIGURES["gpu_ceilings"].needs == FIGURES["pipe_shares"].needs == ("gap",)


def test_the_driver_names_no_figure():
    """No second registry: driver.py spells no figure's name (what feeds a figure, what it
    computes up front: its FigureSpec says)."""
    tree = ast.parse((ROOT / "flashprof/analysis/charts/driver.py").read_text())
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    from flashprof.analysis.charts.inputs import Inputs

    # 'autotune' is also an Inputs attribute (autotune.csv) the driver computes up front
    assert strings & set(FIGURES) - set(dir(Inputs)) == set()
    assert "gap" not in strings and "pipe_shares" not in strings

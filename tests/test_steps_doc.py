"""docs/HOPPER_STEPS.md: the per-technique table of kernel 7's Hopper steps.

The page must be what the committed data renders; its numbers are recomputed here from the
raw inputs: the sweep CSV with the csv module and statistics (not the module's own
helpers), the shipped kernel 7's duration and tensor-pipe activity straight from
ncu_report, and the predictions must predate the measurements they are compared with.
"""
from __future__ import annotations

import csv
import json
import re
import statistics
from datetime import datetime, timezone

import pytest

from conftest import raw_metrics
from flashprof.analysis.gap import steps_doc
from flashprof.paths import ROOT

H200 = ROOT / "reports" / "h200"


def test_the_committed_page_is_what_the_committed_data_renders():
    assert steps_doc.PAGE.read_text() == steps_doc.render(*steps_doc.inputs()), \
        "docs/HOPPER_STEPS.md is stale: python -m flashprof.analysis.gap.steps_doc"


def _row(page: str, step: str) -> list[str]:
    line = next(ln for ln in page.splitlines() if ln.startswith(f"| {step} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_measured_gain_recomputed_from_the_sweep():
    tf: dict = {}
    with (H200 / "autotune_hopper.csv").open() as f:
        for r in csv.DictReader(f):
            if r["dtype"] == "fp16":
                tf.setdefault(r["slug"], []).append(float(r["tflops"]))
    steps = {s.name: s for s in steps_doc.STEPS}
    base = statistics.harmonic_mean(tf[steps["before"].slug])
    page = steps_doc.PAGE.read_text()
    for name in ("tile", "tma", "overlap", "pingpong"):
        assert len(tf[steps[name].slug]) == 6  # S = 512 ... 16384
        want = statistics.harmonic_mean(tf[steps[name].slug]) / base
        assert float(_row(page, name)[3]) == pytest.approx(want, abs=5e-4), name
    # the shipped step is the tuner's winner, and that winner came from the rounds sweep
    tuned = json.loads((ROOT / "flashprof" / "kernels" / "tuned.json").read_text())["h200"]
    assert tuned["slug"] == steps["shipped"].slug
    assert tuned["source"] == "reports/h200/autotune_hopper_rounds.csv"


def test_the_persistent_rows_recomputed_from_the_rounds_sweep():
    tf: dict = {}
    with (H200 / "autotune_hopper_rounds.csv").open() as f:
        for r in csv.DictReader(f):
            tf.setdefault((r["slug"], r["dtype"]), {})[int(r["seq"])] = float(r["tflops"])
    steps = {s.name: s for s in steps_doc.STEPS}
    page = steps_doc.PAGE.read_text()
    section = page[page.index("## The persistent grid"):page.index("## The model on the built code")]
    for dt, col in (("fp16", 3), ("bf16", 5)):
        ref = statistics.harmonic_mean(tf[(steps["pingpong"].slug, dt)].values())
        for name in ("persistent", "shipped"):
            by = tf[(steps[name].slug, dt)]
            assert sorted(by) == [512, 1024, 2048, 4096, 8192, 16384]
            row = _row(section, name)
            assert float(row[col - 1]) == pytest.approx(statistics.harmonic_mean(by.values()), abs=0.05)
            assert float(row[col]) == pytest.approx(statistics.harmonic_mean(by.values()) / ref, abs=5e-4)
    # the winner of the rounds sweep in fp16 is the shipped step (what the tuner picked)
    best = max((k for k in tf if k[1] == "fp16"), key=lambda k: statistics.harmonic_mean(tf[k].values()))
    assert best[0] == steps["shipped"].slug


def test_the_cudnn_count_recomputed_from_the_bench_csvs():
    ratios = []
    for name in ("bench.csv", "bench_bf16.csv"):
        rows: dict = {}
        with (H200 / name).open() as f:
            for r in csv.DictReader(f):
                rows.setdefault(int(r["seq"]), {})[r["target"]] = float(r["tflops"])
        ratios += [v["7"] / v["cudnn"] for v in rows.values() if "7" in v and "cudnn" in v]
    assert len(ratios) == 12
    page = steps_doc.PAGE.read_text()
    m = re.search(r"at or above cuDNN at (\d+) of (\d+) points; its worst point is ([0-9.]+)", page)
    assert (int(m.group(1)), int(m.group(2))) == (sum(r >= 1 for r in ratios), 12)
    assert float(m.group(3)) == pytest.approx(min(ratios), abs=5e-4)


def test_the_shipped_profile_row_from_raw_metrics():
    raw = raw_metrics(H200 / "kernel7.ncu-rep")
    row = next(r for r in steps_doc.PAGE.read_text().splitlines() if "`reports/h200/kernel7.ncu-rep`" in r)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[2]) == pytest.approx(raw["gpu__time_duration.sum"] / 1e6, abs=5e-4)
    # the tensor pipe's active cycles over the active cycles (HGMMA counts on the tensor pipe)
    assert float(cells[5]) == pytest.approx(raw["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"], abs=0.06)
    assert float(cells[8]) == raw["launch__registers_per_thread"] and float(cells[9]) == raw["launch__block_size"] == 384


def test_predictions_were_written_before_the_measurements():
    pred = sorted((H200 / "hopper-steps").glob("whatif_predicted_*.json"))
    assert pred, "no pre-build prediction file"
    tuned = json.loads((ROOT / "flashprof" / "kernels" / "tuned.json").read_text())["h200"]
    measured = datetime.strptime(tuned["created"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    changes = set()
    for p in pred:  # every pre-build file is stamped before the sweep that measured the steps
        stamp = datetime.strptime(re.search(r"(\d{8}T\d{4})", p.name).group(1), "%Y%m%dT%H%M").replace(tzinfo=timezone.utc)
        assert stamp < measured, p.name
        changes |= {r["change"] for r in json.loads(p.read_text())}
    assert {"tile128", "tile128+tma", "tile128+tma+overlap", "tile128+tma+pingpong+overlap"} <= changes


# ------------------------------------------------------------------ the figure's data and figure
def _steps_json() -> dict:
    return json.loads(steps_doc.STEPS_DATA.read_text())


def test_the_committed_figure_data_is_what_the_committed_data_gives():
    fresh = json.loads(json.dumps(steps_doc.figure_data(*steps_doc.inputs())))
    assert _steps_json() == fresh, "reports/h200/hopper-steps/steps.json is stale: python -m flashprof.analysis.gap.steps_doc"


def test_figure_data_gains_recomputed_from_the_sweep_csv():
    tf: dict = {}
    with (H200 / "autotune_hopper.csv").open() as f:
        for r in csv.DictReader(f):
            tf.setdefault((r["slug"], r["dtype"]), []).append(float(r["tflops"]))
    gains = _steps_json()["gains"]
    base = gains[0]["slug"]
    assert gains[0]["step"] == "before" and len(gains) >= 5
    for g in gains:
        for dt in ("fp16", "bf16"):
            want = statistics.harmonic_mean(tf[(g["slug"], dt)]) / statistics.harmonic_mean(tf[(base, dt)])
            assert g[f"measured_x_{dt}"] == pytest.approx(want, abs=1e-4), (g["step"], dt)


@pytest.mark.parametrize("i", range(6))
def test_figure_data_profiles_from_raw_metrics(i):
    """Each profiled step's numbers, straight from ncu_report with Nsight Compute's metric
    names: tensor pipe, issue slots, duration, SM clock and every stall per issued instruction."""
    profs = _steps_json()["profiles"]
    if i >= len(profs):
        pytest.skip(f"{len(profs)} profiled steps")
    p = profs[i]
    raw = raw_metrics(ROOT / p["report"])
    assert p["tensor_pipe_pct"] == pytest.approx(raw["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"], abs=1e-3)
    assert p["issue_active_pct"] == pytest.approx(raw["smsp__issue_active.avg.pct_of_peak_sustained_active"], abs=1e-3)
    assert p["duration_ms"] == pytest.approx(raw["gpu__time_duration.sum"] / 1e6, abs=1e-4)
    assert p["clock_ghz"] == pytest.approx(raw["sm__cycles_elapsed.avg.per_second"] / 1e9, rel=2e-3)
    assert p["sm_cycles"] == pytest.approx(raw["sm__cycles_elapsed.avg"], rel=1e-9)
    pre, suf = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
    want = {m[len(pre):-len(suf)]: v for m, v in raw.items() if m.startswith(pre) and m.endswith(suf)}
    want = {k: v for k, v in want.items() if k not in ("selected", "not_selected")}
    assert set(p["stalls"]) <= set(want) and len(p["stalls"]) >= 8
    for reason, v in p["stalls"].items():
        assert v == pytest.approx(want[reason], abs=1e-3), reason
    # the reasons left out are the ones the report reads as 0
    assert all(abs(v) < 1e-9 for k, v in want.items() if k not in p["stalls"]), \
        {k: v for k, v in want.items() if k not in p["stalls"] and abs(v) >= 1e-9}


def test_the_figure_draws_the_data():
    """Bar heights of hopper_steps.png's panels are the data: gains, tensor pipe %, and each
    step's stall stack adds up to its stalls (top reasons + the rest)."""
    import pandas as pd
    from matplotlib.patches import Rectangle

    from flashprof.analysis.charts.steps_chart import plot_hopper_steps

    d = _steps_json()
    gains, rounds, prof = (pd.DataFrame(d[k]) for k in ("gains", "rounds", "profiles"))
    fig = plot_hopper_steps(gains, rounds, prof, gpu=d["gpu"], context="ctx")

    def bars(gid):
        return [a for ax in fig.axes for a in ax.get_children() if isinstance(a, Rectangle) and a.get_gid() == gid]

    assert [b.get_height() for b in bars("steps-gain:measured_x_fp16")] == pytest.approx(list(gains["measured_x_fp16"]))
    assert [b.get_height() for b in bars("steps-pipe:tensor_pipe_pct")] == pytest.approx(list(prof["tensor_pipe_pct"]))
    stack = None
    for ax in fig.axes:
        for a in ax.get_children():
            if isinstance(a, Rectangle) and str(a.get_gid()).startswith("steps-stall:"):
                x = round(a.get_x() + a.get_width() / 2)
                stack = stack or {}
                stack[x] = max(stack.get(x, 0), a.get_y() + a.get_height())
    assert [stack[x] for x in sorted(stack)] == pytest.approx([sum(s.values()) for s in prof["stalls"]], abs=1e-6)
    fp = rounds[rounds["dtype"] == "fp16"].sort_values("hm_tflops")
    assert sorted(b.get_width() for b in bars("steps-rounds:fp16")) == pytest.approx(sorted(fp["hm_tflops"]))
    texts = " ".join(t.get_text() for t in fig.texts)
    assert "H200" in texts and "ctx" in texts


def test_per_seq_winners_recomputed_from_the_rounds_sweep():
    best: dict = {}
    with (H200 / "autotune_hopper_rounds.csv").open() as f:
        for r in csv.DictReader(f):
            best.setdefault((r["dtype"], int(r["seq"])), []).append((float(r["tflops"]), r["slug"]))
    page = steps_doc.PAGE.read_text()
    shipped = next(s.slug for s in steps_doc.STEPS if s.name == "shipped")
    rows = [ln for ln in page.splitlines() if re.match(r"\| (fp16|bf16) \| \d+ \| ", ln)]
    assert len(rows) == len(best) == 12
    for ln in rows:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        ranked = sorted(best[(cells[0], int(cells[1]))], reverse=True)
        for (tf, slug), cell in zip(ranked[:2], cells[2:4]):
            assert cell.endswith(f" {tf:.1f}") and slug.endswith(cell.split("`")[1].lstrip("…")), (ln, slug)
        place = [s for _, s in ranked].index(shipped)
        assert cells[4] == f"{place + 1}, {ranked[place][0] / ranked[0][0]:.3f}", ln

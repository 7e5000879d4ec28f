"""The series' kernels on the H200 (issue 31): reports, SASS and the model's comparison.

Expected values come from the raw Nsight Compute metrics (ncu_report, inside the test) and
from the SASS and ptxas logs themselves, not from what series_measured prints."""
import json
import math
import re

import pytest

from flashprof.analysis.gap import series_measured as sm
from flashprof.analysis.gap.controls import parse
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.scheduler import flop_per_warp

FOLDER = REPO / "reports" / "h200" / "series"
SASS = REPO / "reports" / "sass" / "series" / "h200"
RESULT = REPO / "reports" / "gap" / "series_h200.json"
pytestmark = pytest.mark.skipif(not FOLDER.is_dir(), reason="no reports/h200/series in this checkout")


def _raw(path, name):
    import ncu_report

    ctx = ncu_report.load_report(str(path))
    rng = ctx.range_by_idx(0)
    assert rng.num_actions() == 1
    return rng.action_by_idx(0).metric_by_name(name).as_double()


def test_every_report_has_a_sidecar_at_the_series_shape():
    reps = sorted(FOLDER.glob("*.ncu-rep")) + sorted(FOLDER.glob("*/*.ncu-rep"))
    assert len(reps) >= 17  # kernels 1-7, the A100 configs of 8-16, FA2 (+ the RTX 3090 configs' run)
    for p in reps:
        side = json.loads(p.with_suffix(".json").read_text())
        assert side["shape"] == {"batch": 16, "seq": 4096, "heads": 16, "d_head": 128}
        assert side["correctness"]["ok"] is True
        assert "H200" in side["gpu"]["name"]


@pytest.fixture(scope="module")
def result():
    if not RESULT.is_file():
        pytest.skip("no reports/gap/series_h200.json")
    return json.loads(RESULT.read_text())


def test_measured_pct_is_fa2_cycles_over_the_kernels_from_the_raw_metric(result):
    ref = _raw(FOLDER / "ref.ncu-rep", "sm__cycles_elapsed.avg")
    rows = {r["listing"]: r for r in result[0]["rows"]}
    for fn, listing in (("k1", "1"), ("k7", "7_64_64_swizzling"), ("k16_A100", "16_A100")):
        k = _raw(FOLDER / f"series_targets-{fn}.ncu-rep", "sm__cycles_elapsed.avg")
        assert rows[listing]["measured_pct"] == pytest.approx(100 * ref / k, rel=1e-9)
    # the RTX 3090 configurations ran in a later call: against that call's own FA2 report
    sub = FOLDER / "rtx3090"
    if sub.is_dir():
        ref2 = _raw(sub / "ref.ncu-rep", "sm__cycles_elapsed.avg")
        for fn, listing in (("k8_RTX3090", "8_RTX3090"), ("k16_RTX3090", "16_RTX3090")):
            k = _raw(sub / f"series_targets-{fn}.ncu-rep", "sm__cycles_elapsed.avg")
            assert rows[listing]["measured_pct"] == pytest.approx(100 * ref2 / k, rel=1e-9)
        assert sum(r["listing"] == "ref" for r in result[0]["rows"]) == 1


def test_the_conflict_factor_is_each_reports_own(result):
    rows = {r["listing"]: r for r in result[0]["rows"]}
    p = FOLDER / "series_targets-k1.ncu-rep"
    wf = _raw(p, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")
    bc = _raw(p, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum")
    assert rows["1"]["conflict"] == pytest.approx(wf / (wf - bc), rel=1e-9)
    assert rows["1"]["conflict"] > 4  # kernel 1 is unswizzled
    assert rows["16_A100"]["conflict"] < 1.01  # swizzled


def test_imported_sass_headers_match_the_ptxas_logs_and_the_loop_does_the_tiles_work():
    cfgs = sm.configs()
    files = sorted(SASS.glob("*_sm_90.sass"))
    assert len(files) == 25
    for f in files:
        listing = f.name[: -len("_sm_90.sass")]
        text = f.read_text()
        regs = int(re.search(r"^# registers: (\d+)", text, re.M).group(1))
        assert regs == int(re.search(r"Used (\d+) registers", f.with_suffix(".ptxas").read_text()).group(1))
        c = cfgs[listing]
        code = sm.series_code(listing, "h200")
        assert (code.B_r, code.B_c, code.warps) == (c["B_r"], c["B_c"], c["warps"])
        # one pass of the KV loop per warp x warps = 4 B_r B_c d FLOP (or a whole multiple, if unrolled)
        per_pass = sum(flop_per_warp(i) for i in code.body) * c["warps"] / (4 * c["B_r"] * c["B_c"] * 128)
        assert per_pass == pytest.approx(round(per_pass)) and per_pass >= 1
        fns = parse(text)
        assert len(fns) == 1 and "flash_forward_kernel" in next(iter(fns))


def test_skill_recomputed_from_the_rows(result):
    for res in result:
        rows = [r for r in res["rows"] if r["listing"] != "ref"]
        a = next(s for s in res["skill"] if s["tiles"] == "A100")
        sel = [r for r in rows if r["kernel"] >= 2 and not r["listing"].endswith("_RTX3090")]
        assert a["n"] == len(sel)
        assert a["mae_pp"] == pytest.approx(sum(abs(r["predicted_pct"] - r["measured_pct"]) for r in sel) / len(sel))
        assert a["baseline_100_mae_pp"] == pytest.approx(sum(abs(100 - r["measured_pct"]) for r in sel) / len(sel))
        # Spearman = Pearson of the average ranks, computed here with pandas
        import pandas as pd
        ranks = lambda xs: pd.Series(xs).rank()
        rho = ranks([r["predicted_pct"] for r in sel]).corr(ranks([r["measured_pct"] for r in sel]))
        assert a["spearman"] == pytest.approx(rho)


@pytest.mark.slow
def test_the_committed_predictions_are_reproduced(result):
    """Kernel 16 (A100 config) and FA2, re-simulated now with the committed seeds."""
    from flashprof.analysis.gap import issue_report as ir
    from flashprof.analysis.gap.constants import machine
    from flashprof.analysis.gap.loops import fa2_loop

    res = result[0]
    assert res["interplay"] is True
    rows = {r["listing"]: r for r in res["rows"]}
    m = machine("h200_sxm")
    seeds = tuple(res["seeds"])
    ref = ir.kernel_time(fa2_loop("sm_90"), m, rows["ref"]["conflict"], seeds)
    k = ir.kernel_time(sm.series_code("16_A100", "h200"), m, rows["16_A100"]["conflict"], seeds)
    assert rows["16_A100"]["predicted_pct"] == pytest.approx(100 * ref["pred_cycles"] / k["pred_cycles"], rel=1e-9)
    assert not math.isnan(rows["16_A100"]["sd_pp"])


def test_the_figure_draws_the_committed_rows_and_the_published_steps(result):
    """figures/series_h200.png: measured bars and predicted dots are the committed rows; the
    crosses are the A100's published % of FA2 read from published.json here."""
    from matplotlib.patches import Rectangle

    from flashprof.analysis.charts.gap_charts import plot_series_here
    from flashprof.analysis.gap.data import PUBLISHED_FILE

    pub = json.loads(PUBLISHED_FILE.read_text())["gpus"]
    a100 = next(g["pct_of_fa2"] for k, g in pub.items() if "a100" in k.lower())
    steps = {int(k): v["seq_4096"] for k, v in a100.items() if k.isdigit()}
    on, off = result
    # the A100's step only beside the configs the A100 ran: kernels 1-7 and the *_A100 listings
    published = {r["listing"]: steps[r["kernel"]] for r in on["rows"]
                 if r["kernel"] in steps and (r["kernel"] <= 7 or r["listing"].endswith("_A100"))}
    fig = plot_series_here(on, off, published, title="t")
    ax = fig.axes[0]
    bars = [a.get_height() for a in ax.get_children() if isinstance(a, Rectangle) and a.get_gid() == "series_here:obs"]
    rows = [r for r in on["rows"] if r["listing"] != "ref"] + [r for r in on["rows"] if r["listing"] == "ref"]
    assert bars == pytest.approx([r["measured_pct"] for r in rows])
    crosses = next(line for line in ax.get_lines() if line.get_gid() == "series_here:published")
    assert list(crosses.get_ydata()) == pytest.approx([published[r["listing"]] for r in rows if r["listing"] in published])
    cyc = [a.get_height() for a in fig.axes[1].get_children()
           if isinstance(a, Rectangle) and a.get_gid() == "series_here:cycles"]
    assert cyc == pytest.approx([1 + r["cycles_error_pct"] / 100 for r in rows])
    assert max(cyc) < fig.axes[1].get_ylim()[1] and min(cyc) > fig.axes[1].get_ylim()[0]


@pytest.mark.parametrize("fn,listing", [("k1", "1"), ("k7", "7_64_64_swizzling"), ("k9_A100", "9_A100"),
                                        ("k16_A100", "16_A100"), (None, "ref")])
def test_the_loops_the_model_runs_account_for_the_instructions_each_report_executed(fn, listing):
    """Warp instructions the model's KV loop issues over the whole launch (trips x body x warps x
    CTAs) plus at most the rest of the function once per warp, against smsp__inst_executed.sum:
    a loop cut at the wrong place, a missed unroll or a wrong trip count would miss by far more."""
    from flashprof.analysis.gap.loops import fa2_loop

    code = fa2_loop("sm_90") if listing == "ref" else sm.series_code(listing, "h200")
    executed = _raw(FOLDER / ("ref.ncu-rep" if fn is None else f"series_targets-{fn}.ncu-rep"), "smsp__inst_executed.sum")
    b, h, s = 16, 16, 4096
    ctas = b * h * s // code.B_r
    trips = 4.0 * code.B_r * s * 128 / (sum(flop_per_warp(i) for i in code.body) * code.warps)
    loop = trips * len(code.body) * code.warps * ctas
    rest = (code.total_insts - len(code.body)) * code.warps * ctas
    assert 0.93 * executed < loop <= executed * 1.01
    assert loop + rest == pytest.approx(executed, rel=0.03)


def test_the_readme_quotes_the_committed_cycle_errors(result):
    """README's sentence on the series' kernels: the MAPE and FA2's error are the committed ones."""
    text = " ".join((REPO / "README.md").read_text().split())
    m = re.search(r"cycles within ([\d.]+) % \(MAPE over the (\d+) kernels and FA2; FA2's own ([+-][\d.]+) %\) "
                  r"and their % of FA2 within ([\d.]+) pp \(MAE, kernels 2–16 of the A100 configurations; ([\d.]+) pp "
                  r"for the RTX 3090 ones\)", text)
    assert m, "README no longer states the series' cycle and % errors"
    rows = result[0]["rows"]
    mape = sum(abs(r["cycles_error_pct"]) for r in rows) / len(rows)
    fa2 = next(r for r in rows if r["listing"] == "ref")["cycles_error_pct"]
    assert float(m.group(1)) == pytest.approx(mape, abs=0.05) and int(m.group(2)) == len(rows) - 1
    assert float(m.group(3)) == pytest.approx(fa2, abs=0.05)
    skill = {s["tiles"]: s for s in result[0]["skill"]}
    for group, tiles in ((4, "A100"), (5, "RTX3090")):
        listed = [r for r in rows if r["listing"] != "ref" and r["kernel"] >= 2 and r["tiles"] in ("both", tiles)]
        mae = sum(abs(r["error_pp"]) for r in listed) / len(listed)
        assert float(m.group(group)) == pytest.approx(mae, abs=0.05) == pytest.approx(skill[tiles]["mae_pp"], abs=0.05)

"""Plot functions: structure, not pixels (log axes, one series per kernel, ceilings drawn
equal to the analysis values, stacked segments sum to the analysis totals, no NaN)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from flashprof.analysis.charts.identity import KERNEL_ORDER, kernel_color, kernel_key, kernel_rank
from flashprof.analysis.charts.labels import renderer as _renderer
import matplotlib
from flashprof.analysis.charts.bench_charts import plot_autotune
from flashprof.analysis.charts.stall_charts import plot_bank_conflicts, plot_pipes, plot_stall_lines, plot_stalls
from flashprof.analysis.charts.roofline_chart import plot_roofline
from flashprof.analysis.report.parse import launch_identity
from flashprof.analysis.stages.roofline import roofline
from flashprof.analysis.stages.stalls import bank_conflicts, stalls, top_stall_lines
from flashprof.analysis.stages.pipes import pipes

TF = 1e12


@pytest.fixture(scope="module")
def roof(full_frame):
    return roofline(full_frame)


@pytest.fixture(scope="module")
def ident(full_frame):
    return launch_identity(full_frame)


def _by_gid(ax, prefix, kind=Line2D):
    children = ax.lines if kind is Line2D else ax.patches
    return {a.get_gid(): a for a in children if (a.get_gid() or "").startswith(prefix)}


def _no_nan_lines(ax):
    for line in ax.lines:
        x, y = (np.asarray(v, float) for v in line.get_data())
        assert np.isfinite(x).all() and np.isfinite(y).all(), line.get_gid()


def test_overlay_is_loglog_with_one_series_per_kernel(roof, ident):
    fig = plot_roofline(roof, ident)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    series = _by_gid(ax, "series:")
    assert set(series) == {"series:ref#0", "series:cudnn#0"}
    for gid, line in series.items():
        report = gid.split(":")[1].split("#")[0]
        x, y = line.get_data()
        assert len(x) == 4 and line.get_marker() in ("None", "", None)  # points are separate markers
        want = roof[roof["report"] == report].sort_values("ai_tensor")
        assert np.allclose(x, want["ai_tensor"]) and np.allclose(np.asarray(y) * TF, want["flops_tensor"])
        assert line.get_color() == kernel_color(report) or tuple(line.get_color()) == tuple(
            matplotlib.colors.to_rgba(kernel_color(report)))
    _no_nan_lines(ax)


def test_overlay_ceilings_equal_analysis_values(roof, ident):
    ax = plot_roofline(roof, ident).axes[0]
    ceil = _by_gid(ax, "ceiling:")
    hmma = roof[roof["tensor_path"] == "hmma"]["tensor_ceiling"].max()
    wgmma = roof[roof["tensor_path"] == "hgmma"]["tensor_ceiling"].max()
    assert ceil["ceiling:tensor:mma.sync"].get_ydata()[0] * TF == pytest.approx(hmma)
    assert ceil["ceiling:tensor:wgmma"].get_ydata()[0] * TF == pytest.approx(wgmma)
    assert ceil["ceiling:fp32"].get_ydata()[0] * TF == pytest.approx(roof["fp32_ceiling"].max())
    for level in ("L1", "L2", "DRAM", "shared memory"):
        x, y = ceil[f"ceiling:bw:{level}"].get_data()
        slope = (y[1] - y[0]) * TF / (x[1] - x[0])  # FLOP/s per FLOP/byte = bytes/s
        assert slope == pytest.approx(roof[roof["level"] == level]["bw_ceiling"].max(), rel=1e-9)
    # every roof is labelled with its value
    labels = {t.get_gid(): t.get_text() for t in ax.texts if t.get_gid()}
    assert f"{hmma / TF:.0f} TFLOP/s" in labels["ceiling-label:tensor:mma.sync"]
    assert f"{wgmma / TF:.0f} TFLOP/s" in labels["ceiling-label:tensor:wgmma"]
    dram = roof[roof["level"] == "DRAM"]["bw_ceiling"].max()
    assert any(f"{dram / 1e12:.3g} TB/s" in t for g, t in labels.items() if "DRAM" in g)


@pytest.mark.parametrize("report", ["ref", "cudnn"])
def test_single_report_ridge_is_ceiling_over_bandwidth(roof, ident, report):
    fig = plot_roofline(roof, ident, [report], fp32_points=True)
    ax = fig.axes[0]
    assert set(_by_gid(ax, "series:")) == {f"series:{report}#0"}
    assert set(_by_gid(ax, "series-fp32:")) == {f"series-fp32:{report}#0"}
    r = roof[roof["report"] == report].set_index("level")
    for level in ("L1", "L2", "DRAM", "shared memory"):
        x, y = _by_gid(ax, f"ceiling:bw:{level}")[f"ceiling:bw:{level}"].get_data()
        assert x[-1] == pytest.approx(r.loc[level, "ridge_tensor"])  # the knee
        assert x[-1] == pytest.approx(r.loc[level, "tensor_ceiling"] / r.loc[level, "bw_ceiling"])
        assert y[-1] * TF == pytest.approx(r.loc[level, "tensor_ceiling"])
    _no_nan_lines(ax)


def test_roofline_skips_nan_points(roof, ident):
    broken = roof.copy()
    broken.loc[broken["level"] == "DRAM", ["ai_tensor", "ai"]] = math.nan
    ax = plot_roofline(broken, ident).axes[0]
    _no_nan_lines(ax)
    assert all(len(line.get_xdata()) == 3 for line in _by_gid(ax, "series:").values())


def test_stall_segments_sum_to_analysis_total(full_frame, ident, roof):
    st = stalls(full_frame)
    ax = plot_stalls(st, ident, roof).axes[0]
    bars = _by_gid(ax, "stall:", kind=Rectangle)
    assert bars
    for report in ("ref", "cudnn"):
        heights = [b.get_height() for g, b in bars.items() if g.startswith(f"stall:{report}#0:")]
        assert sum(heights) == pytest.approx(st[st["report"] == report]["per_issue"].sum(skipna=True))
        # segments are stacked in canonical reason order
        order = [g.rsplit(":", 1)[1] for g in bars if g.startswith(f"stall:{report}#0:")]
        canon = [r for r in st["reason"].cat.categories if r in order]
        assert order == canon
    for b in bars.values():
        assert np.isfinite(b.get_height()) and np.isfinite(b.get_y())
    # the shared-memory/MIO family is visibly grouped (hatched)
    assert all(b.get_hatch() for g, b in bars.items() if g.endswith((":mio_throttle", ":short_scoreboard")))
    assert not any(b.get_hatch() for g, b in bars.items() if g.endswith(":barrier"))


def test_stall_lines_bars_match_samples(ref_source):
    top = top_stall_lines(ref_source, 8)
    fig = plot_stall_lines(ref_source, top, title="t")
    ax = fig.axes[0]
    bars = _by_gid(ax, "line:", kind=Rectangle)
    for rec in top.to_dict("records"):
        w = sum(b.get_width() for g, b in bars.items() if g.startswith(f"line:{rec['pc']}:"))
        assert w == pytest.approx(rec["stall_samples"])
    assert len(ax.get_yticklabels()) == len(top)


def test_pipes_and_bank_conflicts_draw_analysis_values(full_frame, ident, roof):
    pf = pipes(full_frame)
    ax = plot_pipes(pf, ident, roof).axes[0]
    assert ax.get_ylabel().startswith("%")
    tensor = pf[(pf["report"] == "ref") & (pf["name"] == "tensor")]["value"].iloc[0]
    heights = [p.get_height() for p in ax.patches if p.get_gid() == "pipe:ref#0"]
    assert heights[0] == pytest.approx(tensor)
    bk = bank_conflicts(full_frame)
    ax = plot_bank_conflicts(bk, ident, roof).axes[0]
    bars = _by_gid(ax, "bank:", kind=Rectangle)
    want = bk[(bk["report"] == "cudnn") & (bk["op"] == "st")]["nway"].iloc[0]
    assert bars["bank:cudnn#0:st"].get_height() == pytest.approx(want)


def test_kernel_identity_and_colours():
    assert kernel_key("kernel6", None) == "6"
    assert kernel_key("whatever", "3") == "3"
    assert kernel_key("ref", float("nan")) == "ref"
    assert kernel_key("kernel6_s8192_b8_h16_fp16_full", None) == "6"
    colours = [kernel_color(k) for k in KERNEL_ORDER]
    assert len({str(c) for c in colours}) == len(colours)  # all distinct
    assert sorted(["cudnn", "7", "ref", "1"], key=kernel_rank) == ["1", "7", "ref", "cudnn"]


def test_overlay_zoom_panel_separates_the_crowd(roof, ident):
    # three near-equal series (copies of ref at 1.00x, 1.05x, 1.10x) form a crowd
    copies = []
    for i, f in enumerate((1.0, 1.05, 1.10)):
        c = roof[roof["report"] == "ref"].copy()
        c["report"] = f"kernel{i + 2}"
        c["variant"] = str(i + 2)
        c["flops_tensor"] *= f
        c["ai_tensor"] *= f
        copies.append(c)
    r = pd.concat([roof] + copies, ignore_index=True)
    fig = plot_roofline(r, ident)
    main, zoom = fig.axes[0], fig.axes[1]
    assert main.get_xscale() == "log" and main.get_yscale() == "log"
    assert zoom.get_xscale() == "log" and zoom.get_yscale() == "linear"
    zs = {g[len("zoom:"):]: ln for g, ln in _by_gid(zoom, "zoom:series:").items()}
    assert {"series:ref#0", "series:kernel2#0", "series:kernel3#0", "series:kernel4#0"} <= set(zs)
    for gid, line in zs.items():  # zoom draws the same data as the main panel
        x, y = line.get_data()
        mx, my = _by_gid(main, gid)[gid].get_data()
        assert np.allclose(x, mx) and np.allclose(y, my)
    _no_nan_lines(zoom)
    # no zoom for a single report
    assert len(plot_roofline(roof, ident, ["ref"]).axes) == 1


def test_stall_share_panel_sums_to_100(full_frame, ident, roof):
    st = stalls(full_frame)
    ax = plot_stalls(st, ident, roof).axes[1]
    bars = _by_gid(ax, "stallshare:", kind=Rectangle)
    for report in ("ref", "cudnn"):
        assert sum(b.get_height() for g, b in bars.items() if g.startswith(f"stallshare:{report}#0:")) == \
            pytest.approx(100.0)


def test_autotune_plot_marks_winner_seed_and_fa2():
    import json
    from flashprof.analysis.stages import bench_tables as B
    rows = []
    for slug, br, bc, w, tf in (("a", 128, 128, 8, 330.0), ("b", 64, 64, 4, 300.0), ("c", 64, 32, 4, 250.0)):
        cfg = json.dumps({"B_r": br, "B_c": bc, "n_warps": w, "Q_mma_load_K_fragments": 0,
                          "K_mma_load_K_fragments": 2, "V_mma_load_K_fragments": 0,
                          "mma_double_buffer_loads": True, "optimized_softmax": True})
        for s in (1024, 4096):
            rows.append({"slug": slug, "seq": s, "tflops": tf, "ref_tflops": 340.0, "config": cfg})
    t = B.autotune_table(pd.DataFrame(rows))
    fig = plot_autotune(t, B.parameter_importance(t))
    ax = fig.axes[0]
    bars = [p for p in ax.patches if p.get_gid() == "autotune:bars"]
    assert [b.get_height() for b in bars] == pytest.approx(list(t["pct_of_ref_hm"]))
    assert _by_gid(ax, "autotune:fa2")["autotune:fa2"].get_ydata()[0] == 100
    win = _by_gid(ax, "autotune:winner")["autotune:winner"]
    seed = _by_gid(ax, "autotune:seed")["autotune:seed"]
    assert win.get_xdata()[0] == 1 and seed.get_xdata()[0] == 2


@pytest.mark.parametrize("report", ["ref", "cudnn"])
def test_roofline_labels_inside_axes_and_clear_of_points(roof, ident, report):
    fig = plot_roofline(roof, ident, [report], fp32_points=True)
    ax = fig.axes[0]
    r = _renderer(fig)
    box = ax.get_window_extent(r)
    labels = [t for t in ax.texts if (t.get_gid() or "").startswith("ceiling-label:")]
    assert {t.get_gid() for t in labels} >= {"ceiling-label:fp32", "ceiling-label:bw:DRAM", "ceiling-label:bw:L2"}
    points = np.array([ax.transData.transform((x, y)) for line in ax.lines if line.get_marker() not in ("None", "", None, "|")
                       for x, y in zip(*line.get_data())])
    for t in labels:
        bb = t.get_window_extent(r)
        assert box.x0 - 1 <= bb.x0 and bb.x1 <= box.x1 + 1 and box.y0 - 1 <= bb.y0 and bb.y1 <= box.y1 + 1, t.get_text()
        if t.get_rotation() == 0:  # upright roof labels: no data marker under the text
            inside = (points[:, 0] > bb.x0) & (points[:, 0] < bb.x1) & (points[:, 1] > bb.y0) & (points[:, 1] < bb.y1)
            assert not inside.any(), t.get_text()
    for t in labels:  # slope labels sit on their own slope (inline)
        gid = t.get_gid()
        if gid.startswith("ceiling-label:bw:"):
            level = gid.split(":")[2].split("+")[0]
            bw = roof[(roof["report"] == report) & (roof["level"] == level)]["bw_ceiling"].max()
            x, y = t.get_position()
            assert y * TF == pytest.approx(bw * x, rel=1e-6)


def test_stall_lines_keep_whole_instructions(ref_source):
    top = top_stall_lines(ref_source, 8)
    long = top.copy()
    long.loc[long.index[0], "sass"] = "HGMMA.64x128x16.F32 R88, R24, gdesc[UR16].tnspB, R88, gsb0, more"
    ax = plot_stall_lines(ref_source, long, title="t").axes[0]
    texts = [t.get_text() for t in ax.get_yticklabels()]
    assert not any("\u2026" in t for t in texts)
    assert "gsb0, more" in texts[0].replace("\n", " ")


def test_roofline_draws_the_measured_roofs_beside_the_theoretical(roof, ident):
    """Measured roofs (make ceilings) are dotted lines at exactly the measured rate
    re-expressed at the kernel's clock: FLOP/clk/SM x SMs x clock from ceilings.json."""
    import json
    from pathlib import Path

    from flashprof.analysis.stages import measured_roofs as ceilings
    path = Path(__file__).resolve().parents[1] / "reports" / "h200" / "ceilings.json"
    doc = json.loads(path.read_text())
    clock = float(roof.loc[roof["report"] == "ref", "sm_clock_hz"].iloc[0])
    measured = ceilings.measured_roofs(ceilings.load(path), clock)
    fig = plot_roofline(roof, ident, ["ref"], fp32_points=True, measured=measured)
    ax = fig.axes[0]
    lines = _by_gid(ax, "measured:")
    mma = next(m for m in doc["measurements"] if m["name"] == "mma_f16_f32" and m["kind"] == "throughput")
    y = lines["measured:tensor:mma.sync"].get_ydata()
    assert y[0] == y[-1] == pytest.approx(mma["value"] * doc["sm_count"] * clock / TF, rel=1e-12)
    dram = next(m for m in doc["measurements"] if m["name"] == "dram_copy")
    x, y = (np.asarray(v, float) for v in lines["measured:bw:DRAM"].get_data())
    assert (y[1] - y[0]) / (x[1] - x[0]) == pytest.approx(dram["per_second"] / TF, rel=1e-9)  # slope = bandwidth
    # no wgmma roof on a mma.sync kernel's chart, and every measured roof is in a legend
    assert "measured:tensor:wgmma" not in lines
    texts = [t.get_text() for leg in fig.legends + [a.get_legend() for a in fig.axes if a.get_legend()]
             for t in leg.get_texts()] + [t.get_text() for a in fig.axes for c in a.artists
                                          if hasattr(c, "get_texts") for t in c.get_texts()]
    assert any(t.startswith("mma.sync fp16") for t in texts) and any(t.startswith("DRAM") for t in texts)
    _no_nan_lines(ax)


KINDS_DIR = Path(__file__).resolve().parent / "data" / "kinds"
DGEMM = Path(__file__).resolve().parents[1] / "reports" / "h200" / "other-kinds" / "dgemm_fp64.ncu-rep"


def test_each_flop_kind_lands_on_its_own_roof():
    """HFMA2, DFMA, FFMA, bf16 wgmma and DMMA kernels (real H200 reports): each launch's
    filled points sit at its own kind's FLOP/s (raw counters, Nsight Compute's formulas,
    recomputed here) under that kind's roof, which is drawn at the report's own peak."""
    import warnings

    from flashprof.analysis.report.parse import load_frame
    from conftest import raw_metrics
    paths = [KINDS_DIR / f"h200_{n}.ncu-rep" for n in ("hfma2_full", "dfma_full", "ffma_rooflineset")] + [DGEMM]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = load_frame(paths)
    r = roofline(frame)
    fig = plot_roofline(r, launch_identity(frame), fp32_points=True)
    ax = fig.axes[0]
    roofs = _by_gid(ax, "ceiling:")
    assert {"ceiling:fp16", "ceiling:fp64", "ceiling:fp32", "ceiling:tensor:dmma"} <= set(roofs)
    assert "ceiling:tensor:mma.sync" not in roofs  # no launch here is an mma.sync kernel
    sm = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed"
    want = {}
    raw = raw_metrics(paths[0])  # HFMA2: 2 lanes x (mul + add) per thread instruction
    want["h200_hfma2_full"] = (2 * raw[sm.format("hadd")] + 2 * raw[sm.format("hmul")] + 4 * raw[sm.format("hfma")]) \
        * raw["smsp__cycles_elapsed.avg.per_second"]
    raw = raw_metrics(paths[1])
    want["h200_dfma_full"] = (raw[sm.format("dadd")] + raw[sm.format("dmul")] + 2 * raw[sm.format("dfma")]) \
        * raw["smsp__cycles_elapsed.avg.per_second"]
    raw = raw_metrics(paths[3])
    want["dgemm_fp64"] = raw["sm__ops_path_tensor_src_fp64.sum.per_cycle_elapsed"] * raw["sm__cycles_elapsed.avg.per_second"]
    series = {ln.get_gid().split(":", 1)[1].split("#")[0]: ln for ln in ax.lines
              if (ln.get_gid() or "").startswith("series:")}
    for report, flops in want.items():
        y = series[report].get_ydata()
        assert y[0] == pytest.approx(flops / TF, rel=0.01), report
    assert series["h200_hfma2_full"].get_ydata()[0] < roofs["ceiling:fp16"].get_ydata()[0]
    assert series["h200_dfma_full"].get_ydata()[0] < roofs["ceiling:fp64"].get_ydata()[0]
    assert series["dgemm_fp64"].get_ydata()[0] < roofs["ceiling:tensor:dmma"].get_ydata()[0]
    # no hollow FP32 series for launches whose own kind is not tensor
    assert not any((ln.get_gid() or "").startswith("series-fp32:h200_hfma2") for ln in ax.lines)
    _no_nan_lines(ax)


def test_estimated_points_are_marked(roof, ident):
    """A launch whose FLOP rate comes from an estimate (recipes: 'estimated:...') gets a
    cross over each of its points and a legend entry; exact launches get none."""
    r = roof.copy()
    r.loc[r["report"] == "cudnn", "flops_provenance"] = "estimated:tensor pipe active cycles x peak"
    fig = plot_roofline(r, ident, fp32_points=True)
    ax = fig.axes[0]
    est = {ln.get_gid(): ln for ln in ax.lines if (ln.get_gid() or "").startswith("estimated:")}
    assert list(est) == ["estimated:cudnn#0"]
    pts = r[(r["report"] == "cudnn")].dropna(subset=["ai", "flops"])
    assert sorted(est["estimated:cudnn#0"].get_xdata()) == pytest.approx(sorted(pts["ai"]))
    texts = [t.get_text() for a in fig.axes for leg in [a.get_legend()] if leg for t in leg.get_texts()]
    assert "FLOP/s estimated" in texts
    exact = plot_roofline(roof, ident).axes[0]
    assert not [ln for ln in exact.lines if (ln.get_gid() or "").startswith("estimated:")]

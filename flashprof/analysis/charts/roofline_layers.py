"""The layers of the roofline chart that ``roofline_chart.plot_roofline`` stacks: the
roofs' ceilings from the frame, one launch's points per memory level, the legend of
launches drawn on another kind's chart, the measured roofs (dotted) and the zoom inset.
Each function draws on an Axes it is given or returns plain data; none builds a Figure."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from flashprof.analysis.charts import labels
from flashprof.analysis.charts.identity import positive_finite, kernel_color

ROOF_FULL_NAMES = 6

LEVEL_MARKERS = {"L1": "o", "L2": "s", "DRAM": "^", "shared memory": "D"}
LEVEL_LABELS = {"L1": "L1", "L2": "L2", "DRAM": "DRAM", "shared memory": "shared mem.\u2020"}
LEVEL_LINESTYLES = {"L1": "-", "L2": "-", "DRAM": "-", "shared memory": ":"}


def roof_ceilings(roof: pd.DataFrame) -> dict:
    """Roofs to draw: for each kind, the highest value among the selected launches (SM
    clocks differ between launches; the highest roof keeps every point under it). Tensor
    roofs come from launches whose FLOP kind is tensor (a report without FLOP kinds: all),
    the FP16 and FP64 roofs only where a launch is of that kind; FP32 is always drawn."""
    out = {}
    kind = roof["flops_kind"] if "flops_kind" in roof.columns else pd.Series(index=roof.index, dtype=object)
    tensor = roof[(kind == "tensor") | kind.isna()] if (kind == "tensor").any() else roof[kind.isna()]
    src = tensor["tensor_src"] if "tensor_src" in tensor.columns else pd.Series(index=tensor.index, dtype=object)
    mma = tensor[tensor["tensor_path"].isin(["hmma", "tensor"]) & (src != "fp64")]["tensor_ceiling"].dropna()
    if len(mma):
        out["tensor:mma.sync"] = float(mma.max())
    wg = tensor[tensor["tensor_path"] == "hgmma"]["tensor_ceiling"].dropna()
    if len(wg):
        out["tensor:wgmma"] = float(wg.max())
    dmma = tensor[src == "fp64"]["tensor_ceiling"].dropna()
    if len(dmma):
        out["tensor:dmma"] = float(dmma.max())
    fp = roof["fp32_ceiling"].dropna()
    if len(fp):
        out["fp32"] = float(fp.max())
    for k in ("fp16", "fp64"):
        col = f"{k}_ceiling"
        if col in roof.columns and (kind == k).any():
            v = roof.loc[kind == k, col].dropna()
            if len(v):
                out[k] = float(v.max())
    for level in LEVEL_MARKERS:
        bw = roof[roof["level"] == level]["bw_ceiling"].dropna()
        if len(bw) and bw.max() > 0:
            out[f"bw:{level}"] = float(bw.max())
    return out


def series_points(sel: pd.DataFrame, rec: dict, fp32: bool = False) -> list[tuple[str, float, float]]:
    """(level, intensity, FLOP/s) of one launch: on its own FLOP kind's chart (tensor for
    kernels 1-7; FP32/FP16/FP64 for such kernels), or its FP32 FLOPs (``fp32``; none when
    FP32 already is its kind)."""
    s = sel[(sel["report"] == rec["report"]) & (sel["launch"] == rec["launch"])
            & (sel["range_idx"] == rec["range_idx"])].sort_values("level")
    own = "flops" in s.columns and s["flops"].notna().any()
    if fp32:  # hollow FP32 points beside a tensor kernel's (softmax work); other kinds: none
        if own and s["flops_kind"].notna().any() and not (s["flops_kind"] == "tensor").any():
            return []
        ai, fl = "ai_fp32", "flops_fp32"
    else:
        ai, fl = ("ai", "flops") if own else ("ai_tensor", "flops_tensor")
    return [(lv, a, f) for lv, a, f in zip(s["level"].astype(str), s[ai], s[fl]) if positive_finite(a, f)]


def is_estimated(sel: pd.DataFrame, rec: dict) -> bool:
    """The launch's FLOP rate comes from a labelled estimate, not a counter."""
    if "flops_provenance" not in sel.columns:
        return False
    s = sel[(sel["report"] == rec["report"]) & (sel["launch"] == rec["launch"])]
    return s["flops_provenance"].astype(str).str.startswith("estimated").any()


def draw_series(ax, sel: pd.DataFrame, L: pd.DataFrame, *, fp32_points: bool, prefix: str = "", ms: float = 7) -> None:
    """One joined line + one marker per memory level for every launch in ``L``."""
    TF = 1e12
    for rec in L.to_dict("records"):
        color = rec["color"]
        pts = series_points(sel, rec)
        if pts:
            order = sorted(pts, key=lambda p: p[1])
            ax.plot([p[1] for p in order], [p[2] / TF for p in order], color=color, lw=1.4, alpha=0.85,
                    gid=f"{prefix}series:{rec['sid']}", zorder=4)
            for lv, a, f in pts:
                ax.plot([a], [f / TF], marker=LEVEL_MARKERS.get(lv, "o"), ms=ms, color=color,
                        mec="white" if lv != "shared memory" else color, mew=0.8,
                        mfc=color if lv != "shared memory" else "white", ls="none", zorder=5)
            if is_estimated(sel, rec):  # a cross over every point whose FLOP rate is an estimate
                ax.plot([p[1] for p in pts], [p[2] / TF for p in pts], marker="x", ms=ms + 2, mew=1.4,
                        color="black", ls="none", zorder=6, gid=f"{prefix}estimated:{rec['sid']}")
        if fp32_points:
            fpts = series_points(sel, rec, fp32=True)
            if fpts:
                order = sorted(fpts, key=lambda p: p[1])
                ax.plot([p[1] for p in order], [p[2] / TF for p in order], color=color, lw=1.0, ls="--",
                        alpha=0.7, gid=f"{prefix}series-fp32:{rec['sid']}", zorder=4)
                for lv, a, f in fpts:
                    ax.plot([a], [f / TF], marker=LEVEL_MARKERS.get(lv, "o"), ms=ms - 1, mfc="white", mec=color,
                            ls="none", zorder=5)




def cluster(L: pd.DataFrame, sel: pd.DataFrame, spread: float = 1.4) -> list[str]:
    """Series ids whose tensor FLOP/s lie within a factor ``spread`` of the median
    series: the crowd a zoom panel should separate."""
    heights = {}
    for rec in L.to_dict("records"):
        pts = series_points(sel, rec)
        if pts:
            heights[rec["sid"]] = float(np.median([p[2] for p in pts]))
    if len(heights) < 3:
        return []
    med = float(np.median(list(heights.values())))
    return [sid for sid, h in heights.items() if abs(math.log(h / med)) <= math.log(spread)]


def foreign_handles(L: pd.DataFrame, sel: pd.DataFrame, fp32: bool) -> tuple[list, str]:
    """Legend entries for reports outside the series: one per launch when a single report
    has a colour per launch, else one per report (its full stem wrapped, or its tag when
    more than ``ROOF_FULL_NAMES`` reports share the chart); '(no point)' marks launches
    whose report lacks the FLOP or byte metrics."""
    def drawn(rec):
        return bool(series_points(sel, rec) or (fp32 and series_points(sel, rec, fp32=True)))

    recs = L.to_dict("records")
    if L["report"].nunique() == 1 and L["color"].map(str).nunique() == len(L) > 1:
        return [Line2D([], [], color=r["color"], lw=2, marker="o", ms=5,
                       label=f"#{r['launch']} {labels.short_function(r['kernel'])}" + ("" if drawn(r) else " (no point)"))
                for r in recs], "launch"
    many = L["report"].nunique() > ROOF_FULL_NAMES
    out = []
    for rep, g in L.groupby("report", sort=False):
        n_drawn = sum(drawn(r) for r in g.to_dict("records"))
        name = g["tag"].iloc[0] if many else textwrap.fill(str(rep), 30)
        what = f"{len(g)} launch{'es' if len(g) > 1 else ''}" + ("" if n_drawn == len(g) else f", {n_drawn} drawn")
        out.append(Line2D([], [], color=g["color"].iloc[0], lw=2, marker="o", ms=5,
                          label=f"{name} ({what})" if many else f"{name}\n({what})"))
    return out, "report"


def path_users(sel: pd.DataFrame, L: pd.DataFrame) -> dict[str, str]:
    """{'mma': ' (K1-K7, FA2)', 'wgmma': ' (cuDNN, triton…)'}: who runs on each tensor path."""
    short = dict(zip(L["report"], L["short"]))
    out = {}
    for roof, paths in (("mma", ("hmma", "tensor")), ("wgmma", ("hgmma",))):
        names = list(dict.fromkeys(short[r] for r in sel.loc[sel["tensor_path"].isin(paths), "report"] if r in short))
        ks = [n for n in names if n.startswith("K") and n[1:].isdigit()]
        rest = [n for n in names if n not in ks]
        if len(ks) > 2:
            ks = [f"{ks[0]}-{ks[-1]}"]
        if ks or rest:
            out[roof] = " (" + ", ".join(ks + rest) + ")"
    return out


MEASURED_COLOR = "#b2182b"
# measured roof -> the theoretical roof it sits beside (compute) or the level it bounds (bandwidth)
_MEASURED_COMPUTE = {"mma.sync fp16": "tensor:mma.sync", "wgmma fp16": "tensor:wgmma", "FFMA": "fp32"}
_MEASURED_BW = {"shared memory": "shared memory", "L2": "L2", "DRAM": "DRAM"}


def draw_measured(ax, measured: pd.DataFrame | None, ceil: dict, x_lo: float, x_hi: float) -> list:
    """Dotted measured roofs (compute: horizontal beside the theoretical roof of the same
    kind; bandwidth: slope up to the measured mma.sync roof); returns legend handles."""
    if measured is None or not len(measured):
        return []
    TF = 1e12
    m = dict(zip(measured["roof"], measured["per_second"]))
    pct = dict(zip(measured["roof"], measured["pct_of_theoretical"]))
    handles, drawn = [], []
    for roof, kind in _MEASURED_COMPUTE.items():
        if roof not in m or kind not in ceil:
            continue
        v = m[roof]
        drawn.append(v)
        ax.plot([x_lo, x_hi], [v / TF, v / TF], color=MEASURED_COLOR, ls=":", lw=1.6, gid=f"measured:{kind}", zorder=2)
        handles.append(Line2D([], [], color=MEASURED_COLOR, ls=":", lw=1.6,
                              label=f"{roof} {v / TF:.0f} TFLOP/s ({pct[roof]:.0f} %)"))
    top = max(drawn) if drawn else math.nan  # slopes end at the highest measured roof drawn
    for roof, level in _MEASURED_BW.items():
        if roof not in m or f"bw:{level}" not in ceil or not math.isfinite(top):
            continue
        bw = m[roof]
        ax.plot([x_lo, top / bw], [bw * x_lo / TF, top / TF], color=MEASURED_COLOR, ls=":", lw=1.3,
                gid=f"measured:bw:{level}", zorder=2)
        p = pct[roof]
        handles.append(Line2D([], [], color=MEASURED_COLOR, ls=":", lw=1.3,
                              label=f"{roof} {bw / 1e12:.3g} TB/s" + (f" ({p:.0f} %)" if p == p else "")))
    return handles


def zoom_window(sel: pd.DataFrame, crowd: pd.DataFrame) -> tuple[float, float, float, float]:
    """(x_lo, x_hi, y_lo, y_hi) of the zoom panel, y in TFLOP/s."""
    TF = 1e12
    pts = [p for rec in crowd.to_dict("records") for p in series_points(sel, rec)]
    x_lo, x_hi = min(p[1] for p in pts) / 2.5, max(p[1] for p in pts) * 12
    f_lo, f_hi = min(p[2] for p in pts) / TF, max(p[2] for p in pts) / TF
    pad = (f_hi - f_lo) * 0.12 + 1.0
    return x_lo, x_hi, f_lo - pad, f_hi + pad


def draw_zoom(ax, zx, sel: pd.DataFrame, crowd: pd.DataFrame) -> None:
    """Right panel: the crowded series on a linear FLOP/s axis, each labelled at its
    right end (labels pushed apart vertically), and a box on the main axes marking the
    window (roofs stay in the main panel: near-vertical on a linear axis they only clutter)."""
    x_lo, x_hi, y_lo, y_hi = zoom_window(sel, crowd)
    zx.set_xscale("log")
    zx.set_xlim(x_lo, x_hi)
    zx.set_ylim(y_lo, y_hi)
    TF = 1e12
    draw_series(zx, sel, crowd, fp32_points=False, prefix="zoom:", ms=6)
    # right-end labels, at least 4.2 % of the axis height apart
    ends = []
    for rec in crowd.to_dict("records"):
        p = series_points(sel, rec)
        if p:
            right = max(p, key=lambda q: q[1])
            ends.append([right[2] / TF, right[1], rec])
    ends.sort(key=lambda e: e[0])
    gap = 0.042 * (y_hi - y_lo)
    pos = labels.spread_labels([e[0] for e in ends], gap, rounds=50, slack=0.0)
    for (fy, fx, rec), py in zip(ends, pos):
        zx.annotate(f"{rec['short']} {fy:.0f}", xy=(fx, fy), xytext=(fx * 1.9, py),
                    fontsize=7.5, color=kernel_color(rec["key"]), va="center", fontweight="bold",
                    arrowprops={"arrowstyle": "-", "color": "#aaaaaa", "lw": 0.6})
    zx.set_xlabel("arithmetic intensity (FLOP/byte, log)")
    zx.set_ylabel("performance (TFLOP/s, linear)")
    zx.set_title("zoom: the crowded kernels (linear FLOP/s)", fontsize=9, loc="left")
    zx.grid(True, which="major", color="#e0e0e0", lw=0.6)
    zx.set_axisbelow(True)
    from matplotlib.patches import Rectangle as _Rect
    ax.add_patch(_Rect((x_lo, y_lo), x_hi - x_lo, y_hi - y_lo, fill=False, ec="#888888", lw=0.8, ls="--",
                       zorder=3, gid="zoom-box"))
    ax.text(x_hi, y_hi, "zoom \u2192", fontsize=7, color="#666666", ha="right", va="bottom")

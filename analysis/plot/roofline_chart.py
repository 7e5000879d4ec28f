"""Hierarchical roofline chart: analysis.roofline frame -> Figure (log-log TFLOP/s vs
FLOP/byte, one series per launch, roofs labelled with their values, optional zoom)."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from . import labels
from .identity import context_line, is_series, kernel_color, kernel_label, launches, _finite
from .placement import Obstacles, text_size
from .style import DPI, new_fig as _new_fig

_renderer = labels.renderer

CONVENTION_NOTE = ("Convention: Nsight Compute hierarchical roofline definitions (L1, L2, DRAM as in "
                   "its SpeedOfLight_Hierarchical*RooflineChart sections; each launch on its own FLOP "
                   "kind's chart, tensor for kernels 1-7, that kind's FLOPs on both axes). "
                   "Shared memory (128 B x smem wavefronts) is a flashprof level, not part of "
                   "Nsight Compute's chart.")

LEVEL_MARKERS = {"L1": "o", "L2": "s", "DRAM": "^", "shared memory": "D"}
LEVEL_LABELS = {"L1": "L1", "L2": "L2", "DRAM": "DRAM", "shared memory": "shared mem.\u2020"}
_LEVEL_LINESTYLES = {"L1": "-", "L2": "-", "DRAM": "-", "shared memory": ":"}


def _roof_ceilings(roof: pd.DataFrame) -> dict:
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


def _series_points(sel: pd.DataFrame, rec: dict, fp32: bool = False) -> list[tuple[str, float, float]]:
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
    return [(lv, a, f) for lv, a, f in zip(s["level"].astype(str), s[ai], s[fl]) if _finite(a, f)]


def _estimated(sel: pd.DataFrame, rec: dict) -> bool:
    """The launch's FLOP rate comes from a labelled estimate, not a counter."""
    if "flops_provenance" not in sel.columns:
        return False
    s = sel[(sel["report"] == rec["report"]) & (sel["launch"] == rec["launch"])]
    return s["flops_provenance"].astype(str).str.startswith("estimated").any()


def _draw_series(ax, sel: pd.DataFrame, L: pd.DataFrame, *, fp32_points: bool, prefix: str = "", ms: float = 7) -> None:
    """One joined line + one marker per memory level for every launch in ``L``."""
    TF = 1e12
    for rec in L.to_dict("records"):
        color = rec["color"]
        pts = _series_points(sel, rec)
        if pts:
            order = sorted(pts, key=lambda p: p[1])
            ax.plot([p[1] for p in order], [p[2] / TF for p in order], color=color, lw=1.4, alpha=0.85,
                    gid=f"{prefix}series:{rec['sid']}", zorder=4)
            for lv, a, f in pts:
                ax.plot([a], [f / TF], marker=LEVEL_MARKERS.get(lv, "o"), ms=ms, color=color,
                        mec="white" if lv != "shared memory" else color, mew=0.8,
                        mfc=color if lv != "shared memory" else "white", ls="none", zorder=5)
            if _estimated(sel, rec):  # a cross over every point whose FLOP rate is an estimate
                ax.plot([p[1] for p in pts], [p[2] / TF for p in pts], marker="x", ms=ms + 2, mew=1.4,
                        color="black", ls="none", zorder=6, gid=f"{prefix}estimated:{rec['sid']}")
        if fp32_points:
            fpts = _series_points(sel, rec, fp32=True)
            if fpts:
                order = sorted(fpts, key=lambda p: p[1])
                ax.plot([p[1] for p in order], [p[2] / TF for p in order], color=color, lw=1.0, ls="--",
                        alpha=0.7, gid=f"{prefix}series-fp32:{rec['sid']}", zorder=4)
                for lv, a, f in fpts:
                    ax.plot([a], [f / TF], marker=LEVEL_MARKERS.get(lv, "o"), ms=ms - 1, mfc="white", mec=color,
                            ls="none", zorder=5)




def _cluster(L: pd.DataFrame, sel: pd.DataFrame, spread: float = 1.4) -> list[str]:
    """Series ids whose tensor FLOP/s lie within a factor ``spread`` of the median
    series: the crowd a zoom panel should separate."""
    heights = {}
    for rec in L.to_dict("records"):
        pts = _series_points(sel, rec)
        if pts:
            heights[rec["sid"]] = float(np.median([p[2] for p in pts]))
    if len(heights) < 3:
        return []
    med = float(np.median(list(heights.values())))
    return [sid for sid, h in heights.items() if abs(math.log(h / med)) <= math.log(spread)]


def _foreign_handles(L: pd.DataFrame, sel: pd.DataFrame, fp32: bool) -> tuple[list, str]:
    """Legend entries for reports outside the series: one per launch when a single report
    has a colour per launch, else one per report (its full stem wrapped, or its tag when
    more than ``ROOF_FULL_NAMES`` reports share the chart); '(no point)' marks launches
    whose report lacks the FLOP or byte metrics."""
    def drawn(rec):
        return bool(_series_points(sel, rec) or (fp32 and _series_points(sel, rec, fp32=True)))

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


ROOF_FULL_NAMES = 6


def plot_roofline(roof: pd.DataFrame, ident: pd.DataFrame, reports=None, *, title: str | None = None,
                  fp32_points: bool = False, zoom: bool | None = None,
                  measured: pd.DataFrame | None = None) -> Figure:
    """Hierarchical roofline (log-log, TFLOP/s vs FLOP/byte) of the selected reports.

    Each launch is one series: its L1, L2, DRAM and shared-memory points (same FLOP/s,
    different intensity) joined by a line in the kernel's colour. ``fp32_points`` adds
    the FP32 FLOP/s points (hollow) of the same launches. ``zoom`` (default: when three or
    more series lie within a factor 1.4 of each other) adds a panel with a linear
    FLOP/s axis around that crowd, each series labelled, so near-equal kernels separate.
    ``measured``: the measured roofs (``analysis.ceilings.measured_roofs``, at the launches'
    clock), drawn dotted beside the theoretical ones and listed with their values."""
    sel = roof if reports is None else roof[roof["report"].isin(list(reports))]
    ceil = _roof_ceilings(sel)
    L = launches(sel)
    # the series' look (zoom, step names) also when a user target profiled by flashprof
    # (TARGET=...) sits beside kernels 1-7; anyone else's reports get the generic look
    foreign = not (L["key"].map(is_series) | L["profiled"]).all()
    # the zoom panel names every series: for the flashprof series, not for many launches
    crowd = _cluster(L, sel) if (zoom is None and not foreign) or zoom else []
    zoom = bool(crowd) if zoom is None else bool(zoom and crowd)
    if zoom:
        fig = _new_fig(14.0, 6.9)
        ax = fig.add_axes([0.055, 0.17, 0.455, 0.71])
        zx = fig.add_axes([0.575, 0.17, 0.235, 0.71])
        legend_x = 1.02
    else:
        fig = _new_fig(11.0, 6.6)
        ax = fig.add_axes([0.07, 0.17, 0.625, 0.71])
        zx = None
    ax.set_xscale("log")
    ax.set_yscale("log")
    TF = 1e12

    # ---- data range -> limits (fixed before drawing so label angles are right)
    xs, ys = [], []
    for rec in L.to_dict("records"):
        for pts in (_series_points(sel, rec), _series_points(sel, rec, fp32=True) if fp32_points else []):
            xs += [p[1] for p in pts]
            ys += [p[2] for p in pts]
    top = max([v for k, v in ceil.items() if k.startswith(("tensor", "fp"))] or [max(ys or [1e12])])
    bws = {k[3:]: v for k, v in ceil.items() if k.startswith("bw:")}
    ridges = [top / v for v in bws.values()]
    y_hi = top * 2.2
    y_lo = 10 ** math.floor(math.log10(min(ys or [top / 100]) / 2.5))  # a labelled decade under the data
    # the slopes enter the plot at the bottom edge: the left limit shows every entry
    entries = [y_lo / v for v in bws.values()]
    # limits hug the data (not whole decades): every decade gets more room, so the
    # parallel slopes sit further apart and their inline labels read clearly
    x_lo = min(xs + ridges + entries) / 1.6 if xs or ridges else 0.1
    x_hi = max(xs + ridges + [10.0]) * 5
    zoom_box = _zoom_window(sel, L[L["sid"].isin(crowd)]) if crowd else None
    if zoom_box is not None:  # the zoom box and its label stay inside the axes
        x_hi = max(x_hi, zoom_box[1] * 1.6)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo / TF, y_hi / TF)

    # ---- label placement happens in display space: size and limits are fixed by now,
    # text is measured with an Agg renderer, and every label is put where it keeps the
    # most clearance from data points, series lines, roofs and the labels placed before.
    renderer = _renderer(fig)
    obst = Obstacles(ax)
    for rec in L.to_dict("records"):
        ms = 7.0
        for pts in (_series_points(sel, rec), _series_points(sel, rec, fp32=True) if fp32_points else []):
            if pts:
                a_lo, a_hi, f = min(p[1] for p in pts), max(p[1] for p in pts), pts[0][2]
                obst.line([(a_lo, f / TF), (a_hi, f / TF)], r=1.5)
                for _, a, f in pts:
                    obst.point(a, f / TF, r=ms * DPI / 72 / 2 + 1.5)
            ms = 6.0
    if zoom_box is not None:
        zx0, zx1, zy0, zy1 = zoom_box
        obst.line([(zx0, zy0), (zx1, zy0), (zx1, zy1), (zx0, zy1), (zx0, zy0)], r=1.0)
        zl = text_size(ax, renderer, "zoom \u2192", 7)
        p = ax.transData.transform((zx1, zy1))
        obst.rect_px(p[0] - zl[0], p[1], zl[0], zl[1])

    # ---- compute roofs: horizontal, from the ridge with the fastest level to the right
    fastest = max(bws.values()) if bws else None
    tensor_roofs = [k for k in ("tensor:wgmma", "tensor:mma.sync", "tensor:dmma") if k in ceil]
    users = _path_users(sel, L)
    roof_style = {"tensor:mma.sync": ("#333333", "-", "tensor, mma.sync" + ("" if foreign else users.get("mma", ""))),
                  "tensor:wgmma": (kernel_color("cudnn"), "--", "tensor, wgmma" + ("" if foreign else users.get("wgmma", ""))),
                  "tensor:dmma": ("#6a3d9a", "-", "tensor, DMMA (FP64)"),
                  "fp16": ("#1b7837", "--", "FP16 (HFMA2)"),
                  "fp64": ("#8c510a", ":", "FP64 (DFMA)"),
                  "fp32": ("#555555", "-.", "FP32 (FFMA)")}
    roof_drawn = []
    for kind, (color, ls, name) in roof_style.items():
        if kind not in ceil:
            continue
        v = ceil[kind]
        x0 = max(v / fastest if fastest else x_lo, x_lo)
        ax.plot([x0, x_hi], [v / TF, v / TF], color=color, ls=ls, lw=1.8 if kind == "tensor:wgmma" else 1.6,
                gid=f"ceiling:{kind}", zorder=2)
        obst.line([(x0, v / TF), (x_hi, v / TF)], r=1.5)
        roof_drawn.append((kind, x0, v, color, name))

    # ---- bandwidth roofs: slope from the left edge to the ridge with the top roof
    shown: list[tuple[float, list[str]]] = []
    slope_ends = {}
    for level, bw in sorted(bws.items(), key=lambda kv: -kv[1]):
        for entry in shown:  # L1 and shared memory share one peak on sm_90: one label
            if abs(entry[0] / bw - 1) < 0.03:
                entry[1].append(level)
                break
        else:
            shown.append((bw, [level]))
        ridge = top / bw
        ax.plot([x_lo, ridge], [bw * x_lo / TF, top / TF], color="#4d4d4d", lw=1.3,
                ls=_LEVEL_LINESTYLES[level], gid=f"ceiling:bw:{level}", zorder=2)
        slope_ends[level] = ((x_lo, bw * x_lo / TF), (ridge, top / TF))
        for k in tensor_roofs:  # knee on each tensor roof
            ax.plot([ceil[k] / bw], [ceil[k] / TF], marker="|", ms=7, color="#4d4d4d", zorder=2)
            obst.point(ceil[k] / bw, ceil[k] / TF, r=7 * DPI / 72 / 2)

    # ---- roof labels: right end of the roof, above it (below when the wgmma roof is
    # just above); other spots along the roof when data would be covered
    for kind, x0, v, color, name in roof_drawn:
        text = f"{name}: {v / TF:.0f} TFLOP/s"
        fs, bold = 7.5, kind == "tensor:wgmma"
        w, h = text_size(ax, renderer, text, fs, bold=bold)
        y_px = ax.transData.transform((x_hi, v / TF))[1]
        x_right = ax.transData.transform((x_hi, 1.0))[0] - 6
        x_left = ax.transData.transform((x0, 1.0))[0] + 10
        below_first = kind == "tensor:mma.sync" and len(tensor_roofs) > 1
        sides = (-1, 1) if below_first else (1, -1)
        cands = []  # (left px, bottom px)
        for side in sides:
            for off in (3, 10):  # 10: clear of the knee ticks
                yb = y_px + off if side > 0 else y_px - off - h
                for xl in np.linspace(x_right - w, max(x_left, x_right - w - 400), 9):
                    cands.append((xl, yb))
        best = obst.best_rect(cands, w, h, ax_bbox=ax.get_window_extent(renderer), good=4.0)
        xl, yb = best
        xd, yd = ax.transData.inverted().transform((xl, yb))
        ax.text(xd, yd, text, ha="left", va="bottom", fontsize=fs, color=color, gid=f"ceiling-label:{kind}",
                fontweight="bold" if bold else "normal", zorder=6)
        obst.rect_px(xl, yb, w, h)

    # ---- slope labels: inline on each slope (text along the line, on a white ground
    # that interrupts the line), at the spot with most clearance from everything else
    p0 = ax.transData.transform((x_lo, 1.0))
    p1 = ax.transData.transform((x_lo * 10, 10.0))
    angle = math.degrees(math.atan2(p1[1] - p0[1], p1[0] - p0[0]))
    u = np.array([math.cos(math.radians(angle)), math.sin(math.radians(angle))])
    slope_obst = {}
    for bw, levels in shown:
        a, b = slope_ends[levels[0]]
        slope_obst[bw] = Obstacles(ax)
        slope_obst[bw].line([a, b], r=1.0)
    ridge_roof = ceil.get("tensor:mma.sync", top)  # ridges quoted against the mma.sync roof
    ax_box = ax.get_window_extent(renderer)
    for bw, levels in shown:
        names = " = ".join(LEVEL_LABELS[lv] for lv in levels)
        short = " = ".join({"shared memory": "smem\u2020"}.get(lv, lv) for lv in levels)
        variants = [(f"{names} {bw / 1e12:.3g} TB/s \u00b7 ridge {ridge_roof / bw:.3g} FLOP/B", 7.2),
                    (f"{short} {bw / 1e12:.3g} TB/s \u00b7 ridge {ridge_roof / bw:.3g} FLOP/B", 7.2),
                    (f"{short} {bw / 1e12:.3g} TB/s \u00b7 ridge {ridge_roof / bw:.3g} FLOP/B", 6.5)]
        others = obst.merged([o for k, o in slope_obst.items() if k != bw])
        a, b = slope_ends[levels[0]]
        pa, pb = ax.transData.transform(a), ax.transData.transform(b)
        # the visible part of the slope: clip its display segment to the axes box
        ts = np.linspace(0.0, 1.0, 400)
        line_pts = pa[None, :] + ts[:, None] * (pb - pa)[None, :]
        inside = ((line_pts[:, 0] >= ax_box.x0) & (line_pts[:, 0] <= ax_box.x1)
                  & (line_pts[:, 1] >= ax_box.y0) & (line_pts[:, 1] <= ax_box.y1))
        vis = line_pts[inside]
        if len(vis) < 2:
            continue
        choice = None
        for text, fs in variants:
            w, h = text_size(ax, renderer, text, fs)
            pad = 0.25 * fs * DPI / 72
            W, H = w + 2 * pad, h + 2 * pad
            length = float(np.hypot(*(vis[-1] - vis[0])))
            if length < W + 12:
                continue
            centres = [vis[0] + u * s for s in np.arange(W / 2 + 4, length - W / 2 - 6, 3.0)]
            if not centres:
                continue
            clear = others.clearance(np.asarray(centres), u, W, H)
            # most clearance (up to 12 px counts), then nearest the slope's lower middle
            k = int(np.argmax(np.minimum(clear, 12.0) - 1e-3 * np.abs(np.arange(len(clear)) - 0.4 * len(clear))))
            if choice is None or clear[k] > choice[0] + 0.5:
                choice = (float(clear[k]), centres[k], text, fs, pad, W, H)
            if clear[k] >= 5.0:
                break
        if choice is None:
            continue
        _, c, text, fs, pad, W, H = choice
        cx, cy = ax.transData.inverted().transform(c)
        ax.text(cx, cy, text, rotation=angle, rotation_mode="anchor", ha="center", va="center", fontsize=fs,
                color="#333333", gid=f"ceiling-label:bw:{'+'.join(levels)}", zorder=3,
                bbox={"boxstyle": f"square,pad={pad / (fs * DPI / 72):.2f}", "fc": "white", "ec": "none"})
        obst.rrect_px(c, u, W, H)

    measured_handles = _draw_measured(ax, measured, ceil, x_lo, x_hi)

    # ---- one series per launch
    _draw_series(ax, sel, L, fp32_points=fp32_points)
    ax.set_xlabel("arithmetic intensity (FLOP of the launch's own kind / byte at that level; hollow: FP32)" if foreign
                  else "arithmetic intensity (tensor FLOP / byte at that level)")
    ax.set_ylabel("performance (TFLOP/s)")
    ax.grid(True, which="major", color="#e0e0e0", lw=0.6)
    ax.grid(True, which="minor", color="#f2f2f2", lw=0.4)
    ax.set_axisbelow(True)

    if zx is not None:
        _draw_zoom(ax, zx, sel, L[L["sid"].isin(crowd)])

    # ---- legends outside the data
    lax = zx if zx is not None else ax
    if foreign:
        kh, ktitle = _foreign_handles(L, sel, fp32_points)
    else:
        kh, ktitle = [Line2D([], [], color=c, lw=2, marker="o", ms=5, label=lab)
                      for c, lab in zip(L["color"], L["label"])], "kernel"
    leg1 = lax.legend(handles=kh, title=ktitle, loc="upper left", bbox_to_anchor=(1.03, 1.0),
                      fontsize=7.5 if foreign else 8, title_fontsize=8.5, frameon=False)
    lax.add_artist(leg1)
    lh = [Line2D([], [], ls="none", marker=m, color="#555555", mfc="white" if lv == "shared memory" else "#555555",
                 ms=6, label=LEVEL_LABELS[lv]) for lv, m in LEVEL_MARKERS.items()]
    if fp32_points:
        lh.append(Line2D([], [], ls="--", marker="o", mfc="white", color="#555555", label="FP32 FLOP/s (hollow)"))
    if any(_estimated(sel, rec) for rec in L.to_dict("records")):
        lh.append(Line2D([], [], ls="none", marker="x", mew=1.4, color="black", label="FLOP/s estimated"))
    leg2 = lax.legend(handles=lh, title="memory level", loc="lower left", bbox_to_anchor=(1.03, 0.0),
                      fontsize=8, title_fontsize=8.5, frameon=False)
    if measured_handles:
        lax.add_artist(leg2)
        clock = float(measured["sm_clock_hz"].iloc[0]) / 1e9
        lax.legend(handles=measured_handles, title=f"measured roofs, dotted\n(make ceilings; % of theor.; {clock:.2f} GHz)",
                   loc="center left", bbox_to_anchor=(1.03, 0.42), fontsize=7.5, title_fontsize=8, frameon=False)

    x_text = 0.055 if zx is not None else 0.07
    fig.suptitle(title or "Hierarchical roofline", x=x_text, ha="left", fontsize=12, fontweight="bold", y=0.975)
    fig.text(x_text, 0.905, context_line(ident, sel, reports=sel["report"].unique()), fontsize=9, color="#333333")
    caption = (CONVENTION_NOTE + "\n\u2020 shared memory: bytes the shared pipe spent (bank-conflicted "
               "wavefronts carry less useful data). L1 intensity is inflated for cp.async.cg/TMA kernels "
               "(they bypass L1); L2 is the most telling level. Roofs: each report's own peak x its measured clock")
    caption += " (highest across reports drawn)." if len(sel["report"].unique()) > 1 else "."
    fig.text(x_text, 0.015, caption, fontsize=7, color="#444444", va="bottom", wrap=True)
    if foreign and L["report"].nunique() > ROOF_FULL_NAMES:  # the legend shows tags: say what they stand for
        labels.add_name_table(fig, labels.name_table(L, ident), x=x_text)
    return fig


def _path_users(sel: pd.DataFrame, L: pd.DataFrame) -> dict[str, str]:
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


def _draw_measured(ax, measured: pd.DataFrame | None, ceil: dict, x_lo: float, x_hi: float) -> list:
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


def _zoom_window(sel: pd.DataFrame, crowd: pd.DataFrame) -> tuple[float, float, float, float]:
    """(x_lo, x_hi, y_lo, y_hi) of the zoom panel, y in TFLOP/s."""
    TF = 1e12
    pts = [p for rec in crowd.to_dict("records") for p in _series_points(sel, rec)]
    x_lo, x_hi = min(p[1] for p in pts) / 2.5, max(p[1] for p in pts) * 12
    f_lo, f_hi = min(p[2] for p in pts) / TF, max(p[2] for p in pts) / TF
    pad = (f_hi - f_lo) * 0.12 + 1.0
    return x_lo, x_hi, f_lo - pad, f_hi + pad


def _draw_zoom(ax, zx, sel: pd.DataFrame, crowd: pd.DataFrame) -> None:
    """Right panel: the crowded series on a linear FLOP/s axis, each labelled at its
    right end (labels pushed apart vertically), and a box on the main axes marking the
    window (roofs stay in the main panel: near-vertical on a linear axis they only clutter)."""
    x_lo, x_hi, y_lo, y_hi = _zoom_window(sel, crowd)
    zx.set_xscale("log")
    zx.set_xlim(x_lo, x_hi)
    zx.set_ylim(y_lo, y_hi)
    TF = 1e12
    _draw_series(zx, sel, crowd, fp32_points=False, prefix="zoom:", ms=6)
    # right-end labels, at least 4.2 % of the axis height apart
    ends = []
    for rec in crowd.to_dict("records"):
        p = _series_points(sel, rec)
        if p:
            right = max(p, key=lambda q: q[1])
            ends.append([right[2] / TF, right[1], rec])
    ends.sort(key=lambda e: e[0])
    gap = 0.042 * (y_hi - y_lo)
    pos = [e[0] for e in ends]
    for _ in range(50):
        moved = False
        for i in range(1, len(pos)):
            if pos[i] - pos[i - 1] < gap:
                mid = (pos[i] + pos[i - 1]) / 2
                pos[i - 1], pos[i] = mid - gap / 2, mid + gap / 2
                moved = True
        if not moved:
            break
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

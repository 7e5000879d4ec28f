"""Hierarchical roofline chart: flashprof.analysis.stages.roofline frame -> Figure (log-log TFLOP/s vs
FLOP/byte, one series per launch, roofs labelled with their values, optional zoom)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from flashprof.analysis.charts import labels
from flashprof.analysis.charts.identity import context_line, is_series, kernel_color, launches
from flashprof.analysis.charts.placement import Obstacles, text_size
from flashprof.analysis.charts.roofline_layers import (LEVEL_LABELS, LEVEL_MARKERS, ROOF_FULL_NAMES, LEVEL_LINESTYLES, cluster, draw_measured, draw_series, draw_zoom, is_estimated, foreign_handles, path_users, roof_ceilings, series_points, zoom_window)  # noqa: F401 (LEVEL_* are public)
from flashprof.analysis.charts.style import DPI, new_fig as _new_fig

_renderer = labels.renderer

CONVENTION_NOTE = ("Convention: Nsight Compute hierarchical roofline definitions (L1, L2, DRAM as in "
                   "its SpeedOfLight_Hierarchical*RooflineChart sections; each launch on its own FLOP "
                   "kind's chart, tensor for kernels 1-7, that kind's FLOPs on both axes). "
                   "Shared memory (128 B x smem wavefronts) is a flashprof level, not part of "
                   "Nsight Compute's chart.")


def plot_roofline(roof: pd.DataFrame, ident: pd.DataFrame, reports=None, *, title: str | None = None,
                  fp32_points: bool = False, zoom: bool | None = None,
                  measured: pd.DataFrame | None = None) -> Figure:
    """Hierarchical roofline (log-log, TFLOP/s vs FLOP/byte) of the selected reports.

    Each launch is one series: its L1, L2, DRAM and shared-memory points (same FLOP/s,
    different intensity) joined by a line in the kernel's colour. ``fp32_points`` adds
    the FP32 FLOP/s points (hollow) of the same launches. ``zoom`` (default: when three or
    more series lie within a factor 1.4 of each other) adds a panel with a linear
    FLOP/s axis around that crowd, each series labelled, so near-equal kernels separate.
    ``measured``: the measured roofs (``flashprof.analysis.stages.measured_roofs.measured_roofs``, at the launches'
    clock), drawn dotted beside the theoretical ones and listed with their values."""
    sel = roof if reports is None else roof[roof["report"].isin(list(reports))]
    ceil = roof_ceilings(sel)
    L = launches(sel)
    # the series' look (zoom, step names) also when a user target profiled by flashprof
    # (TARGET=...) sits beside kernels 1-7; anyone else's reports get the generic look
    foreign = not (L["key"].map(is_series) | L["profiled"]).all()
    # the zoom panel names every series: for the flashprof series, not for many launches
    crowd = cluster(L, sel) if (zoom is None and not foreign) or zoom else []
    zoom = bool(crowd) if zoom is None else bool(zoom and crowd)
    fig, ax, zx = _axes(zoom)
    x_lo, x_hi, top, bws, zoom_box = _limits(ax, sel, L, ceil, crowd, fp32_points)
    renderer = _renderer(fig)
    obst = _data_obstacles(ax, renderer, sel, L, fp32_points, zoom_box)
    roof_drawn, tensor_roofs = _compute_roofs(ax, obst, sel, L, ceil, bws, foreign, x_lo, x_hi)
    shown, slope_ends = _bandwidth_roofs(ax, obst, ceil, bws, top, x_lo, tensor_roofs)
    _roof_labels(ax, renderer, obst, roof_drawn, tensor_roofs, x_hi)
    _slope_labels(ax, renderer, obst, ceil, top, shown, slope_ends, x_lo)
    measured_handles = draw_measured(ax, measured, ceil, x_lo, x_hi)
    _launch_series(ax, sel, L, fp32_points, foreign)
    if zx is not None:
        draw_zoom(ax, zx, sel, L[L["sid"].isin(crowd)])
    _legends(zx if zx is not None else ax, sel, L, foreign, fp32_points, measured, measured_handles)
    _titles(fig, ident, sel, L, title, foreign, x_text=0.055 if zx is not None else 0.07)
    return fig


TF = 1e12


def _axes(zoom: bool):
    """The figure and its roofline axes (and the zoom panel's, when zoomed)."""
    if zoom:
        fig = _new_fig(14.0, 6.9)
        ax = fig.add_axes([0.055, 0.17, 0.455, 0.71])
        zx = fig.add_axes([0.575, 0.17, 0.235, 0.71])
    else:
        fig = _new_fig(11.0, 6.6)
        ax = fig.add_axes([0.07, 0.17, 0.625, 0.71])
        zx = None
    ax.set_xscale("log")
    ax.set_yscale("log")
    return fig, ax, zx


def _limits(ax, sel, L, ceil, crowd, fp32_points: bool):
    """Axis limits from the data and the roofs, fixed before drawing so label angles are
    right; returns (x_lo, x_hi, top roof, {level: bandwidth}, zoom box or None)."""
    xs, ys = [], []
    for rec in L.to_dict("records"):
        for pts in (series_points(sel, rec), series_points(sel, rec, fp32=True) if fp32_points else []):
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
    zoom_box = zoom_window(sel, L[L["sid"].isin(crowd)]) if crowd else None
    if zoom_box is not None:  # the zoom box and its label stay inside the axes
        x_hi = max(x_hi, zoom_box[1] * 1.6)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo / TF, y_hi / TF)
    return x_lo, x_hi, top, bws, zoom_box


def _data_obstacles(ax, renderer, sel, L, fp32_points: bool, zoom_box) -> Obstacles:
    """What labels must keep clear of: data points, series lines, the zoom box."""
    # ---- label placement happens in display space: size and limits are fixed by now,
    # text is measured with an Agg renderer, and every label is put where it keeps the
    # most clearance from data points, series lines, roofs and the labels placed before.
    obst = Obstacles(ax)
    for rec in L.to_dict("records"):
        ms = 7.0
        for pts in (series_points(sel, rec), series_points(sel, rec, fp32=True) if fp32_points else []):
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
    return obst


def _compute_roofs(ax, obst, sel, L, ceil, bws, foreign: bool, x_lo, x_hi):
    """Horizontal compute roofs; returns [(kind, x0, value, colour, name)] and the tensor roofs."""
    # ---- compute roofs: horizontal, from the ridge with the fastest level to the right
    fastest = max(bws.values()) if bws else None
    tensor_roofs = [k for k in ("tensor:wgmma", "tensor:mma.sync", "tensor:dmma") if k in ceil]
    users = path_users(sel, L)
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
    return roof_drawn, tensor_roofs


def _bandwidth_roofs(ax, obst, ceil, bws, top, x_lo, tensor_roofs):
    """Bandwidth slopes; returns [(bandwidth, [levels sharing it])] and each level's slope ends."""
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
                ls=LEVEL_LINESTYLES[level], gid=f"ceiling:bw:{level}", zorder=2)
        slope_ends[level] = ((x_lo, bw * x_lo / TF), (ridge, top / TF))
        for k in tensor_roofs:  # knee on each tensor roof
            ax.plot([ceil[k] / bw], [ceil[k] / TF], marker="|", ms=7, color="#4d4d4d", zorder=2)
            obst.point(ceil[k] / bw, ceil[k] / TF, r=7 * DPI / 72 / 2)
    return shown, slope_ends


def _roof_labels(ax, renderer, obst, roof_drawn, tensor_roofs, x_hi) -> None:
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


def _slope_labels(ax, renderer, obst, ceil, top, shown, slope_ends, x_lo) -> None:
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


def _launch_series(ax, sel, L, fp32_points: bool, foreign: bool) -> None:
    # ---- one series per launch
    draw_series(ax, sel, L, fp32_points=fp32_points)
    ax.set_xlabel("arithmetic intensity (FLOP of the launch's own kind / byte at that level; hollow: FP32)" if foreign
                  else "arithmetic intensity (tensor FLOP / byte at that level)")
    ax.set_ylabel("performance (TFLOP/s)")
    ax.grid(True, which="major", color="#e0e0e0", lw=0.6)
    ax.grid(True, which="minor", color="#f2f2f2", lw=0.4)
    ax.set_axisbelow(True)


def _legends(lax, sel, L, foreign: bool, fp32_points: bool, measured, measured_handles) -> None:
    # ---- legends outside the data
    if foreign:
        kh, ktitle = foreign_handles(L, sel, fp32_points)
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
    if any(is_estimated(sel, rec) for rec in L.to_dict("records")):
        lh.append(Line2D([], [], ls="none", marker="x", mew=1.4, color="black", label="FLOP/s estimated"))
    leg2 = lax.legend(handles=lh, title="memory level", loc="lower left", bbox_to_anchor=(1.03, 0.0),
                      fontsize=8, title_fontsize=8.5, frameon=False)
    if measured_handles:
        lax.add_artist(leg2)
        clock = float(measured["sm_clock_hz"].iloc[0]) / 1e9
        lax.legend(handles=measured_handles, title=f"measured roofs, dotted\n(make ceilings; % of theor.; {clock:.2f} GHz)",
                   loc="center left", bbox_to_anchor=(1.03, 0.42), fontsize=7.5, title_fontsize=8, frameon=False)


def _titles(fig, ident, sel, L, title, foreign: bool, x_text: float) -> None:
    fig.suptitle(title or "Hierarchical roofline", x=x_text, ha="left", fontsize=12, fontweight="bold", y=0.975)
    fig.text(x_text, 0.905, context_line(ident, sel, reports=sel["report"].unique()), fontsize=9, color="#333333")
    caption = (CONVENTION_NOTE + "\n\u2020 shared memory: bytes the shared pipe spent (bank-conflicted "
               "wavefronts carry less useful data). L1 intensity is inflated for cp.async.cg/TMA kernels "
               "(they bypass L1); L2 is the most telling level. Roofs: each report's own peak x its measured clock")
    caption += " (highest across reports drawn)." if len(sel["report"].unique()) > 1 else "."
    fig.text(x_text, 0.015, caption, fontsize=7, color="#444444", va="bottom", wrap=True)
    if foreign and L["report"].nunique() > ROOF_FULL_NAMES:  # the legend shows tags: say what they stand for
        labels.add_name_table(fig, labels.name_table(L, ident), x=x_text)

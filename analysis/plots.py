"""Plot stage: analysis frames -> matplotlib Figures (no report reading, no metric math).

Input: frames made by the analysis stages (``roofline``, ``stalls``, ``pipes``,
``bank_conflicts``, ``top_stall_lines`` + ``load_source_frame``, ``launch_identity``)
or by the figures driver (bench table, SASS opcode deltas). Output: a ``Figure`` per
call; nothing is written here (``analysis.figures`` saves them).

Every function only selects, orders and draws. One colour per kernel everywhere
(``kernel_color``): kernels 1-7 along a sequential colormap, the FA2 reference black,
cuDNN red. Stall reasons keep the canonical order of ``analysis.stalls.STALL_REASONS``
and a fixed colour each; the shared-memory/MIO family is hatched so it reads as a group.

Artists that tests read back carry a ``gid``: ``series:<report>#<launch>`` (roofline
points), ``ceiling:<kind>`` (roofline roofs), ``stall:<report>#<launch>:<reason>`` (bars).
"""
from __future__ import annotations

import math
import re
import textwrap

import matplotlib
import matplotlib.ticker
import numpy as np
import pandas as pd
# Figures are built with Figure(), not pyplot: no GUI backend and no global figure list,
# so this module works under Agg (the figures driver) and inline (the notebook) alike.
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .plot import labels, launch_charts
from .plot.style import (DPI, PIPE_LABELS, REASON_COLORS, SMEM_FAMILY, SMEM_HATCH,  # noqa: F401
                         new_fig, reason_style)
from .stalls import REASON_FAMILY, STALL_FAMILIES, STALL_REASONS  # noqa: F401

KERNEL_IDS = tuple(str(i) for i in range(1, 8))
ANCHORS = ("ref", "cudnn")
KERNEL_ORDER = KERNEL_IDS + ANCHORS
KERNEL_NAMES = {
    "1": "base", "2": "swizzling", "3": "eager K/V loads", "4": "fragment interleaving",
    "5": "register double buffering", "6": "FP32 instruction fusion", "7": "auto-tuned",
    "ref": "FA2 (PyTorch flash backend)", "cudnn": "cuDNN SDPA (Hopper wgmma)",
}
# Two-line tick labels for bar charts with one bar (group) per kernel.
KERNEL_TICKS = {"1": "base", "2": "swizzling", "3": "eager K/V", "4": "fragment\ninterleave",
                "5": "register\ndbl. buffer", "6": "FP32\nfusion", "7": "auto-tuned",
                "ref": "PyTorch\nflash", "cudnn": "SDPA\nwgmma"}
_ANCHOR_COLORS = {"ref": "#111111", "cudnn": "#d62728"}
_OTHER_COLOR = "#8c8c8c"

CONVENTION_NOTE = ("Convention: Nsight Compute hierarchical roofline definitions (L1, L2, DRAM as in "
                   "its SpeedOfLight_HierarchicalTensorRooflineChart; tensor FLOPs on both axes). "
                   "Shared memory (128 B x smem wavefronts) is a flashprof level, not part of "
                   "Nsight Compute's chart.")

LEVEL_MARKERS = {"L1": "o", "L2": "s", "DRAM": "^", "shared memory": "D"}
LEVEL_LABELS = {"L1": "L1", "L2": "L2", "DRAM": "DRAM", "shared memory": "shared mem.\u2020"}
_LEVEL_LINESTYLES = {"L1": "-", "L2": "-", "DRAM": "-", "shared memory": ":"}


# --------------------------------------------------------------------------- identity
def kernel_key(report, variant=None) -> str:
    """'1'..'7', 'ref', 'cudnn' from the sidecar variant, else from the report stem."""
    if variant is not None and not (isinstance(variant, float) and math.isnan(variant)) \
            and not pd.isna(variant) and str(variant) not in ("", "nan", "None"):
        return str(variant)
    stem = str(report).rsplit("/", 1)[-1]
    hit = re.match(r"^kernel_?(\d+)", stem)
    if hit:
        return hit.group(1)
    for a in ANCHORS:
        if stem == a or stem.startswith(a + "_"):
            return a
    return stem


def kernel_rank(key: str) -> tuple:
    return (KERNEL_ORDER.index(key), "") if key in KERNEL_ORDER else (len(KERNEL_ORDER), key)


def kernel_color(key: str):
    key = str(key)
    if key in _ANCHOR_COLORS:
        return _ANCHOR_COLORS[key]
    if key in KERNEL_IDS:
        return matplotlib.colormaps["viridis"](0.02 + 0.83 * (int(key) - 1) / 6)
    return _OTHER_COLOR


def kernel_label(key: str, short: bool = False) -> str:
    key = str(key)
    if key in KERNEL_IDS:
        return f"K{key}" if short else f"K{key} {KERNEL_NAMES[key]}"
    if key == "ref":
        return "FA2" if short else KERNEL_NAMES[key]
    if key == "cudnn":
        return "cuDNN" if short else KERNEL_NAMES[key]
    return key


def is_series(key) -> bool:
    """A kernel of the flashprof series (1-7) or one of its anchors (FA2, cuDNN)."""
    return str(key) in KERNEL_ORDER


def launches(frame: pd.DataFrame) -> pd.DataFrame:
    """Unique (report, range_idx, launch) rows of ``frame`` in kernel order, with key,
    label, short label, colour and a series id. Series kernels are named by their step
    ('K6 FP32 instruction fusion', short 'K6'); any other report by a short stable tag of
    its stem (``labels.report_tags``), both with '#launch' when a report has several.
    ``tag`` and ``kernel`` feed ``labels.name_table`` (tag -> full names)."""
    cols = [c for c in ("report", "range_idx", "launch", "variant", "kernel") if c in frame.columns]
    u = frame.drop_duplicates(["report", "range_idx", "launch"])[cols].copy()
    if "kernel" not in u.columns:
        u["kernel"] = None
    u["key"] = [kernel_key(r, v) for r, v in zip(u["report"], u.get("variant", [None] * len(u)))]
    multi = u["report"].duplicated(keep=False)
    tags = labels.report_tags(u.loc[~u["key"].map(is_series), "report"])
    u["tag"] = [kernel_label(k, short=True) if is_series(k) else tags[r] for r, k in zip(u["report"], u["key"])]
    u["label"] = [(kernel_label(k) if is_series(k) else t) + (f" #{n}" if m else "")
                  for k, t, n, m in zip(u["key"], u["tag"], u["launch"], multi)]
    u["short"] = [t + (f"#{n}" if m else "") for t, n, m in zip(u["tag"], u["launch"], multi)]
    u["sid"] = [f"{r}#{n}" for r, n in zip(u["report"], u["launch"])]
    u["_rank"] = [kernel_rank(k) for k in u["key"]]
    u = u.sort_values(["_rank", "report", "launch"]).drop(columns="_rank").reset_index(drop=True)
    others = list(dict.fromkeys(u.loc[~u["key"].map(is_series), "report"]))
    own = dict(zip(others, labels.palette(len(others))))
    u["color"] = [kernel_color(k) if is_series(k) else own[r] for r, k in zip(u["report"], u["key"])]
    if len(others) == 1 and not u["key"].map(is_series).any() and 1 < len(u) <= 10:
        u["color"] = labels.palette(len(u))  # one report, a few launches: one colour each
    return u


def _many_args(L: pd.DataFrame, ident: pd.DataFrame | None, roof: pd.DataFrame | None) -> dict:
    """Context line and name table for the per-launch charts of ``launch_charts``."""
    if ident is None:
        return {"context": "", "table": labels.name_table(L)}
    ctx = context_line(ident, roof, reports=L["report"].unique())
    return {"context": ctx, "table": labels.name_table(L, ident)}


def _fmt_shape(row) -> str | None:
    vals = [row.get(f) for f in ("batch", "heads", "seq", "d_head")]
    if any(v is None or pd.isna(v) for v in vals):
        return None
    b, h, s, d = (int(v) for v in vals)
    return f"B{b} H{h} S{s} d{d}"


def context_line(ident: pd.DataFrame, roof: pd.DataFrame | None = None, reports=None) -> str:
    """'NVIDIA H200 · B16 H16 S4096 d128 · fp16 · SM 1.81 GHz' for the selected reports;
    names reports whose shape is unknown (no sidecar) instead of guessing it."""
    ident = ident if reports is None else ident[ident["report"].isin(list(reports))]
    parts = []
    gpus = sorted({g for g in ident["gpu"].dropna().astype(str) if g not in ("nan", "None")})
    if len(gpus) > 2:  # the name table under the chart says which report ran where
        parts.append(f"{len({labels.gpu_short(g) for g in gpus})} GPUs (per report: see labels)")
    else:
        parts.append(" / ".join(gpus) if gpus else "GPU unknown")
    shapes, unknown = {}, []
    for rec in ident.to_dict("records"):
        s = _fmt_shape(rec)
        if s is None:
            unknown.append(kernel_label(kernel_key(rec["report"], rec.get("variant")), short=True))
        else:
            shapes.setdefault(s, []).append(rec["report"])
    shape_txt = " | ".join(shapes) if shapes else "shape not recorded"
    if unknown and shapes:
        shape_txt += f" ({', '.join(dict.fromkeys(unknown))}: no sidecar, shape not recorded)"
    elif unknown:
        shape_txt += " (no sidecar)"
    parts.append(shape_txt)
    dtypes = sorted({d for d in ident["dtype"].dropna().astype(str) if d not in ("nan", "None")})
    parts.append(" / ".join(dtypes) if dtypes else "dtype not recorded")
    if roof is not None and len(roof):
        r = roof if reports is None else roof[roof["report"].isin(list(reports))]
        clk = r["sm_clock_hz"].dropna() / 1e9
        if len(clk):
            lo, hi = clk.min(), clk.max()
            parts.append(f"SM clock {lo:.2f} GHz" if hi - lo < 0.005 else f"SM clock {lo:.2f}\u2013{hi:.2f} GHz")
    return " \u00b7 ".join(parts)


_new_fig = new_fig


def _finite(*vals) -> bool:
    return all(v is not None and not pd.isna(v) and np.isfinite(v) and v > 0 for v in vals)


def _si(v: float, unit: str) -> str:
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            x = v / scale
            return f"{x:.3g} {prefix}{unit}" if x < 100 else f"{x:.0f} {prefix}{unit}"
    return f"{v:.3g} {unit}"


# --------------------------------------------------------------------------- roofline
def _roof_ceilings(roof: pd.DataFrame) -> dict:
    """Roofs to draw: for each kind, the highest value among the selected launches (SM
    clocks differ between launches; the highest roof keeps every point under it)."""
    out = {}
    mma = roof[roof["tensor_path"].isin(["hmma", "tensor"])]["tensor_ceiling"].dropna()
    if len(mma):
        out["tensor:mma.sync"] = float(mma.max())
    wg = roof[roof["tensor_path"] == "hgmma"]["tensor_ceiling"].dropna()
    if len(wg):
        out["tensor:wgmma"] = float(wg.max())
    fp = roof["fp32_ceiling"].dropna()
    if len(fp):
        out["fp32"] = float(fp.max())
    for level in LEVEL_MARKERS:
        bw = roof[roof["level"] == level]["bw_ceiling"].dropna()
        if len(bw) and bw.max() > 0:
            out[f"bw:{level}"] = float(bw.max())
    return out


def _series_points(sel: pd.DataFrame, rec: dict, fp32: bool = False) -> list[tuple[str, float, float]]:
    s = sel[(sel["report"] == rec["report"]) & (sel["launch"] == rec["launch"])
            & (sel["range_idx"] == rec["range_idx"])].sort_values("level")
    ai, fl = ("ai_fp32", "flops_fp32") if fp32 else ("ai_tensor", "flops_tensor")
    return [(lv, a, f) for lv, a, f in zip(s["level"].astype(str), s[ai], s[fl]) if _finite(a, f)]


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
        if fp32_points:
            fpts = _series_points(sel, rec, fp32=True)
            if fpts:
                order = sorted(fpts, key=lambda p: p[1])
                ax.plot([p[1] for p in order], [p[2] / TF for p in order], color=color, lw=1.0, ls="--",
                        alpha=0.7, gid=f"{prefix}series-fp32:{rec['sid']}", zorder=4)
                for lv, a, f in fpts:
                    ax.plot([a], [f / TF], marker=LEVEL_MARKERS.get(lv, "o"), ms=ms - 1, mfc="white", mec=color,
                            ls="none", zorder=5)


_renderer = labels.renderer


def _text_size(ax, renderer, text: str, fontsize: float, bold: bool = False) -> tuple[float, float]:
    """(width, height) in display pixels of ``text`` drawn unrotated."""
    t = ax.text(0, 0, text, fontsize=fontsize, fontweight="bold" if bold else "normal", transform=None)
    bb = t.get_window_extent(renderer)
    t.remove()
    return float(bb.width), float(bb.height)


class _Obstacles:
    """Display-space points (x, y, radius) that a label must keep clear of."""

    def __init__(self, ax, pts=None):
        self.ax = ax
        self.pts = [] if pts is None else list(pts)

    def point(self, x, y, r: float = 0.0) -> None:
        px = self.ax.transData.transform((x, y))
        self.pts.append((px[0], px[1], r))

    def line(self, xy, r: float = 1.0, step: float = 3.0) -> None:
        """A polyline in data coordinates, sampled every ``step`` pixels (display space,
        so straight on log axes too)."""
        d = self.ax.transData.transform(np.asarray(xy, float))
        for a, b in zip(d[:-1], d[1:]):
            n = max(int(np.hypot(*(b - a)) / step), 1)
            for t in np.linspace(0, 1, n + 1):
                q = a + t * (b - a)
                self.pts.append((q[0], q[1], r))

    def rect_px(self, x0: float, y0: float, w: float, h: float, step: float = 3.0) -> None:
        for xx in np.linspace(x0, x0 + w, max(int(w / step), 1) + 1):
            for yy in np.linspace(y0, y0 + h, max(int(h / step), 1) + 1):
                self.pts.append((xx, yy, 0.0))

    def rrect_px(self, c, u, w: float, h: float, step: float = 3.0) -> None:
        """A rotated rectangle: centre ``c``, unit direction ``u`` of its long side."""
        n = np.array([-u[1], u[0]])
        for s in np.linspace(-w / 2, w / 2, max(int(w / step), 1) + 1):
            for t in np.linspace(-h / 2, h / 2, max(int(h / step), 1) + 1):
                q = np.asarray(c) + s * u + t * n
                self.pts.append((q[0], q[1], 0.0))

    def merged(self, more) -> "_Obstacles":
        out = _Obstacles(self.ax, self.pts)
        for o in more:
            out.pts += o.pts
        return out

    def clearance(self, centres: np.ndarray, u, w: float, h: float) -> np.ndarray:
        """Per centre: the smallest gap (px) between a ``w`` x ``h`` box along ``u`` and
        any obstacle (negative: overlap)."""
        if not self.pts:
            return np.full(len(centres), np.inf)
        P = np.asarray(self.pts, float)
        n = np.array([-u[1], u[0]])
        d = P[None, :, :2] - np.asarray(centres, float)[:, None, :]
        along = np.abs(d @ np.asarray(u, float))
        across = np.abs(d @ n)
        dx = np.maximum(along - w / 2, 0)
        dy = np.maximum(across - h / 2, 0)
        inside = (dx == 0) & (dy == 0)
        gap = np.where(inside, -np.minimum(w / 2 - along, h / 2 - across), np.hypot(dx, dy)) - P[None, :, 2]
        return gap.min(axis=1)

    def best_rect(self, corners, w: float, h: float, ax_bbox=None, good: float = 3.0):
        """The first (left, bottom) of ``corners`` whose upright box keeps ``good`` px
        clear (and lies inside ``ax_bbox``), else the one with the most clearance."""
        cs = np.asarray(corners, float)
        centres = cs + np.array([w / 2, h / 2])
        clear = self.clearance(centres, np.array([1.0, 0.0]), w, h)
        if ax_bbox is not None:
            out = ((cs[:, 0] < ax_bbox.x0 + 2) | (cs[:, 0] + w > ax_bbox.x1 - 2)
                   | (cs[:, 1] < ax_bbox.y0 + 2) | (cs[:, 1] + h > ax_bbox.y1 - 2))
            clear = np.where(out, -np.inf, clear)
        ok = np.flatnonzero(clear >= good)
        return tuple(cs[ok[0]] if len(ok) else cs[int(np.argmax(clear))])


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
                  fp32_points: bool = False, zoom: bool | None = None) -> Figure:
    """Hierarchical roofline (log-log, TFLOP/s vs FLOP/byte) of the selected reports.

    Each launch is one series: its L1, L2, DRAM and shared-memory points (same FLOP/s,
    different intensity) joined by a line in the kernel's colour. ``fp32_points`` adds
    the FP32 FLOP/s points (hollow) of the same launches. ``zoom`` (default: when three or
    more series lie within a factor 1.4 of each other) adds a panel with a linear
    FLOP/s axis around that crowd, each series labelled, so near-equal kernels separate."""
    sel = roof if reports is None else roof[roof["report"].isin(list(reports))]
    ceil = _roof_ceilings(sel)
    L = launches(sel)
    foreign = not L["key"].map(is_series).all()
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
    for rec in sel.to_dict("records"):
        if _finite(rec["ai_tensor"], rec["flops_tensor"]):
            xs.append(rec["ai_tensor"]); ys.append(rec["flops_tensor"])
        if fp32_points and _finite(rec["ai_fp32"], rec["flops_fp32"]):
            xs.append(rec["ai_fp32"]); ys.append(rec["flops_fp32"])
    top = max([v for k, v in ceil.items() if k.startswith(("tensor", "fp32"))] or [max(ys or [1e12])])
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
    obst = _Obstacles(ax)
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
        zl = _text_size(ax, renderer, "zoom \u2192", 7)
        p = ax.transData.transform((zx1, zy1))
        obst.rect_px(p[0] - zl[0], p[1], zl[0], zl[1])

    # ---- compute roofs: horizontal, from the ridge with the fastest level to the right
    fastest = max(bws.values()) if bws else None
    tensor_roofs = [k for k in ("tensor:wgmma", "tensor:mma.sync") if k in ceil]
    roof_style = {"tensor:mma.sync": ("#333333", "-", "tensor, mma.sync" if foreign else "tensor, mma.sync (kernels 1-7, FA2)"),
                  "tensor:wgmma": (kernel_color("cudnn"), "--", "tensor, wgmma" if foreign else "tensor, wgmma (cuDNN only)"),
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
        w, h = _text_size(ax, renderer, text, fs, bold=bold)
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
        slope_obst[bw] = _Obstacles(ax)
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
            w, h = _text_size(ax, renderer, text, fs)
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

    # ---- one series per launch
    _draw_series(ax, sel, L, fp32_points=fp32_points)
    ax.set_xlabel("arithmetic intensity (FLOP / byte at that level; filled: tensor, hollow: FP32)" if foreign
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
    lax.legend(handles=lh, title="memory level", loc="lower left", bbox_to_anchor=(1.03, 0.0),
               fontsize=8, title_fontsize=8.5, frameon=False)

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
        zx.annotate(f"{kernel_label(rec['key'], short=True)} {fy:.0f}", xy=(fx, fy), xytext=(fx * 1.9, py),
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


# --------------------------------------------------------------------------- stalls
_reason_style = reason_style


def plot_stalls(stall_frame: pd.DataFrame, ident: pd.DataFrame | None = None, roof: pd.DataFrame | None = None,
                *, value: str = "per_issue") -> Figure:
    """Stacked bars per launch of the stall reasons (canonical order, fixed colours)."""
    L = launches(stall_frame)
    if not L["key"].map(is_series).all():
        return launch_charts.stalls_many(stall_frame, L, value=value, **_many_args(L, ident, roof))
    reasons = list(stall_frame["reason"].cat.categories) if hasattr(stall_frame["reason"], "cat") \
        else list(dict.fromkeys(stall_frame["reason"]))
    present = [r for r in reasons if (stall_frame.loc[stall_frame["reason"] == r, value].fillna(0) > 0).any()]
    fig = _new_fig(12.5, 8.4)
    ax = fig.add_axes([0.07, 0.47, 0.62, 0.42])
    sx = fig.add_axes([0.07, 0.13, 0.62, 0.25], sharex=ax)
    x = np.arange(len(L))
    totals = []
    for i, rec in enumerate(L.to_dict("records")):
        s = stall_frame[(stall_frame["report"] == rec["report"]) & (stall_frame["launch"] == rec["launch"])
                        & (stall_frame["range_idx"] == rec["range_idx"])]
        vals = dict(zip(s["reason"].astype(str), s[value]))
        bottom = 0.0
        for r in present:
            v = vals.get(r, math.nan)
            if pd.isna(v) or v <= 0:
                continue
            ax.bar(x[i], v, bottom=bottom, width=0.72, gid=f"stall:{rec['sid']}:{r}", **_reason_style(r))
            bottom += v
        totals.append(bottom)
        # lower panel: the same segments as shares of the bar, so short bars stay readable
        b2 = 0.0
        for r in present:
            v = vals.get(r, math.nan)
            if pd.isna(v) or v <= 0 or not bottom:
                continue
            sx.bar(x[i], 100 * v / bottom, bottom=b2, width=0.72, gid=f"stallshare:{rec['sid']}:{r}",
                   **_reason_style(r))
            b2 += 100 * v / bottom
        smem = sum(vals.get(r, 0) or 0 for r in STALL_FAMILIES[SMEM_FAMILY] if not pd.isna(vals.get(r, 0)))
        if bottom:
            sx.text(x[i], 101, f"{100 * smem / bottom:.0f}%", ha="center", va="bottom", fontsize=7,
                    color=REASON_COLORS["mio_throttle"])
    # one bar far above the rest (kernel 1's bank conflicts) is clipped, its total printed
    ordered = sorted(totals)
    cap = None
    if len(ordered) >= 3 and ordered[-1] > 2.5 * ordered[-2]:
        cap = ordered[-2] * 1.45
    for i, t in enumerate(totals):
        if cap is not None and t > cap:
            ax.text(x[i], cap * 0.985, f"{t:.2f}\n(clipped)", ha="center", va="top", fontsize=8, fontweight="bold",
                    color="white", bbox={"boxstyle": "round,pad=0.2", "fc": "#333333", "ec": "none"})
            ax.plot([x[i] - 0.42, x[i] + 0.42], [cap * 0.74, cap * 0.77], color="white", lw=3, zorder=6)
        else:
            ax.text(x[i], t, f"{t:.2f}" if t else "n/a", ha="center", va="bottom", fontsize=8)
    sx.set_xticks(x, [s + ("\n" + KERNEL_TICKS[k] if k in KERNEL_TICKS else "") for s, k in zip(L["short"], L["key"])],
                  fontsize=7.5)
    for t, k in zip(sx.get_xticklabels(), L["key"]):
        t.set_color(kernel_color(k) if k != "7" else "#6b8e23")
    ax.set_ylabel("warp cycles per issued instruction\n(avg. warps in each state per issue)" if value == "per_issue"
                  else "share of warp cycles")
    ax.set_ylim(0, cap if cap is not None else max(totals + [1.0]) * 1.1)
    ax.tick_params(axis="x", labelbottom=False)
    sx.set_ylim(0, 108)
    sx.set_ylabel("share of warp cycles (%)\nlabel: shared-mem./MIO share", fontsize=8)
    sx.grid(True, axis="y", color="#e6e6e6", lw=0.6)
    sx.set_axisbelow(True)
    sx.spines[["top", "right"]].set_visible(False)
    ax.grid(True, axis="y", color="#e6e6e6", lw=0.6)
    ax.set_axisbelow(True)
    ax.spines[["top", "right"]].set_visible(False)

    handles = []
    for fam, members in STALL_FAMILIES.items():
        mem = [r for r in members if r in present]
        if not mem:
            continue
        handles.append(Patch(color="none", label=fam + (" (hatched)" if fam == SMEM_FAMILY else "")))
        for r in mem:
            lab = r + (" (issuing, not a stall)" if r == "selected" else "")
            handles.append(Patch(label=lab, **{k: v for k, v in _reason_style(r).items() if k != "linewidth"}))
    extra = [r for r in present if r not in REASON_FAMILY]
    if extra:
        handles.append(Patch(color="none", label="other"))
        handles += [Patch(label=r, **_reason_style(r)) for r in extra]
    leg = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.02), fontsize=7.5,
                    frameon=False, handlelength=1.6, title="stall reason by family", title_fontsize=8.5)
    for t, h in zip(leg.get_texts(), handles):
        if h.get_facecolor()[3] == 0:
            t.set_fontweight("bold")
    fig.suptitle("Warp stall reasons per kernel (Nsight Compute WarpStateStats)", x=0.07, ha="left",
                 fontsize=12, fontweight="bold", y=0.975)
    if ident is not None:
        fig.text(0.07, 0.935, context_line(ident, roof, reports=L["report"].unique()), fontsize=9, color="#333333")
    fig.text(0.07, 0.012, "Bar height = sum over reasons of smsp__average_warps_issue_stalled_<reason>_per_issue_active"
             " = average warp latency per issued instruction (includes 'selected', the issuing warp).\n"
             "Hatched blue = shared-memory/MIO family (mio_throttle: MIO queue full; short_scoreboard: waiting on "
             "shared memory/ldmatrix/MUFU results).", fontsize=7, color="#444444")
    return fig


def plot_stall_lines(source: pd.DataFrame, top: pd.DataFrame, *, title: str, context: str = "",
                     sass_width: int = 44) -> Figure:
    """Top SASS instructions by stall samples, stacked by PC-sampling reason."""
    n = max(len(top), 1)
    base = int(source["pc"].min()) if len(source) else 0
    end = int(source["pc"].max()) if len(source) else 0

    def rel(m):  # absolute branch targets inside the function -> offsets like the PCs
        v = int(m.group(0), 16)
        return f"+{v - base:#07x}" if base <= v <= end + 16 else m.group(0)

    labels = []
    for rec in top.to_dict("records"):
        txt = re.sub(r"0x[0-9a-fA-F]{9,}", rel, str(rec["sass"]))
        # long instructions wrap after an operand (continuation indented), never cut
        lines = textwrap.wrap(txt, sass_width, break_long_words=True, break_on_hyphens=False,
                              subsequent_indent="    ")
        loc = rec.get("location") or ""
        if loc:
            f, _, ln = loc.rpartition(":")
            lines.append(f"{f.rsplit('/', 1)[-1]}:{ln}")
        labels.append(f"+{int(rec['pc_offset']):#07x}  " + "\n".join(lines or [""]))
    n_lines = max([lab.count("\n") + 1 for lab in labels] or [1])
    row_in = {1: 0.34, 2: 0.5}.get(n_lines, 0.16 * n_lines + 0.18)
    top_in, bottom_in = 0.85, 0.6
    height = top_in + bottom_in + row_in * n
    fig = _new_fig(11.0, height)
    ax = fig.add_axes([0.38, bottom_in / height, 0.40, row_in * n / height])
    if top.empty:
        ax.text(0.5, 0.5, "no PC-sampling stall data in this report", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
    else:
        cols = [c for c in source.columns if c.startswith("stall_") and not c.endswith("_not_issued")
                and c[len("stall_"):] != "selected"]
        canon = [r for r in STALL_REASONS if f"stall_{r}" in cols] + \
                [c[len("stall_"):] for c in cols if c[len("stall_"):] not in STALL_REASONS]
        by_pc = source.set_index("pc")
        used = []
        y = np.arange(len(top))
        for i, rec in enumerate(top.to_dict("records")):
            row = by_pc.loc[rec["pc"]]
            left = 0.0
            for r in canon:
                v = float(row.get(f"stall_{r}", 0) or 0)
                if v <= 0:
                    continue
                ax.barh(y[i], v, left=left, height=0.7, gid=f"line:{rec['pc']}:{r}", **_reason_style(r))
                left += v
                if r not in used:
                    used.append(r)
            ax.text(left, y[i], f" {100 * rec['share']:.1f}%", va="center", fontsize=7.5)
        ax.set_yticks(y, labels, fontsize=7, family="monospace")
        ax.invert_yaxis()
        ax.set_xlabel("stall samples (PC-sampling count, excl. 'selected'); bar label: share of all stall samples")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda v, _: f"{v / 1e3:g} k" if abs(v) >= 1000 else f"{v:g}"))
        ax.set_xlim(0, ax.get_xlim()[1] * 1.12)
        ax.grid(True, axis="x", color="#e6e6e6", lw=0.6)
        ax.set_axisbelow(True)
        ax.spines[["top", "right"]].set_visible(False)
        canon_used = [r for r in canon if r in used]
        ax.legend(handles=[Patch(label=r, **{k: v for k, v in _reason_style(r).items() if k != "linewidth"})
                           for r in canon_used],
                  loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize=7.5, frameon=False, title="reason",
                  title_fontsize=8)
    fig.suptitle(title, x=0.02, ha="left", fontsize=11.5, fontweight="bold", y=1 - 0.1 / height, va="top")
    if context:
        fig.text(0.02, 1 - 0.42 / height, context, fontsize=8.5, color="#333333", va="top")
    return fig


# --------------------------------------------------------------------------- pipes
def plot_pipes(pipe_frame: pd.DataFrame, ident: pd.DataFrame | None = None, roof: pd.DataFrame | None = None,
               names=("tensor", "fma", "alu", "xu", "lsu", "issue_active")) -> Figure:
    """Grouped bars: one group per pipe (+ issue slots), one bar per launch (kernel colours)."""
    sub = pipe_frame[pipe_frame["category"].isin(["utilization", "issue"])]
    L = launches(sub)
    if not L["key"].map(is_series).all():
        return launch_charts.pipes_many(pipe_frame, L, names, **_many_args(L, ident, roof))
    fig = _new_fig(12.0, 5.4)
    ax = fig.add_axes([0.07, 0.2, 0.66, 0.66])
    n = max(len(L), 1)
    width = 0.84 / n
    groups = np.arange(len(names))
    for j, rec in enumerate(L.to_dict("records")):
        s = sub[(sub["report"] == rec["report"]) & (sub["launch"] == rec["launch"]) & (sub["range_idx"] == rec["range_idx"])]
        vals = dict(zip(s["name"], s["value"]))
        h = [vals.get(p, math.nan) for p in names]
        xs = groups - 0.42 + width * (j + 0.5)
        ok = [not pd.isna(v) for v in h]
        ax.bar(xs[ok], np.asarray(h, float)[ok], width=width * 0.92, color=kernel_color(rec["key"]),
               label=rec["label"], gid=f"pipe:{rec['sid']}")
        for xv, hv, good in zip(xs, h, ok):  # values: neighbouring viridis shades look alike
            if good:
                ax.text(xv, hv + 0.8, f"{hv:.0f}", ha="center", va="bottom", fontsize=5.8, rotation=90,
                        color="#333333")
    ax.set_xticks(groups, [PIPE_LABELS.get(p, p) for p in names])
    ax.set_ylabel("% of peak sustained (active cycles)")
    ax.set_ylim(0, 100)
    ax.axvline(len(names) - 1.5, color="#bbbbbb", lw=0.8, ls="--")
    ax.grid(True, axis="y", color="#e6e6e6", lw=0.6)
    ax.set_axisbelow(True)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, title="kernel",
              title_fontsize=8.5)
    fig.suptitle("Pipe utilisation and issue-slot use per kernel", x=0.07, ha="left", fontsize=12,
                 fontweight="bold", y=0.975)
    if ident is not None:
        fig.text(0.07, 0.905, context_line(ident, roof, reports=L["report"].unique()), fontsize=9, color="#333333")
    fig.text(0.07, 0.015, "Tensor, FMA, ALU: sm__pipe_<p>_cycles_active; XU, LSU: instruction-issue share "
             "(sm__inst_executed_pipe_<p>), all % of peak sustained over active cycles. Issue slots: "
             "smsp__issue_active.\nThe tensor pipe counter covers mma.sync and wgmma (cuDNN) alike.",
             fontsize=7, color="#444444")
    return fig


# --------------------------------------------------------------------------- bench
def _spread_labels(ys: list[float], gap: float) -> list[float]:
    """Positions for labels at ``ys`` pushed apart to at least ``gap`` (same order)."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    pos = [ys[i] for i in order]
    for _ in range(100):
        moved = False
        for i in range(1, len(pos)):
            if pos[i] - pos[i - 1] < gap - 1e-9:
                mid = (pos[i] + pos[i - 1]) / 2
                pos[i - 1], pos[i] = mid - gap / 2, mid + gap / 2
                moved = True
        if not moved:
            break
    out = [0.0] * len(ys)
    for k, i in enumerate(order):
        out[i] = pos[k]
    return out


def plot_progression(bench: pd.DataFrame, headline: pd.DataFrame, *, gpu: str = "", method: str = "",
                     batch: str = "", pct_col: str = "pct_of_ref") -> Figure:
    """Left: TFLOP/s vs sequence length per target. Middle: % of FA2 at each S (from the
    bench's ``pct_col``), focused on the kernels near FA2; targets off that scale are
    named at the edge. Right: headline % of FA2 (harmonic mean over S) and at one S.

    ``bench``: rows target, seq, tflops, ``pct_col``. ``headline``: rows target,
    hm_tflops, pct_of_ref_hm, optionally pct_at_seq/at_seq (from ``analysis.bench``)."""
    fig = _new_fig(15.0, 6.8)
    ax = fig.add_axes([0.05, 0.28, 0.27, 0.57])
    px = fig.add_axes([0.38, 0.28, 0.27, 0.57])
    bx = fig.add_axes([0.745, 0.28, 0.215, 0.57])
    targets = sorted(bench["target"].astype(str).unique(), key=kernel_rank)
    seqs = sorted(bench["seq"].unique())
    for t in targets:
        s = bench[bench["target"].astype(str) == t].sort_values("seq")
        anchor = t in ANCHORS
        ax.plot(s["seq"], s["tflops"], color=kernel_color(t), marker="o", ms=4, lw=2.0 if anchor else 1.5,
                ls="--" if anchor else "-", label=kernel_label(t), gid=f"bench:{t}")
    for a in (ax, px):
        a.set_xscale("log", base=2)
        a.set_xticks(seqs, [str(int(v)) for v in seqs], fontsize=8)
        a.minorticks_off()
        a.set_xlabel("sequence length S")
        a.grid(True, color="#e6e6e6", lw=0.6)
        a.spines[["top", "right"]].set_visible(False)
    ax.set_ylabel("TFLOP/s (4·B·H·S²·d / median time)")
    ax.set_ylim(0, bench["tflops"].max() * 1.08)
    ax.set_title("throughput", fontsize=9.5, loc="left")

    # ---- % of FA2 per S, scale fitted to the targets between 50 % and 130 %
    has_pct = pct_col in bench.columns
    if has_pct:
        per = {t: bench[bench["target"].astype(str) == t].sort_values("seq") for t in targets}
        near = [t for t in targets if t != "ref" and 50 <= per[t][pct_col].median() <= 130]
        vals = pd.concat([per[t][pct_col] for t in near] + [pd.Series([100.0])])
        lo, hi = math.floor(vals.min() / 5) * 5 - 5, math.ceil(vals.max() / 5) * 5 + 5
        px.set_ylim(lo, hi)
        px.axhline(100, color=kernel_color("ref"), lw=1.4, ls="--", gid="bench-pct:ref")
        ends, names, colors = [], [], []
        off = []
        for t in targets:
            if t == "ref":
                continue
            s = per[t]
            if t in near:
                px.plot(s["seq"], s[pct_col], color=kernel_color(t), marker="o", ms=3.5, lw=1.5,
                        ls="--" if t in ANCHORS else "-", gid=f"bench-pct:{t}")
                ends.append(float(s[pct_col].iloc[-1]))
                names.append(f"{kernel_label(t, short=True)} {float(s[pct_col].iloc[-1]):.0f}%")
                colors.append(kernel_color(t))
            else:
                off.append((t, float(s[pct_col].median())))
        pos = _spread_labels(ends, 0.045 * (hi - lo))
        x_end = seqs[-1]
        for y0, y1, n, c in zip(ends, pos, names, colors):
            px.annotate(n, xy=(x_end, y0), xytext=(x_end * 1.25, y1), fontsize=7.5, color=c, va="center",
                        fontweight="bold", annotation_clip=False,
                        arrowprops={"arrowstyle": "-", "color": "#bbbbbb", "lw": 0.6})
        px.text(seqs[0], 100, " FA2 = 100%", fontsize=7.5, va="bottom", ha="left", color=kernel_color("ref"))
        for j, (t, med) in enumerate(off):  # off-scale targets: named at the edge they lie beyond
            top_edge = med > hi
            arrow = "\u2191" if top_edge else "\u2193"
            px.text(0.02 + 0.5 * (j % 2), 0.985 if top_edge else 0.015,
                    f"{arrow} {kernel_label(t, short=True)} \u2248{med:.0f}% (off scale)",
                    transform=px.transAxes, fontsize=7.5, color=kernel_color(t), va="top" if top_edge else "bottom",
                    fontweight="bold")
        px.set_ylabel("% of FA2 at the same S")
        px.set_title("relative to FA2 (same S, same session)", fontsize=9.5, loc="left")
    else:
        px.set_axis_off()

    # ---- headline bars
    h = headline.copy()
    h["target"] = h["target"].astype(str)
    h = h.sort_values("target", key=lambda c: c.map(kernel_rank))
    y = np.arange(len(h))
    bx.barh(y, h["pct_of_ref_hm"], color=[kernel_color(t) for t in h["target"]], height=0.7, gid="headline")
    at_seq = int(h["at_seq"].dropna().iloc[0]) if "at_seq" in h and h["at_seq"].notna().any() else None
    for yi, rec in enumerate(h.to_dict("records")):
        v = rec["pct_of_ref_hm"]
        txt = f"{v:.1f}%  ({rec['hm_tflops']:.0f} TF/s)"
        if at_seq is not None and not pd.isna(rec.get("pct_at_seq", math.nan)):
            txt += f"\n@S={at_seq}: {rec['pct_at_seq']:.1f}%"
        bx.text(max(v, 100) + 3, yi, txt, va="center", fontsize=7, linespacing=1.1)  # clear of the 100% line
    bx.axvline(100, color=kernel_color("ref"), lw=1.0, ls="--")
    bx.set_yticks(y, [kernel_label(t, short=True) for t in h["target"]])
    for tl, t in zip(bx.get_yticklabels(), h["target"]):
        tl.set_color(kernel_color(t) if t != "7" else "#6b8e23")
    bx.invert_yaxis()
    bx.set_xlim(0, max(h["pct_of_ref_hm"].max() * 1.45, 140))
    bx.set_xlabel("% of FA2 (harmonic mean of TFLOP/s over S)")
    bx.spines[["top", "right"]].set_visible(False)
    bx.set_title("headline: % of FA2 (dashed = 100%)", fontsize=9.5, loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(-0.05, -0.14), ncol=3, fontsize=7, frameon=False)

    fig.suptitle("Kernel progression: throughput vs sequence length", x=0.05, ha="left", fontsize=12,
                 fontweight="bold", y=0.975)
    dt = "/".join(sorted(bench["dtype"].astype(str).unique())) if "dtype" in bench else ""
    d = "/".join(str(int(v)) for v in sorted(bench["d_head"].unique())) if "d_head" in bench else "?"
    hds = "/".join(str(int(v)) for v in sorted(bench["heads"].unique())) if "heads" in bench else "?"
    fig.text(0.05, 0.915, f"{gpu} \u00b7 H{hds} d{d} \u00b7 {dt} \u00b7 {batch or 'batch per S as benched'} \u00b7 "
             "SM clock not locked (boost, clock-control none)", fontsize=9, color="#333333")
    fig.text(0.05, 0.012, textwrap.fill(method, 230), fontsize=7, color="#444444")
    return fig


# --------------------------------------------------------------------------- SASS mix
def plot_sass_mix(deltas: pd.DataFrame, *, top_n: int = 8, title_note: str = "", regs: dict | None = None) -> Figure:
    """Diverging bars per consecutive pair (a -> b): static SASS opcode count changes.

    ``deltas``: rows a, b, opcode, count_a, count_b, delta (from the figures driver)."""
    pairs = list(dict.fromkeys(zip(deltas["a"].astype(str), deltas["b"].astype(str))))
    ncols = 3
    nrows = max(1, math.ceil(len(pairs) / ncols))
    fig = _new_fig(12.0, 1.2 + 2.9 * nrows)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    fig.subplots_adjust(left=0.07, right=0.98, top=1 - 1.1 / (1.2 + 2.9 * nrows), bottom=0.55 / (1.2 + 2.9 * nrows),
                        wspace=0.42, hspace=0.55)
    for ax, (a, b) in zip(axes.flat, pairs):
        d = deltas[(deltas["a"].astype(str) == a) & (deltas["b"].astype(str) == b)]
        d = d[d["delta"] != 0]
        d = d.reindex(d["delta"].abs().sort_values(ascending=False).index).head(top_n)
        d = d.sort_values("delta")
        y = np.arange(len(d))
        ax.barh(y, d["delta"], color=["#b2182b" if v > 0 else "#2166ac" for v in d["delta"]], height=0.7,
                gid=f"sass:{a}->{b}")
        ax.axvline(0, color="#333333", lw=0.8)
        ax.set_yticks(y, d["opcode"], fontsize=7.5, family="monospace")
        lim = max(d["delta"].abs().max() if len(d) else 1, 1) * 1.75
        ax.set_xlim(-lim, lim)
        for yi, (v, ca, cb) in enumerate(zip(d["delta"], d["count_a"], d["count_b"])):
            ax.text(v + (lim * 0.03 if v > 0 else -lim * 0.03), yi, f"{int(ca)}\u2192{int(cb)}", va="center",
                    ha="left" if v > 0 else "right", fontsize=6.5)
        ttl = f"K{a}\u2192K{b}: {KERNEL_NAMES.get(b, b)}"
        if regs and a in regs and b in regs:
            ttl += f"\nregisters {regs[a]}\u2192{regs[b]}"
        ax.set_title(ttl, fontsize=8.5, loc="left")
        ax.set_xlabel("\u0394 static instruction count", fontsize=7.5)
        ax.tick_params(axis="x", labelsize=7)
        ax.spines[["top", "right"]].set_visible(False)
        if not len(d):
            ax.text(0.5, 0.5, "identical static opcode counts\n(the step changed scheduling/operands,\n"
                    "not the instruction mix)", transform=ax.transAxes, ha="center", va="center", fontsize=8,
                    color="#555555")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_xlabel("")
            ax.lines[0].set_visible(False)
            ax.spines[["left", "bottom"]].set_visible(False)
    for ax in list(axes.flat)[len(pairs):]:
        ax.set_visible(False)
    fig.suptitle("SASS instruction mix: what each step changed in the binary", x=0.07, ha="left", fontsize=12,
                 fontweight="bold", y=0.995, va="top")
    fig.text(0.07, 1 - 0.5 / (1.2 + 2.9 * nrows), f"{title_note} \u00b7 top {top_n} opcodes by |\u0394| per step; "
             "red = more, blue = fewer (static counts in the cubin, not executed counts)", fontsize=8.5,
             color="#333333", va="top")
    return fig


# --------------------------------------------------------------------------- bank conflicts
def plot_bank_conflicts(banks: pd.DataFrame, ident: pd.DataFrame | None = None, roof: pd.DataFrame | None = None) -> Figure:
    """n-way shared-memory bank conflict degree (ld, st) and ldmatrix count per launch."""
    L = launches(banks)
    if not L["key"].map(is_series).all():
        return launch_charts.banks_many(banks, L, **_many_args(L, ident, roof))
    fig = _new_fig(10.0, 4.4)
    a1 = fig.add_axes([0.1, 0.2, 0.5, 0.56])
    a2 = fig.add_axes([0.72, 0.2, 0.26, 0.56])
    x = np.arange(len(L))
    w = 0.38
    ymax = 1.0
    for i, rec in enumerate(L.to_dict("records")):
        s = banks[(banks["report"] == rec["report"]) & (banks["launch"] == rec["launch"]) & (banks["range_idx"] == rec["range_idx"])]
        v = dict(zip(s["op"], s["nway"]))
        c = kernel_color(rec["key"])
        for off, op, hatch in ((-w / 2, "ld", None), (w / 2, "st", "////")):
            val = v.get(op, math.nan)
            if pd.isna(val):
                a1.text(x[i] + off, 1.0, "n/a", ha="center", fontsize=6.5)
                continue
            a1.bar(x[i] + off, val, width=w * 0.95, color=c, hatch=hatch, edgecolor="white", gid=f"bank:{rec['sid']}:{op}")
            a1.text(x[i] + off, val + 0.05, f"{val:.2f}", ha="center", va="bottom", fontsize=6.3, rotation=90)
            ymax = max(ymax, val)
        ld = s["ldsm_inst"].dropna()
        if len(ld):
            a2.bar(x[i], ld.iloc[0] / 1e6, color=c, width=0.7, gid=f"ldsm:{rec['sid']}")
            if ld.iloc[0] == 0:
                a2.text(x[i], 2, "0: no\nldmatrix", ha="center", va="bottom", fontsize=6, rotation=90)
    a1.axhline(1.0, color="#333333", lw=0.8, ls="--")
    a1.set_ylim(0, ymax * 1.25)
    a1.set_xticks(x, L["short"], fontsize=8)
    a1.set_ylabel("wavefronts per ideal wavefront\n(n-way; 1.0 = conflict-free)", fontsize=8)
    a1.set_title("shared-memory bank conflicts (solid: loads, hatched: stores)", fontsize=9, loc="left")
    a2.set_xticks(x, L["short"], fontsize=7.5, rotation=45)
    a2.set_ylabel("ldmatrix warp instructions (millions)", fontsize=8)
    a2.set_title("ldmatrix count", fontsize=9, loc="left")
    for a in (a1, a2):
        a.spines[["top", "right"]].set_visible(False)
        a.grid(True, axis="y", color="#e6e6e6", lw=0.6)
        a.set_axisbelow(True)
    fig.suptitle("Swizzling's effect: shared-memory bank conflicts and ldmatrix traffic", x=0.07, ha="left",
                 fontsize=11.5, fontweight="bold", y=0.975)
    if ident is not None:
        fig.text(0.07, 0.875, context_line(ident, roof, reports=L["report"].unique()), fontsize=8.5, color="#333333")
    fig.text(0.07, 0.02, "n-way = l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st} / (wavefronts - "
             "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}); ldmatrix = smsp__inst_executed_op_ldsm.",
             fontsize=6.8, color="#444444")
    return fig


# --------------------------------------------------------------------------- autotune
_CATEGORY_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
                    "#1f78b4", "#b2df8a")


def plot_autotune(table: pd.DataFrame, importance: pd.DataFrame, prune: pd.DataFrame | None = None, *,
                  color_by: str | None = None, context: str = "", value: str = "pct_of_ref_hm") -> Figure:
    """Autotune sweep: every timed candidate ranked by harmonic-mean TFLOP/s (bars, % of
    FA2), coloured by the parameter that explains most of the spread (``importance``'s
    first row unless ``color_by``); the winner and the seed's RTX 3090 configuration
    marked. Side panels: the spread each parameter explains, static pruning counts.

    ``table``/``importance``/``prune``: ``analysis.bench.autotune_table`` /
    ``parameter_importance`` / ``static_prune_counts``."""
    t = table.dropna(subset=[value]).sort_values("rank").reset_index(drop=True)
    param = color_by or (str(importance["param"].iloc[0]) if len(importance) else "tile")
    plabel = dict(zip(importance["param"], importance["label"])).get(param, param)
    fig = _new_fig(14.0, 6.6)
    ax = fig.add_axes([0.055, 0.15, 0.60, 0.70])
    ix = fig.add_axes([0.75, 0.56, 0.225, 0.29])
    px = fig.add_axes([0.75, 0.15, 0.225, 0.25])
    # categories ordered by their best candidate, so the legend reads like the ranking
    cats = list(dict.fromkeys(t[param].astype(str)))
    cmap = {c: _CATEGORY_COLORS[i % len(_CATEGORY_COLORS)] for i, c in enumerate(cats)}
    x = np.arange(1, len(t) + 1)
    ax.bar(x, t[value], width=0.9, color=[cmap[str(v)] for v in t[param]], gid="autotune:bars")
    ax.axhline(100, color=kernel_color("ref"), lw=1.2, ls="--", gid="autotune:fa2")
    ax.text(len(t) + 0.5, 100.4, "FA2 = 100% ", ha="right", va="bottom", fontsize=8, color=kernel_color("ref"))
    lo = max(0.0, math.floor(t[value].min() / 10) * 10 - 10)
    ax.set_ylim(lo, max(108.0, t[value].max() + 9))
    ax.set_xlim(0, len(t) + 1)

    def mark(row, label, gid, y_text, color):
        xr, yr = float(row["rank"]), float(row[value])
        ax.plot([xr], [yr + 0.6], marker="v", ms=8, color=color, gid=gid, zorder=5)
        cfg = (f"B_r {row['B_r']}, B_c {row['B_c']}, {row['n_warps']} warps, {row['fragments']}, "
               f"{'dbuf' if row['mma_double_buffer_loads'] else 'no dbuf'}, "
               f"{'opt. softmax' if row['optimized_softmax'] else 'plain softmax'}")
        ax.annotate(f"{label}: rank {int(xr)}, {row['hm_tflops']:.0f} TFLOP/s = {yr:.1f}% of FA2\n{cfg}",
                    xy=(xr, yr + 1.2), xytext=(len(t) * 0.36, y_text), fontsize=7.5, color=color,
                    fontweight="bold", va="center", arrowprops={"arrowstyle": "->", "color": color, "lw": 0.9})

    win = t[t["winner"]] if "winner" in t else t.head(1)
    if len(win):
        mark(win.iloc[0], "winner (kernels/tuned.json)", "autotune:winner", 104.5, "#111111")
    seed = t[t["seed_3090"]] if "seed_3090" in t else t.iloc[0:0]
    if len(seed):
        mark(seed.iloc[0], "seed's RTX 3090 winner config", "autotune:seed", 95.5, "#b2182b")
    ax.set_xlabel("candidate, ranked by harmonic-mean TFLOP/s (1 = fastest)")
    sq = sorted(int(c[len("tflops_s"):]) for c in t.columns if c.startswith("tflops_s"))
    ax.set_ylabel("% of FA2 (harmonic mean over S = " + "/".join(map(str, sq)) + ")")
    ax.grid(True, axis="y", color="#e6e6e6", lw=0.6)
    ax.set_axisbelow(True)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(handles=[Patch(color=cmap[c], label=c) for c in cats], title=f"colour: {plabel}",
              loc="upper right", bbox_to_anchor=(1.0, 0.72), fontsize=7.5, title_fontsize=8, frameon=True,
              framealpha=0.9, ncol=2)

    imp = importance.head(7).iloc[::-1]
    ix.barh(np.arange(len(imp)), imp["eta2"], color=["#555555" if p != param else "#1b9e77" for p in imp["param"]],
            gid="autotune:importance")
    ix.set_yticks(np.arange(len(imp)), imp["label"], fontsize=7.5)
    for yi, v in enumerate(imp["eta2"]):
        ix.text(v + 0.01, yi, f"{v:.2f}", va="center", fontsize=7)
    ix.set_xlim(0, 1.1)
    ix.set_xlabel("share of the spread explained (\u03b7\u00b2)", fontsize=7.5)
    ix.tick_params(axis="x", labelsize=7)
    ix.set_title("which parameter matters", fontsize=9, loc="left")
    ix.spines[["top", "right"]].set_visible(False)

    if prune is not None and len(prune):
        yy = np.arange(len(prune))
        px.barh(yy, prune["count"], color=["#1b9e77" if k else "#bbbbbb" for k in prune["kept"]],
                gid="autotune:prune")
        px.set_yticks(yy, prune["reason"], fontsize=7.5)
        px.invert_yaxis()
        for yi, v in enumerate(prune["count"]):
            px.text(v + 1, yi, str(int(v)), va="center", fontsize=7)
        px.set_xlim(0, prune["count"].max() * 1.25)
        px.set_xlabel("candidates (static check, before timing)", fontsize=7.5)
        px.tick_params(axis="x", labelsize=7)
        px.set_title(f"static pruning: {int(prune['count'].sum())} generated", fontsize=9, loc="left")
        px.spines[["top", "right"]].set_visible(False)
    else:
        px.set_axis_off()
    fig.suptitle(f"Kernel 7 auto-tuning sweep: {len(t)} timed candidates", x=0.055, ha="left", fontsize=12,
                 fontweight="bold", y=0.975)
    fig.text(0.055, 0.91, context, fontsize=9, color="#333333")
    fig.text(0.055, 0.012, "Each candidate: median time per S; % of FA2 = harmonic mean of its TFLOP/s over S / "
             "harmonic mean of FA2's TFLOP/s timed in the same run.\n\u03b7\u00b2 = between-group / total sum of "
             "squares of harmonic-mean TFLOP/s when candidates are grouped by that parameter alone.",
             fontsize=7, color="#444444")
    return fig


def close(fig: Figure) -> None:
    """Figures made here are not registered with pyplot; dropping the canvas frees them."""
    fig.clf()


__all__ = [
    "ANCHORS", "CONVENTION_NOTE", "DPI", "KERNEL_IDS", "KERNEL_NAMES", "KERNEL_ORDER", "REASON_COLORS",
    "context_line", "kernel_color", "kernel_key", "kernel_label", "kernel_rank", "launches",
    "plot_autotune", "plot_bank_conflicts", "plot_pipes", "plot_progression", "plot_roofline", "plot_sass_mix",
    "plot_stall_lines", "plot_stalls",
]

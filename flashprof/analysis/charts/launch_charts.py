"""Per-launch charts for any reports and any number of launches (1 ... hundreds).

Input: an analysis frame (stalls, pipes or bank conflicts), the launch table of
``flashprof.analysis.plots.launches`` and a context line. Output: a Figure whose width grows with
the launch count, x labels placed by ``labels.fit_xticks`` (measured, never touching),
values printed only where they fit, and a name table under the axes mapping each short
tag to its full report stem, GPU and kernel function names. The flashprof series keeps
its own hand-laid charts in ``flashprof.analysis.plots``; these are used when other reports appear.
"""
from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from flashprof.analysis.stages.stalls import STALL_FAMILIES
from flashprof.analysis.charts import labels
from flashprof.analysis.charts.style import BANK_NOTE, PIPE_LABELS, SMEM_FAMILY, new_fig, reason_style

SLOT_IN = 0.13        # inches of x axis per launch
MIN_AXES_IN = 6.5
MAX_AXES_IN = 36.0
LEFT_IN = 1.1
TICKS_IN = 1.35       # room for rotated tags ('<16-char tag>#104' at 7 pt)
TABLE_LINE_IN = 0.13


class Sheet:
    """A figure laid out in inches from the top: title, context, panels stacked over one
    shared launch axis, tick labels, name table, footnote."""

    def __init__(self, n: int, panel_heights: list[float], table: list[str], legend_in: float = 3.4,
                 foot_lines: int = 2):
        self.axes_in = min(max(n * SLOT_IN, MIN_AXES_IN), MAX_AXES_IN)
        self.w = LEFT_IN + self.axes_in + legend_in
        top, gap = 0.95, 0.42
        self.h = top + sum(panel_heights) + gap * (len(panel_heights) - 1) + TICKS_IN \
            + TABLE_LINE_IN * (len(table) + 1) + 0.16 * foot_lines + 0.2
        self.fig = new_fig(self.w, self.h)
        self.axes = []
        y = top
        for ph in panel_heights:
            y += ph
            self.axes.append(self.fig.add_axes([LEFT_IN / self.w, 1 - y / self.h, self.axes_in / self.w, ph / self.h]))
            y += gap
        self.table_top = y - gap + TICKS_IN
        self.table = table

    def frac(self, inches_from_top: float) -> float:
        return 1 - inches_from_top / self.h

    def finish(self, title: str, context: str, foot: str) -> None:
        x = LEFT_IN / self.w * 0.4
        self.fig.suptitle(title, x=x, ha="left", fontsize=12, fontweight="bold", y=self.frac(0.18), va="top")
        self.fig.text(x, self.frac(0.55), context, fontsize=9, color="#333333", va="top")
        if self.table:
            self.fig.text(x, self.frac(self.table_top), "labels:\n" + "\n".join(self.table), fontsize=7,
                          family="monospace", color="#333333", va="top", linespacing=1.25, gid="name-table")
        self.fig.text(x, 0.08 / self.h, foot, fontsize=7, color="#444444", va="bottom")


def _launch_rows(frame: pd.DataFrame, rec: dict) -> pd.DataFrame:
    return frame[(frame["report"] == rec["report"]) & (frame["launch"] == rec["launch"])
                 & (frame["range_idx"] == rec["range_idx"])]


def _value_labels(ax, renderer, xs, ys, texts, fontsize: float = 6.5, pad: float = 0.0) -> None:
    """Values above bars: horizontal if they fit the slot, rotated if a line fits, else none."""
    if not len(xs):
        return
    slot = abs(ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0])
    probe = ax.text(0, 0, max(texts, key=len), fontsize=fontsize)
    w, h = probe.get_window_extent(renderer).width, probe.get_window_extent(renderer).height
    probe.remove()
    rot = 0 if w + 2 <= slot else 90 if h + 1 <= slot else None
    if rot is None:
        return
    for x, y, t in zip(xs, ys, texts):
        ax.text(x, y + pad, t, ha="center", va="bottom", fontsize=fontsize, rotation=rot, color="#333333")


def _lacking(k: int, n: int, what: str) -> str:
    return f"\n{k} of {n} launches have no bar: their reports lack {what}." if k else ""


def _style_axes(ax) -> None:
    ax.grid(True, axis="y", color="#e6e6e6", lw=0.6)
    ax.set_axisbelow(True)
    ax.spines[["top", "right"]].set_visible(False)


def _ticks(sheet: Sheet, L: pd.DataFrame) -> None:
    """Tags under the lowest panel, coloured per report; upper panels share the axis."""
    renderer = labels.renderer(sheet.fig)
    low = sheet.axes[-1]
    x = np.arange(len(L))
    for ax in sheet.axes:
        ax.set_xlim(-0.6, len(L) - 0.4)
    labels.fit_xticks(low, renderer, x, L["short"], fontsize=7)
    for t, c in zip(low.get_xticklabels(), L["color"]):
        t.set_color(c)
    for ax in sheet.axes[:-1]:
        ax.tick_params(axis="x", labelbottom=False)
        ax.set_xticks(x)


def stalls_many(stall_frame: pd.DataFrame, L: pd.DataFrame, *, value: str, context: str,
                table: list[str]) -> "Figure":  # noqa: F821
    """Stacked stall reasons per launch (upper: cycles per issue, lower: shares)."""
    reasons = list(dict.fromkeys(stall_frame["reason"].astype(str)))
    present = [r for r in reasons if (stall_frame.loc[stall_frame["reason"].astype(str) == r, value].fillna(0) > 0).any()]
    sheet = Sheet(len(L), [3.2, 1.9], table)
    ax, sx = sheet.axes
    totals, shares = [], []
    for i, rec in enumerate(L.to_dict("records")):
        s = _launch_rows(stall_frame, rec)
        vals = {r: v for r, v in zip(s["reason"].astype(str), s[value]) if not pd.isna(v) and v > 0}
        bottom = 0.0
        for r in present:
            if r in vals:
                ax.bar(i, vals[r], bottom=bottom, width=0.72, gid=f"stall:{rec['sid']}:{r}", **reason_style(r))
                bottom += vals[r]
        b2 = 0.0
        for r in present:
            if r in vals and bottom:
                sx.bar(i, 100 * vals[r] / bottom, bottom=b2, width=0.72, gid=f"stallshare:{rec['sid']}:{r}",
                       **reason_style(r))
                b2 += 100 * vals[r] / bottom
        totals.append(bottom)
        smem = sum(vals.get(r, 0) for r in STALL_FAMILIES[SMEM_FAMILY])
        shares.append(100 * smem / bottom if bottom else math.nan)
    if not present:
        ax.text(0.5, 0.5, "no warp-state (stall) metrics in these reports", transform=ax.transAxes,
                ha="center", va="center", fontsize=10, color="#666666")
    ax.set_ylim(0, max(totals + [1.0]) * 1.18)
    sx.set_ylim(0, 112)
    _ticks(sheet, L)
    renderer = labels.renderer(sheet.fig)
    have = [i for i, t in enumerate(totals) if t]
    _value_labels(ax, renderer, have, [totals[i] for i in have], [f"{totals[i]:.2f}" for i in have])
    _value_labels(sx, renderer, have, [100.5] * len(have), [f"{shares[i]:.0f}%" for i in have], fontsize=6,
                  )
    ax.set_ylabel("warp cycles per issued instruction" if value == "per_issue" else "share of warp cycles")
    sx.set_ylabel("share of warp cycles (%)\nlabel: shared-mem./MIO share", fontsize=8)
    for a in (ax, sx):
        _style_axes(a)
    handles = []
    for fam, members in STALL_FAMILIES.items():
        mem = [r for r in members if r in present]
        if mem:
            handles.append(Patch(color="none", label=fam + (" (hatched)" if fam == SMEM_FAMILY else "")))
            handles += [Patch(label=r, **{k: v for k, v in reason_style(r).items() if k != "linewidth"}) for r in mem]
    extra = [r for r in present if not any(r in m for m in STALL_FAMILIES.values())]
    if extra:
        handles += [Patch(color="none", label="other")] + [Patch(label=r, **reason_style(r)) for r in extra]
    if handles:
        leg = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.02), fontsize=7.5, frameon=False,
                        title="stall reason by family", title_fontsize=8.5)
        for t, h in zip(leg.get_texts(), handles):
            if h.get_facecolor()[3] == 0:
                t.set_fontweight("bold")
    sheet.finish(f"Warp stall reasons per launch ({len(L)} launch{'es' if len(L) > 1 else ''}, "
                 "Nsight Compute WarpStateStats)", context,
                 "Bar height = sum over reasons of smsp__average_warps_issue_stalled_<reason>_per_issue_active "
                 "(includes 'selected', the issuing warp)." + _lacking(sum(1 for t in totals if not t), len(L),
                                                                        "WarpStateStats"))
    return sheet.fig


def pipes_many(pipe_frame: pd.DataFrame, L: pd.DataFrame, names, *, context: str, table: list[str]) -> "Figure":  # noqa: F821
    """Heat map: one column per launch, one row per pipe (+ issue slots), % of peak."""
    sub = pipe_frame[pipe_frame["category"].isin(["utilization", "issue"])]
    grid = np.full((len(names), len(L)), np.nan)
    for j, rec in enumerate(L.to_dict("records")):
        vals = dict(zip(*(_launch_rows(sub, rec)[c] for c in ("name", "value"))))
        grid[:, j] = [vals.get(p, math.nan) for p in names]
    sheet = Sheet(len(L), [0.34 * len(names) + 0.3], table, legend_in=1.6, foot_lines=2)
    ax = sheet.axes[0]
    cmap = matplotlib.colormaps["viridis"]
    im = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap=cmap, vmin=0, vmax=100, interpolation="none",
                   extent=(-0.5, len(L) - 0.5, len(names) - 0.5, -0.5))
    ax.set_facecolor("#f0f0f0")
    ax.set_yticks(range(len(names)), [PIPE_LABELS.get(p, p) for p in names], fontsize=8)
    _ticks(sheet, L)
    renderer = labels.renderer(sheet.fig)
    slot = abs(ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0])
    probe = ax.text(0, 0, "100", fontsize=6.5)
    fits = probe.get_window_extent(renderer).width + 2 <= slot
    probe.remove()
    for (r, c), v in np.ndenumerate(grid):
        if math.isnan(v):
            ax.text(c, r, "\u00d7" if slot >= 6 else "", ha="center", va="center", fontsize=6, color="#999999")
        elif fits:
            ax.text(c, r, f"{v:.0f}", ha="center", va="center", fontsize=6.5, color="white" if v > 55 else "#222222")
    b = ax.get_position()  # own axes for the colour bar: the heat map keeps its measured width
    cax = sheet.fig.add_axes([b.x1 + 0.15 / sheet.w, b.y0, 0.15 / sheet.w, b.height])
    cb = sheet.fig.colorbar(im, cax=cax)
    cb.set_label("% of peak sustained (active cycles)", fontsize=8)
    sheet.finish(f"Pipe utilisation and issue-slot use per launch ({len(L)} launch{'es' if len(L) > 1 else ''})",
                 context, "Tensor, FMA, ALU: sm__pipe_<p>_cycles_active; XU, LSU: sm__inst_executed_pipe_<p>; issue "
                 "slots: smsp__issue_active; all % of peak sustained over active cycles.\n"
                 "\u00d7 = the report lacks that metric" + ("" if fits else "; values in cells omitted where a "
                                                               "column is too narrow (colour scale on the right)") + ".")
    return sheet.fig


def banks_many(banks: pd.DataFrame, L: pd.DataFrame, *, context: str, table: list[str]) -> "Figure":  # noqa: F821
    """Shared-memory bank-conflict degree (loads, stores) and ldmatrix count per launch."""
    sheet = Sheet(len(L), [2.3, 1.5], table, legend_in=1.8)
    a1, a2 = sheet.axes
    w = 0.38
    tops, ld_vals = [], []
    for i, rec in enumerate(L.to_dict("records")):
        s = _launch_rows(banks, rec)
        v = dict(zip(s["op"], s["nway"]))
        for off, op, hatch in ((-w / 2, "ld", None), (w / 2, "st", "////")):
            val = v.get(op, math.nan)
            if not pd.isna(val):
                a1.bar(i + off, val, width=w * 0.95, color=rec["color"], hatch=hatch, edgecolor="white",
                       gid=f"bank:{rec['sid']}:{op}")
        tops.append(max([x for x in (v.get("ld"), v.get("st")) if x is not None and not pd.isna(x)] or [math.nan]))
        ld = s["ldsm_inst"].dropna()
        ld_vals.append(float(ld.iloc[0]) if len(ld) else math.nan)
        if len(ld):
            a2.bar(i, ld.iloc[0] / 1e6, color=rec["color"], width=0.7, gid=f"ldsm:{rec['sid']}")
    a1.axhline(1.0, color="#333333", lw=0.8, ls="--")
    top = np.nanmax(tops) if not np.isnan(tops).all() else 1.0
    a1.set_ylim(0, max(top, 1.0) * 1.3)
    _ticks(sheet, L)
    renderer = labels.renderer(sheet.fig)
    have = [i for i, t in enumerate(tops) if not math.isnan(t)]
    _value_labels(a1, renderer, have, [tops[i] for i in have], [f"{tops[i]:.2f}" for i in have])
    a1.set_ylabel("n-way (1.0 = conflict-free)", fontsize=8)
    a1.set_title("shared-memory bank conflicts (solid: loads, hatched: stores; label: the larger)", fontsize=9,
                 loc="left")
    a2.set_ylabel("ldmatrix warp inst.\n(millions)", fontsize=8)
    a2.set_title("ldmatrix count", fontsize=9, loc="left")
    for a in (a1, a2):
        _style_axes(a)
    sheet.finish(f"Shared-memory bank conflicts and ldmatrix traffic per launch ({len(L)} launch"
                 f"{'es' if len(L) > 1 else ''})", context,
                 BANK_NOTE + _lacking(sum(1 for t in tops if math.isnan(t)), len(L), "shared-memory wavefront metrics"))
    return sheet.fig

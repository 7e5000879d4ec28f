"""Per-launch stall, pipe and bank-conflict charts, and the top stall lines of one report.

Input: the analysis frames of ``flashprof.analysis.stages.stalls`` and ``flashprof.analysis.stages.pipes``. The flashprof
series keeps its hand-laid layout here; any other report goes to ``launch_charts``."""
from __future__ import annotations

import math
import re
import textwrap

import matplotlib
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from flashprof.analysis.stages.stalls import REASON_FAMILY, STALL_FAMILIES, STALL_REASONS
from flashprof.analysis.charts import launch_charts
from flashprof.analysis.charts.identity import (KERNEL_TICKS, many_args, context_line, is_series, kernel_color, launches)
from flashprof.analysis.charts.style import (BANK_NOTE, PIPE_LABELS, REASON_COLORS, SMEM_FAMILY, new_fig as _new_fig, reason_style as _reason_style)


# --------------------------------------------------------------------------- stalls


def plot_stalls(stall_frame: pd.DataFrame, ident: pd.DataFrame | None = None, roof: pd.DataFrame | None = None,
                *, value: str = "per_issue") -> Figure:
    """Stacked bars per launch of the stall reasons (canonical order, fixed colours)."""
    L = launches(stall_frame)
    if not L["key"].map(is_series).all():
        return launch_charts.stalls_many(stall_frame, L, value=value, **many_args(L, ident, roof))
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
        return launch_charts.pipes_many(pipe_frame, L, names, **many_args(L, ident, roof))
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


# --------------------------------------------------------------------------- bank conflicts
def plot_bank_conflicts(banks: pd.DataFrame, ident: pd.DataFrame | None = None, roof: pd.DataFrame | None = None) -> Figure:
    """n-way shared-memory bank conflict degree (ld, st) and ldmatrix count per launch."""
    L = launches(banks)
    if not L["key"].map(is_series).all():
        return launch_charts.banks_many(banks, L, **many_args(L, ident, roof))
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
    fig.text(0.07, 0.02, BANK_NOTE,
             fontsize=6.8, color="#444444")
    return fig

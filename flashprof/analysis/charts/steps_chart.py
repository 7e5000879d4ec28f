"""Kernel 7's Hopper steps in one figure: predicted against measured gain per technique, the
persistent grid's sweep, and what each step's profile shows (tensor pipe, issue slots, stalls).

Drawn from the steps' data (``reports/<gpu>/hopper-steps/steps.json``, written by
``flashprof.analysis.gap.steps_doc`` beside docs/HOPPER_STEPS.md), never from report files.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from flashprof.analysis.charts.style import new_fig, reason_style

TOP_REASONS = 7
MEASURED = {"fp16": "#1f77b4", "bf16": "#9ecae1"}
PREDICTED = "#bdbdbd"


def _clean(ax) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, axis="y", color="#e6e6e6", lw=0.6)
    ax.set_axisbelow(True)


def _gains(ax, gains: pd.DataFrame) -> None:
    x = np.arange(len(gains))
    w = 0.27
    cols = [("predicted_x", "predicted (what-if, before building)", PREDICTED, "//"),
            ("measured_x_fp16", "measured fp16", MEASURED["fp16"], None),
            ("measured_x_bf16", "measured bf16", MEASURED["bf16"], None)]
    for j, (col, label, color, hatch) in enumerate(cols):
        vals = pd.to_numeric(gains[col], errors="coerce")
        ax.bar(x + (j - 1) * w, vals.fillna(0), w, color=color, hatch=hatch, edgecolor="white", lw=0.4,
               label=label, gid=f"steps-gain:{col}")
        for xi, v in zip(x, vals):
            if v == v:
                ax.text(xi + (j - 1) * w, v + 0.015, f"{v:.2f}", ha="center", va="bottom", fontsize=6.2,
                        rotation=90)
            elif col == "predicted_x":
                ax.text(xi + (j - 1) * w, 0.02, "no what-if", ha="center", va="bottom", fontsize=6, rotation=90,
                        color="#777777")
    ax.axhline(1.0, color="#555555", lw=0.8, ls="--")
    ax.set_xticks(x, gains["step"], fontsize=8)
    top = pd.to_numeric(gains[[c for c, *_ in cols]].stack(), errors="coerce").max()
    ax.set_ylim(0, max(1.2, top * 1.22))
    ax.set_ylabel("× over 'before' (harmonic mean of TFLOP/s over S)")
    ax.set_title("each technique: predicted before building vs measured (first sweep)", fontsize=9, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="upper left", ncol=1)
    _clean(ax)


def _rounds(ax, rounds: pd.DataFrame) -> None:
    fp = rounds[rounds["dtype"] == "fp16"].sort_values("hm_tflops", ascending=True)
    order = list(fp["slug"])
    y = np.arange(len(order))
    h = 0.38
    for j, dt in enumerate(("fp16", "bf16")):
        d = rounds[rounds["dtype"] == dt].set_index("slug").reindex(order)
        vals = pd.to_numeric(d["hm_tflops"], errors="coerce")
        ax.barh(y + (0.5 - j) * h, vals.fillna(0), h, color=MEASURED[dt], label=dt, gid=f"steps-rounds:{dt}")
        for yi, v, pct in zip(y, vals, d["hm_pct_of_fa2"]):
            if v == v:
                ax.text(v + 4, yi + (0.5 - j) * h, f"{v:.0f}  ({pct:.0f} % of FA2)", va="center", fontsize=6.5)
    names = []
    for slug in order:
        step = fp.loc[fp["slug"] == slug, "step"].iloc[0]
        short = slug.split("_optsm_", 1)[-1]
        names.append(f"{step}\n{short}" if isinstance(step, str) and step else short)
    ax.set_yticks(y, names, fontsize=6.8)
    ax.set_xlim(0, pd.to_numeric(rounds["hm_tflops"], errors="coerce").max() * 1.42)
    ax.set_xlabel("TFLOP/s, harmonic mean over S = 512 … 16384")
    ax.set_title("the persistent grid: second sweep, interleaved rounds", fontsize=9, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, axis="x", color="#e6e6e6", lw=0.6)
    ax.set_axisbelow(True)


def _pipes(ax, prof: pd.DataFrame) -> None:
    x = np.arange(len(prof))
    w = 0.36
    for j, (col, label, color) in enumerate((("tensor_pipe_pct", "tensor pipe (HGMMA) % of peak", "#e6550d"),
                                             ("issue_active_pct", "issue slots busy %", "#636363"))):
        vals = pd.to_numeric(prof[col], errors="coerce")
        ax.bar(x + (j - 0.5) * w, vals.fillna(0), w, color=color, label=label, gid=f"steps-pipe:{col}")
        for xi, v in zip(x, vals):
            if v == v:
                ax.text(xi + (j - 0.5) * w, v + 1, f"{v:.0f}", ha="center", va="bottom", fontsize=6.5)
    ticks = [f"{s}\n{t:.0f} TF/s\n{c:.2f} GHz" for s, t, c in zip(prof["step"], prof["tflops"], prof["clock_ghz"])]
    ax.set_xticks(x, ticks, fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("% (Nsight Compute, dominant launch)")
    ax.set_title("profiles at S = 4096 fp16: tensor pipe and issue slots", fontsize=9, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    _clean(ax)


def _stalls(ax, prof: pd.DataFrame) -> None:
    table = pd.DataFrame([dict(s or {}) for s in prof["stalls"]], index=prof["step"]).fillna(0.0)
    top = list(table.max().sort_values(ascending=False).index[:TOP_REASONS])
    rest = table.drop(columns=top).sum(axis=1)
    x = np.arange(len(table))
    bottom = np.zeros(len(table))
    handles = []
    for reason in top:
        vals = table[reason].to_numpy()
        st = reason_style(reason)
        ax.bar(x, vals, 0.62, bottom=bottom, gid=f"steps-stall:{reason}", **st)
        handles.append(Patch(label=reason, **st))
        bottom += vals
    ax.bar(x, rest.to_numpy(), 0.62, bottom=bottom, color="#eeeeee", edgecolor="white", lw=0.4, gid="steps-stall:other")
    handles.append(Patch(facecolor="#eeeeee", label="other reasons"))
    bottom += rest.to_numpy()
    for xi, v in zip(x, bottom):
        ax.text(xi, v + 0.05, f"{v:.1f}", ha="center", va="bottom", fontsize=6.5)
    ax.set_xticks(x, table.index, fontsize=8)
    ax.set_ylim(0, bottom.max() * 1.15)
    ax.set_ylabel("warps stalled per issued instruction")
    ax.set_title("profiles at S = 4096 fp16: stall reasons", fontsize=9, loc="left")
    ax.legend(handles=handles, fontsize=6.5, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _clean(ax)


def plot_hopper_steps(gains: pd.DataFrame, rounds: pd.DataFrame, profiles: pd.DataFrame, *, gpu: str,
                      context: str = "", sources: str = "") -> Figure:
    """``gains``: step, predicted_x, measured_x_fp16, measured_x_bf16 (first sweep, × over its
    first row). ``rounds``: step, slug, dtype, hm_tflops, hm_pct_of_fa2 (second sweep).
    ``profiles``: step, tflops, clock_ghz, tensor_pipe_pct, issue_active_pct, stalls
    ({reason: warps per issued instruction})."""
    fig = new_fig(16.0, 10.0)
    panels = [fig.add_axes([0.055, 0.56, 0.40, 0.32]), fig.add_axes([0.60, 0.56, 0.37, 0.32]),
              fig.add_axes([0.055, 0.10, 0.40, 0.33]), fig.add_axes([0.54, 0.10, 0.33, 0.33])]
    if len(gains):
        _gains(panels[0], gains)
    else:
        panels[0].set_axis_off()
    if len(rounds):
        _rounds(panels[1], rounds)
    else:
        panels[1].set_axis_off()
    if len(profiles):
        _pipes(panels[2], profiles)
        _stalls(panels[3], profiles)
    else:
        panels[2].set_axis_off()
        panels[3].set_axis_off()
    fig.suptitle("Kernel 7 on Hopper, one technique at a time", x=0.055, ha="left", fontsize=13, fontweight="bold",
                 y=0.975)
    fig.text(0.055, 0.945, textwrap.fill(f"{gpu} \u00b7 {context}", 190), fontsize=9, color="#333333", va="top")
    if sources:
        fig.text(0.055, 0.012, textwrap.fill(sources, 240), fontsize=7, color="#444444")
    return fig

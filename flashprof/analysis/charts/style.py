"""Shared look of every chart: resolution, stall-reason colours, pipe names, new figures."""
from __future__ import annotations

from matplotlib.figure import Figure

from flashprof.analysis.stages.stalls import REASON_FAMILY

DPI = 150

# Fixed colour per stall reason: one hue per family, shades within it.
REASON_COLORS = {
    "math_pipe_throttle": "#e6550d", "gmma": "#fd8d3c", "warpgroup_arrive": "#fdd0a2",
    "mio_throttle": "#08519c", "short_scoreboard": "#6baed6",
    "long_scoreboard": "#756bb1", "lg_throttle": "#9e9ac8", "drain": "#bcbddc",
    "imc_miss": "#dadaeb", "tex_throttle": "#54278f",
    "barrier": "#31a354",
    "wait": "#636363", "dispatch_stall": "#8c6d31", "no_instruction": "#bd9e39",
    "branch_resolving": "#e7ba52", "not_selected": "#969696", "selected": "#d9d9d9",
    "misc": "#bdbdbd", "sleeping": "#e7cb94", "membar": "#843c39",
}
SMEM_FAMILY = "shared memory/MIO"
SMEM_HATCH = "///"
# Caption of every bank-conflict chart: what n-way and ldmatrix are made of.
BANK_NOTE = ("n-way = l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st} / (wavefronts - "
             "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}); ldmatrix = smsp__inst_executed_op_ldsm.")
PIPE_LABELS = {"tensor": "tensor (all ops)", "fma": "FMA (FP32)", "alu": "ALU", "xu": "XU (MUFU)",
               "lsu": "LSU", "issue_active": "issue slots"}


def reason_style(reason: str) -> dict:
    """Bar style of a stall reason: its colour; the shared-memory/MIO family hatched."""
    fam = REASON_FAMILY.get(reason, "other")
    style = {"facecolor": REASON_COLORS.get(reason, "#cccccc"), "edgecolor": "white", "linewidth": 0.4}
    if fam == SMEM_FAMILY:
        style.update(hatch=SMEM_HATCH, edgecolor="#dbe9f6")
    return style


def new_fig(w: float, h: float) -> Figure:
    # Figure(), not pyplot: no GUI backend and no global figure list (Agg and inline alike)
    return Figure(figsize=(w, h), dpi=DPI)


def close(fig: Figure) -> None:
    """Figures made here are not registered with pyplot; dropping the canvas frees them."""
    fig.clf()

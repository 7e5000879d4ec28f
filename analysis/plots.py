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
# The chart code lives in analysis/plot/ (identity, style, labels, placement, one module per
# chart family); this module keeps every public name importable from ``analysis.plots``.
from __future__ import annotations

import matplotlib  # noqa: F401  (tests compare colours through plots.matplotlib)
from matplotlib.figure import Figure

from .plot import labels
from .plot.bench_charts import plot_autotune, plot_progression, plot_sass_mix  # noqa: F401
from .plot.identity import (ANCHORS, KERNEL_IDS, KERNEL_NAMES, KERNEL_ORDER, KERNEL_TICKS,  # noqa: F401
                            _fmt_shape, context_line, is_series, kernel_color, kernel_key, kernel_label,
                            kernel_rank, launches)
from .plot.roofline_chart import CONVENTION_NOTE, LEVEL_LABELS, LEVEL_MARKERS, plot_roofline  # noqa: F401
from .plot.stall_charts import plot_bank_conflicts, plot_pipes, plot_stall_lines, plot_stalls  # noqa: F401
from .plot.style import DPI, PIPE_LABELS, REASON_COLORS, SMEM_FAMILY, SMEM_HATCH, new_fig, reason_style  # noqa: F401

_renderer = labels.renderer


def close(fig: Figure) -> None:
    """Figures made here are not registered with pyplot; dropping the canvas frees them."""
    fig.clf()


__all__ = [
    "ANCHORS", "CONVENTION_NOTE", "DPI", "KERNEL_IDS", "KERNEL_NAMES", "KERNEL_ORDER", "REASON_COLORS",
    "context_line", "kernel_color", "kernel_key", "kernel_label", "kernel_rank", "launches",
    "plot_autotune", "plot_bank_conflicts", "plot_pipes", "plot_progression", "plot_roofline", "plot_sass_mix",
    "plot_stall_lines", "plot_stalls",
]

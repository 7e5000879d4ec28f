"""Launch labels that stay readable for any report names and any number of launches.

Input: the launch table of ``flashprof.analysis.plots.launches`` (report, launch, kernel, ...).
Output: short stable labels (``<report tag>#<launch>``), a name table that maps each
tag back to the full report stem, GPU and kernel function names, and tick placement
that measures the labels with the figure's renderer: horizontal when they fit,
rotated when not, and only every k-th label when even rotated ones would touch.
Nothing here reads reports or computes metrics.
"""
from __future__ import annotations

import math
import os
import re
import textwrap

import matplotlib
import numpy as np
import pandas as pd

TAG_WIDTH = 16          # characters of a report tag
FUNC_WIDTH = 40         # characters of a kernel function name in the table


def short_tag(stem: str, width: int = TAG_WIDTH) -> str:
    """``stem`` when short, else its head and tail around an ellipsis (stable: the same
    stem always gives the same tag)."""
    stem = str(stem)
    if len(stem) <= width:
        return stem
    head = (width - 1) // 2
    return stem[:head] + "\u2026" + stem[-(width - 1 - head):]


def report_tags(reports, width: int = TAG_WIDTH) -> dict[str, str]:
    """report -> unique short tag. Stems whose head...tail tags clash are tagged by the
    part where they differ ('...name_3__pro...'); any clash left gets 'R<i>:' (sorted order)."""
    reports = list(dict.fromkeys(map(str, reports)))
    tags = {r: short_tag(r, width) for r in reports}
    groups: dict[str, list[str]] = {}
    for r in reports:
        groups.setdefault(tags[r], []).append(r)
    for clash in (g for g in groups.values() if len(g) > 1):
        p = len(os.path.commonprefix(clash))
        q = len(os.path.commonprefix([r[::-1] for r in clash]))
        for r in clash:
            lo, hi = max(0, p - 4), len(r) - max(0, q - 4)
            core = r[lo:max(hi, lo + 1)]
            core = core if len(core) <= width - 2 else short_tag(core, width - 2)
            tags[r] = ("\u2026" if lo else "") + core + ("\u2026" if hi < len(r) else "")
    counts = pd.Series(list(tags.values())).value_counts()
    for i, r in enumerate(sorted(reports)):
        if counts.get(tags[r], 0) > 1:
            tags[r] = f"R{i + 1}:" + short_tag(r, width - 3)
    return tags


def short_function(name) -> str:
    """A kernel's short function name: no return type, template or parameter list,
    no namespace, at most FUNC_WIDTH characters."""
    s = str(name or "").strip()
    if not s or s in ("nan", "None"):
        return "?"
    s = re.sub(r"^(void|__global__)\s+", "", s)
    depth, out = 0, []
    for ch in s:  # drop everything inside <...> and (...)
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    s = "".join(out).strip().rsplit("::", 1)[-1].strip() or str(name)
    return s if len(s) <= FUNC_WIDTH else s[:FUNC_WIDTH - 1] + "\u2026"


def function_runs(launch_nums, kernels) -> str:
    """'#0-#3 gemm, #4 reduce': consecutive launches of one function joined."""
    runs: list[list] = []
    for n, k in sorted(zip(map(int, launch_nums), map(short_function, kernels))):
        if runs and runs[-1][2] == k and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n, k])
    return ", ".join((f"#{a}" if a == b else f"#{a}\u2013#{b}") + f" {k}" for a, b, k in runs)


def gpu_short(name) -> str:
    """'NVIDIA GeForce RTX 3080' and 'GeForce RTX 3080' are the same GPU."""
    from flashprof.analysis.report.target_key import gpu_name
    return gpu_name(name) or "GPU unknown"


def name_table(L: pd.DataFrame, ident: pd.DataFrame | None = None, width: int = 150) -> list[str]:
    """One line per report (wrapped at ``width``): tag = full stem, GPU, launches and
    their function names. ``L`` needs report, tag, launch, kernel."""
    rows = []
    for report, g in L.groupby("report", sort=False):
        gpu = ""
        if ident is not None and "gpu" in ident.columns:
            gs = sorted({gpu_short(v) for v in ident.loc[ident["report"] == report, "gpu"]})
            gpu = " / ".join(gs)
        head = f"{g['tag'].iloc[0]} = {report}" + (f" \u00b7 {gpu}" if gpu else "")
        body = f"{len(g)} launch{'es' if len(g) > 1 else ''}: {function_runs(g['launch'], g['kernel'])}"
        rows += textwrap.wrap(f"{head} \u00b7 {body}", width, subsequent_indent="      ")
    return rows


def spread_labels(ys: list[float], gap: float, rounds: int = 100, slack: float = 1e-9) -> list[float]:
    """Positions for labels at ``ys`` pushed apart to at least ``gap`` (same order as
    ``ys``): neighbours closer than ``gap - slack`` move apart about their midpoint, for at
    most ``rounds`` passes."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    pos = [ys[i] for i in order]
    for _ in range(rounds):
        moved = False
        for i in range(1, len(pos)):
            if pos[i] - pos[i - 1] < gap - slack:
                mid = (pos[i] + pos[i - 1]) / 2
                pos[i - 1], pos[i] = mid - gap / 2, mid + gap / 2
                moved = True
        if not moved:
            break
    out = [0.0] * len(ys)
    for k, i in enumerate(order):
        out[i] = pos[k]
    return out


def palette(n: int) -> list:
    """n distinguishable colours (tab10, then tab20, then a cyclic map)."""
    if n <= 10:
        return [matplotlib.colormaps["tab10"](i) for i in range(n)]
    if n <= 20:
        return [matplotlib.colormaps["tab20"](i) for i in range(n)]
    return [matplotlib.colormaps["hsv"](i / n) for i in range(n)]


# --------------------------------------------------------------------------- measuring
def renderer(fig):
    """An Agg renderer for measuring text before saving (attaches an Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def boxes(texts, renderer) -> list:
    """Window extents of the visible, non-empty texts."""
    return [t.get_window_extent(renderer) for t in texts if t.get_visible() and t.get_text().strip()]


def overlapping(texts, renderer, pad: float = 0.0) -> list[tuple[str, str]]:
    """Pairs of visible texts whose bounding boxes overlap (by more than ``pad`` px)."""
    items = [(t.get_text(), t.get_window_extent(renderer)) for t in texts
             if t.get_visible() and t.get_text().strip()]
    hits = []
    for i in range(len(items)):
        a = items[i][1]
        for j in range(i + 1, len(items)):
            b = items[j][1]
            if min(a.x1, b.x1) - max(a.x0, b.x0) > pad and min(a.y1, b.y1) - max(a.y0, b.y0) > pad:
                hits.append((items[i][0], items[j][0]))
    return hits


def fit_xticks(ax, renderer, positions, labels, fontsize: float = 7.5, gap_px: float = 2.0) -> int:
    """Tick labels at ``positions``: horizontal if they fit the slot, else rotated 90
    degrees, else every k-th label (always the first); returns k (1 = all shown)."""
    positions = np.asarray(positions, float)
    ax.set_xticks(positions, [str(s) for s in labels], fontsize=fontsize)
    texts = ax.get_xticklabels()
    if len(positions) < 2:
        return 1
    x0, x1 = (ax.transData.transform((p, 0))[0] for p in positions[:2])
    slot = abs(x1 - x0)
    widths = [b.width for b in boxes(texts, renderer)] or [0.0]
    if max(widths) + gap_px <= slot:
        return 1
    for t in texts:
        t.set_rotation(90)
        t.set_ha("center")
    heights = [b.width for b in boxes(texts, renderer)] or [0.0]  # rotated: line height is the width
    k = max(1, math.ceil((max(heights) + gap_px) / slot))
    if k > 1:
        for i, t in enumerate(texts):
            t.set_visible(i % k == 0)
    return k


def add_name_table(fig, rows: list[str], x: float = 0.07, line_in: float = 0.13) -> None:
    """Grow ``fig`` at the bottom by the height of ``rows`` and print them there
    (monospace), everything drawn so far keeping its size and place from the top."""
    if not rows:
        return
    w, h0 = fig.get_size_inches()
    extra = line_in * (len(rows) + 1) + 0.1
    h1 = h0 + extra
    fig.set_size_inches(w, h1)

    def shift(y):  # figure fraction -> same inches from the bottom of the old figure, plus extra
        return (y * h0 + extra) / h1
    for ax in fig.axes:
        b = ax.get_position()
        ax.set_position([b.x0, shift(b.y0), b.width, b.height * h0 / h1])
    for t in list(fig.texts) + ([fig._suptitle] if getattr(fig, "_suptitle", None) is not None else []):
        xt, yt = t.get_position()
        t.set_position((xt, shift(yt)))
    fig.text(x, (extra - 0.05) / h1, "labels:\n" + "\n".join(rows), fontsize=7, family="monospace",
             color="#333333", va="top", linespacing=1.25, gid="name-table")

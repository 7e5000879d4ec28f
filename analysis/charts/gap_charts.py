"""Plot stage for the gap model: frames from ``flashprof.analysis.gap`` -> matplotlib Figures.

Input: the issue model's records (``flashprof.analysis.gap.frozen`` / ``issue_report``) and the
``pipe_shares`` / ``ceilings`` frames (no reports, no model math).
Output: one ``Figure`` per call; nothing is written here. Each plot takes an optional
``title`` (bold, top left) and ``subtitle`` (a wrapped context line under it); the canvas
grows to make room and the axes keep their size in inches. Artists tests read back carry a
``gid``: ``issue:<gpu_key>:<obs|pred|cycles>``, ``share:<gpu_key>:<pipe>``, ``ceiling:<gpu_key>:<kind>``.
"""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from flashprof.analysis.gap.pipes_model.pipe_table import MODEL_PIPES  # noqa: E402

GPU_COLORS = {"rtx3090": "#2ca02c", "a100_80gb": "#1f77b4", "a100_40gb": "#17becf",
              "h200_sxm": "#d62728", "h100_sxm": "#ff7f0e"}
PIPE_COLORS = {"tensor": "#4c72b0", "fma": "#dd8452", "alu": "#937860", "xu": "#8172b3",
               "lsu": "#64b5cd", "smem": "#c44e52", "issue": "#55a868", "dram": "#7f7f7f"}


def _color(key: str) -> str:
    return GPU_COLORS.get(key, "#333333")


def _with_titles(fig: Figure, title: str | None, subtitle: str | None) -> Figure:
    """Add a title / subtitle band above an already tight-laid-out figure."""
    if not title and not subtitle:
        return fig
    import textwrap
    width, height = fig.get_size_inches()
    sub = textwrap.fill(subtitle, max(20, int(width * 15))) if subtitle else ""
    n_sub = sub.count("\n") + 1 if sub else 0
    band = 0.5 + (0.17 * n_sub + 0.1 if sub else 0.0)
    total = height + band
    fig.set_size_inches(width, total)
    shrink = height / total
    for ax in fig.axes:  # keep each axes' size in inches: scale its figure fractions
        x0, y0, w, h = ax.get_position().bounds
        ax.set_position([x0, y0 * shrink, w, h * shrink])
    top = 1 - 0.12 / total
    if title:
        fig.text(0.01, top, title, fontsize=10.5, fontweight="bold", va="top", ha="left", gid="title")
    if sub:
        fig.text(0.01, 1 - (0.42 if title else 0.12) / total, sub, fontsize=7.5, color="#333333",
                 va="top", ha="left", gid="subtitle")
    return fig


def plot_pipe_shares(shares: pd.DataFrame, title: str | None = None,
                     subtitle: str | None = None) -> Figure:
    """Stacked bars: each pipe's lower-bound time relative to the tensor time, per GPU
    (for one target, e.g. kernel 7). Bars above 1 are pipes that outlast the tensor work."""
    keys = list(dict.fromkeys(shares["gpu_key"]))
    fig = Figure(figsize=(1.6 + 1.8 * len(keys), 3.6), dpi=150)
    ax = fig.subplots()
    width = 0.8 / len(MODEL_PIPES)
    for i, pipe in enumerate(MODEL_PIPES):
        vals = [float(shares[(shares["gpu_key"] == k) & (shares["pipe"] == pipe)]["vs_tensor"].sum())
                for k in keys]
        xs = np.arange(len(keys)) + (i - len(MODEL_PIPES) / 2 + 0.5) * width
        for x, v, k in zip(xs, vals, keys):
            ax.bar(x, v, width, color=PIPE_COLORS[pipe], gid=f"share:{k}:{pipe}",
                   label=pipe if k == keys[0] else None)
    ax.axhline(1.0, color="k", lw=0.7, ls="--")
    ax.set_xticks(np.arange(len(keys)), [shares[shares["gpu_key"] == k]["gpu"].iloc[0] for k in keys],
                  fontsize=8)
    target = shares["target"].iloc[0] if len(shares) else "?"
    ax.set_ylabel("pipe time / tensor time")
    ax.set_title(f"kernel {target}: pipe lower bounds relative to mma.sync time", fontsize=9)
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    return _with_titles(fig, title, subtitle)


def plot_ceilings(ceil: pd.DataFrame, title: str | None = None,
                  subtitle: str | None = None) -> Figure:
    """Three-GPU roofline: attainable tensor (mma.sync) FLOP/s vs FLOP per byte for DRAM and
    shared memory, plus the FP32 roof; log-log."""
    fig = Figure(figsize=(5.5, 4.0), dpi=150)
    ax = fig.subplots()
    ai = np.logspace(-1, 4, 200)
    for r in ceil.to_dict("records"):
        c = _color(r["gpu_key"])
        ax.plot(ai, np.minimum(r["tensor_flops"], ai * r["dram_bps"]), color=c, lw=1.5,
                label=f"{r['gpu']} (DRAM)", gid=f"ceiling:{r['gpu_key']}:dram")
        ax.plot(ai, np.minimum(r["tensor_flops"], ai * r["smem_bps"]), color=c, lw=1, ls="--",
                gid=f"ceiling:{r['gpu_key']}:smem")
        ax.axhline(r["fp32_flops"], color=c, lw=0.8, ls=":", gid=f"ceiling:{r['gpu_key']}:fp32")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FLOP per byte (solid: DRAM, dashed: shared memory)")
    ax.set_ylabel("FLOP/s (mma.sync roof; dotted: FP32)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _with_titles(fig, title, subtitle)


def issue_gap_titles(recs: list[dict]) -> tuple[str, str]:
    """Title and subtitle of the gap figure: shape, clocks, where the observed numbers come
    from, the per-GPU errors, and that nothing is fitted."""
    summ = {r["gpu_key"]: r for r in recs if r["kind"] == "summary"}
    clocks = {r["gpu_key"]: r["clock_mhz"] for r in recs if r["kind"] == "row"}
    parts = [f"{k} @ {clocks.get(k, math.nan):.0f} MHz: " + (
        f"MAE {s['mae_pp']:.1f} pp" if not math.isnan(s["mae_pp"]) else f"cycles MAPE {s['cycles_mape_pct']:.1f} %")
        for k, s in summ.items()]
    return ("Kernels 1-7 vs FlashAttention-2: in-order issue model over each GPU's own SASS (nothing fitted)",
            "B16 H16 S4096 d128 fp16, non-causal; bars: A100 / RTX 3090 published % of FA2 at the series' "
            "locked clocks, H200 measured (Nsight Compute cycles of its reports); labels: predicted - observed, pp; "
            "last panel: H200 predicted / measured SM cycles \u00b7 " + "; ".join(parts)
            + "; fitted parameters: none")


def plot_issue_gap(records: list[dict], title: str | None = None, subtitle: str | None = None) -> Figure:
    """The issue model (flashprof.analysis.gap.issue_report records): per GPU with published numbers,
    observed % of FA2 per kernel (bars) and predicted (markers); for a GPU with measured
    reports, predicted / measured SM cycles per kernel. gids: ``issue:<gpu_key>:<obs|pred|cycles>``."""
    rows = [r for r in records if r.get("kind") == "row" and r["target"] != "ref"
            and r.get("seq", 4096) == 4096]
    pub = [k for k in dict.fromkeys(r["gpu_key"] for r in rows)
           if any(not math.isnan(r["observed_pct"]) for r in rows if r["gpu_key"] == k)]
    meas = [k for k in dict.fromkeys(r["gpu_key"] for r in rows)
            if any(not math.isnan(r["measured_cycles"]) for r in rows if r["gpu_key"] == k)]
    # a GPU with measured reports gets both panels: % of FA2 and predicted / measured cycles
    panels = [(k, "pct") for k in pub] + [(k, "cycles") for k in meas]
    if not panels:
        raise ValueError("no issue-model rows with an observed % of FA2 or measured cycles")
    fig = Figure(figsize=(3.6 * len(panels), 3.4))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (key, what) in zip(axes, panels):
        sub = sorted((r for r in rows if r["gpu_key"] == key), key=lambda r: r["target"])
        x = np.arange(len(sub))
        labels = [r["target"] for r in sub]
        clock = sub[0]["clock_mhz"]
        name = str(sub[0].get("gpu") or key).removeprefix("NVIDIA ")
        if what == "pct":
            obs = [r["observed_pct"] for r in sub]
            pred = [r["pred_pct"] for r in sub]
            source = "measured (ncu)" if str(sub[0].get("observed_source") or "").startswith("measured") else "published"
            ax.bar(x, obs, color=_color(key), alpha=0.35, label=source, gid=f"issue:{key}:obs")
            ax.plot(x, pred, "o", color=_color(key), label="issue model", gid=f"issue:{key}:pred")
            for xi, (o, p) in enumerate(zip(obs, pred)):
                ax.annotate(f"{p - o:+.0f}", (xi, max(o, p)), textcoords="offset points", xytext=(0, 3),
                            ha="center", fontsize=7)
            ax.axhline(100, color="#555555", lw=0.8, ls="--")
            ax.set_ylabel("% of FlashAttention-2 (same GPU)")
            ax.set_ylim(0, 125)
            ax.set_title(f"{name} at {clock:.0f} MHz: % of FA2", fontsize=9)
        else:
            ratio = [r["pred_cycles"] / r["measured_cycles"] for r in sub]
            ax.bar(x, ratio, color=_color(key), alpha=0.7, gid=f"issue:{key}:cycles")
            for xi, v in enumerate(ratio):
                ax.annotate(f"{v:.2f}", (xi, v), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
            ax.axhline(1.0, color="#555555", lw=0.8, ls="--")
            ax.set_ylabel("predicted / measured SM cycles")
            ax.set_ylim(0, 1.3)
            ax.set_title(f"{name} at {clock:.0f} MHz: cycles vs ncu", fontsize=9)
        ax.set_xticks(x, labels)
        ax.set_xlabel("kernel")
        if what == "pct":
            ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return _with_titles(fig, title, subtitle)

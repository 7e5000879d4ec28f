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

from flashprof.analysis.gap.legacy_pipes.pipe_table import MODEL_PIPES  # noqa: E402
from flashprof.kernels.gpus import GPUS  # noqa: E402

GPU_COLORS = {g.model_key: g.colour for g in GPUS}
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


def _kernel_order(t: str) -> tuple:
    return (0, int(t), "") if t.isdigit() else (0, int(t[:-3]), t) if t.endswith("mma") and t[:-3].isdigit() else (1, 0, t)


def _tick(r: dict) -> str:
    """x label: kernel 7 names its tensor path where both forms are shown (H200)."""
    if r["target"].endswith("mma") and r["target"][:-3].isdigit():
        return f"{r['target'][:-3]}\nmma.sync"
    return f"{r['target']}\nwgmma" if "wgmma" in str(r.get("sass") or "") else r["target"]


def issue_gap_titles(recs: list[dict]) -> tuple[str, str]:
    """Title and subtitle of the gap figure: shape, clocks, where the observed numbers come
    from, the per-GPU errors (series binaries; H200: flashprof's), and that nothing is fitted."""
    summ = {}
    for r in recs:
        if r["kind"] == "summary" and (r.get("binary") == "series" or r["gpu_key"] not in summ):
            summ[r["gpu_key"]] = r
    clocks = {r["gpu_key"]: r["clock_mhz"] for r in recs if r["kind"] == "row"}
    parts = []
    for k, s in summ.items():
        txt = f"{k} @ {clocks.get(k, math.nan):.0f} MHz: "
        if not _nan(s.get("mae_pp")):
            txt += f"MAE {s['mae_pp']:.1f}"
            if not _nan(s.get("mae_sd_pp")):
                txt += f" \u00b1 {s['mae_sd_pp']:.1f}"
            txt += f" pp over {s['n']}"
            if not _nan(s.get("baseline_100_mae_pp")):
                txt += f" (all-100 % baseline {s['baseline_100_mae_pp']:.1f})"
        else:
            txt += f"cycles MAPE {s['cycles_mape_pct']:.1f} %"
        parts.append(txt)
    return ("Kernels 1-16 vs FlashAttention-2: in-order issue model over the measured SASS (nothing fitted)",
            "B16 H16 S4096 d128 fp16, non-causal. A100 (1110 MHz) / RTX 3090 (1680 MHz): bars = the series' published "
            "% of FA2, filled dots = model on the series' own sm_80 binaries (\u00b1 sd over seeds), hollow = "
            "flashprof's kernels 1-7 (never measured there); H200: flashprof's kernels vs its own ncu reports "
            "(7 = the shipped wgmma kernel, 7mma its mma.sync form). "
            + "; ".join(parts) + "; fitted parameters: none")


def _nan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def plot_issue_gap(records: list[dict], title: str | None = None, subtitle: str | None = None) -> Figure:
    """The issue model (flashprof.analysis.gap.issue_report records): per GPU with observed
    numbers, observed % of FA2 per kernel (bars), predicted for the measured binaries (filled
    markers, sd as error bars) and for flashprof's own kernels where they are a separate set
    (hollow); for a GPU with measured reports, predicted / measured SM cycles per kernel.
    gids: ``issue:<gpu_key>:<obs|pred|pred_flashprof|cycles>``."""
    rows = [r for r in records if r.get("kind") == "row" and r["target"] != "ref"
            and r.get("seq", 4096) == 4096]
    keys = list(dict.fromkeys(r["gpu_key"] for r in rows))

    def main_set(k):
        sub = [r for r in rows if r["gpu_key"] == k]
        if any(r.get("binary") == "series" for r in sub):
            return [r for r in sub if r.get("binary") == "series"], [r for r in sub if r.get("binary") == "flashprof"]
        return sub, []
    pub = [k for k in keys if any(not _nan(r["observed_pct"]) for r in main_set(k)[0])]
    meas = [k for k in keys if any(not _nan(r.get("measured_cycles")) for r in rows if r["gpu_key"] == k)]
    panels = [(k, "pct") for k in pub] + [(k, "cycles") for k in meas]
    if not panels:
        raise ValueError("no issue-model rows with an observed % of FA2 or measured cycles")
    wide = [p for p in panels if len(main_set(p[0])[0]) > 8 and p[1] == "pct"]
    narrow = [p for p in panels if p not in wide]
    ncols = max(len(wide), 1) if wide else len(narrow)
    fig = Figure(figsize=(6.6 * ncols, 3.9 * (2 if wide and narrow else 1)))
    if wide and narrow:
        grid = fig.add_gridspec(2, 2 * ncols)
        axes = [fig.add_subplot(grid[0, 2 * i:2 * i + 2]) for i in range(len(wide))]
        per = max(1, (2 * ncols) // len(narrow))
        axes += [fig.add_subplot(grid[1, i * per:(i + 1) * per]) for i in range(len(narrow))]
    else:
        axes = list(fig.subplots(1, len(panels), squeeze=False)[0])
    for ax, (key, what) in zip(axes, wide + narrow):
        sub, ours = main_set(key)
        sub = sorted(sub, key=lambda r: _kernel_order(r["target"]))
        x = np.arange(len(sub))
        labels = [_tick(r) for r in sub]
        clock = sub[0]["clock_mhz"]
        name = str(sub[0].get("gpu") or key).removeprefix("NVIDIA ").removeprefix("GeForce ")
        if what == "pct":
            obs = [r["observed_pct"] for r in sub]
            pred = [r.get("pred_pct_of_fa2", r.get("pred_pct")) for r in sub]
            sd = [0.0 if _nan(r.get("pred_pct_sd")) else r["pred_pct_sd"] for r in sub]
            source = "measured (ncu)" if str(sub[0].get("observed_source") or "").startswith("measured") else "published"
            series = sub[0].get("binary") == "series"
            ax.bar(x, obs, color=_color(key), alpha=0.3, label=source, gid=f"issue:{key}:obs")
            eb = ax.errorbar(x, pred, yerr=sd, fmt="o", ms=5, color=_color(key), capsize=2, lw=1,
                             label="model, series binary" if series else "model")
            eb.lines[0].set_gid(f"issue:{key}:pred")
            if ours:
                at = {r["target"]: i for i, r in enumerate(sub)}
                op = [(at[r["target"]] + 0.28, r.get("pred_pct_of_fa2", r.get("pred_pct"))) for r in ours if r["target"] in at]
                ax.plot([p[0] for p in op], [p[1] for p in op], "o", mfc="none", mec="#333333", ms=5,
                        label="model, flashprof kernel", gid=f"issue:{key}:pred_flashprof")
            for xi, (o, p) in enumerate(zip(obs, pred)):
                if not (_nan(o) or _nan(p)):
                    ax.annotate(f"{p - o:+.0f}", (xi, max(o, p) + 2), textcoords="offset points", xytext=(0, 2),
                                ha="center", fontsize=7)
            ax.axhline(100, color="#555555", lw=0.8, ls="--")
            ax.set_ylabel("% of FlashAttention-2 (same GPU)")
            top = max([v for v in obs + pred if not _nan(v)], default=100.0)
            ax.set_ylim(0, max(130.0, 10 * math.ceil((top + 12) / 10)))  # the wgmma kernel 7 is near 150 %
            ax.set_title(f"{name} at {clock:.0f} MHz, S=4096 d=128: % of FA2 (labels: predicted \u2212 observed, pp)",
                         fontsize=9)
            ax.legend(fontsize=7, loc="upper left", ncol=3, framealpha=0.9)
        else:
            sub = sorted((r for r in rows if r["gpu_key"] == key and not _nan(r.get("measured_cycles"))),
                         key=lambda r: _kernel_order(r["target"]))
            x = np.arange(len(sub))
            labels = [_tick(r) for r in sub]
            ratio = [r["pred_cycles"] / r["measured_cycles"] for r in sub]
            ax.bar(x, ratio, color=_color(key), alpha=0.7, gid=f"issue:{key}:cycles")
            for xi, v in enumerate(ratio):
                ax.annotate(f"{v:.2f}", (xi, v), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
            ax.axhline(1.0, color="#555555", lw=0.8, ls="--")
            ax.set_ylabel("predicted / measured SM cycles")
            ax.set_ylim(0, max(1.3, 1.12 * max(ratio, default=1.0)))  # every bar and its label inside
            ax.set_title(f"{name} at {clock:.0f} MHz, S=4096 d=128: cycles vs ncu (flashprof kernels)", fontsize=9)
        ax.set_xticks(x, labels)
        ax.set_xlabel("kernel")
    fig.tight_layout()
    return _with_titles(fig, title, subtitle)


def plot_series_here(on: dict, off: dict, published: dict | None = None, title: str | None = None,
                     subtitle: str | None = None) -> Figure:
    """The series' own binaries measured on a GPU at hand (analysis/gap/series_measured.py):
    left, % of FA2 per kernel (bars: measured; filled dots: the model with the measured HMMA
    interplay, sd as error bars; hollow: without it; crosses: another GPU's published value of
    the same step, ``published`` = {listing: %}, only for the configurations that GPU ran); right, predicted / measured SM cycles
    with and without the interplay. gids ``series_here:<obs|pred|pred_off|published|cycles|cycles_off>``."""
    rows = [r for r in on["rows"] if r["listing"] != "ref"] + [r for r in on["rows"] if r["listing"] == "ref"]
    off_by = {r["listing"]: r for r in off["rows"]}
    key = on.get("gpu_key", "")
    x = np.arange(len(rows))
    labels = ["FA2" if r["listing"] == "ref" else r["listing"].replace("_64_64_swizzling", "").replace("_A100", "")
              .replace("_RTX3090", "r") for r in rows]
    fig = Figure(figsize=(13.2, 4.2))
    a1, a2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    obs = [r["measured_pct"] for r in rows]
    pred = [r["predicted_pct"] for r in rows]
    sd = [0.0 if _nan(r.get("sd_pp")) else r["sd_pp"] for r in rows]
    a1.bar(x, obs, color=_color(key), alpha=0.3, label="measured (ncu cycles)", gid="series_here:obs")
    eb = a1.errorbar(x, pred, yerr=sd, fmt="o", ms=5, color=_color(key), capsize=2, lw=1,
                     label="model, with the HMMA interplay")
    eb.lines[0].set_gid("series_here:pred")
    a1.plot(x + 0.25, [off_by[r["listing"]]["predicted_pct"] for r in rows], "o", mfc="none", mec="#333333", ms=5,
            label="model, without it", gid="series_here:pred_off")
    if published:
        px = [(i, published[r["listing"]]) for i, r in enumerate(rows) if published.get(r["listing"]) is not None]
        a1.plot([p[0] for p in px], [p[1] for p in px], "x", color="#1f77b4", ms=6, mew=1.5,
                label="A100 published (same step)", gid="series_here:published")
    for xi, (o, p) in enumerate(zip(obs, pred)):
        if rows[xi]["listing"] != "ref":
            a1.annotate(f"{p - o:+.0f}", (xi, max(o, p) + 2), textcoords="offset points", xytext=(0, 2),
                        ha="center", fontsize=7)
    a1.axhline(100, color="#555555", lw=0.8, ls="--")
    a1.set_ylim(0, 10 * math.ceil((max(obs + pred) + 22) / 10))
    a1.set_ylabel(f"% of FlashAttention-2 (same {on['gpu'].upper()})")
    a1.set_title("% of FA2 per kernel (labels: predicted \u2212 measured, pp)", fontsize=9)
    a1.legend(fontsize=7, loc="upper left", ncol=2, framealpha=0.9)
    a1.set_xticks(x, labels, fontsize=8)
    a1.set_xlabel("series kernel (from 8 on: A100 configuration; r: RTX 3090 configuration, its own FA2 run)"
                  if any(lab.endswith("r") for lab in labels) else "series kernel (A100 configuration from 8 on)")
    w = 0.38
    c_on = [1 + r["cycles_error_pct"] / 100 for r in rows]
    c_off = [1 + off_by[r["listing"]]["cycles_error_pct"] / 100 for r in rows]
    a2.bar(x - w / 2, c_on, w, color=_color(key), alpha=0.8, label="with the interplay", gid="series_here:cycles")
    a2.bar(x + w / 2, c_off, w, color="#bbbbbb", label="without", gid="series_here:cycles_off")
    a2.axhline(1.0, color="#555555", lw=0.8, ls="--")
    lo, hi = min(c_on + c_off), max(c_on + c_off)
    a2.set_ylim(min(0.8, lo - 0.03), max(1.15, hi + 0.03))
    mape = lambda cs: 100 * sum(abs(c - 1) for c in cs) / len(cs)
    a2.set_title(f"predicted / measured SM cycles (MAPE {mape(c_on):.1f} % with, {mape(c_off):.1f} % without)",
                 fontsize=9)
    a2.set_ylabel("predicted / measured SM cycles")
    a2.set_xticks(x, labels, fontsize=8 if len(rows) <= 18 else 7, rotation=0 if len(rows) <= 18 else 90)
    a2.set_xlabel("series kernel")
    a2.legend(fontsize=7, loc="upper left", framealpha=0.9)
    fig.tight_layout()
    return _with_titles(fig, title, subtitle)

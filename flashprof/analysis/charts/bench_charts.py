"""Charts of the kernel series' own data: bench progression, SASS opcode deltas, autotune sweep."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from flashprof.analysis.charts import labels
from flashprof.analysis.charts.identity import ANCHORS, KERNEL_NAMES, kernel_color, kernel_label, kernel_rank
from flashprof.analysis.charts.style import new_fig as _new_fig


# --------------------------------------------------------------------------- bench
def plot_progression(bench: pd.DataFrame, headline: pd.DataFrame, *, gpu: str = "", method: str = "",
                     batch: str = "", pct_col: str = "pct_of_ref") -> Figure:
    """Left: TFLOP/s vs sequence length per target. Middle: % of FA2 at each S (from the
    bench's ``pct_col``), focused on the kernels near FA2; targets off that scale are
    named at the edge. Right: headline % of FA2 (harmonic mean over S) and at one S.

    ``bench``: rows target, seq, tflops, ``pct_col``. ``headline``: rows target,
    hm_tflops, pct_of_ref_hm, optionally pct_at_seq/at_seq (from ``flashprof.analysis.stages.bench_tables``)."""
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

    # ---- % of FA2 per S, scale fitted to the targets between 50 % and 160 % (the fastest anchor,
    # cuDNN on Hopper at ~170 %, is named at the edge instead of flattening the rest)
    has_pct = pct_col in bench.columns
    if has_pct:
        per = {t: bench[bench["target"].astype(str) == t].sort_values("seq") for t in targets}
        near = [t for t in targets if t != "ref" and 50 <= per[t][pct_col].median() <= 160]
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
        pos = labels.spread_labels(ends, 0.045 * (hi - lo))
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


# --------------------------------------------------------------------------- autotune
_CATEGORY_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
                    "#1f78b4", "#b2df8a")


def plot_autotune(table: pd.DataFrame, importance: pd.DataFrame, prune: pd.DataFrame | None = None, *,
                  color_by: str | None = None, context: str = "", value: str = "pct_of_ref_hm") -> Figure:
    """Autotune sweep: every timed candidate ranked by harmonic-mean TFLOP/s (bars, % of
    FA2), coloured by the parameter that explains most of the spread (``importance``'s
    first row unless ``color_by``); the winner and the seed's RTX 3090 configuration
    marked. Side panels: the spread each parameter explains, static pruning counts.

    ``table``/``importance``/``prune``: ``flashprof.analysis.stages.bench_tables.autotune_table`` /
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
        mark(seed.iloc[0], "series' published RTX 3090 winner", "autotune:seed", 95.5, "#b2182b")
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

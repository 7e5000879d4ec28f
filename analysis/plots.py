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

import matplotlib

matplotlib.use("Agg")  # figures are files; never open a window

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from .stalls import REASON_FAMILY, STALL_FAMILIES, STALL_REASONS  # noqa: E402

DPI = 150
KERNEL_IDS = tuple(str(i) for i in range(1, 8))
ANCHORS = ("ref", "cudnn")
KERNEL_ORDER = KERNEL_IDS + ANCHORS
KERNEL_NAMES = {
    "1": "base", "2": "swizzling", "3": "eager K/V loads", "4": "fragment interleaving",
    "5": "register double buffering", "6": "FP32 instruction fusion", "7": "auto-tuned",
    "ref": "FA2 (PyTorch flash backend)", "cudnn": "cuDNN SDPA (Hopper wgmma)",
}
_ANCHOR_COLORS = {"ref": "#111111", "cudnn": "#d62728"}
_OTHER_COLOR = "#8c8c8c"

CONVENTION_NOTE = ("Convention: Nsight Compute hierarchical roofline definitions (L1, L2, DRAM as in "
                   "its SpeedOfLight_HierarchicalTensorRooflineChart; tensor FLOPs on both axes). "
                   "Shared memory (128 B x smem wavefronts) is a flashprof level, not part of "
                   "Nsight Compute's chart.")

LEVEL_MARKERS = {"L1": "o", "L2": "s", "DRAM": "^", "shared memory": "D"}
LEVEL_LABELS = {"L1": "L1", "L2": "L2", "DRAM": "DRAM", "shared memory": "shared mem.\u2020"}
_LEVEL_LINESTYLES = {"L1": "-", "L2": "-", "DRAM": "-", "shared memory": ":"}

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
PIPE_LABELS = {"tensor": "tensor (HMMA)", "fma": "FMA (FP32)", "alu": "ALU", "xu": "XU (MUFU)",
               "lsu": "LSU", "issue_active": "issue slots"}


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


def launches(frame: pd.DataFrame) -> pd.DataFrame:
    """Unique (report, range_idx, launch) rows of ``frame`` in kernel order, with key,
    label and a series id; a report with several launches gets '#launch' in its label."""
    cols = [c for c in ("report", "range_idx", "launch", "variant") if c in frame.columns]
    u = frame.drop_duplicates(["report", "range_idx", "launch"])[cols].copy()
    u["key"] = [kernel_key(r, v) for r, v in zip(u["report"], u.get("variant", [None] * len(u)))]
    multi = u["report"].duplicated(keep=False)
    u["label"] = [kernel_label(k) + (f" #{n}" if m else "") for k, n, m in zip(u["key"], u["launch"], multi)]
    u["short"] = [kernel_label(k, short=True) + (f"#{n}" if m else "") for k, n, m in zip(u["key"], u["launch"], multi)]
    u["sid"] = [f"{r}#{n}" for r, n in zip(u["report"], u["launch"])]
    u["_rank"] = [kernel_rank(k) for k in u["key"]]
    return u.sort_values(["_rank", "report", "launch"]).drop(columns="_rank").reset_index(drop=True)


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


def _new_fig(w: float, h: float) -> Figure:
    return Figure(figsize=(w, h), dpi=DPI)


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


def plot_roofline(roof: pd.DataFrame, ident: pd.DataFrame, reports=None, *, title: str | None = None,
                  fp32_points: bool = False) -> Figure:
    """Hierarchical roofline (log-log, TFLOP/s vs FLOP/byte) of the selected reports.

    Each launch is one series: its L1, L2, DRAM and shared-memory points (same FLOP/s,
    different intensity) joined by a line in the kernel's colour. ``fp32_points`` adds
    the FP32 FLOP/s points (hollow) of the same launches."""
    sel = roof if reports is None else roof[roof["report"].isin(list(reports))]
    fig = _new_fig(11.0, 6.6)
    ax = fig.add_axes([0.07, 0.17, 0.60, 0.71])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ceil = _roof_ceilings(sel)
    L = launches(sel)

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
    x_lo = 10 ** math.floor(math.log10(min(xs + ridges + [1.0]) / 3))
    x_hi = 10 ** math.ceil(math.log10(max(xs + ridges + [10.0]) * 3))
    y_hi = top * 2.2
    y_lo = 10 ** math.floor(math.log10(min(ys + [top / 1e3]) / 3))
    TF = 1e12
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo / TF, y_hi / TF)

    # ---- compute roofs: horizontal, from the ridge with the fastest level to the right
    fastest = max(bws.values()) if bws else None
    roof_style = {"tensor:mma.sync": ("#333333", "-", "tensor, mma.sync (kernels 1-7, FA2)"),
                  "tensor:wgmma": (kernel_color("cudnn"), "--", "tensor, wgmma (cuDNN only)"),
                  "fp32": ("#555555", "-.", "FP32 (FFMA)")}
    for kind, (color, ls, name) in roof_style.items():
        if kind not in ceil:
            continue
        v = ceil[kind]
        x0 = v / fastest if fastest else x_lo
        ax.plot([x0, x_hi], [v / TF, v / TF], color=color, ls=ls, lw=1.6, gid=f"ceiling:{kind}", zorder=2)
        ax.text(x_hi / 1.15, v / TF * 1.06, f"{name}: {v / TF:.0f} TFLOP/s", ha="right", va="bottom",
                fontsize=7.5, color=color, gid=f"ceiling-label:{kind}")

    # ---- bandwidth roofs: slope from the left edge to the ridge with the top roof
    shown: list[tuple[float, list[str]]] = []
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
        ax.plot([ridge], [top / TF], marker="|", ms=7, color="#4d4d4d", zorder=2)
    # label angle: a slope of one decade per decade, in display space
    p0 = ax.transData.transform((x_lo, 1.0))
    p1 = ax.transData.transform((x_lo * 10, 10.0))
    angle = math.degrees(math.atan2(p1[1] - p0[1], p1[0] - p0[0]))
    for bw, levels in shown:
        names = " = ".join(LEVEL_LABELS[lv] for lv in levels)
        ridge = top / bw
        xt = x_lo * 2.2
        ax.text(xt, bw * xt / TF * 1.25, f"{names} {bw / 1e12:.3g} TB/s (ridge {ridge:.3g} FLOP/B)",
                rotation=angle, rotation_mode="anchor", fontsize=7.2, color="#333333",
                ha="left", va="bottom", gid=f"ceiling-label:bw:{'+'.join(levels)}")

    # ---- one series per launch
    for rec in L.to_dict("records"):
        s = sel[(sel["report"] == rec["report"]) & (sel["launch"] == rec["launch"])
                & (sel["range_idx"] == rec["range_idx"])].sort_values("level")
        color = kernel_color(rec["key"])
        pts = [(lv, a, f) for lv, a, f in zip(s["level"].astype(str), s["ai_tensor"], s["flops_tensor"]) if _finite(a, f)]
        if pts:
            order = sorted(pts, key=lambda p: p[1])
            ax.plot([p[1] for p in order], [p[2] / TF for p in order], color=color, lw=1.4, alpha=0.85,
                    gid=f"series:{rec['sid']}", zorder=4)
            for lv, a, f in pts:
                ax.plot([a], [f / TF], marker=LEVEL_MARKERS.get(lv, "o"), ms=7, color=color,
                        mec="white" if lv != "shared memory" else color, mew=0.8,
                        mfc=color if lv != "shared memory" else "white", ls="none", zorder=5)
        if fp32_points:
            fpts = [(lv, a, f) for lv, a, f in zip(s["level"].astype(str), s["ai_fp32"], s["flops_fp32"]) if _finite(a, f)]
            if fpts:
                order = sorted(fpts, key=lambda p: p[1])
                ax.plot([p[1] for p in order], [p[2] / TF for p in order], color=color, lw=1.0, ls="--",
                        alpha=0.7, gid=f"series-fp32:{rec['sid']}", zorder=4)
                for lv, a, f in fpts:
                    ax.plot([a], [f / TF], marker=LEVEL_MARKERS.get(lv, "o"), ms=6, mfc="white", mec=color,
                            ls="none", zorder=5)

    ax.set_xlabel("arithmetic intensity (tensor FLOP / byte at that level)")
    ax.set_ylabel("performance (TFLOP/s)")
    ax.grid(True, which="major", color="#e0e0e0", lw=0.6)
    ax.grid(True, which="minor", color="#f2f2f2", lw=0.4)
    ax.set_axisbelow(True)

    # ---- legends outside the data
    kh = [Line2D([], [], color=kernel_color(k), lw=2, marker="o", ms=5, label=lab)
          for k, lab in zip(L["key"], L["label"])]
    leg1 = ax.legend(handles=kh, title="kernel", loc="upper left", bbox_to_anchor=(1.02, 1.0),
                     fontsize=8, title_fontsize=8.5, frameon=False)
    ax.add_artist(leg1)
    lh = [Line2D([], [], ls="none", marker=m, color="#555555", mfc="white" if lv == "shared memory" else "#555555",
                 ms=6, label=LEVEL_LABELS[lv]) for lv, m in LEVEL_MARKERS.items()]
    if fp32_points:
        lh.append(Line2D([], [], ls="--", marker="o", mfc="white", color="#555555", label="FP32 FLOP/s (hollow)"))
    ax.legend(handles=lh, title="memory level", loc="lower left", bbox_to_anchor=(1.02, 0.0),
              fontsize=8, title_fontsize=8.5, frameon=False)

    fig.suptitle(title or "Hierarchical roofline", x=0.07, ha="left", fontsize=12, fontweight="bold", y=0.975)
    fig.text(0.07, 0.905, context_line(ident, sel, reports=sel["report"].unique()), fontsize=9, color="#333333")
    caption = (CONVENTION_NOTE + "\n\u2020 shared memory: bytes the shared pipe spent (bank-conflicted "
               "wavefronts carry less useful data). L1 intensity is inflated for cp.async.cg/TMA kernels "
               "(they bypass L1); L2 is the most telling level. Roofs: each report's own peak x its measured clock")
    if len(sel["report"].unique()) > 1:
        caption += " (highest across reports drawn)."
    else:
        caption += "."
    fig.text(0.07, 0.015, caption, fontsize=7, color="#444444", va="bottom", wrap=True)
    return fig


# --------------------------------------------------------------------------- stalls
def _reason_style(reason: str) -> dict:
    fam = REASON_FAMILY.get(reason, "other")
    style = {"color": REASON_COLORS.get(reason, "#cccccc"), "edgecolor": "white", "linewidth": 0.4}
    if fam == SMEM_FAMILY:
        style.update(hatch=SMEM_HATCH, edgecolor="#dbe9f6")
    return style


def plot_stalls(stall_frame: pd.DataFrame, ident: pd.DataFrame | None = None, roof: pd.DataFrame | None = None,
                *, value: str = "per_issue") -> Figure:
    """Stacked bars per launch of the stall reasons (canonical order, fixed colours)."""
    L = launches(stall_frame)
    reasons = list(stall_frame["reason"].cat.categories) if hasattr(stall_frame["reason"], "cat") \
        else list(dict.fromkeys(stall_frame["reason"]))
    present = [r for r in reasons if (stall_frame.loc[stall_frame["reason"] == r, value].fillna(0) > 0).any()]
    fig = _new_fig(11.0, 6.2)
    ax = fig.add_axes([0.075, 0.2, 0.63, 0.68])
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
        ax.text(x[i], bottom, f"{bottom:.2f}" if bottom else "n/a", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [lab.replace(" ", "\n", 1) for lab in L["label"]], fontsize=7.5)
    for t, k in zip(ax.get_xticklabels(), L["key"]):
        t.set_color(kernel_color(k) if k != "7" else "#6b8e23")
    ax.set_ylabel("warp cycles per issued instruction\n(avg. warps in each state per issue)" if value == "per_issue"
                  else "share of warp cycles")
    ax.set_ylim(0, max(totals + [1.0]) * 1.1)
    ax.grid(True, axis="y", color="#e6e6e6", lw=0.6)
    ax.set_axisbelow(True)
    ax.spines[["top", "right"]].set_visible(False)

    handles = []
    for fam, members in STALL_FAMILIES.items():
        mem = [r for r in members if r in present]
        if not mem:
            continue
        handles.append(Patch(color="none", label=fam))
        for r in mem:
            lab = r + (" (issuing, not a stall)" if r == "selected" else "")
            handles.append(Patch(label=lab, **{k: v for k, v in _reason_style(r).items() if k != "linewidth"}))
    extra = [r for r in present if r not in REASON_FAMILY]
    if extra:
        handles.append(Patch(color="none", label="other"))
        handles += [Patch(label=r, **_reason_style(r)) for r in extra]
    leg = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.02), fontsize=7.5,
                    frameon=False, handlelength=1.6, title="stall reason by family", title_fontsize=8.5)
    fams = set(STALL_FAMILIES) | {"other"}
    for t, h in zip(leg.get_texts(), handles):
        if t.get_text() in fams and h.get_facecolor()[3] == 0:
            t.set_fontweight("bold")
    fig.suptitle("Warp stall reasons per kernel (Nsight Compute WarpStateStats)", x=0.075, ha="left",
                 fontsize=12, fontweight="bold", y=0.975)
    if ident is not None:
        fig.text(0.075, 0.905, context_line(ident, roof, reports=L["report"].unique()), fontsize=9, color="#333333")
    fig.text(0.075, 0.015, "Bar height = sum over reasons of smsp__average_warps_issue_stalled_<reason>_per_issue_active"
             " = average warp latency per issued instruction (includes 'selected', the issuing warp).\n"
             "Hatched blue = shared-memory/MIO family (mio_throttle: MIO queue full; short_scoreboard: waiting on "
             "shared memory/ldmatrix/MUFU results).", fontsize=7, color="#444444")
    return fig


def plot_stall_lines(source: pd.DataFrame, top: pd.DataFrame, *, title: str, context: str = "",
                     sass_width: int = 44) -> Figure:
    """Top SASS instructions by stall samples, stacked by PC-sampling reason."""
    n = max(len(top), 1)
    fig = _new_fig(11.0, 1.6 + 0.36 * n)
    ax = fig.add_axes([0.38, 0.9 / (1.6 + 0.36 * n) + 0.04, 0.40, 1 - (1.5 / (1.6 + 0.36 * n)) - 0.04])
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
        labels = []
        for rec in top.to_dict("records"):
            s = rec["sass"] if len(rec["sass"]) <= sass_width else rec["sass"][: sass_width - 1] + "\u2026"
            loc = rec.get("location") or ""
            if loc:
                f, _, ln = loc.rpartition(":")
                loc = f"{f.rsplit('/', 1)[-1]}:{ln}"
            labels.append(f"+{int(rec['pc_offset']):#07x}  {s}" + (f"\n{loc}" if loc else ""))
        ax.set_yticks(y, labels, fontsize=7, family="monospace")
        ax.invert_yaxis()
        ax.set_xlabel("stall samples (PC sampling, excl. 'selected'); label: share of all stall samples")
        ax.set_xlim(0, ax.get_xlim()[1] * 1.12)
        ax.grid(True, axis="x", color="#e6e6e6", lw=0.6)
        ax.set_axisbelow(True)
        ax.spines[["top", "right"]].set_visible(False)
        canon_used = [r for r in canon if r in used]
        ax.legend(handles=[Patch(label=r, **{k: v for k, v in _reason_style(r).items() if k != "linewidth"})
                           for r in canon_used],
                  loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize=7.5, frameon=False, title="reason",
                  title_fontsize=8)
    fig.suptitle(title, x=0.02, ha="left", fontsize=11.5, fontweight="bold", y=0.995, va="top")
    if context:
        fig.text(0.02, 1 - 0.42 / (1.6 + 0.36 * n), context, fontsize=8.5, color="#333333", va="top")
    return fig


# --------------------------------------------------------------------------- pipes
def plot_pipes(pipe_frame: pd.DataFrame, ident: pd.DataFrame | None = None, roof: pd.DataFrame | None = None,
               names=("tensor", "fma", "alu", "xu", "lsu", "issue_active")) -> Figure:
    """Grouped bars: one group per pipe (+ issue slots), one bar per launch (kernel colours)."""
    sub = pipe_frame[pipe_frame["category"].isin(["utilization", "issue"])]
    L = launches(sub)
    fig = _new_fig(11.0, 5.4)
    ax = fig.add_axes([0.07, 0.2, 0.72, 0.66])
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
def plot_progression(bench: pd.DataFrame, headline: pd.DataFrame, *, gpu: str = "", method: str = "") -> Figure:
    """Left: TFLOP/s vs sequence length per target. Right: % of FA2 (harmonic mean over S).

    ``bench``: rows target, seq, tflops (one per target and S). ``headline``: rows target,
    hm_tflops, pct_of_ref_hm (from the figures driver)."""
    fig = _new_fig(12.0, 5.6)
    ax = fig.add_axes([0.06, 0.19, 0.44, 0.66])
    bx = fig.add_axes([0.67, 0.19, 0.30, 0.66])
    targets = sorted(bench["target"].astype(str).unique(), key=kernel_rank)
    for t in targets:
        s = bench[bench["target"].astype(str) == t].sort_values("seq")
        anchor = t in ANCHORS
        ax.plot(s["seq"], s["tflops"], color=kernel_color(t), marker="o", ms=4, lw=2.0 if anchor else 1.5,
                ls="--" if anchor else "-", label=kernel_label(t), gid=f"bench:{t}")
    ax.set_xscale("log", base=2)
    seqs = sorted(bench["seq"].unique())
    ax.set_xticks(seqs, [str(int(s)) for s in seqs])
    ax.minorticks_off()
    ax.set_xlabel("sequence length S")
    ax.set_ylabel("TFLOP/s (4·B·H·S²·d / median time)")
    ax.set_ylim(0, bench["tflops"].max() * 1.08)
    ax.grid(True, color="#e6e6e6", lw=0.6)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7.5, frameon=False)

    h = headline.copy()
    h["target"] = h["target"].astype(str)
    h = h.sort_values("target", key=lambda c: c.map(kernel_rank))
    y = np.arange(len(h))
    bx.barh(y, h["pct_of_ref_hm"], color=[kernel_color(t) for t in h["target"]], height=0.7, gid="headline")
    for yi, (v, tf) in enumerate(zip(h["pct_of_ref_hm"], h["hm_tflops"])):
        bx.text(v + 2, yi, f"{v:.1f}%  ({tf:.0f} TF/s)", va="center", fontsize=7.5)
    bx.axvline(100, color=kernel_color("ref"), lw=1.0, ls="--")
    bx.text(100, -0.9, "FA2 = 100%", fontsize=7, ha="center", va="bottom")
    bx.set_yticks(y, [kernel_label(t, short=True) for t in h["target"]])
    bx.invert_yaxis()
    bx.set_xlim(0, max(h["pct_of_ref_hm"].max() * 1.35, 130))
    bx.set_xlabel("% of FA2 (harmonic mean of TFLOP/s over S)")
    bx.spines[["top", "right"]].set_visible(False)
    bx.set_title("headline: % of FA2", fontsize=9.5, loc="left")
    fig.suptitle("Kernel progression: throughput vs sequence length", x=0.06, ha="left", fontsize=12,
                 fontweight="bold", y=0.975)
    dt = "/".join(sorted(bench["dtype"].astype(str).unique())) if "dtype" in bench else ""
    d = "/".join(str(int(v)) for v in sorted(bench["d_head"].unique())) if "d_head" in bench else "?"
    hds = "/".join(str(int(v)) for v in sorted(bench["heads"].unique())) if "heads" in bench else "?"
    fig.text(0.06, 0.905, f"{gpu} \u00b7 H{hds} d{d} \u00b7 {dt} \u00b7 batch per S as benched (B16 for S\u22644096, "
             "fewer above) \u00b7 SM clock not locked (clock-control none)", fontsize=9, color="#333333")
    fig.text(0.06, 0.015, method, fontsize=7, color="#444444")
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
    fig.subplots_adjust(left=0.07, right=0.98, top=1 - 0.95 / (1.2 + 2.9 * nrows), bottom=0.55 / (1.2 + 2.9 * nrows),
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
        lim = max(d["delta"].abs().max() if len(d) else 1, 1) * 1.45
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
            ax.text(0.5, 0.5, "no opcode changes", transform=ax.transAxes, ha="center", fontsize=8)
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
    fig = _new_fig(10.0, 4.2)
    a1 = fig.add_axes([0.07, 0.22, 0.52, 0.6])
    a2 = fig.add_axes([0.70, 0.22, 0.28, 0.6])
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
            a1.text(x[i] + off, val, f"{val:.2f}", ha="center", va="bottom", fontsize=6.5)
            ymax = max(ymax, val)
        ld = s["ldsm_inst"].dropna()
        if len(ld):
            a2.bar(x[i], ld.iloc[0] / 1e6, color=c, width=0.7, gid=f"ldsm:{rec['sid']}")
    a1.axhline(1.0, color="#333333", lw=0.8, ls="--")
    a1.set_ylim(0, ymax * 1.18)
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
        fig.text(0.07, 0.885, context_line(ident, roof, reports=L["report"].unique()), fontsize=8.5, color="#333333")
    fig.text(0.07, 0.02, "n-way = l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st} / (wavefronts - "
             "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}); ldmatrix = smsp__inst_executed_op_ldsm.",
             fontsize=6.8, color="#444444")
    return fig


def close(fig: Figure) -> None:
    """Figures made here are not registered with pyplot; dropping the canvas frees them."""
    fig.clf()


__all__ = [
    "ANCHORS", "CONVENTION_NOTE", "DPI", "KERNEL_IDS", "KERNEL_NAMES", "KERNEL_ORDER", "REASON_COLORS",
    "context_line", "kernel_color", "kernel_key", "kernel_label", "kernel_rank", "launches",
    "plot_bank_conflicts", "plot_pipes", "plot_progression", "plot_roofline", "plot_sass_mix",
    "plot_stall_lines", "plot_stalls",
]

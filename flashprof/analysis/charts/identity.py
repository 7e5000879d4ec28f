"""Who a launch is: kernel keys, names, colours, short labels and the context line.

Input: identity columns of any analysis frame (report, launch, variant, kernel, gpu,
shape). Output: the launch table every chart draws from (``launches``) and one-line
context strings. Kernels 1-7 and the anchors (FA2, cuDNN) have fixed names and colours;
any other report gets a short tag from ``labels``."""
from __future__ import annotations


import matplotlib
import numpy as np
import pandas as pd

from flashprof.analysis.report.target_key import (ANCHORS, KERNEL_IDS, KERNEL_NAMES, KERNEL_ORDER, KERNEL_TICKS, is_series, kernel_key, kernel_rank)  # noqa: F401
from flashprof.analysis.charts import labels

_ANCHOR_COLORS = {"ref": "#111111", "cudnn": "#d62728"}
_OTHER_COLOR = "#8c8c8c"


# --------------------------------------------------------------------------- identity
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
    label, short label, colour and a series id. Series kernels are named by their step
    ('K6 FP32 instruction fusion', short 'K6'); any other report by a short stable tag of
    its stem (``labels.report_tags``), both with '#launch' when a report has several.
    ``tag`` and ``kernel`` feed ``labels.name_table`` (tag -> full names)."""
    cols = [c for c in ("report", "range_idx", "launch", "variant", "kernel") if c in frame.columns]
    u = frame.drop_duplicates(["report", "range_idx", "launch"])[cols].copy()
    if "kernel" not in u.columns:
        u["kernel"] = None
    u["key"] = [kernel_key(r, v) for r, v in zip(u["report"], u.get("variant", [None] * len(u)))]
    # profiled by flashprof (a sidecar names the target), e.g. a user's TARGET=file.py:fn
    u["profiled"] = [kernel_key("", v) != "" for v in u.get("variant", [None] * len(u))]
    multi = u["report"].duplicated(keep=False)
    tags = labels.report_tags(u.loc[~u["key"].map(is_series), "report"])
    u["tag"] = [kernel_label(k, short=True) if is_series(k) else tags[r] for r, k in zip(u["report"], u["key"])]
    u["label"] = [(kernel_label(k) if is_series(k) or own else t) + (f" #{n}" if m else "")
                  for k, t, n, m, own in zip(u["key"], u["tag"], u["launch"], multi, u["profiled"])]
    u["short"] = [t + (f"#{n}" if m else "") for t, n, m in zip(u["tag"], u["launch"], multi)]
    u["sid"] = [f"{r}#{n}" for r, n in zip(u["report"], u["launch"])]
    u["_rank"] = [kernel_rank(k) for k in u["key"]]
    u = u.sort_values(["_rank", "report", "launch"]).drop(columns="_rank").reset_index(drop=True)
    others = list(dict.fromkeys(u.loc[~u["key"].map(is_series), "report"]))
    own = dict(zip(others, labels.palette(len(others))))
    u["color"] = [kernel_color(k) if is_series(k) else own[r] for r, k in zip(u["report"], u["key"])]
    if len(others) == 1 and not u["key"].map(is_series).any() and 1 < len(u) <= 10:
        u["color"] = labels.palette(len(u))  # one report, a few launches: one colour each
    return u


def many_args(L: pd.DataFrame, ident: pd.DataFrame | None, roof: pd.DataFrame | None) -> dict:
    """Context line and name table for the per-launch charts of ``launch_charts``."""
    if ident is None:
        return {"context": "", "table": labels.name_table(L)}
    ctx = context_line(ident, roof, reports=L["report"].unique())
    return {"context": ctx, "table": labels.name_table(L, ident)}


def fmt_shape(row) -> str | None:
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
    if len(gpus) > 2:  # the name table under the chart says which report ran where
        parts.append(f"{len({labels.gpu_short(g) for g in gpus})} GPUs (per report: see labels)")
    else:
        parts.append(" / ".join(gpus) if gpus else "GPU unknown")
    shapes, unknown = {}, []
    for rec in ident.to_dict("records"):
        s = fmt_shape(rec)
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


def positive_finite(*vals) -> bool:
    return all(v is not None and not pd.isna(v) and np.isfinite(v) and v > 0 for v in vals)

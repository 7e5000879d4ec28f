"""The report page's plotly figures, built from ``flashprof.analysis.page.data`` dicts (pure).

``roofline_figure``: one hierarchical roofline (log-log, TFLOP/s vs FLOP/byte) of the
launches of one FLOP kind on one GPU: one trace per launch (its L1, L2, DRAM and shared-
memory points joined, as in the static figures), the report's own roofs solid, the measured
roofs (``make ceilings``) dotted; a launch whose FLOP rate is estimated is drawn hollow and
dashed with an x. ``stall_overview`` / ``pipe_overview``: every launch at once.
Every trace carries ``meta`` = {"role": ..., "sid": ...} so a test can count them.
"""
from __future__ import annotations

import html
import math

import plotly.graph_objects as go

from flashprof.analysis.charts.style import PIPE_LABELS, REASON_COLORS
from flashprof.analysis.page.data import sig

TF = 1e12
LEVEL_SYMBOLS = {"L1": "circle", "L2": "square", "DRAM": "triangle-up", "shared memory": "diamond"}
LEVEL_NAMES = {"L1": "L1", "L2": "L2", "DRAM": "DRAM", "shared memory": "shared memory\u2020"}
KIND_NAMES = {"tensor": "Tensor Core", "fp32": "FP32 (single precision)", "fp16": "FP16 (half, non-tensor)",
              "fp64": "FP64 (double)"}
# compute roof of each kind's chart -> label (from charts.roofline_layers._roof_ceilings keys)
ROOF_LABELS = {"tensor:mma.sync": "tensor, mma.sync", "tensor:wgmma": "tensor, wgmma",
               "tensor:dmma": "tensor, DMMA (FP64)", "fp32": "FP32 (FFMA)", "fp16": "FP16 (HFMA2)",
               "fp64": "FP64 (DFMA)"}
ROOFS_OF_KIND = {"tensor": ("tensor:wgmma", "tensor:mma.sync", "tensor:dmma"), "fp32": ("fp32",),
                 "fp16": ("fp16",), "fp64": ("fp64",)}
# measured roof -> the kind's chart it belongs on (bandwidth roofs: every chart)
MEASURED_KIND = {"mma.sync fp16": "tensor", "mma.sync bf16": "tensor", "wgmma fp16": "tensor", "FFMA": "fp32"}
MEASURED_LEVEL = {"shared memory": "shared memory", "L2": "L2", "DRAM": "DRAM"}
BASE_LAYOUT = dict(template="plotly_white", font=dict(family="DejaVu Sans, Arial, sans-serif", size=12),
                   margin=dict(l=70, r=20, t=50, b=60), hoverlabel=dict(align="left", font_size=11))


def _fmt(v, unit: str = "", digits: int = 4) -> str:
    """``digits`` significant digits, never in exponent form between 1e-4 and 1e9
    (186,300 rather than 1.863e+05); outside that range the exponent stays."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    a = abs(v)
    if a == 0 or not (1e-4 <= a < 1e9):
        return f"{v:.{digits}g}{unit}"
    if a >= 10 ** digits:
        return f"{float(f'{v:.{digits}g}'):,.0f}{unit}"
    decimals = max(0, digits - 1 - math.floor(math.log10(a)))
    text = f"{v:.{decimals}f}"
    return (text.rstrip("0").rstrip(".") if "." in text else text) + unit


def _prov(p) -> str:
    return html.escape(str(p)) if p else "null (not in this report)"


def hover_text(p: dict, lv: dict) -> str:
    """The hover of one roofline point: who, where, every value and its provenance."""
    lines = [f"<b>{html.escape(p['label'])}</b> \u00b7 {html.escape(LEVEL_NAMES.get(lv['level'], lv['level']))}",
             f"launch {p['launch']} of {html.escape(p['report'])}: {html.escape((p.get('function') or p['kernel'])[:80])}",
             f"shape {html.escape(p.get('shape') or 'not recorded')} \u00b7 dtype {html.escape(p.get('dtype') or 'not recorded')}",
             f"GPU {html.escape(str(p.get('gpu')))} ({html.escape(str(p.get('arch')))}) \u00b7 SM clock "
             f"{_fmt((p.get('sm_clock_hz') or math.nan) / 1e9, ' GHz', 3)} [{_prov(p.get('clock_provenance'))}]",
             f"{KIND_NAMES.get(p['kind'], p['kind'])} FLOP/s {_fmt(p['flops'] / TF, ' T')} [{_prov(p.get('flops_provenance'))}]"
             + (f" \u00b7 path {html.escape(str(p['tensor_path']))}" if p["kind"] == "tensor" and p.get("tensor_path") else ""),
             f"roof {_fmt((p.get('ceiling') or math.nan) / TF, ' TFLOP/s')} [{_prov(p.get('ceiling_provenance'))}]",
             f"{html.escape(lv['level'])} bytes/s {_fmt((lv.get('bytes_per_s') or math.nan) / 1e9, ' GB/s')} "
             f"(peak {_fmt((lv.get('bw_ceiling') or math.nan) / 1e9, ' GB/s')}) [{_prov(lv.get('bytes_provenance'))}]",
             f"intensity at {html.escape(lv['level'])}: {_fmt(lv['ai'], ' FLOP/B')} [{_prov(lv.get('ai_provenance'))}]",
             f"&nbsp;&nbsp;tensor {_fmt(lv.get('ai_tensor'))} \u00b7 FP32 {_fmt(lv.get('ai_fp32'))} \u00b7 all kinds {_fmt(lv.get('ai_total'))} FLOP/B"]
    if p.get("duration_ns"):
        lines.append("duration " + _fmt(p["duration_ns"] / 1e3, " \u00b5s"))
    lim = p.get("limiter") or {}
    if lim.get("roof"):
        lines.append(f"<b>binding roof: {html.escape(lim['roof'])}</b> ({_fmt(lim.get('pct_of_roof'), ' %', 3)} of it)"
                     f" \u00b7 speed of light: {html.escape(str(lim.get('bound')))}")
    if not lv.get("in_ncu_chart", True):
        lines.append("<i>not a point of Nsight Compute's own chart (flashprof level or derived bytes)</i>")
    if p.get("estimated"):
        lines.append("<b>FLOP/s estimated</b> (no counter: see provenance)")
    return "<br>".join(lines)


def roofline_figure(points: list[dict], roofs: dict, kind: str, gpu: str, *, height: int = 680) -> go.Figure:
    """One chart: ``points`` (launch dicts of ``data.roofline_points`` + ``label``/``color``)
    of FLOP kind ``kind`` on ``gpu``; ``roofs`` from ``data.roofs`` over the same launches."""
    fig = go.Figure()
    xs = [lv["ai"] for p in points for lv in p["levels"]]
    ys = [p["flops"] for p in points for lv in p["levels"]]
    computes = {k: v for k, v in roofs["compute"].items() if k in ROOFS_OF_KIND.get(kind, ()) and v}
    meas_compute = [m for m in roofs["measured"] if MEASURED_KIND.get(m["roof"]) == kind]
    top = max(list(computes.values()) + [m["per_second"] for m in meas_compute] + [max(ys or [1e12])])
    bws = {k: v for k, v in roofs["bandwidth"].items() if v}
    ridges = [top / v for v in bws.values()]
    y_lo = 10 ** math.floor(math.log10(min(ys or [top / 100]) / 3))
    x_lo = min(xs + [y_lo / v for v in bws.values()] + ridges or [0.1]) / 1.5
    x_hi = max(xs + ridges + [10.0]) * 4
    fastest = max(bws.values()) if bws else None
    # ---- roofs
    for k, v in computes.items():
        x0 = max(v / fastest, x_lo) if fastest else x_lo
        fig.add_trace(go.Scatter(x=[x0, x_hi], y=[v / TF, v / TF], mode="lines", line=dict(color="#333", width=2),
                                 name=f"{ROOF_LABELS.get(k, k)} {v / TF:.4g} TFLOP/s", legendgroup="roofs", legendrank=3000,
                                 legendgrouptitle_text="roofs (report's own peak x clock)",
                                 hovertemplate=f"{ROOF_LABELS.get(k, k)}: {v / TF:.4g} TFLOP/s<extra>theoretical roof</extra>",
                                 meta={"role": "roof", "roof": k}))
    dash = {"L1": "solid", "L2": "dash", "DRAM": "longdash", "shared memory": "dot"}
    for level, bw in sorted(bws.items(), key=lambda kv: -kv[1]):
        ridge = top / bw
        fig.add_trace(go.Scatter(x=[x_lo, ridge], y=[bw * x_lo / TF, top / TF], mode="lines",
                                 line=dict(color="#777", width=1.3, dash=dash.get(level, "solid")),
                                 name=f"{LEVEL_NAMES.get(level, level)} {bw / 1e12:.3g} TB/s", legendgroup="roofs", legendrank=3001,
                                 hovertemplate=f"{level}: {bw / 1e12:.3g} TB/s, ridge {ridge:.3g} FLOP/B<extra>bandwidth roof</extra>",
                                 meta={"role": "roof", "roof": f"bw:{level}"}))
    # ---- roof labels, placed where no point is: each compute roof's label just above its
    # line at the free one of three places (right end, middle, next to the ridge), stacked
    # when two roofs are close; bandwidth labels at the foot of their diagonal, under
    # every point (the y range starts a factor 3 below the slowest point)
    pts = [(math.log10(lv["ai"]), math.log10(p["flops"] / TF)) for p in points for lv in p["levels"]]
    notes = roof_labels(computes, bws, pts, x_lo, x_hi, y_lo, fastest)
    # ---- measured roofs (dotted)
    for m in roofs["measured"]:
        v, clock = m["per_second"], (m.get("sm_clock_hz") or 0) / 1e9
        pct = f", {m['pct_of_theoretical']:.3g} % of theoretical" if m.get("pct_of_theoretical") else ""
        label = f"measured {m['roof']}"
        if MEASURED_KIND.get(m["roof"]) == kind:
            x0 = max(v / fastest, x_lo) if fastest else x_lo
            x, y = [x0, x_hi], [v / TF, v / TF]
            name = f"{label} {v / TF:.4g} TFLOP/s"
        elif m["roof"] in MEASURED_LEVEL:
            x, y = [x_lo, top / v], [v * x_lo / TF, top / TF]
            name = f"{label} {v / 1e12:.3g} TB/s"
        else:
            continue
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line=dict(color="#1f77b4", width=1.5, dash="dot"),
                                 name=name, legendgroup="measured", legendrank=4000, legendgrouptitle_text=f"measured (make ceilings, {clock:.2f} GHz)",
                                 hovertemplate=f"{name}{pct}<extra>measured roof</extra>",
                                 meta={"role": "measured", "roof": m["roof"]}))
    # ---- one trace per launch
    for i, p in enumerate(points):  # in the caller's (series) order; the legend keeps it
        order = sorted(p["levels"], key=lambda lv: lv["ai"])
        est = p.get("estimated")
        fig.add_trace(go.Scatter(
            x=[lv["ai"] for lv in order], y=[p["flops"] / TF] * len(order), mode="lines+markers",
            name=p["label"] + (" (FLOP/s estimated)" if est else ""), legendgroup="launches", legendrank=1000 + i,
            legendgrouptitle_text="launches (hover a point)",
            line=dict(color=p["color"], width=1.6, dash="dash" if est else "solid"),
            marker=dict(symbol=[LEVEL_SYMBOLS.get(lv["level"], "circle") + ("-open" if est else "") for lv in order],
                        size=11, color=p["color"], line=dict(color="white" if not est else p["color"], width=1)),
            text=[hover_text(p, lv) for lv in order], hovertemplate="%{text}<extra></extra>",
            meta={"role": "launch", "sid": p["sid"], "estimated": bool(est)}))
    for level, sym in LEVEL_SYMBOLS.items():  # a key to the marker shapes
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", marker=dict(symbol=sym, size=9, color="#555"),
                                 name=LEVEL_NAMES[level], legendgroup="levels", legendrank=2000, legendgrouptitle_text="memory level",
                                 meta={"role": "key"}))
    fig.update_layout(**BASE_LAYOUT, height=height, annotations=notes,
                      title=dict(text=f"{KIND_NAMES.get(kind, kind)} roofline \u00b7 {html.escape(gpu)}", x=0.01),
                      legend=dict(groupclick="toggleitem", font_size=11, tracegroupgap=8),
                      xaxis=dict(type="log", title="arithmetic intensity (FLOP of this kind / byte at that level)",
                                 range=[math.log10(x_lo), math.log10(x_hi)], exponentformat="power"),
                      yaxis=dict(type="log", title="performance (TFLOP/s)",
                                 range=[math.log10(y_lo / TF), math.log10(top * 2.2 / TF)]))
    return fig


LABEL_DECADES_PER_CHAR = 0.055  # a 10 px character on a ~5-decade, ~900 px wide axis
LABEL_HEIGHT = 0.07  # decades of y one label line takes on a ~5-decade, ~560 px tall axis


def roof_labels(computes: dict, bws: dict, pts: list[tuple[float, float]], x_lo: float, x_hi: float, y_lo: float,
                fastest: float | None) -> list[dict]:
    """Plotly annotations naming the roofs, in log10 axis units, each where the fewest
    points (``pts``: (log10 AI, log10 TFLOP/s)) and earlier labels lie under it."""
    placed: list[tuple[float, float, float, float]] = []  # x0, x1, y0, y1 of each label

    def hits(box) -> int:
        x0, x1, y0, y1 = box
        n = sum(1 for x, y in pts if x0 - 0.05 <= x <= x1 + 0.05 and y0 - 0.03 <= y <= y1 + 0.03)
        return n + 100 * sum(1 for b in placed if not (b[1] < x0 or b[0] > x1 or b[3] < y0 or b[2] > y1))

    notes = []
    lx_lo, lx_hi = math.log10(x_lo), math.log10(x_hi)
    for k, v in sorted(computes.items(), key=lambda kv: -kv[1]):
        text = f"{ROOF_LABELS.get(k, k)} {v / TF:.4g} TFLOP/s"
        w, y = LABEL_DECADES_PER_CHAR * len(text), math.log10(v / TF)
        ridge = math.log10(v / fastest) if fastest else lx_lo
        starts = [lx_hi - w - 0.02, (max(ridge, lx_lo) + lx_hi - w) / 2, max(ridge, lx_lo) + 0.08]
        best = None
        for lift in (0.0, LABEL_HEIGHT, -LABEL_HEIGHT - 0.02):  # above the line; higher; below it
            for x0 in starts:
                box = (x0, x0 + w, y + lift, y + lift + LABEL_HEIGHT)
                score = hits(box) + (0.5 if lift else 0)
                if best is None or score < best[0]:
                    best = (score, box)
            if best[0] == 0:
                break
        box = best[1]
        placed.append(box)
        notes.append(dict(x=box[0], y=box[2], text=text, xanchor="left", yanchor="bottom", showarrow=False,
                          font=dict(size=10, color="#333"), bgcolor="rgba(255,255,255,0.75)", name="roof-label"))
    merged: list[tuple[float, list[str]]] = []
    for level, bw in sorted(bws.items(), key=lambda kv: -kv[1]):
        hit = next((m for m in merged if abs(m[0] / bw - 1) < 0.03), None)
        if hit:
            hit[1].append(level)
        else:
            merged.append((bw, [level]))
    y_foot = math.log10(y_lo / TF)
    for i, (bw, levels) in enumerate(merged):
        names = " = ".join(LEVEL_NAMES.get(lv, lv) for lv in levels)
        y = y_foot + 0.12 + LABEL_HEIGHT * 1.15 * i  # stacked, under the slowest point (a factor 3 above y_lo)
        x = math.log10(10 ** y * TF / bw) + 0.04  # just right of the diagonal at that height
        text = f"{names} {bw / 1e12:.3g} TB/s"
        placed.append((x, x + LABEL_DECADES_PER_CHAR * len(text), y, y + LABEL_HEIGHT))
        notes.append(dict(x=x, y=y, text=text, xanchor="left", yanchor="bottom", showarrow=False,
                          font=dict(size=10, color="#555"), bgcolor="rgba(255,255,255,0.8)", name="roof-label"))
    return notes


def stall_overview(labels: list[str], sids: list[str], bars: dict[str, dict]) -> go.Figure:
    """Stacked horizontal bars: warps per issued instruction by reason, one bar per launch;
    reasons largest first (summed over the launches shown), so the legend starts with them."""
    total: dict[str, float] = {}
    for s in sids:
        b = bars.get(s, {"reasons": [], "per_issue": []})
        for r, v in zip(b["reasons"], b["per_issue"]):
            total[r] = total.get(r, 0.0) + (v or 0.0)
    reasons = sorted(total, key=lambda r: (r == "selected", -total[r]))
    fig = go.Figure()
    for r in reasons:
        vals = []
        for s in sids:
            b = bars.get(s, {"reasons": [], "per_issue": []})
            vals.append(dict(zip(b["reasons"], b["per_issue"])).get(r))
        fig.add_trace(go.Bar(y=labels, x=vals, name=r + (" (issuing, not a stall)" if r == "selected" else ""),
                             orientation="h", marker_color=REASON_COLORS.get(r, "#cccccc"),
                             hovertemplate=f"{r}: %{{x:.3g}} warps per issued instruction<extra>%{{y}}</extra>",
                             legendrank=len(fig.data) + 1, meta={"role": "reason", "reason": r}))
    fig.update_layout(**BASE_LAYOUT, barmode="stack", height=max(260, 70 + 24 * len(labels)),
                      title=dict(text="Warp states per issued instruction (smsp__average_warps_issue_stalled_*_per_issue_active)", x=0.01, font_size=13),
                      xaxis_title="warps per issued instruction", yaxis=dict(autorange="reversed", automargin=True),
                      legend=dict(font_size=10, traceorder="normal"))
    return fig


def _percent_heatmap(labels: list[str], sids: list[str], bars: dict[str, dict], key: str, names: dict[str, str],
                     colorscale: str, colorbar: str, hover: str, title: str, role: str) -> go.Figure:
    """Heat map of percentages, one row per launch, one column per ``bars[sid][key]`` entry
    (in first-seen order, shown by ``names``), values written in."""
    cols = []
    for s in sids:
        for n in bars.get(s, {}).get(key, []):
            if n not in cols:
                cols.append(n)
    z, text = [], []
    for s in sids:
        b = bars.get(s, {key: [], "pct": []})
        row = dict(zip(b[key], b["pct"]))
        z.append([row.get(n) for n in cols])
        text.append(["" if row.get(n) is None else f"{row[n]:.0f}" for n in cols])
    fig = go.Figure(go.Heatmap(z=z, x=[names.get(n, n) for n in cols], y=labels, text=text,
                               texttemplate="%{text}", colorscale=colorscale, zmin=0, zmax=100,
                               colorbar=dict(title=colorbar), hoverongaps=False,
                               hovertemplate="%{y}<br>%{x}: %{z:.3g} " + hover + "<extra></extra>",
                               meta={"role": role}))
    fig.update_layout(**BASE_LAYOUT, height=max(240, 90 + 24 * len(labels)),
                      title=dict(text=title, x=0.01, font_size=13),
                      yaxis=dict(autorange="reversed", automargin=True))
    return fig


def pipe_overview(labels: list[str], sids: list[str], bars: dict[str, dict]) -> go.Figure:
    """Heat map: % of peak per pipe (and issue slots), one row per launch, values written in."""
    return _percent_heatmap(labels, sids, bars, "names", PIPE_LABELS, "Blues", "% of peak", "% of peak",
                            "Pipe utilisation (% of peak sustained active) and issue slots", "pipes")


def compact(fig: go.Figure) -> dict:
    """The figure as a plotly JSON dict, floats of the data rounded (smaller page)."""
    d = fig.to_plotly_json()
    for tr in d["data"]:
        for k in ("x", "y"):
            if k in tr and tr[k] is not None:
                tr[k] = [sig(v) if isinstance(v, float) else v for v in tr[k]]
    return d


def _gpu_colour(model_key: str) -> str:
    from flashprof.kernels.gpus import by_model_key
    g = by_model_key(model_key)
    return g.colour if g else "#555555"


def gap_figure(groups: list[dict], *, height: int = 460) -> go.Figure:
    """% of FA2 per kernel and GPU: observed (published, or measured on the H200) solid,
    the issue model's prediction hollow with its seed spread (1 sd) as error bars."""
    fig = go.Figure()
    for i, g in enumerate(groups):
        c = _gpu_colour(g["gpu_key"])
        x = [f"K{t}" if t.isdigit() else ("FA2" if t == "ref" else t) for t in g["targets"]]
        name = g["gpu"].replace("NVIDIA ", "")
        fig.add_trace(go.Scatter(x=x, y=g["observed"], mode="lines+markers", name=f"{name}: observed",
                                 line=dict(color=c, width=2), marker=dict(size=8, color=c), legendrank=10 + 2 * i,
                                 customdata=g["observed_source"],
                                 hovertemplate=f"{name} %{{x}}: %{{y:.1f}} % of FA2 (%{{customdata}})<extra></extra>",
                                 meta={"role": "observed", "gpu_key": g["gpu_key"]}))
        fig.add_trace(go.Scatter(x=x, y=g["predicted"], mode="markers", name=f"{name}: issue model (\u00b11 sd)",
                                 marker=dict(size=9, color="white", line=dict(color=c, width=2), symbol="diamond"),
                                 error_y=dict(type="data", array=g["sd"], color=c, thickness=1.2, width=4),
                                 legendrank=11 + 2 * i,
                                 hovertemplate=f"{name} %{{x}}: predicted %{{y:.1f}} % of FA2<extra>{g['binary']} binary</extra>",
                                 meta={"role": "predicted", "gpu_key": g["gpu_key"]}))
    fig.update_layout(**BASE_LAYOUT, height=height,
                      title=dict(text="The gap: % of FA2 per kernel and GPU, published or measured vs the SASS issue model", x=0.01, font_size=13),
                      yaxis=dict(title="% of FA2 (duration ratio)", rangemode="tozero"), xaxis=dict(title="kernel"),
                      legend=dict(font_size=11, traceorder="normal"))
    return fig


def progression_figure(series: list[dict], labels: dict[str, str], colors: dict[str, str], *, height: int = 440) -> go.Figure:
    """TFLOP/s over sequence length S per target (bench.csv), series order."""
    fig = go.Figure()
    for i, s in enumerate(series):
        lab = labels.get(s["target"], s["target"])
        fig.add_trace(go.Scatter(x=s["seq"], y=s["tflops"], mode="lines+markers", name=lab, legendrank=10 + i,
                                 line=dict(color=colors.get(s["target"], "#888"), width=2,
                                           dash="dash" if not s["target"].isdigit() else "solid"),
                                 hovertemplate=f"{html.escape(lab)} S=%{{x}}: %{{y:.4g}} TFLOP/s<extra></extra>",
                                 meta={"role": "bench", "target": s["target"]}))
    fig.update_layout(**BASE_LAYOUT, height=height,
                      title=dict(text="Kernels 1\u21927 over the sequence length (bench.csv, median of the timed repetitions)", x=0.01, font_size=13),
                      xaxis=dict(title="sequence length S", type="log", dtick=math.log10(2), tickformat="d"),
                      yaxis=dict(title="TFLOP/s", rangemode="tozero"), legend=dict(font_size=11, traceorder="normal"))
    return fig


def mix_figure(labels: list[str], mix: dict, *, height: int | None = None) -> go.Figure:
    """Executed warp instructions by opcode (millions), one stacked bar per launch."""
    fig = go.Figure()
    for j, op in enumerate(mix["opcodes"]):
        fig.add_trace(go.Bar(y=labels, x=[None if row[j] is None else row[j] / 1e6 for row in mix["counts"]], name=op,
                             orientation="h", legendrank=10 + j,
                             hovertemplate=f"{op}: %{{x:.4g}} M warp instructions<extra>%{{y}}</extra>",
                             meta={"role": "opcode", "opcode": op}))
    fig.update_layout(**BASE_LAYOUT, barmode="stack", height=height or max(260, 80 + 26 * len(labels)),
                      title=dict(text="Executed SASS mix of each dominant launch (sass__inst_executed_per_opcode, millions of warp instructions)", x=0.01, font_size=13),
                      xaxis_title="million warp instructions", yaxis=dict(autorange="reversed", automargin=True),
                      legend=dict(font_size=11, traceorder="normal"))
    return fig


def memory_overview(labels: list[str], sids: list[str], bars: dict[str, dict]) -> go.Figure:
    """Heat map: bytes/s at each memory level as % of the report's own bandwidth roof."""
    return _percent_heatmap(labels, sids, bars, "levels", LEVEL_NAMES, "Oranges", "% of roof",
                            "% of its bandwidth roof",
                            "Memory: bytes/s at each level as % of its bandwidth roof (the roofline's bytes; "
                            "\u2020 flashprof level)", "memory")

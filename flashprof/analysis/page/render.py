"""The page data (``flashprof.analysis.page.assemble.page_data``) -> one self-contained HTML file.

plotly draws every chart: its JavaScript is inlined once (``plotly.offline.get_plotlyjs``,
what ``include_plotlyjs=True`` writes), each figure is a ``Plotly.newPlot`` of its JSON. The
tables are plain HTML written here; a few lines of script sort them, switch the compare
pair and the launch shown, and filter the source view. All data sits in one JSON blob
(``<script id="flashprof-data" type="application/json">``), so a reader (or a test) can
take the numbers out again. Nothing is fetched at view time.
"""
from __future__ import annotations

import html
import json
import math

from flashprof.analysis.page.figures import KIND_NAMES

E = html.escape
STAR, DASH, DOT = "\u2605", "\u2013", " \u00b7 "


def _blob(obj) -> str:
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/")  # the blob cannot end its <script> early


def _num(v, digits: int = 3, scale: float = 1.0) -> str:
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "\u2013"
    x = v * scale
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _sortval(v, scale: float = 1.0) -> str:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return repr(float(v) * scale)
    return ""


def _prov_mark(p) -> str:
    """A small tag after a value whose provenance is not exact."""
    if p in (None, "exact", "measured"):
        return ""
    cls = "est" if str(p).startswith("estimated") else "der"
    short = "est." if cls == "est" else "der."
    return f' <span class="prov {cls}" title="{E(str(p))}">{short}</span>'


# --------------------------------------------------------------------------- header
def _report_rows(data: dict) -> list[str]:
    rows = []
    for h in data["reports"]:
        clock = "\u2013"
        if h["sm_clock_ghz"]:
            lo, hi = h["sm_clock_ghz"]
            clock = f"{lo:.3g} GHz" if lo == hi else f"{lo:.3g}\u2013{hi:.3g} GHz"
        smi = ""
        if h["smi_sm_mhz"]:
            smi = f"<br><span class=dim>nvidia-smi SM {E(str(h['smi_sm_mhz']))} MHz, mem {E(str(h['smi_mem_mhz']))} MHz" \
                  f"{', clock control ' + E(str(h['clock_control'])) if h.get('clock_control') else ''}</span>"
        nosc = '<span class=dim>not recorded (no flashprof sidecar)</span>'
        rev = h["git_revision"]
        rev = "HEAD (commit not recorded)" if rev == "HEAD" else (rev or "not recorded")[:12]
        git = nosc if not h["sidecar"] else (E(rev)
                                             + (" <span class=warn>(dirty)</span>" if h.get("git_dirty") else ""))
        lacks = "<span class=ok>nothing</span>"
        if h["missing"]:
            per = h.get("missing_launches") or []
            text = "; ".join(f"{m['label']}: {m['launches']} of {m['of']} launch{'es' if m['of'] != 1 else ''}"
                             for m in per) if per else ", ".join(h["missing"])
            lacks = f"<span class=warn>{E(text)}</span>" + _hint(h["collect_hint"])
        rows.append(
            f"<tr><td><b>{E(h['report'])}</b><br><span class=dim>{E(h['title'] or h['file'])}"
            f"{(DOT + E(h['target'])) if h.get('target') else ''}</span></td>"
            f"<td>{E(', '.join(h['gpu'] or ['unknown']))}<br><span class=dim>{E(', '.join(h['arch'] or []))}</span></td>"
            f"<td>{E(h['driver']) if h['driver'] else nosc}</td>"
            f"<td>{E(h['ncu_version']) if h['ncu_version'] else nosc}"
            f"{'<br><span class=dim>--set ' + E(h['section_set']) + '</span>' if h.get('section_set') else ''}</td>"
            f"<td>{clock}{smi}</td>"
            f"<td>{E(', '.join(h['shape'] or ['not recorded']))}<br><span class=dim>{E(', '.join(h['dtype'] or ['dtype not recorded']))}</span></td>"
            f"<td>{h['launches']}</td><td>{git}<br><span class=dim>{E(str(h.get('created') or ''))[:16]}</span></td>"
            f"<td class=lacks>{lacks}</td></tr>")
    return rows


def header_html(data: dict) -> str:
    meta = data["meta"]
    gpus = sorted({g.replace("NVIDIA ", "") for h in data["reports"] for g in (h["gpu"] or [])})
    ceil = (f"measured roofs from ceilings.json ({E(meta['ceilings_gpu'])})" if meta["ceilings"]
            else "no ceilings.json beside these reports (theoretical roofs only; <code>make ceilings</code> measures them)")
    return (f"<header><h1>flashprof report \u00b7 <span class=folder>{E(meta['folder_name'])}</span></h1>"
            f"<p class=sub>{meta['reports']} report(s), {meta['launches']} launch(es) on {E(', '.join(gpus) or 'unknown GPU')}"
            f" \u00b7 {ceil} \u00b7 made {E(meta['created'])} by flashprof {E(meta['flashprof'])} \u00b7 self-contained, offline</p>"
            f"<nav><a href='#verdict'>verdict</a> <a href='#summary'>summary</a> <a href='#compare'>compare</a> "
            f"<a href='#roofline'>roofline</a> <a href='#story'>gap &amp; progression</a> <a href='#stalls'>stalls &amp; pipes</a> <a href='#launch'>launch detail &amp; source</a> "
            f"<a href='#reports'>reports (provenance)</a></nav></header>")


def reports_html(data: dict) -> str:
    """The provenance table, collapsed, at the bottom of the page."""
    meta = data["meta"]
    return (f"<section id=reports><details><summary><h2>Reports: where and how they were profiled, and what they lack "
            f"({len(data['reports'])})</h2></summary>"
            f"<p class=note>From <code>{E(meta['folder'])}</code>.</p>"
            f"<div class=scroll><table class=meta><thead><tr><th>report</th><th>GPU</th><th>driver</th><th>Nsight Compute</th>"
            f"<th>SM clock (profiled)</th><th>shape, dtype</th><th>launches</th><th>git revision</th>"
            f"<th>lacks (null values) \u2192 ncu options that collect it</th></tr></thead><tbody>{''.join(_report_rows(data))}</tbody></table></div>"
            f"</details></section>")


def _hint(hint: str) -> str:
    """The collect hint, one short line: the section names only; the whole command on click."""
    sections = [w for w in hint.split() if w not in ("ncu", "--section")]
    short = ", ".join(sections[:3]) + (f" +{len(sections) - 3}" if len(sections) > 3 else "")
    return (f"<details class=hint><summary>collect: {E(short)}</summary><code>{E(hint)}</code></details>")


# --------------------------------------------------------------------------- verdict
ROOF_NAMES = {"compute": "compute roof", "L1": "L1 roof", "L2": "L2 roof", "DRAM": "DRAM roof",
              "shared memory": "shared-memory roof"}
BOUND_CLASS = {"compute": "b-comp", "memory": "b-mem", "latency": "b-lat"}


def verdict_html(data: dict) -> str:
    """The first screen: per report its dominant launch and what bounds it."""
    info = {x["sid"]: x for x in data["launches"]}
    rows = []
    for v in data["verdict"]:
        x = info[v["sid"]]
        roof = "\u2013"
        if v["roof"]:
            roof = (f"<b>{_num(v['pct_of_roof'], 3)} %</b> of its {E(ROOF_NAMES.get(v['roof'], v['roof']))}"
                    f"<br><span class=dim>{_num(v['tflops'], 4)} TFLOP/s {E(str(v['flops_kind'] or ''))}</span>")
        bound = (f"<span class='bound {BOUND_CLASS.get(v['sol_bound'], '')}'>{E(v['sol_bound'])}</span>"
                 f"<br><span class=dim>SM {_num(v['compute_pct'], 3)} % \u00b7 memory {_num(v['memory_pct'], 3)} %"
                 f"{(' (' + E(v['memory_unit']) + ')') if v['memory_unit'] else ''}</span>") if v["sol_bound"] else \
            "<span class=dim>not in this report (ncu --section SpeedOfLight)</span>"
        stalls = ", ".join(f"{E(k)} {_num(val, 3)}" for k, val in v["stalls"]) or "\u2013"
        share = "" if v["time_share"] is None or v["time_share"] >= 0.9995 else \
            f"<br><span class=dim>{_num(100 * v['time_share'], 3)} % of its report</span>"
        fa2 = "" if v["pct_of_fa2"] is None else f"{_num(v['pct_of_fa2'], 3)} %"
        rows.append(f"<tr data-sid='{E(v['sid'])}'><td><span class=swatch style='background:{x['color']}'></span><b>{E(x['label'])}</b>"
                    f"<br><span class='dim kern' title='{E(str(x.get('kernel_full') or x['kernel']))}'>{E(str(x.get('function') or x['kernel'])[:64])}</span></td>"
                    f"<td>{E(str(x.get('gpu') or DASH)).replace('NVIDIA ', '')}</td>"
                    f"<td class=num data-v='{_sortval(v['duration_ns'])}'>{_dur(v['duration_ns'])}{share}</td>"
                    f"<td>{roof}</td><td>{bound}</td><td>{stalls}</td><td class=num>{fa2}</td></tr>")
    any_fa2 = any(v["pct_of_fa2"] is not None for v in data["verdict"])
    if not any_fa2:
        rows = [r.replace("<td class=num></td></tr>", "</tr>") for r in rows]
    head = ("<th>dominant launch of each report</th><th>GPU</th><th>duration</th><th>% of its binding roof</th>"
            "<th title='Nsight Compute speed of light: SM (compute) vs memory throughput, % of peak; latency when neither reaches 60 %'>"
            "bound by (speed of light)</th><th title='warps per issued instruction'>top two stalls</th>"
            + ("<th title='100 x FA2 duration / duration, attention launches only'>% of FA2</th>" if any_fa2 else ""))
    return (f"<section id=verdict><h2>Verdict: what each report's dominant launch achieves and what bounds it</h2>"
            f"<table id=verdict-table class=verdict><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<p class=note>Dominant = the launch with the largest share of its report's time. Binding roof: the lowest of "
            f"the compute roof and intensity \u00d7 bandwidth at each memory level on the launch's FLOP-kind roofline. Bound by: "
            f"Nsight Compute's speed of light, <code>sm__throughput</code> against <code>gpu__compute_memory_throughput</code> "
            f"(% of peak; the busiest memory unit in brackets); below 60 % on both, latency bound. Stalls: warps per issued "
            f"instruction. Click a row for the launch's detail.</p></section>")


def _dur(ns) -> str:
    """A duration with a unit that keeps 3-4 significant digits: 1.82 \u00b5s, 6.20 ms."""
    if not isinstance(ns, (int, float)) or not math.isfinite(ns):
        return "\u2013"
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms" if ns < 1e8 else f"{ns / 1e9:.3g} s"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g} \u00b5s"
    return f"{ns:.3g} ns"


# --------------------------------------------------------------------------- summary table
# (header, record field or callable, digits, scale, title)
def _pct_peak(r):
    t, p = r.get("tflops"), r.get("peak_tflops")
    return 100 * t / p if isinstance(t, (int, float)) and isinstance(p, (int, float)) and p else None


def _top_stall(r):
    st = {k: v for k, v in (r.get("stalls") or {}).items() if v is not None and k != "selected"}
    if not st:
        return None, None
    k = max(st, key=st.get)
    return k, st[k]


def _compact(v, digits: int = 3, scale: float = 1.0) -> str:
    """3 significant digits, large values with a k / M suffix (186k FLOP/B, not 186,322)."""
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return DASH
    x = v * scale
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= 10 * div:
            return f"{x / div:.{digits}g}{suf}"
    if abs(x) >= 10 ** digits:
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


# (header, value of (record, launch entry), digits, scale, title, key column?)
def _field(name):
    return lambda r, x: r.get(name)


def _lim(name):
    return lambda r, x: (x.get("limiter") or {}).get(name)


def _res(name):
    return lambda r, x: (x.get("resources") or {}).get(name)


COLUMNS = [
    ("time share %", _field("time_share"), 3, 100, "share of its report's profiled launch time", True),
    ("% of roof", _lim("pct_of_roof"), 3, 1, "achieved FLOP/s / the binding roof at its intensity (stages/limiter.py)", True),
    ("TFLOP/s", _field("tflops"), 4, 1, "FLOP/s of the launch's own kind", True),
    ("% of FA2", lambda r, x: r.get("pct_of_fa2") if r.get("dominant") else None, 3, 1,
     "100 x duration(FA2 reference) / duration; attention launches (the dominant one of a report) only", True),
    ("tensor pipe %", _field("tensor_pipe_pct"), 3, 1, "tensor pipe % of peak (sm__pipe_tensor_*)", True),
    ("FP32 pipe %", _field("fma_pipe_pct"), 3, 1, "FMA (FP32) pipe % of peak", True),
    ("FLOP kind", _field("flops_kind"), 0, 1, "the launch's largest FLOP kind: its roofline chart", False),
    ("% of peak", lambda r, x: _pct_peak(r), 3, 1, "TFLOP/s / the report's own peak of that kind at its clock", False),
    ("% measured", _field("pct_of_measured_peak"), 3, 1, "tensor FLOP/s / measured mma/wgmma peak (ceilings.json)", False),
    ("AI L1", _field("ai_l1"), 3, 1, "FLOP/byte at L1", False), ("AI L2", _field("ai_l2"), 3, 1, "FLOP/byte at L2", False),
    ("AI DRAM", _field("ai_dram"), 3, 1, "FLOP/byte at DRAM", False),
    ("AI smem", _field("ai_smem"), 3, 1, "FLOP/byte at shared memory (flashprof level)", False),
    ("ALU %", _field("alu_pipe_pct"), 3, 1, "ALU pipe % of peak", False),
    ("XU %", _field("xu_pipe_pct"), 3, 1, "XU (MUFU) pipe % of peak", False),
    ("LSU %", _field("lsu_pipe_pct"), 3, 1, "LSU pipe % of peak", False),
    ("issue %", _field("issue_active_pct"), 3, 1, "issue slots busy", False),
    ("regs/thread", _res("registers_per_thread"), 3, 1, "launch__registers_per_thread", False),
    ("smem/block KiB", _res("smem_per_block"), 3, 1 / 1024, "launch__shared_mem_per_block (static + dynamic + driver)", False),
    ("occupancy % (theor.)", _res("theoretical_occupancy_pct"), 3, 1, "sm__maximum_warps_per_active_cycle_pct", False),
    ("occupancy % (achieved)", _res("achieved_occupancy_pct"), 3, 1, "sm__warps_active.avg.pct_of_peak_sustained_active", False),
    ("waves/SM", _res("waves_per_sm"), 3, 1, "launch__waves_per_multiprocessor", False),
]
_PROV_FIELD = {"TFLOP/s": "tflops", "AI L1": "ai_l1", "AI L2": "ai_l2", "AI DRAM": "ai_dram", "AI smem": "ai_smem"}


def _same_pct(recs: list[dict]) -> bool:
    """'% of peak' and '% measured' agree within 1 % everywhere (then one column is enough)."""
    pairs = [(_pct_peak(r), r.get("pct_of_measured_peak")) for r in recs]
    pairs = [(a, b) for a, b in pairs if isinstance(a, (int, float)) and isinstance(b, (int, float))]
    return all(abs(a - b) <= 0.01 * max(abs(a), abs(b), 1e-9) for a, b in pairs)


def summary_html(data: dict) -> str:
    info = {x["sid"]: x for x in data["launches"]}
    recs = {f"{r['report']}#{int(r['launch'])}": r for r in data["summary"]}
    cols = [c for c in COLUMNS if not (c[0] == "% measured" and _same_pct(list(recs.values())))]
    cols = [c for c in cols if not c[5] or any(_sortval(c[1](recs[s], x)) for s, x in info.items())]  # no empty key column
    heads = [("", "\u2605 = dominant launch of its report (largest time share)", "key"),
             ("launch", "report #launch", "key"), ("duration", "gpu__time_duration.sum", "key"),
             ("bound by", "speed of light: compute (sm__throughput) vs memory (gpu__compute_memory_throughput); "
              "latency when both < 60 %", "key"),
             ("top stall", "largest stall reason, warps per issued instruction", "key")]
    heads += [(c[0], c[4], "key" if c[5] else "x") for c in cols]
    heads += [("kernel", "the kernel's function name", "x"), ("GPU", "", "x"), ("shape \u00b7 dtype", "", "x"),
              ("lacks", "quantities null in this report", "x")]
    th = "".join(f"<th class={k} title='{E(t)}'>{E(h)}</th>" for h, t, k in heads)
    per_report: dict[str, int] = {}
    for x in info.values():
        per_report[x["report"]] = per_report.get(x["report"], 0) + 1
    body = []
    shown_group = set()
    pos = {s: i for i, s in enumerate(info)}
    first_of = {}
    for s, x in info.items():
        first_of.setdefault(x["report"], pos[s])
    rows_order = sorted(info, key=lambda s: (first_of[info[s]["report"]], not info[s]["dominant"], pos[s]))
    for i, s in enumerate(rows_order):
        x = info[s]
        r = recs[s]
        rep = x["report"]
        if per_report[rep] > 1 and rep not in shown_group:
            shown_group.add(rep)
            tot = sum(recs[t].get("duration_ns") or 0 for t, y in info.items() if y["report"] == rep)
            body.append(f"<tr class=rgrp data-i='{i - 0.5}' data-report='{E(rep)}'><td colspan={len(heads)}><a href='#' class=gtoggle>"
                        f"\u25b8</a> <b>{E(rep)}</b> \u00b7 {per_report[rep]} launches, {_dur(tot)} in all "
                        f"<span class=dim>(click to show or hide its other launches)</span></td></tr>")
        lim = x.get("limiter") or {}
        k, v = _top_stall(r)
        fn_name = str(x.get("function") or r["kernel"])
        fn_note = "" if r.get("variant") else f" <span class=dim>{E(fn_name[:40])}</span>"
        search = " ".join(str(t) for t in (x["label"], r["kernel"], fn_name, rep, r.get("gpu") or "", lim.get("sol_bound") or ""))
        cells = [f"<td data-v='{1 if x['dominant'] else 0}' class='star key'>{STAR if x['dominant'] else ''}</td>",
                 f"<td class=key data-v='{E(x['label'])}'><span class=swatch style='background:{x['color']}'></span>{E(x['label'])}{fn_note}</td>",
                 f"<td class='num key' data-v='{_sortval(r.get('duration_ns'))}'>{_dur(r.get('duration_ns'))}</td>",
                 f"<td class=key data-v='{E(lim.get('sol_bound') or '')}'>"
                 + (f"<span class='bound {BOUND_CLASS.get(lim['sol_bound'], '')}'>{E(lim['sol_bound'])}</span>"
                    if lim.get("sol_bound") else DASH) + "</td>",
                 f"<td class=key data-v='{_sortval(v)}'>{E(k or DASH)} {_num(v, 3) if k else ''}</td>"]
        for head, fn, digits, scale, _t, key in cols:
            val = fn(r, x)
            cls = "key" if key else "x"
            if head == "FLOP kind":
                cells.append(f"<td class={cls} data-v='{E(str(val or ''))}'>{E(str(val or DASH))}</td>")
                continue
            prov = (r.get("provenance") or {}).get(_PROV_FIELD[head], "exact") if head in _PROV_FIELD else None
            mark = _prov_mark(prov) if _sortval(val) else ""
            cells.append(f"<td class='num {cls}' data-v='{_sortval(val, scale)}'>{_compact(val, digits if digits < 4 else 3, scale)}{mark}</td>")
        cells += [f"<td class='x kern' data-v='{E(str(r['kernel']))}' title='{E(str(x.get('kernel_full') or r['kernel']))}'>{E(str(x.get('function') or r['kernel'])[:44])}</td>",
                  f"<td class=x data-v='{E(str(r.get('gpu')))}'>{E(str(r.get('gpu') or DASH)).replace('NVIDIA ', '')}</td>",
                  f"<td class=x data-v='{E(str(x.get('shape') or ''))}'>{E(str(x.get('shape') or DASH))} \u00b7 {E(str(r.get('dtype') or DASH))}</td>"]
        lost = r.get("missing") or []
        cells.append(f"<td data-v='{len(lost)}' title='{E(', '.join(lost))}' class='num x'>{len(lost) or ''}</td>")
        dom = "dom" if x["dominant"] and per_report[rep] > 1 else ""
        sub = "sub" if per_report[rep] > 1 and not x["dominant"] else ""
        body.append(f"<tr data-i='{i}' data-sid='{E(s)}' data-report='{E(rep)}' data-q='{E(search.lower())}' class='{dom} {sub}'>{''.join(cells)}</tr>")
    grouped = len(info) > 30
    return (f"<section id=summary><h2>Summary: one row per launch</h2>"
            f"<div class=controls>filter <input id=sum-filter size=28 placeholder='launch, kernel, report, GPU or bound'> "
            f"<label><input type=checkbox id=sum-group{' checked' if grouped else ''}> group by report (dominant launch first, the rest folded)</label> "
            f"<button id=sum-more type=button>show all columns</button> <span id=sum-count class=dim></span></div>"
            f"<p class=note>Click a column header to sort (again: reverse). \u2605 marks each report's dominant launch; "
            f"<span class='prov der'>der.</span> derived and <span class='prov est'>est.</span> estimated values (hover for the recipe); "
            f"\u2013 = null: the report cannot support it (see the Reports table at the bottom for the ncu options). Same numbers as "
            f"<code>flashprof summary --format json</code>, 3 significant digits (k = 10\u00b3, M = 10\u2076). Click a row to open that launch below.</p>"
            f"<div class='scroll tall'><table id=summary-table class='sortable compact'><thead><tr>{th}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div></section>")


# --------------------------------------------------------------------------- sections
def compare_html(data: dict) -> str:
    reports = list(dict.fromkeys(r["report"] for r in data["summary"]))
    if len(reports) < 2:
        return ("<section id=compare><h2>Compare two reports</h2><p class=note>One report in this folder: "
                "nothing to compare.</p></section>")
    a, b = data.get("compare_default") or reports[:2]
    opts = lambda sel: "".join(f"<option{' selected' if r == sel else ''}>{E(r)}</option>" for r in reports)  # noqa: E731
    return (f"<section id=compare><h2>Compare two reports (B against baseline A)</h2>"
            f"<p class=note>Launches are paired by position, every numeric field diffed (B \u2212 A), as "
            f"<code>flashprof compare A B</code>; regressions: duration up more than 2 %, or a stall reason up by "
            f"\u2265 0.05 warps per issued instruction and \u2265 10 % (and its total warp-cycles too).</p>"
            f"<div class=controls>A <select id=cmp-a>{opts(a)}</select> B <select id=cmp-b>{opts(b)}</select> "
            f"<button id=cmp-swap type=button>swap</button> fields <input id=cmp-filter placeholder='filter, e.g. stalls' size=18>"
            f" <label><input type=checkbox id=cmp-changed checked> only changed by \u2265 1 %</label></div>"
            f"<div id=cmp-head></div><div id=cmp-out></div>"
            f"<details id=cmp-all-box><summary>every report's dominant launch against A</summary><div id=cmp-all></div></details></section>")


def roofline_html(data: dict) -> str:
    rf = data["roofline"]
    parts = ["<section id=roofline><h2>Hierarchical roofline, one chart per FLOP kind and GPU</h2>",
             "<p class=note>Each launch is one trace: its L1 (\u25cf), L2 (\u25a0), DRAM (\u25b2) and shared-memory (\u25c6) points "
             "share one FLOP/s and differ in intensity (Nsight Compute's hierarchical roofline definitions; shared memory "
             "\u2020 = 128 B \u00d7 wavefronts, a flashprof level). Each launch sits on its own FLOP kind's chart. Solid grey: the "
             "report's own peaks \u00d7 its clock; dotted blue: measured roofs (<code>make ceilings</code>). Hollow markers and a "
             "dashed line: the FLOP rate is estimated. Hover a point for every value and where it came from; click a legend "
             "entry to hide it, double-click to show it alone; drag to zoom.</p>"]
    for c in rf["charts"]:
        parts.append(f"<div class=chart id='{E(c['id'])}' data-kind='{E(c['kind'])}' data-gpu='{E(c['gpu'])}' "
                     f"data-launches='{len(c['launches'])}'></div>")
    if not rf["charts"]:
        parts.append("<p class=warn>No launch has both a FLOP rate and a byte rate: nothing to place on a roofline.</p>")
    if rf["off_chart"]:
        items = "".join(f"<li><b>{E(o['label'])}</b>: {E(str(o['why']))}</li>" for o in rf["off_chart"][:40])
        more = f"<li>\u2026 and {len(rf['off_chart']) - 40} more</li>" if len(rf["off_chart"]) > 40 else ""
        parts.append(f"<details><summary>{len(rf['off_chart'])} launch(es) not on any roofline</summary><ul>{items}{more}</ul></details>")
    parts.append("</section>")
    return "".join(parts)


def story_html(data: dict) -> str:
    st = data.get("story") or {}
    if not (st.get("gap") or st.get("progression") or st.get("mix") or st.get("gap_note")):
        return ""
    parts = ["<section id=story><h2>The story: the gap across GPUs, kernels 1\u21927 over S, the SASS mix</h2>"]
    if st.get("gap"):
        parts.append("<p class=note>Each GPU's % of FA2 per kernel: the series' published numbers (A100, RTX 3090) or this "
                     "folder's measurement (H200), against the SASS issue model's prediction (<code>reports/gap/issue_model.json</code>, "
                     "error bars: the spread over its seeds, 1 sd). The A100 climbs slowly where the RTX 3090 reaches FA2 by kernel 2.</p>"
                     "<div class=chart id=gap-chart></div>")
    elif st.get("gap_note"):
        parts.append(f"<p class=warn>Gap view left out: {E(st['gap_note'])}</p>")
    if st.get("progression"):
        parts.append("<div class=chart id=progression-chart></div>")
    if st.get("mix"):
        parts.append("<div class=chart id=mix-chart></div>")
    parts.append("</section>")
    return "".join(parts)


def overview_html(data: dict) -> str:
    ov = data["overview"]
    note = "" if ov["shown"] == ov["of"] else f" ({ov['shown']} longest of {ov['of']} launches)"
    small = (f"<p class=note>{ov['small']} launch(es) under {100 * ov['min_share']:.0f} % of their report's time "
             f"(fill and copy kernels) are left out of these charts and the rooflines; the summary table lists them.</p>"
             if ov.get("small") else "")
    parts = [f"<section id=stalls><h2>Stall reasons and pipe utilisation, every launch{E(note)}</h2>",
             "<p class=note>Stall ratios are per <i>issued instruction</i>: summed over reasons (with \u2018selected\u2019, the warp "
             "that issues) they are the average warp latency per instruction. A kernel that issues fewer instructions "
             "raises every ratio without stalling more: compare total work in the compare view (inst_executed). "
             "Reasons largest first.</p>" + small]
    parts.append("<div class=chart id=stall-overview></div>" if ov["stalls"] else
                 "<p class=warn>No stall reasons in these reports (ncu --section WarpStateStats).</p>")
    parts.append("<div class=chart id=pipe-overview></div>" if ov["pipes"] else
                 "<p class=warn>No pipe utilisation in these reports (ncu --section ComputeWorkloadAnalysis).</p>")
    parts.append("<div class=chart id=memory-overview></div>" if ov.get("memory") else
                 "<p class=warn>No byte rates in these reports (ncu --section MemoryWorkloadAnalysis_Tables).</p>")
    parts.append("</section>")
    return "".join(parts)


def launch_html(data: dict) -> str:
    opts = []
    for x in data["launches"]:
        src = " \u00b7 source" if x["sid"] in data["sources"] else ""
        opts.append(f"<option value='{E(x['sid'])}'>{(STAR + ' ') if x['dominant'] else ''}{E(x['label'])} \u2014 "
                    f"{E(str(x.get('function') or x['kernel'])[:60])}{src}</option>")
    first = next((x["sid"] for x in data["launches"] if x["sid"] in data["sources"] and x["dominant"]),
                 next((x["sid"] for x in data["launches"] if x["sid"] in data["sources"]),
                      data["launches"][0]["sid"] if data["launches"] else ""))
    return (f"<section id=launch><h2>One launch: stalls, pipes and the hottest source lines</h2>"
            f"<div class=controls>launch <select id=launch-select data-first='{E(first)}'>{''.join(opts)}</select></div>"
            f"<p id=launch-facts class=facts></p>"
            f"<div id=launch-rules class=rules></div>"
            f"<div class=row><div class='chart half' id=launch-stalls></div><div class='chart half' id=launch-pipes></div></div>"
            f"<h3>Source view: SASS lines with their stall samples by reason, grouped under their file:line and its source text</h3>"
            f"<p class=note>PC sampling (<code>smsp__pcsamp_warps_issue_stalled_*</code>; \u2018selected\u2019 and the "
            f"_not_issued subsets left out). Groups and lines hottest first; a bar's length is the line's samples against the "
            f"hottest line's, split by reason (hover it). File paths are relative to the sources' common folder; beside each file:line "
            f"its source text where the report imported it (<code>--import-source yes</code>). A line outside the kernel's own file (an "
            f"inline helper such as an <code>mma.sync</code> wrapper) under more than one context is split by it: <i>\u2190 near file:line</i> is the nearest "
            f"earlier instruction of the kernel's own file in PC order, which tells its call sites apart (Nsight Compute's reader gives "
            f"no inline call stack). Lines without file:line need <code>-lineinfo</code> at build time and "
            f"<code>--import-source yes</code> when profiling.</p>"
            f"<div class=controls>search <input id=src-search size=34 placeholder='SASS text or file:line, e.g. HMMA or .py:42'> "
            f"<span id=src-count class=dim></span></div>"
            f"<p id=src-hottest class=hottest></p><div id=src-legend class=legend></div>"
            f"<div id=src-view class=scroll></div></section>")


CSS = """
body{font-family:'DejaVu Sans',Arial,sans-serif;margin:0;padding:0 24px 40px;color:#222;background:#fafafa;font-size:14px}
header{padding:14px 0 4px;border-bottom:1px solid #ddd}h1{font-size:22px;margin:6px 0}.folder{color:#2a5db0}
h2{font-size:18px;margin:26px 0 6px;border-bottom:1px solid #e4e4e4;padding-bottom:4px}h3{font-size:15px;margin:18px 0 4px}
.sub{color:#444;margin:2px 0 8px}nav a{margin-right:14px;color:#2a5db0;text-decoration:none}
section{background:#fff;padding:6px 14px 12px;margin-top:14px;border:1px solid #e6e6e6;border-radius:4px}
table{border-collapse:collapse;font-size:12.5px}th,td{padding:3px 7px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f0f3f7;position:sticky;top:0;font-weight:600;white-space:nowrap}
table.sortable th{cursor:pointer}table.sortable th:hover{background:#dfe7f1}
th.asc::after{content:' \\25B2';font-size:9px}th.desc::after{content:' \\25BC';font-size:9px}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}tr.dom td{background:#fff8e1}
tr.pick td{outline:1px solid #2a5db0}td.star{color:#e69500;text-align:center}td.kern{font-family:monospace;font-size:11.5px}
#summary-table tbody tr{cursor:pointer}#summary-table.compact .x{display:none}
tr.rgrp td{background:#f4f6fa;border-top:2px solid #dde3ec}tr.rgrp a{text-decoration:none;color:#2a5db0}tr.sub td:nth-child(2){padding-left:18px}#summary-table tbody tr:hover td{background:#eef4fb}
.scroll{overflow-x:auto;max-width:100%}.scroll.tall{max-height:640px;overflow-y:auto}
#summary-table td{white-space:nowrap}.dim{color:#777;font-size:11.5px}.warn{color:#b35c00}.ok{color:#2b8a3e}
code{background:#f3f3f3;padding:0 3px;border-radius:2px;font-size:12px}code.hint{display:inline-block;margin-top:2px;white-space:normal}
td.lacks{max-width:420px}.note{color:#555;font-size:12.5px;max-width:1200px}.controls{margin:8px 0}
.controls select,.controls input{font-size:13px;padding:2px 4px;margin-right:8px}
.prov{font-size:9.5px;border-radius:3px;padding:0 3px;vertical-align:super;cursor:help}.prov.der{background:#e3ecfa;color:#2a5db0}
.prov.est{background:#ffe3cc;color:#a04000}.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px}
.chart{width:100%;min-height:60px;position:relative;overflow:hidden}.row{display:flex;gap:12px;flex-wrap:wrap}.chart.half{flex:1 1 560px;width:auto}
.facts{font-size:13px;margin:6px 0}.hottest{background:#fff3e0;padding:6px 8px;border-left:4px solid #e6550d;font-size:13px}
.bar{display:inline-flex;width:220px;height:11px;background:#f1f1f1;vertical-align:middle}.bar span{height:100%}
tr.more td{font-size:12px;border-bottom:none}tr.grp td{background:#f4f6fa;font-weight:600;border-top:2px solid #dde3ec}tr.grp td.loc{font-family:monospace;font-size:12px}
td.sass{font-family:monospace;font-size:12px;white-space:pre}td.off{font-family:monospace;color:#666;font-size:11.5px}
.legend span.k{display:inline-block;margin:2px 10px 2px 0;font-size:11.5px}.legend i{display:inline-block;width:10px;height:10px;margin-right:3px;vertical-align:middle}
.pairs{display:flex;flex-wrap:wrap;gap:18px}.pair{flex:0 0 auto;max-width:100%;max-height:720px;overflow:auto;padding-right:14px}.pair h3{font-size:13.5px}
.speedup{font-size:15px;margin:8px 0 4px}.cmpwarn{font-weight:600}table.cmp td.num{min-width:64px}
table.verdict{font-size:13.5px}table.verdict td{padding:5px 10px}table.verdict tbody tr{cursor:pointer}
table.verdict tbody tr:hover td{background:#eef4fb}.bound{font-weight:600;padding:0 5px;border-radius:3px}
.b-comp{background:#e3f2e6;color:#1b6b2f}.b-mem{background:#e3ecfa;color:#1f4f9a}.b-lat{background:#fdeedd;color:#9a4c00}
details.hint summary{cursor:pointer;color:#2a5db0;font-size:11.5px}details.hint code{white-space:normal}
#reports>details>summary{cursor:pointer}#reports>details>summary h2{display:inline;border:none}
.rules{margin:6px 0 10px}.rules h3{margin:8px 0 4px}.rule{border-left:4px solid #bbb;padding:3px 8px;margin:4px 0;background:#fbfbfb;max-width:1200px;font-size:12.5px}
.rule.r-error{border-color:#c62828}.rule.r-warning{border-color:#e69500}.rule.r-optimization{border-color:#2a5db0}.rule.r-info{border-color:#9e9e9e}
.rule .rk{font-size:10.5px;text-transform:uppercase;color:#666;margin-right:6px}.rule .sp{font-weight:600;color:#1b6b2f;margin-left:6px}
td.srctext,code.srctext{font-family:monospace;font-size:11.5px;color:#333;white-space:pre-wrap;font-weight:normal}span.ctx{font-weight:normal;color:#666;font-size:11.5px}
.reg{color:#c62828;font-weight:600}.better{color:#2b8a3e}.worse{color:#c62828}details{margin:8px 0}
"""

JS = r"""
(function(){
const D = JSON.parse(document.getElementById('flashprof-data').textContent);
const cfg = {displaylogo:false, responsive:true, modeBarButtonsToRemove:['select2d','lasso2d']};
const $ = id => document.getElementById(id);
const esc = s => String(s).replace(/[&<>"']/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
const fmt = (v, d) => (v === null || v === undefined || !isFinite(v)) ? '\u2013' : (Math.abs(v) >= 1e4 ? Math.round(v).toLocaleString('en') : Number(v).toPrecision(d || 3).replace(/\.?0+e/, 'e').replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, ''));
// ---- charts drawn from their plotly JSON
const info = {}; D.launches.forEach(x => info[x.sid] = x);
const recs = {}; D.summary.forEach(r => recs[r.report + '#' + r.launch] = r);
// Every chart box gets the figure's height explicitly: plotly's responsive mode then only
// follows the width, and a resize or zoom can never shrink a box under its plot.
function plot(id, data, layout, react) {
  const div = typeof id === 'string' ? $(id) : id, h = layout.height || 450;
  div.style.height = h + 'px'; div.style.minHeight = '0';
  return (react ? Plotly.react : Plotly.newPlot)(div, data, layout, cfg);
}
for (const c of D.roofline.charts) plot(c.id, c.figure.data, c.figure.layout);
if (D.story && D.story.gap) plot('gap-chart', D.story.gap.figure.data, D.story.gap.figure.layout);
if (D.story && D.story.progression) plot('progression-chart', D.story.progression.figure.data, D.story.progression.figure.layout);
if (D.story && D.story.mix) plot('mix-chart', D.story.mix.figure.data, D.story.mix.figure.layout);
if (D.overview.stalls) plot('stall-overview', D.overview.stalls.data, D.overview.stalls.layout);
if (D.overview.pipes) plot('pipe-overview', D.overview.pipes.data, D.overview.pipes.layout);
if (D.overview.memory) plot('memory-overview', D.overview.memory.data, D.overview.memory.layout);
// ---- sortable tables
document.querySelectorAll('table.sortable').forEach(t => {
  t.querySelectorAll('th').forEach((th, i) => th.addEventListener('click', () => {
    const asc = !th.classList.contains('asc');
    t.querySelectorAll('th').forEach(h => h.classList.remove('asc', 'desc'));
    th.classList.add(asc ? 'asc' : 'desc');
    if (t.id === 'summary-table' && $('sum-group').checked) { $('sum-group').checked = false; applySummary(); }
    const rows = Array.from(t.tBodies[0].rows).filter(r => !r.classList.contains('rgrp'));
    const key = r => r.cells[i].dataset.v;
    rows.sort((a, b) => {
      const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      if (x === '' && y !== '') return 1; if (y === '' && x !== '') return -1;
      const c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
      return asc ? c : -c;
    });
    rows.forEach(r => t.tBodies[0].appendChild(r));
    Array.from(t.tBodies[0].rows).filter(r => r.classList.contains('rgrp')).forEach(r => t.tBodies[0].appendChild(r));
  }));
});
// ---- summary: filter, group by report, all columns
const openGroups = new Set();
function applySummary() {
  const t = $('summary-table'); if (!t) return;
  const q = $('sum-filter').value.toLowerCase().trim(), grouped = $('sum-group').checked;
  if (grouped) Array.from(t.tBodies[0].rows).sort((a, b) => parseFloat(a.dataset.i) - parseFloat(b.dataset.i)).forEach(r => t.tBodies[0].appendChild(r));
  let n = 0, of = 0;
  Array.from(t.tBodies[0].rows).forEach(tr => {
    if (tr.classList.contains('rgrp')) {
      tr.style.display = grouped && !q ? '' : 'none';
      tr.querySelector('.gtoggle').textContent = openGroups.has(tr.dataset.report) ? '\u25be' : '\u25b8'; return; }
    of++;
    let show = !q || tr.dataset.q.includes(q);
    if (show && grouped && !q && tr.classList.contains('sub') && !openGroups.has(tr.dataset.report)) show = false;
    tr.style.display = show ? '' : 'none'; if (show) n++;
  });
  $('sum-count').textContent = `${n} of ${of} launch(es) shown`;
}
if ($('summary-table')) {
  $('sum-filter').addEventListener('input', applySummary);
  $('sum-group').addEventListener('change', applySummary);
  $('sum-more').addEventListener('click', () => { const c = $('summary-table').classList.toggle('compact');
    $('sum-more').textContent = c ? 'show all columns' : 'key columns only'; });
  document.querySelectorAll('#summary-table tr.rgrp').forEach(tr => tr.addEventListener('click', e => {
    e.preventDefault(); const r = tr.dataset.report; openGroups.has(r) ? openGroups.delete(r) : openGroups.add(r); applySummary(); }));
  applySummary();
}
// ---- compare view
const fmt4 = v => {
  if (v === null || v === undefined || !isFinite(v)) return '\u2013';
  const a = Math.abs(v);
  for (const [d, u] of [[1e9, 'G'], [1e6, 'M'], [1e4, 'k']]) if (a >= d) return Number((v / (d === 1e4 ? 1e3 : d)).toPrecision(4)) + (d === 1e4 ? 'k' : u);
  return a >= 1e-3 || a === 0 ? String(Number(v.toPrecision(4))) : v.toPrecision(3);
};
const times = x => (x >= 10 ? x.toFixed(1) : x >= 1.1 ? x.toFixed(2) : x.toFixed(3)) + '\u00d7';
const durTxt = ns => ns >= 1e6 ? fmt4(ns / 1e6) + ' ms' : fmt4(ns / 1e3) + ' \u00b5s';
function drawCompare() {
  if (!$('cmp-a')) return;
  const a = $('cmp-a').value, b = $('cmp-b').value, out = $('cmp-out');
  if (a === b) { out.innerHTML = '<p class=warn>Choose two different reports.</p>'; $('cmp-head').innerHTML = ''; return; }
  const c = D.compare[a + '|' + b], q = $('cmp-filter').value.toLowerCase(), changed = $('cmp-changed').checked;
  let h = '', head = '';
  if (c.of > c.pairs.length) h += `<p class=dim>first ${c.pairs.length} of ${c.of} launch pairs shown (flashprof compare for all)</p>`;
  c.pairs.forEach((p, n) => {
    const ra = recs[a + '#' + p.launch_a] || {}, rb = recs[b + '#' + p.launch_b] || {};
    let line = '';
    if (p.speedup) {
      const faster = p.speedup >= 1;
      line = `<p class='speedup ${faster ? 'better' : 'worse'}' data-speedup='${p.speedup}'><b>${esc(b)} #${p.launch_b} is ${times(faster ? p.speedup : 1 / p.speedup)} ${faster ? 'faster' : 'slower'}</b> than ${esc(a)} #${p.launch_a}: ${durTxt(ra.duration_ns)} \u2192 ${durTxt(rb.duration_ns)}` +
        (ra.tflops && rb.tflops ? ` \u00b7 ${fmt4(ra.tflops)} \u2192 ${fmt4(rb.tflops)} TFLOP/s` : '') + '</p>';
    }
    const warn = p.warnings.length ? `<p class='warn cmpwarn'>\u26a0 not like for like: ${p.warnings.map(esc).join('; ')}</p>` : '';
    if (n === 0) head = line + warn;
    h += `<div class=pair><h3>${esc(a)} #${p.launch_a} \u2192 ${esc(b)} #${p.launch_b}</h3>` + (n ? line + warn : '');
    if (p.regressions.length) {
      h += p.speedup && p.speedup > 1.02
        ? '<p class=dim>stall ratios that grew (per issued instruction: a kernel that issues fewer instructions raises them without stalling more): ' + p.regressions.map(esc).join('; ') + '</p>'
        : '<p class=reg>regressions: ' + p.regressions.map(esc).join('; ') + '</p>';
    } else h += '<p class=ok>no regressions</p>';
    h += '<table class=cmp><thead><tr><th>field</th><th>unit</th><th>A</th><th>B</th><th>B \u2212 A</th><th>\u0394 %</th></tr></thead><tbody>';
    for (const [f, va, vb, d, pct] of p.rows) {
      let [label, unit, scale] = D.compare_units[f] || [f, '', 1];
      if (unit === '\u00b5s' && Math.max(Math.abs(va || 0), Math.abs(vb || 0)) * scale >= 1e4) { unit = 'ms'; scale /= 1e3; }
      if (q && !f.toLowerCase().includes(q) && !label.toLowerCase().includes(q)) continue;
      if (changed && !(d !== null && (pct === null ? d !== 0 : Math.abs(pct) >= 1))) continue;
      const lower = /duration|stalls\.|conflicts|nway/.test(f), cls = pct === null ? '' : ((pct < 0) === lower ? 'better' : 'worse');
      const sc = v => (v === null || v === undefined) ? null : v * scale;
      h += `<tr><td title="${esc(f)}">${esc(label)}</td><td class=dim>${esc(unit)}</td><td class=num>${fmt4(sc(va))}</td><td class=num>${fmt4(sc(vb))}</td><td class=num>${fmt4(sc(d))}</td><td class='num ${cls}'>${pct === null ? '\u2013' : (pct > 0 ? '+' : '') + fmt4(pct)}</td></tr>`;
    }
    h += '</tbody></table></div>';
  });
  $('cmp-head').innerHTML = head;
  out.innerHTML = '<div class=pairs>' + h + '</div>';
  // every report's dominant launch against A's
  const va = D.verdict.find(v => v.report === a);
  if (va && va.duration_ns) {
    let t = '<table class=cmp><thead><tr><th>report</th><th>duration</th><th>against A</th><th></th></tr></thead><tbody>';
    for (const v of D.verdict) {
      if (v.report === a || !v.duration_ns) continue;
      const x = va.duration_ns / v.duration_ns, w = (recs[v.sid] || {}).gpu !== (recs[va.sid] || {}).gpu ? 'other GPU' : '';
      t += `<tr><td>${esc(info[v.sid] ? info[v.sid].label : v.report)}</td><td class=num>${durTxt(v.duration_ns)}</td><td class='num ${x >= 1 ? 'better' : 'worse'}'>${times(x >= 1 ? x : 1 / x)} ${x >= 1 ? 'faster' : 'slower'}</td><td class=warn>${w}</td></tr>`;
    }
    $('cmp-all').innerHTML = t + '</tbody></table>';
  }
}
if ($('cmp-a')) {
  ['cmp-a', 'cmp-b', 'cmp-changed'].forEach(id => $(id).addEventListener('change', drawCompare));
  $('cmp-filter').addEventListener('input', drawCompare);
  $('cmp-swap').addEventListener('click', () => { const t = $('cmp-a').value; $('cmp-a').value = $('cmp-b').value; $('cmp-b').value = t; drawCompare(); });
  drawCompare();
}
// ---- one launch: stalls, pipes, source
const colors = D.reason_colors;
const small = {template:'plotly_white', margin:{l:150, r:20, t:40, b:45}, font:{size:11}, height:420};
function resText(x) {
  const r = x.resources; if (!r) return '';
  const bits = [];
  if (r.registers_per_thread !== null) bits.push(`${fmt(r.registers_per_thread, 3)} registers/thread`);
  if (r.smem_per_block !== null) bits.push(`${fmt(r.smem_per_block / 1024, 3)} KiB shared memory/block`);
  if (r.block_size !== null) bits.push(`${fmt(r.block_size, 4)} threads/block`);
  if (r.theoretical_occupancy_pct !== null) bits.push(`occupancy ${fmt(r.theoretical_occupancy_pct, 3)} % theoretical` +
    (r.occupancy_limit ? ` (${r.blocks_per_sm} block(s)/SM, limited by ${esc(r.occupancy_limit)})` : '') +
    (r.achieved_occupancy_pct !== null ? `, ${fmt(r.achieved_occupancy_pct, 3)} % achieved` : ''));
  if (r.waves_per_sm !== null) bits.push(`${fmt(r.waves_per_sm, 3)} waves/SM`);
  return bits.length ? '<br><span id=launch-resources>' + bits.join(' \u00b7 ') + '</span>' : '';
}
function limText(x) {
  const l = x.limiter; if (!l) return '';
  return `<br>bound by: <b>${esc(l.bound)}</b>` + (l.roof ? ` \u00b7 ${fmt(l.pct_of_roof, 3)} % of its ${esc(l.roof === 'compute' ? 'compute' : l.roof)} roof` : '');
}
function drawLaunch(sid) {
  const x = info[sid], r = recs[sid];
  document.querySelectorAll('#summary-table tbody tr').forEach(tr => tr.classList.toggle('pick', tr.dataset.sid === sid));
  $('launch-facts').innerHTML = `<b>${esc(x.label)}</b> \u00b7 <code>${esc(x.kernel)}</code><br>${esc(r.gpu || 'GPU unknown')} \u00b7 ${esc(x.shape || 'shape not recorded')} \u00b7 ${esc(r.dtype || 'dtype not recorded')} \u00b7 duration ${durTxt(r.duration_ns)}` +
    (x.time_share !== null ? ` (${fmt(100 * x.time_share, 3)} % of its report)` : '') + ` \u00b7 ${esc(r.flops_kind || 'no FLOP kind')} ${fmt(r.tflops, 4)} TFLOP/s` + (x.dominant ? ' \u00b7 \u2605 dominant launch' : '') + resText(x) + limText(x);
  const st = D.stalls[sid];
  if (st && st.reasons.length) {
    const n = st.reasons.length;
    plot('launch-stalls', [{type:'bar', orientation:'h', y:st.reasons.slice().reverse(), x:st.per_issue.slice().reverse(),
      marker:{color:st.reasons.slice().reverse().map(k => colors[k] || '#ccc')}, hovertemplate:'%{y}: %{x:.3g} warps per issued instruction<extra></extra>'}],
      Object.assign({}, small, {title:{text:'stall reasons (warps per issued instruction)', font:{size:13}}, height:Math.max(260, 60 + 18 * n)}), true);
  } else { Plotly.purge('launch-stalls'); $('launch-stalls').style.height = 'auto'; $('launch-stalls').innerHTML = '<p class=warn>no stall reasons in this report (ncu --section WarpStateStats)</p>'; }
  const pp = D.pipes[sid];
  if (pp && pp.pct.some(v => v !== null)) {
    const y = pp.names.map((n, i) => n + (pp.provenance[i] && pp.provenance[i] !== 'exact' ? ' (' + pp.provenance[i] + ')' : ''));
    const mix = pp.mix.length ? 'top opcodes: ' + pp.mix.slice(0, 6).map(([o, s]) => `${o} ${fmt(100 * s, 2)}%`).join(', ') : '';
    plot('launch-pipes', [{type:'bar', orientation:'h', y:y.slice().reverse(), x:pp.pct.slice().reverse(), marker:{color:'#4a7fc1'},
      hovertemplate:'%{y}: %{x:.3g} % of peak<extra></extra>'}],
      Object.assign({}, small, {title:{text:'pipe utilisation (% of peak)', font:{size:13}}, xaxis:{range:[0, 100]}, height:300,
      annotations: mix ? [{text:esc(mix), xref:'paper', yref:'paper', x:0, y:-0.22, showarrow:false, font:{size:10}, xanchor:'left'}] : []}), true);
  } else { Plotly.purge('launch-pipes'); $('launch-pipes').style.height = 'auto'; $('launch-pipes').innerHTML = '<p class=warn>no pipe utilisation in this report (ncu --section ComputeWorkloadAnalysis)</p>'; }
  drawRules(sid);
  drawSource(sid);
}
// Nsight Compute's own rule texts for this launch, most important first, the rest folded
const RULES_OPEN = 3;
function ruleHtml(r) {
  const sp = r.speedup === null ? '' : `<span class=sp title="Nsight Compute's estimate: ${r.speedup_type === 'local' ? 'local (of the unit this rule looks at)' : 'global (of the launch)'}">est. ${r.speedup_type === 'local' ? 'local ' : ''}speed-up ${fmt(r.speedup, 3)} %</span>`;
  return `<div class='rule r-${esc(r.kind)}'><span class=rk>${esc(r.kind)}</span><b>${esc(r.title || r.name || '')}</b>` +
    `${r.title && r.name ? ` <span class=dim>(${esc(r.name)})</span>` : ''}${sp}<br>${esc(r.message)}</div>`;
}
function drawRules(sid) {
  const box = $('launch-rules'), rr = (D.rules || {})[sid];
  if (!rr || !rr.length) { box.innerHTML = `<p class=dim>${esc(D.rules_note || 'no Nsight Compute rule results in this report for this launch')}</p>`; return; }
  let h = `<h3>Nsight Compute's rules for this launch (${rr.length})</h3>` + rr.slice(0, RULES_OPEN).map(ruleHtml).join('');
  if (rr.length > RULES_OPEN) h += `<details id=rules-more><summary>${rr.length - RULES_OPEN} more rule result(s)</summary>${rr.slice(RULES_OPEN).map(ruleHtml).join('')}</details>`;
  box.innerHTML = h;
}
// a share of all stall samples, rounded to what it can tell: 76.2 %, 3.41 %, 0.25 %, <0.01 %
const share = x => !(x > 0) ? '0 %' : x < 1e-4 ? '<0.01 %' : x < 0.1 ? (100 * x).toFixed(2) + ' %' : (100 * x).toFixed(1) + ' %';
// one line's samples by reason; the bar's length is its samples against the hottest line's
function bar(by, reasons, total) {
  let h = '', tip = [];
  for (let i = 0; i < by.length; i += 2) {
    const k = reasons[by[i]], n = by[i + 1];
    h += `<span style="width:${100 * n / total}%;background:${colors[k] || '#ccc'}"></span>`; tip.push(`${k}: ${n}`);
  }
  return `<span class=bar title="${esc(tip.join('\n'))}">${h}</span>`;
}
function topReason(by, reasons) {
  let best = -1, k = '';
  for (let i = 0; i < by.length; i += 2) if (by[i + 1] > best) { best = by[i + 1]; k = reasons[by[i]]; }
  return k;
}
const GROUP_LINES = 8, expanded = new Set();
function drawSource(sid) {
  const v = D.sources[sid], out = $('src-view'), q = $('src-search').value.toLowerCase();
  if (!v) { out.innerHTML = `<p class=warn>${esc(D.source_notes[sid] || 'no source view for this launch')}</p>`; $('src-hottest').innerHTML = ''; $('src-legend').innerHTML = ''; $('src-count').textContent = ''; return; }
  let hot = null;
  v.groups.forEach(g => g.lines.forEach(l => { if (!hot || l[2] > hot.l[2]) hot = {g, l}; }));
  $('src-hottest').innerHTML = `hottest line: <code id=hottest-sass>${esc(hot.l[1])}</code> at +0x${hot.l[0].toString(16).padStart(5, '0')}` +
    (hot.g.line !== null ? ` \u00b7 <code>${esc(hot.g.loc)}</code>` + (hot.g.text ? ` <code class=srctext>${esc(hot.g.text)}</code>` : '') + (hot.g.ctx ? ` (near ${esc(hot.g.ctx)})` : '') : '') + ` \u00b7 ${hot.l[2]} of ${v.total} stall samples (${share(hot.l[2] / v.total)}), mostly ${esc(topReason(hot.l[3], v.reasons))}`;
  const used = new Set(); v.groups.forEach(g => g.lines.forEach(l => { for (let i = 0; i < l[3].length; i += 2) used.add(l[3][i]); }));
  $('src-legend').innerHTML = v.reasons.filter((k, i) => used.has(i)).map(k => `<span class=k><i style="background:${colors[k] || '#ccc'}"></i>${esc(k)}</span>`).join('');
  let h = '<table class=src><thead><tr><th>PC offset</th><th>SASS</th><th>stall samples</th><th>share</th><th>by reason</th><th>top reason</th></tr></thead><tbody>', shown = 0;
  for (const g of v.groups) {
    const key = g.key || g.loc, hay = (key + ' ' + (g.text || '') + ' ' + (g.ctx_text || '')).toLowerCase();
    const lines = g.lines.filter(l => !q || l[1].toLowerCase().includes(q) || hay.includes(q));
    if (!lines.length) continue;
    const ctx = g.ctx ? `<br><span class=ctx title="ncu_report gives the innermost file:line per instruction, no inline call stack: this is the nearest earlier instruction of the kernel's own file, in PC order">← near ${esc(g.ctx)}${g.ctx_text ? ' <code class=srctext>' + esc(g.ctx_text) + '</code>' : ''}</span>` : '';
    h += `<tr class=grp data-key="${esc(key)}"><td colspan=2 class=loc title="${esc(key)}">${esc(g.loc)}${g.text ? ' <code class=srctext>' + esc(g.text) + '</code>' : ''}${ctx}</td><td class=num>${g.samples}</td><td class=num>${share(g.samples / v.total)}</td><td colspan=2 class=dim>${g.lines.length} SASS line(s)</td></tr>`;
    const open = q || expanded.has(key), cut = open ? lines.length : Math.min(lines.length, GROUP_LINES);
    for (const l of lines.slice(0, cut)) {
      shown++;
      h += `<tr><td class=off>+0x${l[0].toString(16).padStart(5, '0')}</td><td class=sass>${esc(l[1])}</td><td class=num>${l[2]}</td><td class=num>${share(l[2] / v.total)}</td><td>${bar(l[3], v.reasons, v.max_line || l[2])}</td><td>${esc(topReason(l[3], v.reasons))}</td></tr>`;
    }
    if (cut < lines.length) h += `<tr class=more><td></td><td colspan=5><a href="#" data-loc="${esc(key)}">\u2026 ${lines.length - cut} more line(s) under this file:line (show)</a></td></tr>`;
  }
  out.innerHTML = h + '</tbody></table>';
  out.querySelectorAll('tr.more a').forEach(a => a.addEventListener('click', e => { e.preventDefault(); expanded.add(a.dataset.loc); drawSource(sid); }));
  $('src-count').textContent = `${shown} of ${v.kept} line(s) shown (${GROUP_LINES} per file:line until you search or click \u2026)` + (v.lines_with_samples > v.kept ? ` (the hottest ${v.kept} of ${v.lines_with_samples} lines with samples are in the page)` : '');
}
const sel = $('launch-select');
if (sel && sel.options.length) {
  sel.value = sel.dataset.first || sel.options[0].value;
  sel.addEventListener('change', () => drawLaunch(sel.value));
  $('src-search').addEventListener('input', () => drawSource(sel.value));
  document.querySelectorAll('#summary-table tbody tr[data-sid]').forEach(tr => tr.addEventListener('click', () => {
    sel.value = tr.dataset.sid; drawLaunch(tr.dataset.sid); $('launch').scrollIntoView({behavior:'smooth'}); }));
  drawLaunch(sel.value);
}
document.querySelectorAll('#verdict-table tbody tr').forEach(tr => tr.addEventListener('click', () => {
  if (!sel) return; sel.value = tr.dataset.sid; drawLaunch(tr.dataset.sid); $('launch').scrollIntoView({behavior:'smooth'}); }));
document.body.dataset.ready = '1';
})();
"""


def page(data: dict) -> str:
    """The whole page: one string, plotly inlined once."""
    from plotly.offline import get_plotlyjs
    title = f"flashprof report: {data['meta']['folder_name']}"
    body = (header_html(data) + verdict_html(data) + summary_html(data) + compare_html(data) + roofline_html(data)
            + story_html(data) + overview_html(data) + launch_html(data) + reports_html(data))
    return ("<!DOCTYPE html><html lang=en><head><meta charset='utf-8'>"
            f"<meta name=viewport content='width=device-width, initial-scale=1'><title>{E(title)}</title>"
            f"<style>{CSS}</style><script type='text/javascript'>{get_plotlyjs()}</script></head><body>"
            f"{body}<script id='flashprof-data' type='application/json'>{_blob(data)}</script>"
            f"<script>{JS}</script></body></html>\n")


__all__ = ["page", "KIND_NAMES"]

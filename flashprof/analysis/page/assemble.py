"""Inputs (the parsed folder) + summary records -> the one dict the page embeds and draws.

Input: a ``flashprof.analysis.charts.inputs.Inputs`` (its frame and analysis frames, parsed
once) and the summary records of that folder. Per-PC source frames come from
``load_source_frame`` (the parse cache holds them for flashprof's own reports), only for
launches whose report collected PC sampling. Sidecars (``<stem>.json``, the profiling
metadata beside a report) are read through the parse stage's own reader.
Nsight Compute's rule results come from ``load_rules`` (cached beside the frame).
Output: ``page_data`` -> {"meta", "reports", "summary", "launches", "roofline", "stalls",
"pipes", "sources", "rules", "compare", "figures"}; plotly figures as JSON dicts.
"""
from __future__ import annotations

import datetime as _dt
import math

import pandas as pd

from matplotlib.colors import to_hex

from flashprof.analysis.charts.identity import launches as launch_table
from flashprof.analysis.page import data as D
from flashprof.analysis.page import figures as F
from flashprof.analysis.charts.labels import palette
from flashprof.analysis.report import parse
from flashprof.analysis.report.target_key import gpu_name, is_series
from flashprof.analysis.stages.limiter import limiters, verdict_text
from flashprof.analysis.stages.summary import jsonable

# launches a source view is read for, per report (the longest first)
SOURCE_MAX_LAUNCHES = 12
# the overview charts show at most this many launches (the longest first)
OVERVIEW_MAX = 60
# launches under this share of their report's time (fill, copy kernels) stay off the
# overview and roofline charts (they would set the scale); the tables still list them
MIN_SHARE = 0.01
# the page's own colours for the series: seven distinct hues (the static figures keep
# their viridis ramp); FA2 black and cuDNN red stay the anchors'
SERIES_COLORS = {"1": "#1f77b4", "2": "#ff7f0e", "3": "#2ca02c", "4": "#9467bd", "5": "#8c564b",
                 "6": "#e377c2", "7": "#17becf"}
OTHER_COLORS = ("#bcbd22", "#7f7f7f", "#ad494a", "#393b79", "#8ca252", "#e7ba52", "#843c39", "#7b4173")


def _sidecar(path) -> dict:
    try:
        return parse.read_sidecar(path).to_json()
    except Exception:
        return {}


def page_data(inp, records: list[dict], log=print) -> dict:
    frame, roof = inp.frame, inp.roof
    ident = inp.ident
    L = launch_table(roof if len(roof) else ident)
    grids = D.grid_shapes(frame)
    label = {s: lab for s, lab in zip(L["sid"], L["label"])}
    # a foreign report's launches: its stem whole ('repo/file'), never cut to a tag
    multi = L["report"].duplicated(keep=False)
    for s, rep, key, own, n, m in zip(L["sid"], L["report"], L["key"], L["profiled"], L["launch"], multi):
        if not is_series(key) and not own:
            label[s] = D.report_label(str(rep)) + (f" #{n}" if m else "")
    full = {}
    if "kernel_full" in frame.columns:
        u = frame.drop_duplicates(["report", "launch"])
        full = {D.sid(r, n): k for r, n, k in zip(u["report"], u["launch"], u["kernel_full"])}
    color = {s: SERIES_COLORS.get(str(k), to_hex(c)) for s, c, k in zip(L["sid"], L["color"], L["key"])}
    if any(is_series(k) for k in L["key"]):  # other reports beside the series: hues the series does not use
        others = list(dict.fromkeys(r for r, k in zip(L["report"], L["key"]) if not is_series(k)))
        for s, r, k in zip(L["sid"], L["report"], L["key"]):
            if not is_series(k):
                color[s] = OTHER_COLORS[others.index(r) % len(OTHER_COLORS)]
    order = list(L["sid"])
    dominant = D.mark_dominant(records)
    share = D.time_shares(records)
    recs_by_sid = {D.sid(r["report"], r["launch"]): r for r in records}
    order = [s for s in order if s in recs_by_sid] + [s for s in recs_by_sid if s not in order]

    launches = []
    for s in order:
        r = recs_by_sid[s]
        launches.append({"sid": s, "report": r["report"], "launch": r["launch"], "kernel": r["kernel"],
                         "label": label.get(s, s), "color": color.get(s, "#888888"),
                         "function": D.short_function(r["kernel"], full.get(s)),
                         "kernel_full": None if full.get(s) is None or pd.isna(full.get(s)) else str(full.get(s)),
                         "dominant": dominant.get(s, False), "time_share": D.sig(share.get(s), 4),
                         "shape": D.launch_shape(r) or grids.get(s), "gpu": r.get("gpu"),
                         "duration_ns": D.sig(r.get("duration_ns"), 6)})
    info = {x["sid"]: x for x in launches}

    # ---- what bounds each launch (speed of light + binding roof), its resources
    limit = {}
    for row in limiters(frame, roof).to_dict("records"):
        row = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
        row["bound"] = verdict_text(row)
        limit[D.sid(row["report"], row["launch"])] = {k: D.sig(v, 4) if isinstance(v, float) else v
                                                       for k, v in row.items() if k not in ("report", "range_idx", "launch")}
    resources = D.launch_resources(frame)
    for x in launches:
        x["limiter"] = limit.get(x["sid"])
        x["resources"] = resources.get(x["sid"])
    verdict = D.verdict(order, recs_by_sid, limit)

    # ---- roofline: one chart per (FLOP kind, GPU)
    points = D.roofline_points(roof, records, ident)
    for p in points:
        p["label"], p["color"] = info.get(p["sid"], {}).get("label", p["sid"]), color.get(p["sid"], "#888888")
        p["function"] = info.get(p["sid"], {}).get("function")
        p["limiter"] = info.get(p["sid"], {}).get("limiter")
        p["shape"] = p["shape"] or grids.get(p["sid"])
    rank = {s: i for i, s in enumerate(order)}
    points.sort(key=lambda p: rank.get(p["sid"], len(rank)))  # legends in series order
    charts, off_chart = [], []
    by_chart: dict[tuple, list[dict]] = {}
    for p in points:
        sh = share.get(p["sid"])
        if sh is not None and sh < MIN_SHARE:
            off_chart.append({"sid": p["sid"], "label": p["label"],
                              "why": f"{100 * sh:.2g} % of its report's time"
                                     + (f" ({p['duration_ns'] / 1e3:.3g} \u00b5s)" if p.get("duration_ns") else "") + ": "
                                     f"left off the charts (under {100 * MIN_SHARE:.0f} %)"})
            continue
        if p["kind"] is None or not p["levels"]:
            why = (recs_by_sid.get(p["sid"], {}).get("provenance") or {}).get("tflops")
            off_chart.append({"sid": p["sid"], "label": p["label"],
                              "why": why or "no FLOP rate or no byte rate in this report (null)"})
            continue
        by_chart.setdefault((p["kind"], gpu_name(p["gpu"]) if p["gpu"] else "GPU unknown"), []).append(p)
    kinds = ("tensor", "fp32", "fp16", "fp64")
    for (kind, gpu), pts in sorted(by_chart.items(), key=lambda kv: (kinds.index(kv[0][0]), -len(kv[1]), kv[0][1])):
        reports = sorted({p["report"] for p in pts})
        sel = roof[roof["report"].isin(reports) & roof["flops_kind"].eq(kind)]
        sel = sel[[D.sid(r, n) in {p["sid"] for p in pts} for r, n in zip(sel["report"], sel["launch"])]]
        measured = inp.measured_roofs(reports) if inp.ceilings is not None else None
        rf = D.roofs(sel, measured)
        if len({p["report"] for p in pts}) == 1 and len({p["color"] for p in pts}) < len(pts):  # one report: a colour each
            pts = [dict(p, color=to_hex(c)) for p, c in zip(pts, palette(len(pts)))]
        fig = F.roofline_figure(pts, rf, kind, gpu)
        charts.append({"id": f"roofline-{kind}-{len(charts)}", "kind": kind, "gpu": gpu,
                       "launches": [p["sid"] for p in pts], "roofs": rf, "figure": F.compact(fig)})

    # ---- stalls and pipes
    stall_bars = D.stall_bars(inp.stall)
    pipe_bars = D.pipe_bars(inp.pipe)
    big = [s for s in order if share.get(s) is None or share[s] >= MIN_SHARE]
    longest = sorted(big, key=lambda s: -(recs_by_sid[s].get("duration_ns") or 0))[:OVERVIEW_MAX]
    shown = [s for s in order if s in set(longest)]
    ov_labels = [info[s]["label"] + (" \u2605" if info[s]["dominant"] else "") for s in shown]
    with_stalls = [s for s in shown if stall_bars.get(s, {}).get("reasons")]
    with_pipes = [s for s in shown if any(v is not None for v in pipe_bars.get(s, {}).get("pct", []))]
    mem_bars = D.memory_bars(roof)
    with_mem = [s for s in shown if any(v is not None for v in mem_bars.get(s, {}).get("pct", []))]
    overview = {
        "stalls": F.compact(F.stall_overview([ov_labels[shown.index(s)] for s in with_stalls], with_stalls, stall_bars))
        if with_stalls else None,
        "pipes": F.compact(F.pipe_overview([ov_labels[shown.index(s)] for s in with_pipes], with_pipes, pipe_bars))
        if with_pipes else None,
        "memory": F.compact(F.memory_overview([ov_labels[shown.index(s)] for s in with_mem], with_mem, mem_bars))
        if with_mem else None,
        "of": len(order), "shown": len(shown), "small": len(order) - len(big), "min_share": MIN_SHARE}

    # ---- source views
    sampled = D.has_pc_sampling(frame)
    sources, source_notes = {}, {}
    for report, path in inp.stems.items():
        mine = [s for s in order if info[s]["report"] == report]
        want = [s for s in mine if s in sampled]
        if not want:
            for s in mine:
                source_notes[s] = f"no PC sampling in this report: collect with ncu {D.SOURCE_HINT}"
            continue
        want = sorted(want, key=lambda s: -(recs_by_sid[s].get("duration_ns") or 0))
        for s in want[SOURCE_MAX_LAUNCHES:]:
            source_notes[s] = (f"source view read for the {SOURCE_MAX_LAUNCHES} longest launches of "
                               f"{report} only")
        for s in want[:SOURCE_MAX_LAUNCHES]:
            try:
                src = parse.load_source_frame(path, info[s]["launch"])
            except Exception as exc:  # one unreadable launch must not cost the page
                source_notes[s] = f"per-instruction data unreadable: {str(exc).strip()[:120]}"
                continue
            view = D.source_view(src)
            if view["groups"]:
                sources[s] = view
            else:
                source_notes[s] = "no stall samples for this launch"
    for s in order:
        if s not in sources and s not in source_notes:
            source_notes[s] = f"no PC sampling for this launch: collect with ncu {D.SOURCE_HINT}"

    # ---- Nsight Compute's own rule results per launch
    try:
        rules = D.launch_rules(parse.load_rules(inp.paths, cache=inp.cache))
        rules_note = None
    except Exception as exc:  # unreadable rules must not cost the page
        rules, rules_note = {}, f"rule results unreadable: {str(exc).strip()[:160]}"

    # ---- the story: the gap (issue model), kernels over S (bench.csv), the SASS mix
    story = _story(inp, records, order, info, color)

    # ---- header: one row per report
    missing = parse.missing_quantities(frame)
    headers = []
    for report, path in inp.stems.items():
        mine = [recs_by_sid[s] for s in order if info[s]["report"] == report]
        headers.append(D.report_header(report, str(path), _sidecar(path), mine, missing.get(report, [])))

    compare = D.compare_pairs(records)
    meta = {"folder": str(inp.reports_dir), "folder_name": inp.reports_dir.name,
            "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "flashprof": _version(), "launches": len(order), "reports": len(inp.stems),
            "ceilings": inp.ceilings is not None,
            "ceilings_gpu": (str(inp.ceilings["gpu"].iloc[0]) if inp.ceilings is not None and len(inp.ceilings) else None)}
    return jsonable({
        "meta": meta, "verdict": verdict, "story": story, "reports": headers, "summary": jsonable(records), "launches": launches,
        "roofline": {"charts": charts, "off_chart": off_chart},
        "overview": overview, "stalls": stall_bars, "pipes": pipe_bars, "memory": mem_bars,
        "sources": sources, "source_notes": source_notes, "rules": rules, "rules_note": rules_note,
        "compare": compare, "compare_default": D.default_pair(records),
        "compare_units": {f: D.field_unit(f) for c in compare.values() for p in c["pairs"] for f, *_r in p["rows"]},
        "reason_colors": _reason_colors(),
    })


def _story(inp, records: list[dict], order: list[str], info: dict, color: dict) -> dict:
    """The series' story where the folder has it: the gap view (the committed issue-model
    result, only for a folder of the kernel series and only while its inputs are unchanged),
    the progression over S (the folder's bench.csv) and the executed SASS mix."""
    from flashprof.analysis.charts.identity import kernel_color, kernel_label
    out: dict = {"gap": None, "gap_note": None, "progression": None, "mix": None}
    if inp.series:
        g = inp.gap_issue
        if "records" in g:
            groups = D.gap_points(g["records"])
            out["gap"] = {"groups": groups, "figure": F.compact(F.gap_figure(groups))}
        else:
            out["gap_note"] = g.get("error")
    try:
        bench = inp.bench
    except Exception as exc:  # a malformed bench.csv costs this chart only
        bench, out["progression_note"] = None, str(exc).splitlines()[0]
    if bench is not None and len(bench):
        series = D.progression(bench)
        labels = {s["target"]: kernel_label(s["target"]) for s in series}
        colors = {s["target"]: SERIES_COLORS.get(s["target"]) or to_hex(kernel_color(s["target"])) for s in series}
        out["progression"] = {"series": series, "figure": F.compact(F.progression_figure(series, labels, colors))}
    mix = D.inst_mix(records, order)
    if mix["sids"] and len(mix["sids"]) > 1:
        labels = [info[s]["label"] for s in mix["sids"]]
        out["mix"] = dict(mix, figure=F.compact(F.mix_figure(labels, mix)))
    return out


def _version() -> str:
    try:
        from flashprof import __version__
        return str(__version__)
    except Exception:
        return "unknown"


def _reason_colors() -> dict:
    from flashprof.analysis.charts.style import REASON_COLORS
    return dict(REASON_COLORS)


def finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)

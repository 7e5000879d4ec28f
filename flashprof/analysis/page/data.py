"""What the report page shows, as plain JSON-ready data (pure: frames and records in, dicts out).

Input: the long frame's analysis frames (``roofline``, ``stalls``, ``pipes``), the summary
records of ``flashprof.analysis.stages.summary.summarize`` (as ``flashprof summary --format
json`` prints them), the per-PC source frames of ``load_source_frame``, each report's sidecar
dict and the measured roofs. Output: dicts the page embeds in one JSON blob and the plotly
figures of ``flashprof.analysis.page.figures`` draw from. Numbers that only feed a picture are
rounded to 4 significant digits; the summary records are embedded exactly as summarised.
"""
from __future__ import annotations

import math
import os
import re

import pandas as pd

from flashprof.analysis.metrics import recipes
from flashprof.analysis.stages.stalls import NOT_A_STALL, REASON_FAMILY, STALL_REASONS
from flashprof.analysis.stages.summary import compare, jsonable
from flashprof.analysis.report.target_key import MMA_SYNC_KEY

# The per-launch source view keeps the hottest lines only: a page stays a few MB.
SOURCE_MAX_LINES = 400
# Compare view: launches are paired by position; a pair of reports shows this many pairs.
COMPARE_MAX_PAIRS = 8
NO_LINE_INFO = "(no file:line: build with -lineinfo and profile with --import-source yes)"
SOURCE_HINT = "--section SourceCounters"


def sig(v, digits: int = 4):
    """A float rounded to ``digits`` significant digits; NaN/inf/None -> None."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        f = float(v)
        if not math.isfinite(f):
            return None
        return float(f"{f:.{digits}g}")
    return v


def sid(report: str, launch) -> str:
    return f"{report}#{int(launch)}"


def _none(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


# --------------------------------------------------------------------------- summary
def mark_dominant(records: list[dict]) -> dict[str, bool]:
    """{sid: dominant} per launch. The records' own ``dominant`` field where the summary
    gives one; otherwise the longest launch of each report (by ``duration_ns``) is dominant."""
    if any("dominant" in r for r in records):
        return {sid(r["report"], r["launch"]): bool(r.get("dominant")) for r in records}
    best: dict[str, tuple[float, str]] = {}
    for r in records:
        d = _none(r.get("duration_ns"))
        if d is None:
            continue
        k = sid(r["report"], r["launch"])
        if r["report"] not in best or d > best[r["report"]][0]:
            best[r["report"]] = (float(d), k)
    winners = {k for _d, k in best.values()}
    return {sid(r["report"], r["launch"]): sid(r["report"], r["launch"]) in winners for r in records}


def time_shares(records: list[dict]) -> dict[str, float | None]:
    """{sid: share of its report's profiled time}: the records' ``time_share`` where given,
    else duration / the report's summed launch durations."""
    if any("time_share" in r for r in records):
        return {sid(r["report"], r["launch"]): _none(r.get("time_share")) for r in records}
    totals: dict[str, float] = {}
    for r in records:
        d = _none(r.get("duration_ns"))
        if d is not None:
            totals[r["report"]] = totals.get(r["report"], 0.0) + float(d)
    out = {}
    for r in records:
        d, t = _none(r.get("duration_ns")), totals.get(r["report"])
        out[sid(r["report"], r["launch"])] = float(d) / t if d is not None and t else None
    return out


def compare_pairs(records: list[dict], max_pairs: int = COMPARE_MAX_PAIRS) -> dict[str, dict]:
    """``compare`` of every ordered pair of reports (A baseline, B compared), compacted:
    {"A|B": {"pairs": [{launch_a, launch_b, regressions, rows: [[field, a, b, delta, pct]]}],
    "of": number of launch pairs}}; at most ``max_pairs`` launch pairs are kept per report pair."""
    by_report: dict[str, list[dict]] = {}
    for r in records:
        by_report.setdefault(r["report"], []).append(r)
    out = {}
    names = list(by_report)
    for a in names:
        for b in names:
            if a == b:
                continue
            ra, rb = by_report[a], by_report[b]
            pairs = compare(ra[:max_pairs], rb[:max_pairs])
            ia = {int(r["launch"]): r for r in ra}
            ib = {int(r["launch"]): r for r in rb}
            out[f"{a}|{b}"] = {
                "of": min(len(ra), len(rb)),
                "pairs": [{"launch_a": p["launch_a"], "launch_b": p["launch_b"],
                           "regressions": p["regressions"],
                           "speedup": sig(speedup(ia.get(int(p["launch_a"]), {}), ib.get(int(p["launch_b"]), {}))),
                           "warnings": pair_warnings(ia.get(int(p["launch_a"]), {}), ib.get(int(p["launch_b"]), {})),
                           "rows": [[x["field"], sig(x["a"]), sig(x["b"]), sig(x["delta"]), sig(x["delta_pct"], 3)]
                                    for x in p["rows"]]} for p in pairs]}
    return out


def default_pair(records: list[dict]) -> list[str] | None:
    """The compare view's first pair: kernel6 -> kernel7 when both are there; else the first
    two reports whose dominant launches share GPU and function; else share a GPU; else the
    first two. None for fewer than two reports."""
    dom: dict[str, dict] = {}
    for r in records:
        if r.get("dominant") or r["report"] not in dom:
            dom[r["report"]] = r
    names = list(dom)
    if len(names) < 2:
        return None
    if "kernel6" in dom and "kernel7" in dom:
        return ["kernel6", "kernel7"]
    for same in (("gpu", "kernel"), ("gpu",)):
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if all(dom[a].get(k) == dom[b].get(k) for k in same):
                    return [a, b]
    return names[:2]


CLOCK_TOLERANCE = 0.02  # SM clocks further apart than this are named


def speedup(a: dict, b: dict) -> float | None:
    """B against A: duration(A) / duration(B) (> 1: B is faster); None without both."""
    da, db = _none(a.get("duration_ns")), _none(b.get("duration_ns"))
    return float(da) / float(db) if da and db else None


def pair_warnings(a: dict, b: dict) -> list[str]:
    """What makes a pair of launches not like for like: another GPU, another SM clock
    (> 2 %), another function, another problem shape or dtype."""
    out = []
    if a.get("gpu") != b.get("gpu"):
        out.append(f"different GPUs: {a.get('gpu') or 'unknown'} vs {b.get('gpu') or 'unknown'}")
    ca, cb = _none(a.get("sm_clock_hz")), _none(b.get("sm_clock_hz"))
    if ca and cb and abs(ca - cb) > CLOCK_TOLERANCE * max(ca, cb):
        out.append(f"different SM clocks: {ca / 1e9:.3g} vs {cb / 1e9:.3g} GHz")
    if a.get("kernel") != b.get("kernel"):
        out.append(f"different kernels: {str(a.get('kernel'))[:60]} vs {str(b.get('kernel'))[:60]}")
    sa, sb = launch_shape(a), launch_shape(b)
    if sa and sb and sa != sb:
        out.append(f"different problems: {sa} vs {sb}")
    if _none(a.get("dtype")) and _none(b.get("dtype")) and a.get("dtype") != b.get("dtype"):
        out.append(f"different dtypes: {a['dtype']} vs {b['dtype']}")
    return out


# (label, unit, scale) of a compared field by its name: values are multiplied by scale
_UNIT_RULES = [
    ("duration_ns", "duration", "\u00b5s", 1e-3), ("sm_clock_hz", "SM clock", "GHz", 1e-9),
    ("smsp_clock_hz", "SMSP clock", "GHz", 1e-9), ("time_share", "time share", "%", 100.0),
    ("inst_executed", "warp instructions executed", "M", 1e-6), ("ldsm_inst", "ldmatrix instructions", "M", 1e-6),
    ("pct_of_fa2", "% of FA2", "%", 1.0), ("sm_count", "SMs", "", 1.0),
]


def field_unit(field: str) -> list:
    """[label, unit, scale] for a compare row: raw summary names get a unit a reader knows."""
    for name, label, unit, scale in _UNIT_RULES:
        if field == name:
            return [label, unit, scale]
    if field.endswith("_tflops_peak") or field == "peak_tflops":
        return [field.replace("_tflops_peak", " peak").replace("peak_tflops", "peak"), "TFLOP/s", 1.0]
    if field.endswith("tflops"):
        return [field.replace("_tflops", "").replace("tflops", "FLOP rate") or "FLOP rate", "TFLOP/s", 1.0]
    if field.endswith("_pct") or field.startswith("pct_"):
        return [field.replace("_pct", "").replace("pct_of_", "% of ").replace("_", " "), "%", 1.0]
    if field.startswith("ai_"):
        return [f"intensity {field[3:]}", "FLOP/B", 1.0]
    if field.startswith("bytes_"):
        return [f"bytes {field[6:]}", "MB", 1e-6]
    if field.endswith("_ceiling"):
        return [f"{field[:-8]} bandwidth roof", "TB/s", 1e-12]
    if field.startswith("stalls."):
        return [f"stall {field[7:]}", "warps/issue", 1.0]
    if field.startswith("inst_mix."):
        return [f"{field[9:]} instructions", "M", 1e-6]
    if field.startswith("smem_bank_conflicts."):
        return [f"bank conflicts {field.split('.', 1)[1]}", "M", 1e-6]
    if field.startswith("smem_nway."):
        return [f"bank ways {field.split('.', 1)[1]}", "way", 1.0]
    return [field, "", 1.0]


# --------------------------------------------------------------------------- roofline
_LEVEL_AI = {"L1": "ai_l1", "L2": "ai_l2", "DRAM": "ai_dram", "shared memory": "ai_smem"}


def roofline_points(roof: pd.DataFrame, records: list[dict], ident: pd.DataFrame) -> list[dict]:
    """One dict per launch that has a FLOP kind: its points per memory level on its own
    kind's chart, with everything the hover shows (values and provenance)."""
    recs = {sid(r["report"], r["launch"]): r for r in records}
    shape = {sid(r["report"], r["launch"]): r for r in ident.to_dict("records")}
    out = []
    for key, sub in roof.groupby(["report", "launch"], sort=False, observed=True):
        k = sid(*key)
        sub = sub.sort_values("level")
        first = sub.iloc[0]
        kind = _none(first["flops_kind"])
        rec = recs.get(k, {})
        prov = rec.get("provenance") or {}
        levels = []
        for row in sub.to_dict("records"):
            ai, fl = row["ai"], row["flops"]
            if kind is None or not (_finite_pos(ai) and _finite_pos(fl)):
                continue
            level = str(row["level"])
            levels.append({
                "level": level, "ai": sig(ai), "flops": sig(fl),
                "ai_tensor": sig(row["ai_tensor"]), "ai_fp32": sig(row["ai_fp32"]), "ai_total": sig(row["ai_total"]),
                "bytes_per_s": sig(row["bytes_per_s"]), "bw_ceiling": sig(row["bw_ceiling"]),
                "bytes_provenance": _none(row["bytes_provenance"]),
                "ai_provenance": prov.get(_LEVEL_AI[level]),
                "in_ncu_chart": bool(row["in_ncu_chart"]),
            })
        out.append({
            "sid": k, "report": key[0], "launch": int(key[1]), "kernel": str(first["kernel"]),
            "gpu": _none(first["gpu"]), "arch": _none(first["arch"]), "kind": kind,
            "flops": sig(first["flops"]), "flops_provenance": _none(first["flops_provenance"]) or prov.get("tflops"),
            "ceiling": sig(first["compute_ceiling"]), "ceiling_provenance": prov.get("peak_tflops"),
            "sm_clock_hz": sig(rec.get("sm_clock_hz", first["sm_clock_hz"])),
            "clock_provenance": prov.get("sm_clock_hz"),
            "duration_ns": sig(rec.get("duration_ns")),
            "tensor_path": _none(first["tensor_path"]), "tensor_src": _none(first["tensor_src"]),
            "dtype": _none(rec.get("dtype")), "shape": launch_shape(shape.get(k, {})),
            "estimated": str(first["flops_provenance"] or "").startswith("estimated"),
            "levels": levels,
        })
    return out


def _finite_pos(v) -> bool:
    return v is not None and not pd.isna(v) and math.isfinite(float(v)) and float(v) > 0


def launch_shape(rec: dict, grid: dict | None = None) -> str | None:
    """'B16 H16 S4096 d128' from the sidecar fields; else the launch grid when known."""
    vals = [rec.get(f) for f in ("batch", "heads", "seq", "d_head")]
    if all(v is not None and not pd.isna(v) for v in vals):
        b, h, s, d = (int(v) for v in vals)
        return f"B{b} H{h} S{s} d{d}"
    if grid:
        return grid.get(sid(rec["report"], rec["launch"])) if "report" in rec else None
    return None


def grid_shapes(frame: pd.DataFrame) -> dict[str, str]:
    """{sid: 'grid 128x16x1 · block 256'} from the launch__ metrics (any report has them)."""
    names = ["launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z", "launch__block_size"]
    sub = frame[frame["metric"].isin(names)]
    out = {}
    for (report, launch), g in sub.groupby(["report", "launch"], sort=False):
        m = dict(zip(g["metric"], g["value"]))
        if all(n in m for n in names[:3]):
            text = "grid " + "x".join(str(int(m[n])) for n in names[:3])
            if names[3] in m:
                text += f" \u00b7 block {int(m[names[3]])}"
            out[sid(report, launch)] = text
    return out


def roofs(roof: pd.DataFrame, measured: pd.DataFrame | None) -> dict:
    """The theoretical roofs of ``roof`` (the launches of one chart) as the static figures
    draw them, and the measured ones: {"compute": {name: FLOP/s}, "bandwidth": {level: B/s},
    "measured": [{roof, per_second, unit, pct_of_theoretical, sm_clock_hz}]}."""
    from flashprof.analysis.charts.roofline_layers import roof_ceilings
    ceil = roof_ceilings(roof)
    compute = {k: sig(v) for k, v in ceil.items() if not k.startswith("bw:")}
    bandwidth = {k[3:]: sig(v) for k, v in ceil.items() if k.startswith("bw:")}
    meas = []
    if measured is not None:
        for r in measured.to_dict("records"):
            meas.append({"roof": r["roof"], "per_second": sig(r["per_second"]), "unit": r["unit"],
                         "pct_of_theoretical": sig(r["pct_of_theoretical"], 3), "sm_clock_hz": sig(r["sm_clock_hz"])})
    return {"compute": compute, "bandwidth": bandwidth, "measured": meas}


# --------------------------------------------------------------------------- stalls, pipes
def stall_bars(stall: pd.DataFrame) -> dict[str, dict]:
    """{sid: {"reasons": [...], "per_issue": [...], "fraction": [...]}} in STALL_REASONS order,
    reasons the report lacks left out; 'selected' (the issuing warp) is kept and flagged."""
    out = {}
    for (report, launch), g in stall.groupby(["report", "launch"], sort=False, observed=True):
        g = g.sort_values("reason")
        g = g[g["per_issue"].notna()]
        out[sid(report, launch)] = {"reasons": [str(r) for r in g["reason"]],
                                    "per_issue": [sig(v) for v in g["per_issue"]],
                                    "fraction": [sig(v) for v in g["fraction"]]}
    return out


def pipe_bars(pipe: pd.DataFrame) -> dict[str, dict]:
    """{sid: {"names": [...], "pct": [...], "provenance": [...], "mix": [[opcode, share], ...]}}."""
    out = {}
    for (report, launch), g in pipe.groupby(["report", "launch"], sort=False):
        util = g[g["category"].isin(["utilization", "issue"])]
        mix = g[g["category"] == "inst_mix_opcode"].head(12)
        out[sid(report, launch)] = {
            "names": list(util["name"]), "pct": [sig(v) for v in util["value"]],
            "provenance": [_none(p) for p in util["provenance"]],
            "mix": [[n, sig(s, 3)] for n, s in zip(mix["name"], mix["share"])]}
    return out


# --------------------------------------------------------------------------- source view
def stall_columns(src: pd.DataFrame) -> list[str]:
    """PC-sampling stall columns that count stalls: no ``selected``, no ``_not_issued`` subsets."""
    return [c for c in src.columns if c.startswith("stall_") and not c.endswith("_not_issued")
            and c[len("stall_"):] not in NOT_A_STALL]


_CUDA_INCLUDE = re.compile(r"^.*/cuda[^/]*/(?:targets/[^/]+/)?include/")


def display_paths(files) -> dict[str, str]:
    """{path as the report records it: path shown}: CUDA toolkit headers as
    ``cuda/include/<name>``, the others relative to their common folder (that folder's name
    kept when they all sit in it: ``csrc/mma.cuh``), so no absolute build path reaches the page."""
    files = [f for f in dict.fromkeys(files) if f]
    out = {f: "cuda/include/" + _CUDA_INCLUDE.sub("", f) for f in files if _CUDA_INCLUDE.match(f)}
    rest = [f for f in files if f not in out]
    absolute = [f for f in rest if f.startswith("/")]
    if absolute:
        root = os.path.dirname(absolute[0]) if len(absolute) == 1 else os.path.commonpath(absolute)
        rel = {f: os.path.relpath(f, root) for f in absolute}
        if all("/" not in r for r in rel.values()) and root not in ("", "/"):  # one folder: keep its name
            rel = {f: os.path.basename(root) + "/" + r for f, r in rel.items()}
        out.update(rel)
    for f in rest:
        out.setdefault(f, f)
    return out


def source_view(src: pd.DataFrame, max_lines: int = SOURCE_MAX_LINES) -> dict:
    """One launch's SASS lines with stall samples, grouped under their file:line (and, for a
    line outside the kernel's own file whose instructions sit in more than one context, its
    PC-order context: the nearest earlier instruction of the kernel's file, so an inline
    wrapper's line under two call sites becomes two groups), hottest group first and hottest
    line first inside a group.

    {"reasons": [...], "total": all stall samples, "lines_with_samples": n, "kept": n,
     "groups": [{"key", "loc", "file", "line", "text", "ctx", "ctx_text", "samples",
                 "lines": [[pc_offset, sass, samples, by_reason]]}]}
    where ``by_reason`` is flat [reason index, samples, ...] over the reasons with samples,
    ``text`` the source line's text where the report imported it (else ""), ``ctx`` the
    context's file:line (None for a line of the kernel's own file, a line under one context
    only, or one without line info)."""
    cols = stall_columns(src)
    if src.empty or not cols:
        return {"reasons": [], "total": 0, "lines_with_samples": 0, "kept": 0, "groups": []}
    reasons = [c[len("stall_"):] for c in cols]
    order = [r for r in STALL_REASONS if r in reasons] + [r for r in reasons if r not in STALL_REASONS]
    cols = [f"stall_{r}" for r in order]
    df = src.copy()
    df["_n"] = df[cols].sum(axis=1)
    total = float(df["_n"].sum())
    hot = df[df["_n"] > 0].sort_values(["_n", "pc"], ascending=[False, True])
    n_hot = len(hot)
    hot = hot.head(max_lines)
    has_file = "file" in hot.columns
    names = list(df["file"].dropna().astype(str)) if has_file else []
    if "ctx_file" in df.columns:
        names += list(df["ctx_file"].dropna().astype(str))
    shown = display_paths(names) if has_file else {}
    # the text of each file:line the frame knows (ctx lines are instructions' lines too)
    texts: dict[tuple, str] = {}
    if has_file and "source_text" in df.columns:
        for f, ln, t in zip(df["file"], df["line"], df["source_text"]):
            if f and t and not pd.isna(ln):
                texts.setdefault((str(f), int(ln)), str(t))
    groups: dict[str, dict] = {}
    for row in hot.to_dict("records"):
        raw = row.get("file") if has_file else ""
        f = shown.get(str(raw), raw) if raw and not pd.isna(raw) else raw
        ln = row.get("line")
        ctx = ctx_text = None
        if f and ln is not None and not pd.isna(ln):
            loc, fname, line = f"{f}:{int(ln)}", f, int(ln)
            cf, cl = row.get("ctx_file"), row.get("ctx_line")
            if cf and not pd.isna(cl) and str(cf) != str(raw):
                ctx = f"{shown.get(str(cf), cf)}:{int(cl)}"
                ctx_text = _strip(texts.get((str(cf), int(cl)), ""))
        else:
            loc, fname, line = NO_LINE_INFO, None, None
        key = loc if ctx is None else f"{loc} ← {ctx}"
        text = _strip(texts.get((str(raw), line), "")) if fname else ""
        g = groups.setdefault(key, {"key": key, "loc": loc, "file": fname, "line": line, "text": text,
                                    "ctx": ctx, "ctx_text": ctx_text, "samples": 0, "lines": []})
        g["samples"] += int(row["_n"])
        sparse = [x for i, c in enumerate(cols) if row[c] > 0 for x in (i, int(row[c]))]
        g["lines"].append([int(row["pc_offset"]), str(row["sass"]), int(row["_n"]), sparse])
    # a context only where it tells call sites apart: a line under one context stays one group
    per_loc: dict[str, list[dict]] = {}
    for g in groups.values():
        per_loc.setdefault(g["loc"], []).append(g)
    for loc, gs in per_loc.items():
        if len(gs) == 1 and gs[0]["ctx"] is not None:
            gs[0].update(key=loc, ctx=None, ctx_text=None)
    ordered = sorted(groups.values(), key=lambda g: (-g["samples"], -max(x[2] for x in g["lines"])))
    return {"reasons": order, "total": int(total), "lines_with_samples": n_hot, "kept": len(hot),
            "max_line": max((x[2] for g in ordered for x in g["lines"]), default=0), "groups": ordered}


def _strip(text: str, limit: int = 160) -> str:
    t = " ".join(str(text or "").split())
    return t if len(t) <= limit else t[:limit - 1] + "\u2026"


# --------------------------------------------------------------------------- Nsight Compute's rules
RULE_KIND_RANK = {"error": 0, "warning": 1, "optimization": 2, "info": 3, "none": 4}
_ABS_DIRS = re.compile(r"(?<![\w:/.])/(?:[\w.+\-]+/)+(?=[\w.+\-])")


def launch_rules(rules: pd.DataFrame) -> dict[str, list[dict]]:
    """{sid: [{title, name, section, kind, message, speedup, speedup_type}]} per launch from
    ``parse.load_rules``: most important first (error, warning, optimisation, info; within a
    kind those with an estimated speed-up of the whole launch ('global'), largest first, then
    those with a local one (of one unit), then the rest in the report's order), empty
    messages left out, directories of absolute paths cut from the texts."""
    out: dict[str, list[dict]] = {}
    if rules is None or not len(rules):
        return out
    for (report, launch), g in rules.groupby(["report", "launch"], sort=False):
        items = []
        for pos, r in enumerate(g.to_dict("records")):
            msg = _ABS_DIRS.sub("", str(r.get("message") or "")).strip()
            title = str(r.get("title") or "").strip()
            if not msg and not title:
                continue
            sp = _none(r.get("speedup"))
            scope = {"global": 0, "local": 1}.get(r.get("speedup_type"), 2) if sp is not None else 3
            items.append((RULE_KIND_RANK.get(r.get("kind"), 5), scope, -(sp if sp is not None else 0.0), pos, {
                "title": title, "name": _none(r.get("name")), "section": _none(r.get("section")),
                "kind": r.get("kind"), "message": msg, "speedup": sig(sp, 3),
                "speedup_type": _none(r.get("speedup_type")) if sp is not None else None}))
        out[sid(report, launch)] = [x[-1] for x in sorted(items, key=lambda t: t[:4])]
    return out


def has_pc_sampling(frame: pd.DataFrame) -> set[str]:
    """The sids whose launch collected PC sampling (the SourceCounters section)."""
    sub = frame[frame["metric"] == "smsp__pcsamp_sample_count"]
    return {sid(r, n) for r, n in zip(sub["report"], sub["launch"])}


# --------------------------------------------------------------------------- header
def _get(d: dict, *path):
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def report_header(report: str, path: str, sidecar: dict, recs: list[dict], lost: list[str]) -> dict:
    """What the header row of one report says: where and how it was profiled, and what it lacks."""
    clocks = [r.get("sm_clock_hz") for r in recs if _none(r.get("sm_clock_hz")) is not None]
    smi = _get(sidecar, "clocks", "nvidia_smi_before") or {}
    shapes = sorted({s for s in (launch_shape(r) for r in recs) if s})
    dtypes = sorted({str(r["dtype"]) for r in recs if _none(r.get("dtype"))})
    git = sidecar.get("git") if isinstance(sidecar.get("git"), dict) else {}
    target_git = _get(sidecar, "target", "git") or {}
    rev = git.get("revision")
    if rev == "HEAD" and target_git.get("revision"):
        rev = target_git["revision"]
    return {
        "report": report, "file": os.path.basename(path), "launches": len(recs),
        "title": sidecar.get("title") or None,
        "gpu": sorted({r["gpu"] for r in recs if r.get("gpu")}) or None,
        "arch": sorted({r["arch"] for r in recs if r.get("arch")}) or None,
        "driver": _get(sidecar, "gpu", "driver"),
        "ncu_version": _get(sidecar, "ncu", "version"),
        "section_set": _get(sidecar, "ncu", "section_set"),
        "sm_clock_ghz": [sig(min(clocks) / 1e9, 3), sig(max(clocks) / 1e9, 3)] if clocks else None,
        "smi_sm_mhz": smi.get("sm_mhz"), "smi_mem_mhz": smi.get("mem_mhz"),
        "clock_control": _get(sidecar, "clocks", "clock_control"),
        "shape": shapes or None, "dtype": dtypes or None,
        "git_revision": rev, "git_dirty": git.get("dirty"),
        "created": sidecar.get("created"),
        "target": _get(sidecar, "target", "spec"),
        "sidecar": bool(sidecar),
        "missing": [recipes.LABELS.get(q, q) for q in lost],
        "missing_launches": missing_launches(recs, lost),
        "collect_hint": ("ncu " + recipes.collect_hint(lost)) if lost else None,
    }


def missing_launches(recs: list[dict], lost: list[str]) -> list[dict]:
    """Per quantity the report lacks, how many of its launches lack it (the summary records'
    ``missing`` lists): [{"quantity", "label", "launches", "of"}], in ``lost``'s order and then
    any other quantity a record names."""
    counts: dict[str, int] = {}
    for r in recs:
        for q in r.get("missing") or []:
            counts[q] = counts.get(q, 0) + 1
    names = [q for q in lost if q in counts] + [q for q in counts if q not in lost]
    return [{"quantity": q, "label": recipes.LABELS.get(q, q), "launches": counts[q], "of": len(recs)} for q in names]


def jsonable_records(records: list[dict]) -> list[dict]:
    """The summary records as ``flashprof summary --format json`` prints them."""
    return jsonable(records)


def reason_family(reason: str) -> str:
    return REASON_FAMILY.get(reason, "other")


# --------------------------------------------------------------------------- verdict, resources
RESOURCE_METRICS = {  # page field -> Nsight Compute metric (LaunchStats / Occupancy sections)
    "registers_per_thread": "launch__registers_per_thread",
    "smem_per_block": "launch__shared_mem_per_block",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "waves_per_sm": "launch__waves_per_multiprocessor",
    "block_size": "launch__block_size",
}
OCCUPANCY_LIMITS = {"launch__occupancy_limit_registers": "registers", "launch__occupancy_limit_shared_mem": "shared memory",
                    "launch__occupancy_limit_warps": "warps", "launch__occupancy_limit_blocks": "blocks",
                    "launch__occupancy_limit_barriers": "barriers"}


def launch_resources(frame: pd.DataFrame) -> dict[str, dict]:
    """{sid: {registers_per_thread, smem_per_block (bytes), theoretical/achieved occupancy %,
    waves_per_sm, block_size, occupancy_limit (which resource allows the fewest blocks
    per SM, ties all named)}} for the launches whose report has them (absent ones: None)."""
    names = set(RESOURCE_METRICS.values()) | set(OCCUPANCY_LIMITS)
    sub = frame[frame["metric"].isin(names)]
    out = {}
    for (report, launch), g in sub.groupby(["report", "launch"], sort=False):
        m = dict(zip(g["metric"], g["value"]))
        rec = {k: sig(m.get(v), 4) for k, v in RESOURCE_METRICS.items()}
        lim = {OCCUPANCY_LIMITS[k]: float(v) for k, v in m.items() if k in OCCUPANCY_LIMITS and v is not None and not pd.isna(v)}
        if lim:
            low = min(lim.values())
            rec["occupancy_limit"] = " = ".join(k for k, v in lim.items() if v == low)
            rec["blocks_per_sm"] = int(low)
        else:
            rec["occupancy_limit"], rec["blocks_per_sm"] = None, None
        out[sid(report, launch)] = rec
    return out


def top_stalls(rec: dict, n: int = 2) -> list[list]:
    """The ``n`` largest stall reasons of a summary record: [[reason, warps per issued
    instruction], ...], 'selected' (the issuing warp, not a stall) left out."""
    st = {k: v for k, v in (rec.get("stalls") or {}).items()
          if k not in NOT_A_STALL and _none(v) is not None}
    return [[k, st[k]] for k in sorted(st, key=lambda k: -st[k])[:n]]


def fa2_meaningful(rec: dict) -> bool:
    """% of FA2 compares one attention launch with FA2's: it means something for the
    dominant launch of a report (its attention kernel), not for a fill or copy launch."""
    return bool(rec.get("dominant")) and _none(rec.get("pct_of_fa2")) is not None


def verdict(order: list[str], recs: dict[str, dict], limit: dict[str, dict]) -> list[dict]:
    """One row per report: its dominant launch (largest time share) with its duration, %
    of its binding roof, what bounds it (speed of light and roofline), top two stalls and
    % of FA2 where that means something. ``order``: sids in series order."""
    out = []
    for s in order:
        r = recs[s]
        if not r.get("dominant"):
            continue
        lim = limit.get(s, {})
        out.append({"sid": s, "report": r["report"], "duration_ns": r.get("duration_ns"),
                    "time_share": r.get("time_share"),
                    "flops_kind": r.get("flops_kind"), "tflops": r.get("tflops"),
                    "roof": lim.get("roof"), "pct_of_roof": sig(lim.get("pct_of_roof"), 4),
                    "sol_bound": lim.get("sol_bound"), "bound": lim.get("bound"),
                    "compute_pct": sig(lim.get("compute_pct"), 4), "memory_pct": sig(lim.get("memory_pct"), 4),
                    "memory_unit": lim.get("memory_unit"),
                    "stalls": top_stalls(r), "pct_of_fa2": r.get("pct_of_fa2") if fa2_meaningful(r) else None})
    return out


# --------------------------------------------------------------------------- names
GENERIC_FUNCTIONS = frozenset({"kernel", "kernel2", "device_kernel", "kernel_entry"})


def report_label(stem: str) -> str:
    """A foreign report's label, never cut: 'owner__repo__file' stems (the public corpus's
    naming) -> 'repo/file'; any other stem whole."""
    parts = [p for p in stem.split("__") if p]
    return "/".join(parts[-2:]) if len(parts) >= 3 else stem


def _template_depth_cut(text: str, depth: int) -> str:
    out, level = [], 0
    for ch in text:
        if ch == "<":
            level += 1
            if level == depth + 1:
                out.append("<\u2026")
            if level > depth:
                continue
        elif ch == ">":
            level -= 1
            if level >= depth:
                if level == depth:
                    out.append(">")
                continue
        elif level > depth:
            continue
        out.append(ch)
    return "".join(out)


def short_function(kernel: str, full: str | None, limit: int = 90) -> str:
    """The function name a reader can tell apart: ``kernel`` as the report names it, but for
    a generic name (CUTLASS's ``Kernel``, ``device_kernel``) the demangled name, its
    arguments dropped, template arguments two levels deep, their namespaces dropped:
    'cutlass::Kernel<B2bGemm<\u2026>>'."""
    kernel = str(kernel)
    # the extraction already names a generic wrapper by its class ('Kernel<B2bGemm>'): the base decides
    if kernel.split("<", 1)[0].lower() not in GENERIC_FUNCTIONS or not full or str(full) == kernel:
        return kernel
    text = str(full).removeprefix("void ").strip()
    level, cut = 0, len(text)
    for i, ch in enumerate(text):  # the argument list: the first '(' outside template brackets
        if ch == "<":
            level += 1
        elif ch == ">":
            level -= 1
        elif ch == "(" and level == 0:
            cut = i
            break
    text = text[:cut]
    head, sep, rest = text.partition("<")
    rest = re.sub(r"\b(?:\w+::)+(\w)", r"\1", rest)  # namespaces inside the template arguments
    text = _template_depth_cut(head + sep + rest, 2)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


# --------------------------------------------------------------------------- the story: gap, progression, mix
def _target_rank(t: str) -> tuple:
    t = str(t)
    if t == MMA_SYNC_KEY:  # kernel 7's mma.sync form, right after kernel 7
        return (0, 7.5, "")
    return (0, int(t), "") if t.isdigit() else (1, {"ref": 0, "cudnn": 1}.get(t, 2), t)


def gap_points(records: list[dict]) -> list[dict]:
    """The issue model's committed rows (``reports/gap/issue_model.json``) per GPU: the
    series' own binaries where the model has them (A100, RTX 3090), else flashprof's (H200).
    [{gpu, gpu_key, binary, targets, observed, observed_source, predicted, sd, summary}],
    targets in series order, at the S most of that GPU's rows share; observed = published
    (or measured) % of FA2."""
    rows = [r for r in records if r.get("kind") == "row"]
    binaries: dict[str, set] = {}
    for r in rows:
        binaries.setdefault(r["gpu_key"], set()).add(r["binary"])
    summaries = {(r["gpu_key"], r.get("binary")): r for r in records if r.get("kind") == "summary"}
    out = []
    for key, bins in binaries.items():
        binary = "series" if "series" in bins else sorted(bins)[0]
        mine = [r for r in rows if r["gpu_key"] == key and r["binary"] == binary]
        seqs = [r.get("seq") for r in mine]
        seq = max(set(seqs), key=seqs.count)  # the series' S (a side row at another S is left out)
        mine = sorted((r for r in mine if r.get("seq") == seq), key=lambda r: _target_rank(r["target"]))
        s = summaries.get((key, binary), {})
        out.append({"gpu": mine[0]["gpu"], "gpu_key": key, "binary": binary, "seq": seq,
                    "targets": [str(r["target"]) for r in mine],
                    "observed": [sig(_none(r.get("observed_pct"))) for r in mine],
                    "observed_source": [_none(r.get("observed_source")) for r in mine],
                    "predicted": [sig(_none(r.get("pred_pct_of_fa2"))) for r in mine],
                    "sd": [sig(_none(r.get("pred_pct_sd"))) for r in mine],
                    "mae_pp": sig(_none(s.get("mae_pp")), 3)})
    return sorted(out, key=lambda g: g["gpu"])


def progression(bench: pd.DataFrame) -> list[dict]:
    """bench.csv -> one series per target over S: [{target, seq: [...], tflops: [...],
    pct_of_ref: [...]}] in series order (kernels, ref, cudnn, the rest)."""
    b = bench.assign(target=bench["target"].astype(str))
    out = []
    for t in sorted(b["target"].unique(), key=_target_rank):
        g = b[b["target"] == t].sort_values("seq")
        out.append({"target": t, "seq": [int(v) for v in g["seq"]], "tflops": [sig(v) for v in g["tflops"]],
                    "pct_of_ref": [sig(v) for v in g["pct_of_ref"]] if "pct_of_ref" in g.columns else None})
    return out


def inst_mix(records: list[dict], order: list[str]) -> dict:
    """Executed warp instructions by opcode (the summary's ``inst_mix``) of each report's
    dominant launch, in series order: {"sids": [...], "opcodes": [...], "counts": [[...]]}."""
    recs = {sid(r["report"], r["launch"]): r for r in records}
    sids = [s for s in order if recs[s].get("dominant") and any(_none(v) for v in (recs[s].get("inst_mix") or {}).values())]
    ops = []
    for s in sids:
        for op in recs[s]["inst_mix"]:
            if op not in ops:
                ops.append(op)
    counts = [[_none(recs[s]["inst_mix"].get(op)) for op in ops] for s in sids]
    return {"sids": sids, "opcodes": ops, "counts": counts}


_LEVEL_ORDER = ("L1", "shared memory", "L2", "DRAM")


def memory_bars(roof: pd.DataFrame) -> dict[str, dict]:
    """{sid: {"levels": [...], "pct": [% of that level's bandwidth roof], "bytes_per_s": [...]}}
    from the roofline frame (bytes/s at each level against the report's own roof)."""
    out = {}
    for (report, launch), g in roof.groupby(["report", "launch"], sort=False, observed=True):
        m = {str(r["level"]): r for r in g.to_dict("records")}
        levels = [lv for lv in _LEVEL_ORDER if lv in m]
        pct = [sig(100 * m[lv]["bytes_per_s"] / m[lv]["bw_ceiling"])
               if _finite_pos(m[lv]["bytes_per_s"]) and _finite_pos(m[lv]["bw_ceiling"]) else None for lv in levels]
        out[sid(report, launch)] = {"levels": levels, "pct": pct,
                                    "bytes_per_s": [sig(m[lv]["bytes_per_s"]) for lv in levels]}
    return out

"""What the figures are: one ``FigureSpec`` per chart family, listing its files, drawing thunks
and one-line captions for an ``Inputs`` (``FIGURES``).

Figures about flashprof's kernels 1-7 (``series=True``) apply only to a folder holding their
reports; the others apply to any report. A file the data does not allow is left out with
a note (``Inputs.note``), a whole figure with ``Skip``.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from flashprof.analysis.charts.identity import context_line, is_series, kernel_key, kernel_label
from flashprof.analysis.charts.bench_charts import plot_autotune, plot_progression, plot_sass_mix
from flashprof.analysis.charts.stall_charts import plot_bank_conflicts, plot_pipes, plot_stall_lines, plot_stalls
from flashprof.analysis.charts.roofline_chart import plot_roofline
from flashprof.analysis.stages.bench_tables import (SASS_ARCH, SASS_DTYPE, autotune_table, batch_note, bench_headline, parameter_importance, sass_deltas, static_prune_counts)
from flashprof.analysis.report.errors import ReportError
from flashprof.analysis.charts.inputs import FiguresError, Inputs, Skip  # noqa: F401
from flashprof.analysis.charts import labels
from flashprof.analysis.stages.stalls import top_stall_lines

TOP_LINES = 12


def safe_name(report: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(report))


# --------------------------------------------------------------------------- renderers
# Each renderer returns [(filename, thunk)], thunk() -> Figure; listing is cheap, drawing
# happens in the thunk, so the driver can spread thunks over processes.
def _variant(inp: Inputs, report: str):
    return inp.ident.loc[inp.ident["report"] == report, "variant"].iloc[0]


ROOF_COLUMNS = ("report", "launch", "range_idx", "level", "ai_tensor", "flops_tensor", "ai_fp32", "flops_fp32",
                "tensor_path", "tensor_ceiling", "fp32_ceiling", "bw_ceiling", "sm_clock_hz")


def _roof_points(inp: Inputs, reports) -> int:
    """Finite (intensity, FLOP/s) points of ``reports``: of each launch's own FLOP kind,
    tensor or FP32."""
    r = inp.roof[inp.roof["report"].isin(list(reports))]
    n = 0
    pairs = [("ai_tensor", "flops_tensor"), ("ai_fp32", "flops_fp32")]
    if {"ai", "flops"} <= set(r.columns):
        pairs.append(("ai", "flops"))
    for ai, fl in pairs:
        v = r[[ai, fl]].apply(pd.to_numeric, errors="coerce")
        n += int((v.notna().all(axis=1) & (v[ai] > 0) & (v[fl] > 0)).sum())
    return n


def _launch_count(inp: Inputs, report: str) -> str:
    n = int((inp.ident["report"] == report).sum())
    return f"{n} launch{'es' if n > 1 else ''}"


def _share(rec) -> str:
    return "GPU time unknown" if rec.time_share != rec.time_share else f"{100 * rec.time_share:.1f} % of the GPU time"


def launch_note(inp: Inputs, report: str, launch: int | None = None, short: bool = False) -> str:
    """Which launch(es) of a multi-launch report a chart shows and their share of the time
    ('' for a report with one launch): 'launch 2 of 3 (name, 99.9 % of the GPU time, the
    dominant launch)'; ``short`` (chart titles): 'launch 2 of 3, 99.9 % of the GPU time'."""
    recs = [r for r in inp.records if r.key[0] == report]
    if len(recs) < 2:
        return ""
    shown = [r for r in recs if r.key in inp.shown_keys and (launch is None or r.key[2] == launch)]
    if len(shown) == len(recs) and launch is None:
        return f"all {len(recs)} launches"
    if short:
        return "; ".join(f"launch {r.key[2]} of {len(recs)}, {_share(r)}" for r in shown)
    parts = [f"launch {r.key[2]} of {len(recs)} ({str(r.ident['kernel'])[:48]}, {_share(r)}"
             + (", the dominant launch" if r.dominant else "") + ")" for r in shown]
    return "; ".join(parts)


def _shown_launches(inp: Inputs, report: str) -> list[int]:
    return [r.key[2] for r in inp.shown if r.key[0] == report]


def _roofline(inp: Inputs):
    _need(inp, "roof", ROOF_COLUMNS, "roofline")
    jobs = []
    for report in inp.stems:
        fname = f"roofline_{safe_name(report)}.png"
        if not _roof_points(inp, [report]):
            inp.note("roofline", fname, f"{report}: no finite FLOP/s and intensity (the report lacks the metrics)")
            continue
        key = kernel_key(report, _variant(inp, report))
        kname = inp.ident.loc[inp.ident["report"] == report, "kernel"].iloc[0]
        if is_series(key):
            title = f"Hierarchical roofline: {kernel_label(key)}  ({kname[:60]})"
        else:
            title = f"Hierarchical roofline: {report}"
        which = launch_note(inp, report)
        if which:
            title += f"  \u00b7  {launch_note(inp, report, short=True)}"
        who = f"{report} = {kernel_label(key)}" if is_series(key) else report
        cap = (f"hierarchical roofline of {who} ({_launch_count(inp, report)}, "
               f"{labels.function_runs(*_launch_funcs(inp, report))}) on {_gpus(inp, [report])}"
               + (f"; shown: {which}" if which else ""))
        jobs.append((fname, lambda r=report, t=title: plot_roofline(
            inp.roof, inp.shown_ident, [r], title=t, fp32_points=True, measured=inp.measured_roofs([r])), cap))
    # one overlay per GPU: roofs of different GPUs do not share a chart
    by_gpu: dict[str, list[str]] = {}
    for report in inp.stems:
        by_gpu.setdefault(_gpus(inp, [report]), []).append(report)
    for gpu, reports in by_gpu.items():
        fname = "roofline_overlay.png" if len(by_gpu) == 1 else f"roofline_overlay_{safe_name(gpu)}.png"
        drawable = [r for r in reports if _roof_points(inp, [r])]
        if len(drawable) < 2:
            if len(reports) > 1:
                    inp.note("roofline", fname, f"{gpu}: {len(drawable)} report(s) with roofline points; "
                                            "an overlay needs two")
            continue
        title = "Hierarchical roofline: all kernels" if inp.series else f"Hierarchical roofline: {len(drawable)} reports on {gpu}"
        jobs.append((fname, lambda rs=drawable, t=title: plot_roofline(
            inp.roof, inp.shown_ident, None if len(by_gpu) == 1 and rs == list(inp.stems) else rs, title=t,
            fp32_points=not inp.series, measured=inp.measured_roofs(rs)),
            f"hierarchical roofline of {len(drawable)} reports on {gpu} in one chart"))
    return jobs


def _launch_funcs(inp: Inputs, report: str):
    rows = inp.ident[inp.ident["report"] == report]
    return rows["launch"], rows["kernel"]


def _gpus(inp: Inputs, reports) -> str:
    g = inp.ident.loc[inp.ident["report"].isin(list(reports)), "gpu"]
    return " / ".join(sorted({labels.gpu_short(v) for v in g})) or "GPU unknown"


def _stall_lines_one(inp: Inputs, report: str, launch: int = 0):
    src = inp.source(report, launch)
    top = top_stall_lines(src, TOP_LINES)
    key = kernel_key(report, _variant(inp, report))
    has_lines = bool(len(top)) and bool((top["location"] != "").any())
    note = "" if has_lines or top.empty else " \u00b7 no CUDA file:line (built without -lineinfo)"
    which = launch_note(inp, report, launch, short=True)
    ident = inp.ident[(inp.ident["report"] != report) | (inp.ident["launch"] == launch)]
    return plot_stall_lines(src, top, title=f"Hottest SASS instructions by stall samples: {kernel_label(key)}"
                            + (f"  \u00b7  {which}" if which else ""),
                            context=context_line(ident, _roof_or_none(inp), reports=[report]) + note)


def _stall_lines(inp: Inputs):
    jobs = []
    for r in inp.stems:
        launches = _shown_launches(inp, r)
        for n in launches:
            fname = f"stall_lines_{safe_name(r)}{f'_launch{n}' if len(launches) > 1 else ''}.png"
            try:
                empty = top_stall_lines(inp.source(r, n), TOP_LINES).empty
            except (ReportError, KeyError, ValueError) as exc:
                inp.note("stall_lines", fname, f"{r}: per-instruction data unreadable ({str(exc).strip()[:80]})")
                continue
            if empty:
                inp.note("stall_lines", fname, f"{r}: no PC-sampling stall samples (SourceCounters section not collected)")
                continue
            which = launch_note(inp, r, n)
            jobs.append((fname, lambda r=r, n=n: _stall_lines_one(inp, r, n),
                         f"the {TOP_LINES} SASS instructions of {r} with the most stall samples, by reason"
                         + (f"; shown: {which}" if which else "")))
    return jobs


def _all_launches(inp: Inputs) -> str:
    n, k = len(inp.shown_ident), inp.shown_ident["report"].nunique()
    text = f"{n} launch{'es' if n > 1 else ''} of {k} report{'s' if k > 1 else ''}"
    left = len(inp.ident) - n
    if left:
        how = "the dominant launch of each" if inp.launch == "dominant" else f"launch {inp.launch} of each"
        notes = [f"{r}: {launch_note(inp, r)}" for r in inp.stems if launch_note(inp, r)]
        text += f" ({how} multi-launch report, {left} other launch{'es' if left > 1 else ''} left out; {'; '.join(notes)})"
    return text


ANALYSIS_FRAMES = ("roof", "stall", "pipe", "banks")


def _analysis(inp: Inputs, attr: str, what: str) -> pd.DataFrame:
    """An analysis frame; another stage's failure skips the figures that need it
    (a bad report still fails the run: the parse frame is computed first)."""
    try:
        return getattr(inp, attr)
    except ReportError:
        raise
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise Skip(f"the {what} analysis failed ({type(exc).__name__}: {first})") from None


def _roof_or_none(inp: Inputs) -> pd.DataFrame | None:
    """The roofline frame for context lines (SM clock), None when it cannot be had."""
    try:
        return _analysis(inp, "roof", "roofline")
    except Skip:
        return None


def _need(inp: Inputs, attr: str, cols, what: str) -> None:
    """Skip unless the analysis frame ``attr`` exists, has ``cols`` and has rows."""
    frame = _analysis(inp, attr, what)
    lacking = [c for c in cols if c not in frame.columns]
    if lacking:
        raise Skip(f"the {what} frame lacks columns {', '.join(lacking)}")
    if frame.empty:
        raise Skip(f"no {what} metrics in these reports")


def _stalls(inp: Inputs):
    _need(inp, "stall", ("report", "launch", "range_idx", "reason", "per_issue"), "stall")
    return [("stalls.png", lambda: plot_stalls(inp.stall, inp.shown_ident, _roof_or_none(inp)),
             f"warp stall reasons (cycles per issued instruction and shares), {_all_launches(inp)}")]


def _pipes(inp: Inputs):
    _need(inp, "pipe", ("report", "launch", "range_idx", "category", "name", "value"), "pipe")
    return [("pipes.png", lambda: plot_pipes(inp.pipe, inp.shown_ident, _roof_or_none(inp)),
             f"pipe utilisation and issue slots, % of peak, {_all_launches(inp)}")]


def _method_note(meta: dict) -> str:
    m = meta.get("method") or {}
    if not m:
        return "Method: median of CUDA-event timings with an L2 flush between launches; FLOPs = 4·B·H·S²·d."
    return (f"Method: {m.get('statistic', 'median')} of {m.get('reps', '?')} timings ({m.get('timer', 'CUDA events')}, "
            f"{m.get('warmup', '?')} warm-up), L2 flush: {m.get('l2_flush', 'yes')}; FLOPs = {m.get('flops', '4*B*H*S^2*d')}; "
            f"reference: {m.get('reference', 'FA2')}; headline = harmonic mean over S of TFLOP/s, as % of the "
            "reference's harmonic mean.")


def _progression(inp: Inputs):
    if inp.bench is None:
        raise Skip(f"{inp.reports_dir / 'bench.csv'} not found")
    head = bench_headline(inp.bench)
    if head["pct_of_ref_hm"].isna().all():
        raise Skip("bench.csv has no 'ref' rows to normalise against")
    gpu = (inp.bench_meta.get("gpu") or {}).get("name") or "/".join(inp.bench["gpu"].astype(str).unique())
    return [("progression.png", lambda: plot_progression(inp.bench, head, gpu=gpu, batch=batch_note(inp.bench),
                                                               method=_method_note(inp.bench_meta)),
             f"kernels 1-7 TFLOP/s over S and % of FA2 on {gpu} (bench.csv)")]


def _autotune(inp: Inputs):
    if inp.autotune is None:
        raise Skip(f"{inp.reports_dir / 'autotune.csv'} not found (run `make tune`)")
    table = autotune_table(inp.autotune)
    if table.empty or table["hm_tflops"].isna().all():
        raise Skip("autotune.csv has no candidate timed at every S")
    imp = parameter_importance(table)
    prune = static_prune_counts(inp.autotune_static) if inp.autotune_static is not None else None
    a = inp.autotune
    gpu = (inp.bench_meta.get("gpu") or {}).get("name") or "/".join(a["gpu"].astype(str).unique())
    shape = (f"H{'/'.join(map(str, sorted(a['heads'].unique())))} S{'/'.join(map(str, sorted(a['seq'].unique())))}"
             f" ({batch_note(a)})" if {"batch", "heads"} <= set(a.columns) else "")
    dt = "/".join(sorted(a["dtype"].astype(str).unique())) if "dtype" in a.columns else ""
    ctx = f"{gpu} \u00b7 {shape} {_head_dims(a)} \u00b7 {dt} \u00b7 SM clock not locked (boost)"
    return [("autotune.png", lambda: plot_autotune(table, imp, prune, context=ctx),
             f"kernel-7 auto-tuning sweep on {gpu}: {len(table)} candidates ranked")]


def _head_dims(sweep: pd.DataFrame) -> str:
    """'d128' from the d_head of each candidate's config (JSON), 'd?' when none says."""
    dims = set()
    for cfg in sweep["config"].dropna():
        try:
            dims.add(int(json.loads(cfg)["d_head"]))
        except (ValueError, KeyError, TypeError):
            continue
    return "d" + ("/".join(map(str, sorted(dims))) or "?")


def _count(n: int) -> str:
    return {2: "two", 3: "three", 4: "four", 5: "five"}.get(n, str(n))


def _gap_frames(inp: Inputs):
    g = inp.gap
    if "error" in g:
        raise Skip(f"flashprof.analysis.gap failed ({g['error']})")
    return g


def _gap(inp: Inputs):
    g = inp.gap_issue
    if "error" in g:
        raise Skip(f"{g['error']}; regenerate: flashprof gap --model issue --write reports/gap/")
    from flashprof.analysis.charts import gap_charts as gap_plots
    title, subtitle = gap_plots.issue_gap_titles(g["records"])
    return [("gap.png", lambda: gap_plots.plot_issue_gap(g["records"], title=title, subtitle=subtitle),
             "kernels 1-16 as % of FA2 per GPU: published / measured vs the SASS issue model (nothing fitted); "
             "on the H200 kernel 7 twice: the shipped wgmma kernel (HGMMA simulated, reports/h200/kernel7) and "
             "its mma.sync form (7mma, reports/h200/kernel7mma), the kernel 7 of the A100 / RTX 3090 panels")]


def _series_here(inp: Inputs):
    """The series' own binaries profiled on this folder's GPU (reports/gap/series_<folder>.json,
    analysis/gap/series_measured.py --write)."""
    from flashprof.paths import ROOT

    p = ROOT / "reports" / "gap" / f"series_{inp.reports_dir.name}.json"
    if not p.is_file():
        raise Skip(f"{p} not found (python -m flashprof.analysis.gap.series_measured --write)")
    try:
        on, off = json.loads(p.read_text())[:2]
    except (ValueError, TypeError) as exc:
        raise FiguresError(f"{p}: not the series_measured result ({exc})") from None
    from flashprof.analysis.charts import gap_charts as gap_plots
    from flashprof.analysis.gap.series_measured import published_steps

    from flashprof.analysis.gap.series_measured import published_tag, tile_set

    steps, tag = published_steps(), (published_tag(on) or {}).get("tiles")
    # the A100's published step beside the configurations the A100 ran (1-7 and its own 8-16)
    published = {r["listing"]: steps[r["kernel"]] for r in on["rows"]
                 if r["kernel"] in steps and r["listing"] != "ref" and tile_set(r["listing"]) in ("both", tag)}
    clocks = [r["clock_ghz"] for r in on["rows"] if r.get("clock_ghz")]
    gpu = on["gpu"].upper()
    title = (f"The series' kernels 1\u201316 built for sm_90 from their own source, on the {gpu}: measured vs the "
             "issue model on the binaries that ran")
    sub = (f"B16 H16 S4096 d128 fp16, non-causal; Nsight Compute --set full, SM cycles; FA2 = PyTorch SDPA flash backend "
           f"profiled in the same run; SM clock under the profiler {min(clocks):.2f}\u2013{max(clocks):.2f} GHz (not locked)"
           if clocks else "B16 H16 S4096 d128 fp16; Nsight Compute SM cycles; FA2 = SDPA flash backend, same run")
    sub += (f"; the model: each kernel's own SASS and bank-conflict factor, seeds {on.get('seeds')}; crosses: the "
            f"A100's published % of FA2 for the same step (sonnyli/flash_attention_from_scratch). Data: {p.name}")
    return [(f"series_{inp.reports_dir.name}.png",
             lambda: gap_plots.plot_series_here(on, off, published, title=title, subtitle=sub),
             f"the series' kernels 1-16 measured on the {gpu} vs the issue model with and without the HMMA interplay")]


def _gpu_ceilings(inp: Inputs):
    g = _gap_frames(inp)
    from flashprof.analysis.charts import gap_charts as gap_plots
    c = g["ceilings"]
    sub = " \u00b7 ".join(f"{r['gpu']}: {r['tensor_flops'] / 1e12:.0f} TFLOP/s mma.sync at {r['clock_hz'] / 1e9:.2f} GHz "
                          f"({r['source']})" for r in c.to_dict("records"))
    return [("gpu_ceilings.png", lambda: gap_plots.plot_ceilings(c, title=f"Roofline ceilings of {_count(len(c))} GPUs",
                                                                 subtitle=sub),
             f"roofline ceilings of {', '.join(map(str, c['gpu']))}")]


def _pipe_shares(inp: Inputs):
    g = _gap_frames(inp)
    if g["shares"].empty:
        raise Skip("flashprof.analysis.gap has no kernel-7 rows")
    from flashprof.analysis.charts import gap_charts as gap_plots
    return [("pipe_shares.png", lambda: gap_plots.plot_pipe_shares(
        g["shares"], title="Kernel 7: modelled pipe time per GPU",
        subtitle=f"{_shape_short(inp)}; bars above 1 outlast the tensor work"),
             "kernel 7: modelled time of each pipe relative to the tensor pipe, per GPU")]


def _shape_short(inp: Inputs) -> str:
    """'fp16 S4096 d128' of the series' launches."""
    rows = inp.ident[inp.keys == "7"]
    dts = "/".join(sorted({str(d) for d in rows["dtype"].dropna()})) or "dtype?"
    seq = "/".join(sorted({str(int(v)) for v in rows["seq"].dropna()})) or "?"
    dh = "/".join(sorted({str(int(v)) for v in rows["d_head"].dropna()})) or "?"
    return f"{dts} S{seq} d{dh}"


def _sass_mix(inp: Inputs):
    if inp.opcodes is None:
        raise Skip(f"{inp.sass_dir / 'opcodes.csv'} not found (run `make sass-data`)")
    d = sass_deltas(inp.opcodes)
    if d.empty:
        raise Skip(f"opcodes.csv has fewer than two kernels for {SASS_ARCH} {SASS_DTYPE}")
    regs = None
    if inp.ptxas is not None:
        p = inp.ptxas[(inp.ptxas["arch"] == SASS_ARCH) & (inp.ptxas["dtype"] == SASS_DTYPE)]
        regs = {str(k): int(r) for k, r in zip(p["kernel"], p["registers"])}
    return [("sass_mix.png", lambda: plot_sass_mix(d, title_note=f"static SASS, {SASS_ARCH} {SASS_DTYPE}",
                                                         regs=regs),
             f"static SASS opcode changes from each kernel to the next ({SASS_ARCH} {SASS_DTYPE})")]


def _hopper_steps(inp: Inputs):
    data = inp.hopper_steps
    if data is None:
        raise Skip(f"{inp.reports_dir / 'hopper-steps' / 'steps.json'} not found "
                   "(python -m flashprof.analysis.gap.steps_doc writes it)")
    gains, rounds, prof = (pd.DataFrame(data[k]) for k in ("gains", "rounds", "profiles"))
    if gains.empty and rounds.empty and prof.empty:
        raise Skip("steps.json holds no step")
    from flashprof.analysis.charts.steps_chart import plot_hopper_steps
    src = data.get("sources") or {}
    clocks = pd.to_numeric(prof.get("clock_ghz", pd.Series(dtype=float)), errors="coerce").dropna()
    clock = (f"profiled SM clock {clocks.min():.2f}–{clocks.max():.2f} GHz (not locked)"
             if len(clocks) else "SM clock not locked")
    context = (f"{data.get('shape', '')} · sweeps: fp16 and bf16, CUDA events, L2 flushed · "
               f"profiles: {data.get('profiles_at', '')} · {clock}")
    sources = ("Data: " + "; ".join(f"{k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in src.items())
               + "; profiles: " + ", ".join(prof["report"]) if len(prof) else "")
    gpu = data.get("gpu") or "GPU unknown"
    return [("hopper_steps.png", lambda: plot_hopper_steps(gains, rounds, prof, gpu=gpu, context=context,
                                                            sources=sources),
             f"kernel 7's Hopper steps on {gpu}: predicted vs measured gain per technique, the persistent grid's "
             "sweep, and each step's tensor pipe, issue slots and stalls (hopper-steps/steps.json)")]


def _bank(inp: Inputs):
    _need(inp, "banks", ("report", "launch", "range_idx", "op", "nway", "ldsm_inst"), "bank-conflict")
    return [("bank_conflicts.png", lambda: plot_bank_conflicts(inp.banks, inp.shown_ident, _roof_or_none(inp)),
             f"shared-memory bank-conflict degree and ldmatrix count, {_all_launches(inp)}")]


# --------------------------------------------------------------------------- what feeds each
# ``FigureSpec.fed_by(inp, changed)``: after `flashprof profile` wrote the reports ``changed``
# (names as in ``inp.ident``), which files of the figure they feed: a predicate on the
# file name, or None when they feed none of its files (the figure is left as drawn).
Feeds = Callable[[str], bool]


def own_files(prefix: str, overlays: bool = False) -> Callable[[Inputs, set], Feeds]:
    """Each changed report's own file(s) ``<prefix>_<report>[_launchN].png``; with
    ``overlays`` also the figure's files that are no report's own (roofline overlays)."""
    import re

    def feeds(inp: Inputs, changed: set) -> Feeds:
        own = re.compile("|".join(rf"{prefix}_{re.escape(safe_name(r))}(_launch\d+)?\.png" for r in changed) or "(?!)")
        anyone = re.compile("|".join(rf"{prefix}_{re.escape(safe_name(r))}(_launch\d+)?\.png" for r in inp.stems) or "(?!)")
        return lambda f: bool(own.fullmatch(f)) or (overlays and not anyone.fullmatch(f))
    return feeds


def any_report(inp: Inputs, changed: set) -> Feeds:
    """One chart of every launch: it is redrawn whenever reports changed."""
    return lambda f: True


def _series_targets(inp: Inputs):
    from flashprof.analysis.gap.data import TARGETS

    ident = inp.ident.assign(_key=[kernel_key(r, v) for r, v in zip(inp.ident["report"], inp.ident["variant"])])
    return ident[ident["_key"].isin(TARGETS)]


def series_report(inp: Inputs, changed: set) -> Feeds | None:
    """The gap models read every report of the series' targets (the pipes model's alpha is
    fitted over all of them): a changed series report feeds the whole figure."""
    return (lambda f: True) if _series_targets(inp)["report"].isin(changed).any() else None


def first_series_launch_per_gpu(inp: Inputs, changed: set) -> Feeds | None:
    """The first series launch of each GPU (its peaks and clock) feeds the figure."""
    hit = _series_targets(inp).drop_duplicates("gpu")["report"].isin(changed).any()
    return (lambda f: True) if hit else None


def no_report(inp: Inputs, changed: set) -> None:
    """Drawn from bench.csv, the static SASS or autotune.csv: no report feeds it."""
    return None


@dataclass(frozen=True)
class FigureSpec:
    """``series``: a figure about flashprof's kernels 1-7, drawn only for their reports.
    ``feeds``: what feeds it, for the redraw after `flashprof profile` (``fed_by``);
    ``needs``: Inputs attributes computed once before the drawing workers fork."""
    name: str
    make: Callable[[Inputs], list]
    about: str
    feeds: Callable[[Inputs, set], Feeds | None]
    series: bool = False
    needs: tuple[str, ...] = ()

    def fed_by(self, inp: Inputs, changed) -> Feeds | None:
        """Which of this figure's files the reports ``changed`` feed (None: none of them)."""
        return self.feeds(inp, set(changed))

    def jobs(self, inp: Inputs) -> list[tuple[str, Callable, str]]:
        """(filename, thunk, one-line caption) per file; raises Skip when nothing applies."""
        if self.series and not inp.series:
            raise Skip(f"about flashprof kernels 1-7; {inp.reports_dir} holds none of their reports")
        if self.name not in inp.listed:  # listed once; forked drawing workers inherit it
            inp.listed[self.name] = self.make(inp)
        return inp.listed[self.name]

    def outputs(self, inp: Inputs) -> list[str]:
        """Files this figure writes for these inputs ([] when it would be skipped)."""
        try:
            return [f for f, *_ in self.jobs(inp)]
        except Skip:
            return []


FIGURES: dict[str, FigureSpec] = {s.name: s for s in (
    FigureSpec("roofline", _roofline, "hierarchical roofline per report + overlay",
               own_files("roofline", overlays=True)),
    FigureSpec("stalls", _stalls, "stall reasons per kernel, stacked", any_report),
    FigureSpec("stall_lines", _stall_lines, "hottest SASS lines per report", own_files("stall_lines")),
    FigureSpec("pipes", _pipes, "pipe utilisation and issue slots", any_report),
    FigureSpec("progression", _progression, "TFLOP/s vs S and % of FA2 (bench.csv)", no_report, series=True),
    FigureSpec("sass_mix", _sass_mix, "static SASS opcode deltas K(n)->K(n+1)", no_report, series=True),
    FigureSpec("hopper_steps", _hopper_steps, "kernel 7's Hopper steps: predicted vs measured, profiles "
               "(hopper-steps/steps.json)", no_report, series=True),
    FigureSpec("bank_conflicts", _bank, "smem bank conflicts, ldmatrix", any_report),
    FigureSpec("autotune", _autotune, "kernel-7 sweep ranked, coloured by the parameter that matters", no_report,
               series=True),
    FigureSpec("gap", _gap, "% of FA2 per kernel: published A100/3090 + measured H200 vs the issue model "
               "(reports/gap/issue_model.json)", series_report, series=True, needs=("gap_issue",)),
    FigureSpec("series_here", _series_here, "the series' own binaries on this GPU: measured vs the issue model "
               "(reports/gap/series_<folder>.json)", no_report, series=True),
    FigureSpec("gpu_ceilings", _gpu_ceilings, "three-GPU roofline ceilings (flashprof.analysis.gap)",
               first_series_launch_per_gpu, series=True, needs=("gap",)),
    FigureSpec("pipe_shares", _pipe_shares, "kernel-7 pipe time shares per GPU (flashprof.analysis.gap)",
               series_report, series=True, needs=("gap",)),
)}

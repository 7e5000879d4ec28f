"""Figures driver (`make figures`): reports -> analysis frames -> PNG files.

    python -m analysis.figures [--reports reports/h200] [--out DIR] [--sass reports/sass]
                               [--only NAME ...] [--no-cache]

Output folder: figures/ for the shipped reports (reports/h200); any other folder's figures
go to figures/<folder name>/ (or --out), never over the committed ones. Figures about
kernels 1-7 (progression, gap, SASS mix, autotune, ceilings) are drawn only for a folder
that holds their reports; rooflines, stalls, pipes, bank conflicts and stall lines for any.
Every output folder gets an index.md: one line per figure, and what was not drawn and why.

Input: every ``*.ncu-rep`` in ``--reports`` (parsed ONCE with ``analysis.parse.load_frame``;
per-PC source frames only for the stall-line figures), ``bench.csv`` + ``bench.json``
next to them, and the static SASS tables ``<sass>/opcodes.csv`` / ``ptxas.csv``.
Output: PNGs in ``--out`` (written atomically: temp file + os.replace), one progress
line per file on stdout. A figure whose inputs are absent is skipped with a note. Any
problem -> one line ``figures: error: ...`` on stderr and exit status 2.

``FIGURES`` maps each figure name to a ``FigureSpec``: ``jobs(inputs)`` lists
``(filename, thunk)`` pairs (thunk() draws the Figure), ``outputs(inputs)`` just the
filenames ([] when the figure would be skipped). Drawing is spread over forked processes.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from . import plots  # noqa: E402
from .plot import labels  # noqa: E402
from .bench import (autotune_table, batch_note, bench_headline, parameter_importance,  # noqa: E402,F401
                    sass_deltas, static_prune_counts)
from .errors import ReportError  # noqa: E402
from .parse import REPORT_SUFFIX, cache_file, launch_identity, load_frame, load_source_frame  # noqa: E402
from .pipes import pipes  # noqa: E402
from .roofline import roofline  # noqa: E402
from .stalls import bank_conflicts, stalls, top_stall_lines  # noqa: E402

PROG = "figures"
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REPORTS = ROOT / "reports" / "h200"
DEFAULT_OUT = ROOT / "figures"
from .bench import SASS_ARCH, SASS_DTYPE  # noqa: E402
TOP_LINES = 12


class FiguresError(Exception):
    """A user-facing problem (bad arguments, missing inputs): one line, exit 2."""


class Skip(Exception):
    """A figure whose inputs are absent: noted, not an error."""


# --------------------------------------------------------------------------- inputs
@dataclass
class Inputs:
    """Everything the figures read, parsed once and computed lazily."""
    reports_dir: Path
    sass_dir: Path
    paths: list[Path]
    cache: bool = True
    _sources: dict = field(default_factory=dict, repr=False)
    notes: dict = field(default_factory=dict, repr=False)  # (figure, file) -> why it was left out
    listed: dict = field(default_factory=dict, repr=False)  # figure -> its jobs

    def note(self, figure: str, what: str, why: str) -> None:
        self.notes[(figure, what)] = why

    @cached_property
    def series(self) -> bool:
        """The folder holds reports of the flashprof kernels 1-7 (sidecar variant or stem)."""
        keys = {plots.kernel_key(r, v) for r, v in zip(self.ident["report"], self.ident["variant"])}
        return bool(keys & set(plots.KERNEL_IDS))

    @cached_property
    def shape(self) -> str:
        """'fp16, B16 H16 S4096 d128' of the series' launches, from their sidecars."""
        rows = self.ident[[plots.kernel_key(r, v) in plots.KERNEL_IDS
                           for r, v in zip(self.ident["report"], self.ident["variant"])]]
        shapes = list(dict.fromkeys(s for s in (plots._fmt_shape(r) for r in rows.to_dict("records")) if s))
        dts = sorted({str(d) for d in rows["dtype"].dropna()})
        return f"{'/'.join(dts) or 'dtype not recorded'}, {' | '.join(shapes) or 'shape not recorded'}"

    @cached_property
    def frame(self) -> pd.DataFrame:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            frame = load_frame(self.paths, cache=self.cache)
        for w in caught:
            print(f"{PROG}: warning: {w.message}", flush=True)
        return frame

    @cached_property
    def ident(self) -> pd.DataFrame:
        return launch_identity(self.frame)

    @cached_property
    def roof(self) -> pd.DataFrame:
        return roofline(self.frame)

    @cached_property
    def stall(self) -> pd.DataFrame:
        return stalls(self.frame)

    @cached_property
    def pipe(self) -> pd.DataFrame:
        return pipes(self.frame)

    @cached_property
    def banks(self) -> pd.DataFrame:
        return bank_conflicts(self.frame)

    @cached_property
    def stems(self) -> dict[str, Path]:
        """report name (as in the frame) -> path, in kernel order."""
        names = self.ident.drop_duplicates("report")[["report", "path", "variant"]]
        names = names.assign(_r=[plots.kernel_rank(plots.kernel_key(r, v)) for r, v in zip(names["report"], names["variant"])])
        return {r: Path(p) for r, p in names.sort_values(["_r", "report"])[["report", "path"]].itertuples(index=False)}

    def source(self, report: str) -> pd.DataFrame:
        if report not in self._sources:
            self._sources[report] = _cached_source(self.stems[report], self.cache)
        return self._sources[report]

    @cached_property
    def autotune(self) -> pd.DataFrame | None:
        p = self.reports_dir / "autotune.csv"
        if not p.is_file():
            return None
        df = pd.read_csv(p)
        need = {"slug", "seq", "tflops", "ref_tflops", "config"}
        if not need <= set(df.columns):
            raise FiguresError(f"{p}: lacks columns {sorted(need - set(df.columns))}")
        return df

    @cached_property
    def autotune_static(self) -> pd.DataFrame | None:
        p = self.reports_dir / "autotune_static.csv"
        return pd.read_csv(p) if p.is_file() else None

    @cached_property
    def gap(self) -> dict:
        """gap_table / pipe_shares / ceilings from analysis.gap over the parsed frame, or
        {'error': text} when that module fails (its figures are then skipped)."""
        try:
            from . import gap as gapmod
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                static = self.sass_dir / "opcodes.csv"  # + opcodes_loop.csv beside it
                table = gapmod.gap_table(self.frame, gapmod.load_static(static) if static.is_file() else None,
                                         bench=self.bench)
                return {"table": table, "shares": gapmod.pipe_shares(table, "7"),
                        "ceilings": gapmod.ceilings(frame=self.frame)}
        except Exception as exc:  # another stage's bug must not cost the other figures
            return {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"}

    @cached_property
    def bench(self) -> pd.DataFrame | None:
        p = self.reports_dir / "bench.csv"
        if not p.is_file():
            return None
        df = pd.read_csv(p, dtype={"target": str})
        need = {"target", "seq", "tflops"}
        if not need <= set(df.columns):
            raise FiguresError(f"{p}: lacks columns {sorted(need - set(df.columns))}")
        return df

    @cached_property
    def bench_meta(self) -> dict:
        p = self.reports_dir / "bench.json"
        try:
            return json.loads(p.read_text()) if p.is_file() else {}
        except (OSError, ValueError):
            return {}

    @cached_property
    def opcodes(self) -> pd.DataFrame | None:
        p = self.sass_dir / "opcodes.csv"
        return pd.read_csv(p, dtype={"kernel": str}) if p.is_file() else None

    @cached_property
    def ptxas(self) -> pd.DataFrame | None:
        p = self.sass_dir / "ptxas.csv"
        return pd.read_csv(p, dtype={"kernel": str}) if p.is_file() else None


def _cached_source(path: Path, cache: bool = True) -> pd.DataFrame:
    """``load_source_frame`` behind a parquet cache beside the parse cache (same content
    hash, ``.src`` suffix), so drawing the stall-line figures does not reopen reports."""
    if not cache:
        return load_source_frame(path)
    try:
        target = cache_file(path)
        target = target.with_name(target.name[: -len(".parquet")] + ".src.parquet")
        if target.is_file():
            return pd.read_parquet(target)
    except Exception:
        target = None
    frame = load_source_frame(path)
    if target is not None:
        try:
            target.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            os.close(fd)
            frame.to_parquet(tmp, index=False)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
            stem = target.name.split(".", 1)[0]
            for old in target.parent.glob(f"{stem}.*.src.parquet"):
                if old != target:
                    old.unlink(missing_ok=True)
        except Exception:
            pass  # read-only checkout: no cache
    return frame


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
    """Finite (intensity, FLOP/s) points, tensor or FP32, of ``reports``."""
    r = inp.roof[inp.roof["report"].isin(list(reports))]
    n = 0
    for ai, fl in (("ai_tensor", "flops_tensor"), ("ai_fp32", "flops_fp32")):
        v = r[[ai, fl]].apply(pd.to_numeric, errors="coerce")
        n += int((v.notna().all(axis=1) & (v[ai] > 0) & (v[fl] > 0)).sum())
    return n


def _launch_count(inp: Inputs, report: str) -> str:
    n = int((inp.ident["report"] == report).sum())
    return f"{n} launch{'es' if n > 1 else ''}"


def _roofline(inp: Inputs):
    _need(inp, "roof", ROOF_COLUMNS, "roofline")
    jobs = []
    for report in inp.stems:
        fname = f"roofline_{safe_name(report)}.png"
        if not _roof_points(inp, [report]):
            inp.note("roofline", fname, f"{report}: no finite FLOP/s and intensity (the report lacks the metrics)")
            continue
        key = plots.kernel_key(report, _variant(inp, report))
        kname = inp.ident.loc[inp.ident["report"] == report, "kernel"].iloc[0]
        if plots.is_series(key):
            title = f"Hierarchical roofline: {plots.kernel_label(key)}  ({kname[:60]})"
        else:
            title = f"Hierarchical roofline: {report}"
        who = f"{report} = {plots.kernel_label(key)}" if plots.is_series(key) else report
        cap = (f"hierarchical roofline of {who} ({_launch_count(inp, report)}, "
               f"{labels.function_runs(*_launch_funcs(inp, report))}) on {_gpus(inp, [report])}")
        jobs.append((fname, lambda r=report, t=title: plots.plot_roofline(inp.roof, inp.ident, [r], title=t,
                                                                           fp32_points=True), cap))
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
        jobs.append((fname, lambda rs=drawable, t=title: plots.plot_roofline(
            inp.roof, inp.ident, None if len(by_gpu) == 1 and rs == list(inp.stems) else rs, title=t,
            fp32_points=not inp.series),
            f"hierarchical roofline of {len(drawable)} reports on {gpu} in one chart"))
    return jobs


def _launch_funcs(inp: Inputs, report: str):
    rows = inp.ident[inp.ident["report"] == report]
    return rows["launch"], rows["kernel"]


def _gpus(inp: Inputs, reports) -> str:
    g = inp.ident.loc[inp.ident["report"].isin(list(reports)), "gpu"]
    return " / ".join(sorted({labels.gpu_short(v) for v in g})) or "GPU unknown"


def _stall_lines_one(inp: Inputs, report: str):
    src = inp.source(report)
    top = top_stall_lines(src, TOP_LINES)
    key = plots.kernel_key(report, _variant(inp, report))
    has_lines = bool(len(top)) and bool((top["location"] != "").any())
    note = "" if has_lines or top.empty else " \u00b7 no CUDA file:line (built without -lineinfo)"
    return plots.plot_stall_lines(src, top, title=f"Hottest SASS instructions by stall samples: {plots.kernel_label(key)}",
                                  context=plots.context_line(inp.ident, _roof_or_none(inp), reports=[report]) + note)


def _stall_lines(inp: Inputs):
    jobs = []
    for r in inp.stems:
        fname = f"stall_lines_{safe_name(r)}.png"
        try:
            empty = top_stall_lines(inp.source(r), TOP_LINES).empty
        except (ReportError, KeyError, ValueError) as exc:
            inp.note("stall_lines", fname, f"{r}: per-instruction data unreadable ({str(exc).strip()[:80]})")
            continue
        if empty:
            inp.note("stall_lines", fname, f"{r}: no PC-sampling stall samples (SourceCounters section not collected)")
            continue
        jobs.append((fname, lambda r=r: _stall_lines_one(inp, r),
                     f"the {TOP_LINES} SASS instructions of {r} with the most stall samples, by reason"))
    return jobs


def _all_launches(inp: Inputs) -> str:
    n, k = len(inp.ident), inp.ident["report"].nunique()
    return f"{n} launch{'es' if n > 1 else ''} of {k} report{'s' if k > 1 else ''}"


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
    return [("stalls.png", lambda: plots.plot_stalls(inp.stall, inp.ident, _roof_or_none(inp)),
             f"warp stall reasons (cycles per issued instruction and shares), {_all_launches(inp)}")]


def _pipes(inp: Inputs):
    _need(inp, "pipe", ("report", "launch", "range_idx", "category", "name", "value"), "pipe")
    return [("pipes.png", lambda: plots.plot_pipes(inp.pipe, inp.ident, _roof_or_none(inp)),
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
    return [("progression.png", lambda: plots.plot_progression(inp.bench, head, gpu=gpu, batch=batch_note(inp.bench),
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
    ctx = f"{gpu} \u00b7 {shape} d128 \u00b7 {dt} \u00b7 SM clock not locked (boost)"
    return [("autotune.png", lambda: plots.plot_autotune(table, imp, prune, context=ctx),
             f"kernel-7 auto-tuning sweep on {gpu}: {len(table)} candidates ranked")]


def _gap_frames(inp: Inputs):
    g = inp.gap
    if "error" in g:
        raise Skip(f"analysis.gap failed ({g['error']})")
    return g


def _gap_context(inp: Inputs) -> str:
    t = inp.gap["table"]
    srcs = t[t["target"] != "ref"].dropna(subset=["observed_source"]).groupby("gpu")["observed_source"].agg(
        lambda v: "/".join(sorted(set(map(str, v)))))
    obs = "; ".join(f"{g}: {src}" for g, src in srcs.items())
    alpha = float(t["alpha"].iloc[0]) if len(t) else float("nan")
    return (f"{inp.shape} \u00b7 observed (bars) = {obs} \u00b7 model: pipe-time lower bounds from "
            f"H200 counters (+ per-arch main-loop SASS delta), combined as max + \u03b1\u00b7rest (\u03b1 = {alpha:.2f}, fitted on the H200 only)")


def _gap(inp: Inputs):
    g = _gap_frames(inp)
    from . import gap_plots
    return [("gap.png", lambda: gap_plots.plot_gap(
        g["table"], title="Kernels 1-7 as % of FlashAttention-2 per GPU: observed vs pipe-time model",
        subtitle=_gap_context(inp)),
             "kernels 1-7 as % of FA2 per GPU: observed vs the pipe-time model")]


def _gpu_ceilings(inp: Inputs):
    g = _gap_frames(inp)
    from . import gap_plots
    c = g["ceilings"]
    sub = " \u00b7 ".join(f"{r['gpu']}: {r['tensor_flops'] / 1e12:.0f} TFLOP/s mma.sync at {r['clock_hz'] / 1e9:.2f} GHz "
                          f"({r['source']})" for r in c.to_dict("records"))
    return [("gpu_ceilings.png", lambda: gap_plots.plot_ceilings(c, title="Roofline ceilings of three GPUs",
                                                                 subtitle=sub),
             f"roofline ceilings of {', '.join(map(str, c['gpu']))}")]


def _pipe_shares(inp: Inputs):
    g = _gap_frames(inp)
    if g["shares"].empty:
        raise Skip("analysis.gap has no kernel-7 rows")
    from . import gap_plots
    return [("pipe_shares.png", lambda: gap_plots.plot_pipe_shares(
        g["shares"], title="Kernel 7: modelled pipe time per GPU",
        subtitle=f"{_shape_short(inp)}; bars above 1 outlast the tensor work"),
             "kernel 7: modelled time of each pipe relative to the tensor pipe, per GPU")]


def _shape_short(inp: Inputs) -> str:
    """'fp16 S4096 d128' of the series' launches."""
    rows = inp.ident[[plots.kernel_key(r, v) == "7" for r, v in zip(inp.ident["report"], inp.ident["variant"])]]
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
    return [("sass_mix.png", lambda: plots.plot_sass_mix(d, title_note=f"static SASS, {SASS_ARCH} {SASS_DTYPE}",
                                                         regs=regs),
             f"static SASS opcode changes from each kernel to the next ({SASS_ARCH} {SASS_DTYPE})")]


def _bank(inp: Inputs):
    _need(inp, "banks", ("report", "launch", "range_idx", "op", "nway", "ldsm_inst"), "bank-conflict")
    return [("bank_conflicts.png", lambda: plots.plot_bank_conflicts(inp.banks, inp.ident, _roof_or_none(inp)),
             f"shared-memory bank-conflict degree and ldmatrix count, {_all_launches(inp)}")]


@dataclass(frozen=True)
class FigureSpec:
    """``series``: a figure about flashprof's kernels 1-7, drawn only for their reports."""
    name: str
    make: Callable[[Inputs], list]
    about: str
    series: bool = False

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
    FigureSpec("roofline", _roofline, "hierarchical roofline per report + overlay"),
    FigureSpec("stalls", _stalls, "stall reasons per kernel, stacked"),
    FigureSpec("stall_lines", _stall_lines, "hottest SASS lines per report"),
    FigureSpec("pipes", _pipes, "pipe utilisation and issue slots"),
    FigureSpec("progression", _progression, "TFLOP/s vs S and % of FA2 (bench.csv)", series=True),
    FigureSpec("sass_mix", _sass_mix, "static SASS opcode deltas K(n)->K(n+1)", series=True),
    FigureSpec("bank_conflicts", _bank, "smem bank conflicts, ldmatrix"),
    FigureSpec("autotune", _autotune, "kernel-7 sweep ranked, coloured by the parameter that matters", series=True),
    FigureSpec("gap", _gap, "% of FA2 per kernel: published A100/3090 + measured H200 vs model", series=True),
    FigureSpec("gpu_ceilings", _gpu_ceilings, "three-GPU roofline ceilings (analysis.gap)", series=True),
    FigureSpec("pipe_shares", _pipe_shares, "kernel-7 pipe time shares per GPU (analysis.gap)", series=True),
)}


# --------------------------------------------------------------------------- I/O
def save_atomic(fig, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        fig.savefig(tmp, format="png", dpi=plots.DPI)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)  # readers never see half a PNG
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def find_reports(reports_dir: Path) -> list[Path]:
    if not reports_dir.exists():
        raise FiguresError(f"reports directory {reports_dir} does not exist")
    if not reports_dir.is_dir():
        raise FiguresError(f"{reports_dir} is not a directory")
    found = sorted(reports_dir.glob(f"*{REPORT_SUFFIX}"))
    if not found:
        raise FiguresError(f"{reports_dir} holds no *{REPORT_SUFFIX} files")
    return found


def make_inputs(reports_dir: Path, sass_dir: Path | None = None, cache: bool = True) -> Inputs:
    reports_dir = Path(reports_dir)
    sass_dir = Path(sass_dir) if sass_dir else reports_dir.parent / "sass"
    return Inputs(reports_dir, sass_dir, find_reports(reports_dir), cache=cache)


def _same(a: Path, b: Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def out_dir(reports_dir: Path, out: Path | None = None) -> Path:
    """Where the figures of ``reports_dir`` go. The committed figures/ belongs to the
    shipped reports only; any other folder gets figures/<its name>/ (or ``out``), and
    an ``out`` that is figures/ itself is refused for it."""
    shipped = _same(reports_dir, DEFAULT_REPORTS)
    if out is None:
        return DEFAULT_OUT if shipped else DEFAULT_OUT / (safe_name(Path(reports_dir).resolve().name) or "reports")
    if not shipped and _same(out, DEFAULT_OUT):
        raise FiguresError(f"{DEFAULT_OUT} holds the figures of the shipped reports ({DEFAULT_REPORTS.relative_to(ROOT)}); "
                           f"leave out --out/OUT= to write to {DEFAULT_OUT.name}/{safe_name(Path(reports_dir).resolve().name)}/")
    return Path(out)


_WORKER: dict = {}


def _draw(job: tuple[str, int, str]) -> tuple[str, str, float]:
    """Draw and save one file (runs in a worker process or inline)."""
    name, idx, out = job
    inp = _WORKER["inputs"]
    t0 = time.perf_counter()
    fname, thunk, _ = FIGURES[name].jobs(inp)[idx]
    fig = thunk()
    save_atomic(fig, Path(out) / fname)
    plots.close(fig)
    return name, str(Path(out) / fname), time.perf_counter() - t0


def build(inp: Inputs, out: Path, only=None, log=print, jobs: int | None = None) -> list[Path]:
    """Render the figures ``only`` (default all) into ``out``; returns the files written.

    Parsing and the analysis frames are computed here, once; drawing is spread over
    ``jobs`` forked processes (default: the CPU count, at most 4)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(only) if only else list(FIGURES)
    # Parse and compute up front: report errors surface before any drawing, and forked
    # workers inherit the frames instead of recomputing them.
    for attr in ("frame", "ident", "stems", "bench", "bench_meta", "opcodes", "ptxas", "autotune",
                 "autotune_static"):
        getattr(inp, attr)
    for attr in ANALYSIS_FRAMES:  # a failure here is reported as a skip by the figures that need it
        try:
            getattr(inp, attr)
        except ReportError:
            raise
        except Exception:
            pass
    if inp.series and any(n in names for n in ("gap", "gpu_ceilings", "pipe_shares")):
        inp.gap  # computed once, before the workers fork
    work, captions, skipped = [], [], []
    for name in names:
        try:
            listed = FIGURES[name].jobs(inp)
        except Skip as s:
            log(f"{PROG}: {name:<14} skipped: {s}")
            skipped.append(f"- {name}: {s}")
            continue
        for (fig, what), why in inp.notes.items():
            if fig == name:
                log(f"{PROG}: {name:<14} skipped {what}: {why}")
        work += [(name, i, str(out)) for i in range(len(listed))]
        captions += [(fname, cap) for fname, _, cap in listed]
    _WORKER["inputs"] = inp
    if jobs is None:
        jobs = min(4, os.cpu_count() or 1)
    written: list[Path] = []
    if jobs > 1 and len(work) > 1 and "fork" in mp.get_all_start_methods():
        with mp.get_context("fork").Pool(min(jobs, len(work))) as pool:
            results = pool.imap(_draw, work, chunksize=1)
            for name, path, secs in results:
                written.append(Path(path))
                log(f"{PROG}: {name:<14} {path}  ({secs:.2f} s)")
    else:
        for job in work:
            name, path, secs = _draw(job)
            written.append(Path(path))
            log(f"{PROG}: {name:<14} {path}  ({secs:.2f} s)")
    if not only:  # a partial run would leave an index that misses the other figures
        write_index(out, captions, inp, skipped)
    return written


def write_index(out: Path, captions: list[tuple[str, str]], inp: Inputs, skipped: list[str] = ()) -> Path:
    """``index.md``: every figure of this folder with its one-line caption."""
    n = len(inp.ident)
    lines = [f"# Figures of `{inp.reports_dir.name}`", "",
             f"{len(inp.stems)} report(s), {n} launch(es), drawn by `python -m analysis.figures` "
             f"(flashprof). One line per figure:", ""]
    lines += [f"- [{fname}]({fname}): {cap}" for fname, cap in captions]
    left = list(skipped) + [f"- {what}: {why}" for (_, what), why in inp.notes.items()]
    if left:
        lines += ["", "Not drawn:", ""] + left
    path = out / "index.md"
    fd, tmp = tempfile.mkstemp(dir=out, prefix=".index.md.", suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise FiguresError(message)


def main(argv=None) -> int:
    p = _Parser(prog=f"python -m analysis.{PROG}", description=__doc__.splitlines()[0])
    p.add_argument("--reports", type=Path, default=DEFAULT_REPORTS, help="folder of *.ncu-rep (+ bench.csv)")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for the PNGs (default: figures/ for the shipped reports, else figures/<folder name>/)")
    p.add_argument("--sass", type=Path, default=None, help="folder of opcodes.csv/ptxas.csv (default: <reports>/../sass)")
    p.add_argument("--only", nargs="+", metavar="NAME", help=f"subset of: {', '.join(FIGURES)}")
    p.add_argument("--no-cache", action="store_true", help="do not use the parse cache")
    p.add_argument("--jobs", type=int, default=None, help="drawing processes (default: CPUs, at most 4)")
    t0 = time.perf_counter()
    try:
        args = p.parse_args(argv)
        bad = [n for n in (args.only or []) if n not in FIGURES]
        if bad:
            raise FiguresError(f"unknown figure(s) {', '.join(bad)}; choose from {', '.join(FIGURES)}")
        args.out = out_dir(args.reports, args.out)
        inp = make_inputs(args.reports, args.sass, cache=not args.no_cache)
        written = build(inp, args.out, args.only, jobs=args.jobs)
    except (FiguresError, ReportError, OSError, ValueError, KeyError) as exc:
        if os.environ.get("FLASHPROF_DEBUG"):
            raise
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"{PROG}: error: {msg}", file=sys.stderr)
        return 2
    print(f"{PROG}: {len(written)} file(s) in {args.out} ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

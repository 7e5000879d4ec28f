"""Figures driver (`make figures`): reports -> analysis frames -> PNG files.

    python -m analysis.figures [--reports reports/h200] [--out figures] [--sass reports/sass]
                               [--only NAME ...] [--no-cache]

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


def _roofline(inp: Inputs):
    jobs = []
    for report in inp.stems:
        key = plots.kernel_key(report, _variant(inp, report))
        kname = inp.ident.loc[inp.ident["report"] == report, "kernel"].iloc[0]
        title = f"Hierarchical roofline: {plots.kernel_label(key)}  ({kname[:60]})"
        jobs.append((f"roofline_{safe_name(report)}.png",
                     lambda r=report, t=title: plots.plot_roofline(inp.roof, inp.ident, [r], title=t, fp32_points=True)))
    jobs.append(("roofline_overlay.png",
                 lambda: plots.plot_roofline(inp.roof, inp.ident, title="Hierarchical roofline: all kernels")))
    return jobs


def _stall_lines_one(inp: Inputs, report: str):
    src = inp.source(report)
    top = top_stall_lines(src, TOP_LINES)
    key = plots.kernel_key(report, _variant(inp, report))
    has_lines = bool(len(top)) and bool((top["location"] != "").any())
    note = "" if has_lines or top.empty else " \u00b7 no CUDA file:line (built without -lineinfo)"
    return plots.plot_stall_lines(src, top, title=f"Hottest SASS instructions by stall samples: {plots.kernel_label(key)}",
                                  context=plots.context_line(inp.ident, inp.roof, reports=[report]) + note)


def _stall_lines(inp: Inputs):
    return [(f"stall_lines_{safe_name(r)}.png", lambda r=r: _stall_lines_one(inp, r)) for r in inp.stems]


def _stalls(inp: Inputs):
    return [("stalls.png", lambda: plots.plot_stalls(inp.stall, inp.ident, inp.roof))]


def _pipes(inp: Inputs):
    return [("pipes.png", lambda: plots.plot_pipes(inp.pipe, inp.ident, inp.roof))]


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
                                                               method=_method_note(inp.bench_meta)))]


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
    return [("autotune.png", lambda: plots.plot_autotune(table, imp, prune, context=ctx))]


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
    return (f"fp16, B16 H16 S4096 d128 \u00b7 observed (bars) = {obs} \u00b7 model: pipe-time lower bounds from "
            f"H200 counters (+ per-arch main-loop SASS delta), combined as max + \u03b1\u00b7rest (\u03b1 = {alpha:.2f}, fitted on the H200 only)")


def _gap(inp: Inputs):
    g = _gap_frames(inp)
    from . import gap_plots
    return [("gap.png", lambda: gap_plots.plot_gap(
        g["table"], title="Kernels 1-7 as % of FlashAttention-2 per GPU: observed vs pipe-time model",
        subtitle=_gap_context(inp)))]


def _gpu_ceilings(inp: Inputs):
    g = _gap_frames(inp)
    from . import gap_plots
    c = g["ceilings"]
    sub = " \u00b7 ".join(f"{r['gpu']}: {r['tensor_flops'] / 1e12:.0f} TFLOP/s mma.sync at {r['clock_hz'] / 1e9:.2f} GHz "
                          f"({r['source']})" for r in c.to_dict("records"))
    return [("gpu_ceilings.png", lambda: gap_plots.plot_ceilings(c, title="Roofline ceilings of three GPUs",
                                                                 subtitle=sub))]


def _pipe_shares(inp: Inputs):
    g = _gap_frames(inp)
    if g["shares"].empty:
        raise Skip("analysis.gap has no kernel-7 rows")
    from . import gap_plots
    return [("pipe_shares.png", lambda: gap_plots.plot_pipe_shares(
        g["shares"], title="Kernel 7: modelled pipe time per GPU",
        subtitle="fp16 S4096 d128; bars above 1 outlast the tensor work"))]


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
                                                         regs=regs))]


def _bank(inp: Inputs):
    return [("bank_conflicts.png", lambda: plots.plot_bank_conflicts(inp.banks, inp.ident, inp.roof))]


@dataclass(frozen=True)
class FigureSpec:
    name: str
    jobs: Callable[[Inputs], list]
    about: str

    def outputs(self, inp: Inputs) -> list[str]:
        """Files this figure writes for these inputs ([] when it would be skipped)."""
        try:
            return [f for f, _ in self.jobs(inp)]
        except Skip:
            return []


FIGURES: dict[str, FigureSpec] = {s.name: s for s in (
    FigureSpec("roofline", _roofline, "hierarchical roofline per report + overlay"),
    FigureSpec("stalls", _stalls, "stall reasons per kernel, stacked"),
    FigureSpec("stall_lines", _stall_lines, "hottest SASS lines per report"),
    FigureSpec("pipes", _pipes, "pipe utilisation and issue slots"),
    FigureSpec("progression", _progression, "TFLOP/s vs S and % of FA2 (bench.csv)"),
    FigureSpec("sass_mix", _sass_mix, "static SASS opcode deltas K(n)->K(n+1)"),
    FigureSpec("bank_conflicts", _bank, "smem bank conflicts, ldmatrix"),
    FigureSpec("autotune", _autotune, "kernel-7 sweep ranked, coloured by the parameter that matters"),
    FigureSpec("gap", _gap, "% of FA2 per kernel: published A100/3090 + measured H200 vs model"),
    FigureSpec("gpu_ceilings", _gpu_ceilings, "three-GPU roofline ceilings (analysis.gap)"),
    FigureSpec("pipe_shares", _pipe_shares, "kernel-7 pipe time shares per GPU (analysis.gap)"),
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


_WORKER: dict = {}


def _draw(job: tuple[str, int, str]) -> tuple[str, str, float]:
    """Draw and save one file (runs in a worker process or inline)."""
    name, idx, out = job
    inp = _WORKER["inputs"]
    t0 = time.perf_counter()
    fname, thunk = FIGURES[name].jobs(inp)[idx]
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
    for attr in ("frame", "ident", "roof", "stall", "pipe", "banks", "stems", "bench", "bench_meta",
                 "opcodes", "ptxas", "autotune", "autotune_static"):
        getattr(inp, attr)
    if any(n in names for n in ("gap", "gpu_ceilings", "pipe_shares")):
        inp.gap  # computed once, before the workers fork
    work = []
    for name in names:
        try:
            listed = FIGURES[name].jobs(inp)
        except Skip as s:
            log(f"{PROG}: {name:<14} skipped: {s}")
            continue
        work += [(name, i, str(out)) for i in range(len(listed))]
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
    return written


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise FiguresError(message)


def main(argv=None) -> int:
    p = _Parser(prog=f"python -m analysis.{PROG}", description=__doc__.splitlines()[0])
    p.add_argument("--reports", type=Path, default=DEFAULT_REPORTS, help="folder of *.ncu-rep (+ bench.csv)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the PNGs")
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

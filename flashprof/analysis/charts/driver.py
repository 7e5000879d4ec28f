"""Figures driver (`make figures`): reports -> analysis frames -> PNG files.

    flashprof figures [--reports reports/h200] [--out DIR] [--sass reports/sass]
                      [--only NAME ...] [--no-cache]

Output folder: figures/ for the shipped reports (reports/h200); any other folder's figures
go to figures/<folder name>/ (or --out), never over the committed ones. Figures about
kernels 1-7 (progression, gap, SASS mix, autotune, ceilings) are drawn only for a folder
that holds their reports; rooflines, stalls, pipes, bank conflicts and stall lines for any.
Every output folder gets an index.md: one line per figure, and what was not drawn and why.

Input: every ``*.ncu-rep`` in ``--reports`` (parsed ONCE with ``flashprof.analysis.report.parse.load_frame``;
per-PC source frames only for the stall-line figures), ``bench.csv`` + ``bench.json``
next to them, and the static SASS tables ``<sass>/opcodes.csv`` / ``ptxas.csv``.
Output: PNGs in ``--out`` (written atomically: temp file + os.replace), one progress
line per file on stdout. A figure whose inputs are absent is skipped with a note. Any
problem -> one line ``figures: error: ...`` on stderr and exit status 2.

``FIGURES`` (``flashprof.analysis.charts.specs``) maps each figure name to a ``FigureSpec``:
``jobs(inputs)`` lists ``(filename, thunk, caption)`` (thunk() draws the Figure),
``outputs(inputs)`` just the filenames ([] when the figure would be skipped); the inputs
are parsed once (``flashprof.analysis.charts.inputs``). Drawing is spread over forked processes.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from flashprof.kernels.cli import ArgumentParser, FlashprofError, doc_summary, run_cli  # noqa: E402
from flashprof.kernels.common import write_atomic  # noqa: E402

from flashprof.analysis.charts.style import DPI, close
from flashprof.analysis.report.errors import ReportError  # noqa: E402
from flashprof.analysis.charts.inputs import (DEFAULT_OUT, DEFAULT_REPORTS, PROG, ROOT, FiguresError, Inputs, Skip, find_reports, make_inputs)  # noqa: E402,F401
from flashprof.analysis.stages.launches import parse_choice  # noqa: E402
from flashprof.analysis.charts.specs import ANALYSIS_FRAMES, FIGURES, FigureSpec, safe_name  # noqa: E402,F401


# --------------------------------------------------------------------------- I/O
def save_atomic(fig, path: Path) -> None:
    """Readers never see half a PNG."""
    write_atomic(path, lambda tmp: fig.savefig(tmp, format="png", dpi=DPI))


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
    close(fig)
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
    for attr in ("frame", "ident", "stems", "shown", "bench", "bench_meta", "opcodes", "ptxas", "autotune",
                 "autotune_static"):
        getattr(inp, attr)
    for attr in ANALYSIS_FRAMES:  # a failure here is reported as a skip by the figures that need it
        try:
            getattr(inp, attr)
        except ReportError:
            raise
        except Exception:
            pass
    for name in names:  # what a figure computes once, before the workers fork (FigureSpec.needs)
        spec = FIGURES[name]
        if inp.series or not spec.series:
            for attr in spec.needs:
                getattr(inp, attr)
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
    written = _draw_all(inp, work, log, jobs)
    skipped += [f"- report {Path(q).name} not read: {w}" for q, w in inp.skipped]
    if not only:  # a partial run would leave an index that misses the other figures
        write_index(out, captions, inp, skipped)
    return written


def _draw_all(inp: Inputs, work: list, log, jobs: int | None) -> list[Path]:
    """Draw ``work`` [(figure, job index, out)], spread over forked processes."""
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


# --------------------------------------------------------------- what changed
def fed_by(inp: Inputs, changed) -> dict[str, Callable[[str], bool]]:
    """Figure -> which of its files the reports ``changed`` (names as in ``inp.ident``) feed:
    each ``FigureSpec`` of ``FIGURES`` says what feeds it (``FigureSpec.feeds``); figures
    the changed reports do not feed are left out."""
    out = {}
    for name, spec in FIGURES.items():
        keep = spec.fed_by(inp, changed)
        if keep is not None:
            out[name] = keep
    return out


def build_changed(inp: Inputs, out: Path, changed, log=print, jobs: int | None = None) -> list[Path]:
    """Redraw only the files the reports ``changed`` feed (``fed_by``), for `flashprof
    profile`; the others stay as they are. index.md is rewritten (every figure listed)
    only when a caption or a note of what was looked at is not in it already. A folder
    whose figures were never drawn (no index.md) gets everything, as `flashprof figures`."""
    out = Path(out)
    if not (out / "index.md").is_file():
        return build(inp, out, log=log, jobs=jobs)
    out.mkdir(parents=True, exist_ok=True)
    for attr in ("frame", "ident", "stems"):
        getattr(inp, attr)
    work, lines = [], []
    for name, keep in fed_by(inp, changed).items():
        try:
            listed = FIGURES[name].jobs(inp)
        except Skip as s:
            log(f"{PROG}: {name:<14} skipped: {s}")
            lines.append(f"- {name}: {s}")
            continue
        for i, (fname, _, cap) in enumerate(listed):
            if keep(fname):
                work.append((name, i, str(out)))
                lines.append(f"- [{fname}]({fname}): {cap}")
    lines += [f"- {what}: {why}" for (_, what), why in inp.notes.items()]
    written = _draw_all(inp, work, log, jobs if jobs is not None else min(8, os.cpu_count() or 1))
    index = set((out / "index.md").read_text().splitlines())
    if any(line not in index for line in lines):
        captions, skipped = [], []
        for name in FIGURES:
            try:
                captions += [(fname, cap) for fname, _, cap in FIGURES[name].jobs(inp)]
            except Skip as s:
                skipped.append(f"- {name}: {s}")
        write_index(out, captions, inp, skipped)
        log(f"{PROG}: index          {out / 'index.md'}")
    return written


def write_index(out: Path, captions: list[tuple[str, str]], inp: Inputs, skipped: list[str] = ()) -> Path:
    """``index.md``: every figure of this folder with its one-line caption."""
    n = len(inp.ident)
    lines = [f"# Figures of `{inp.reports_dir.name}`", "",
             f"{len(inp.stems)} report(s), {n} launch(es), drawn by `flashprof figures` "
             f"(flashprof). One line per figure:", ""]
    lines += [f"- [{fname}]({fname}): {cap}" for fname, cap in captions]
    left = list(skipped) + [f"- {what}: {why}" for (_, what), why in inp.notes.items()]
    if left:
        lines += ["", "Not drawn:", ""] + left
    return write_atomic(out / "index.md", "\n".join(lines) + "\n")


def main(argv=None) -> int:
    p = ArgumentParser(prog=f"flashprof {PROG}", description=doc_summary(__doc__))
    p.add_argument("--reports", type=Path, default=DEFAULT_REPORTS, help="folder of *.ncu-rep (+ bench.csv)")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for the PNGs (default: figures/ for the shipped reports, else figures/<folder name>/)")
    p.add_argument("--sass", type=Path, default=None, help="folder of opcodes.csv/ptxas.csv (default: <reports>/../sass)")
    p.add_argument("--only", nargs="+", metavar="NAME", help=f"subset of: {', '.join(FIGURES)}")
    p.add_argument("--no-cache", action="store_true", help="do not use the parse cache")
    p.add_argument("--jobs", type=int, default=None, help="drawing processes (default: CPUs, at most 4)")
    p.add_argument("--keep-going", action="store_true",
                   help="exit 0 even when unreadable reports of the folder were skipped (they are still named)")
    p.add_argument("--launch", default="dominant", metavar="N|dominant|all",
                   help="the launch of each multi-launch report the charts show: its index, the one carrying "
                        "the most GPU time (default), or all")
    args = p.parse_args(argv)
    return run_cli(PROG, lambda: _run(args))


def _run(args) -> int:
    t0 = time.perf_counter()
    try:
        bad = [n for n in (args.only or []) if n not in FIGURES]
        if bad:
            raise FiguresError(f"unknown figure(s) {', '.join(bad)}; choose from {', '.join(FIGURES)}")
        launch = parse_choice(args.launch)
        args.out = out_dir(args.reports, args.out)
        inp = make_inputs(args.reports, args.sass, cache=not args.no_cache, launch=launch)
        written = build(inp, args.out, args.only, jobs=args.jobs)
        for path, why in inp.skipped:
            print(f"{PROG}: skipped {path}: {why.removeprefix(str(path) + ': ')}", file=sys.stderr)
    except (FlashprofError, OSError, ValueError, KeyError) as exc:
        if os.environ.get("FLASHPROF_DEBUG"):
            raise
        raise FiguresError(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__) from None
    print(f"{PROG}: {len(written)} file(s) in {args.out} ({time.perf_counter() - t0:.1f} s)"
          + (f"; {len(inp.skipped)} unreadable report(s) skipped" if inp.skipped else ""))
    return 1 if inp.skipped and not args.keep_going else 0


if __name__ == "__main__":
    sys.exit(main())

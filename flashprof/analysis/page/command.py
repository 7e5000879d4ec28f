"""``flashprof report DIR [--out FILE]``: one self-contained HTML page of a folder of reports.

Output: ``report.html`` beside the folder's figures (figures/ for the shipped reports
reports/h200, figures/<folder name>/ for any other, as ``flashprof figures`` chooses), or
``--out``. The page needs no server and no network: plotly's JavaScript is inlined once and
every number is in the page. Reports are read only through the parse stage (``load_frame``,
``load_source_frame``) and the summary (``summarize_paths``, as ``flashprof summary`` prints
it). Any problem -> one line ``report: error: ...`` on stderr, exit status 2.
"""
from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli
from flashprof.kernels.common import write_atomic

from flashprof.analysis.report.errors import ReportError

PROG = "report"
PAGE = "report.html"


class PageError(FlashprofError):
    """A user-facing problem: one line, exit 2."""


def out_path(reports_dir: Path, out: Path | None) -> Path:
    """``out``, or report.html in the folder ``flashprof figures`` draws this folder into;
    a foreign folder's page never goes into figures/ itself (that holds the shipped ones)."""
    from flashprof.analysis.charts.driver import out_dir
    if out is None:
        return out_dir(reports_dir) / PAGE
    out = Path(out)
    if out.is_dir():
        out = out / PAGE
    out_dir(reports_dir, out.parent)  # raises for figures/ and a foreign folder
    return out


def gather(reports_dir: Path, cache: bool = True, log=print, skipped: list | None = None) -> dict:
    """Everything the page shows, as plain data (``flashprof.analysis.page.data``)."""
    from flashprof.analysis.charts.inputs import make_inputs
    from flashprof.analysis.page import assemble
    from flashprof.analysis.stages.launches import ALL as ALL_LAUNCHES
    from flashprof.analysis.stages.summary import summarize_paths

    from flashprof.analysis.report.parse import load_frame
    inp = make_inputs(reports_dir, cache=cache, launch=ALL_LAUNCHES)  # the page holds every launch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the page's Reports table lists what each report lacks
        # Inputs.frame would print them; an unreadable report is left out and named (skipped)
        inp.__dict__["frame"] = load_frame(inp.paths, cache=cache, skipped=inp.skipped)
        bad = {str(q) for q, _w in inp.skipped}
        inp.paths = [q for q in inp.paths if str(q) not in bad]
        records = summarize_paths(inp.paths, cache=cache)
    if skipped is not None:
        skipped += inp.skipped
    return assemble.page_data(inp, records, log=log)


def build(reports_dir: Path, out: Path | None = None, cache: bool = True, log=print,
          skipped: list | None = None) -> Path:
    from flashprof.analysis.page import render
    reports_dir = Path(reports_dir)
    target = out_path(reports_dir, out)
    data = gather(reports_dir, cache=cache, log=log, skipped=skipped)
    page = render.page(data)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, page)
    return target


def main(argv=None) -> int:
    p = ArgumentParser(prog=f"flashprof {PROG}", description=__doc__.splitlines()[0].split(": ", 1)[1])
    p.add_argument("reports", type=Path, help="folder of *.ncu-rep (e.g. reports/h200)")
    p.add_argument("--out", type=Path, default=None,
                   help=f"the page (default: {PAGE} beside the folder's figures: figures/ for reports/h200, "
                        "else figures/<folder name>/)")
    p.add_argument("--no-cache", action="store_true", help="do not use the parse cache")
    p.add_argument("--keep-going", action="store_true",
                   help="exit 0 even when unreadable reports of the folder were skipped (they are still named)")
    args = p.parse_args(argv)
    return run_cli(PROG, lambda: _run(args))


def _run(args) -> int:
    t0 = time.perf_counter()
    try:
        skipped: list = []
        target = build(args.reports, args.out, cache=not args.no_cache, skipped=skipped)
    except (FlashprofError, ReportError, OSError, ValueError, KeyError) as exc:
        if os.environ.get("FLASHPROF_DEBUG"):
            raise
        text = str(exc).strip()
        raise PageError(text.splitlines()[0] if text else type(exc).__name__) from None
    size = target.stat().st_size / 1e6
    print(f"{PROG}: {target} ({size:.1f} MB, {time.perf_counter() - t0:.1f} s); open it in any browser, "
          "offline; send the one file")
    for path, why in skipped:
        print(f"{PROG}: skipped {path}: {why.removeprefix(str(path) + ': ')}", file=sys.stderr)
    return 1 if skipped and not args.keep_going else 0


if __name__ == "__main__":
    sys.exit(main())

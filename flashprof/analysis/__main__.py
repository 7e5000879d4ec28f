"""Command line front door of ``flashprof summary|compare|gap ...`` (flashprof/verbs.py).

Input: report paths (a directory means every *.ncu-rep in it). Output: text on stdout
(table, JSON or CSV). Any report problem or bad argument prints exactly one line,
``analysis: error: <message>``, to stderr and exits with status 2.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

from flashprof.kernels.cli import ArgumentParser, run_cli

from flashprof.analysis.report.errors import ReportError
from flashprof.analysis.report.parse import REPORT_SUFFIX
from flashprof.analysis.stages.launches import ALL, parse_choice
from flashprof.analysis.stages.summary import (clock_spread, select_rows, compare, render_compare_table, render_csv, render_json, render_table, summarize_paths)

PROG = "summary"  # the verb, as every verb's messages begin ("gap: error: ..."; set by main)
FORMATS = ("table", "json", "csv")


def _expand(args: list[str]) -> list[Path]:
    paths: list[Path] = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            found = sorted(p.glob(f"*{REPORT_SUFFIX}"))
            if not found:
                raise ReportError(f"{p}: directory holds no *{REPORT_SUFFIX} files")
            paths += found
        else:
            paths.append(p)
    return paths


def _build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="flashprof", description="Summarise and compare Nsight Compute reports.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{summary,compare,gap}")
    s = sub.add_parser("summary", help="one column/object per profiled kernel launch")
    s.add_argument("reports", nargs="+", help="report files or directories of them")
    s.add_argument("--keep-going", action="store_true",
                   help="with a folder: exit 0 even when unreadable reports were skipped (they are still named)")
    s.add_argument("--launch", default="all", metavar="N|dominant|all",
                   help="which launches of each report: all (default), the one carrying the most GPU time, "
                        "or launch N (a report with one launch keeps it)")
    c = sub.add_parser("compare", help="two reports side by side with deltas and regression flags")
    c.add_argument("a", help="baseline report")
    c.add_argument("b", help="report compared against the baseline")
    g = sub.add_parser("gap", help="cross-GPU issue model: % of FA2 on RTX 3090 / A100 / H200")
    g.add_argument("reports", nargs="*", help="reports or directories (default: reports/*/*.ncu-rep)")
    g.add_argument("--sass", help="static opcode CSV (default: reports/sass/opcodes.csv)")
    g.add_argument("--bench", action="append", help="bench CSV with measured %% of FA2 (repeatable)")
    g.add_argument("--model", choices=("issue", "pipes"), default="issue",
                   help="issue: the SASS issue model, nothing fitted (default; read from "
                        "reports/gap/issue_model.json while its inputs are unchanged); "
                        "pipes: the issue-6 pipe-time bound (fitted, superseded)")
    g.add_argument("--write", metavar="DIR", help="with --model issue: recompute and write "
                   "issue_model.json + issue_model.meta.json into DIR (e.g. reports/gap/)")
    g.add_argument("--recompute", action="store_true",
                   help="with --model issue: run the model even if the committed result is fresh")
    g.add_argument("--plot", help="with --model issue: also write the figure to this PNG path")
    g.add_argument("--what-if", nargs="?", const="default", metavar="CHANGES",
                   help="predict named changes to the shipped wgmma kernel 7 on the H200 before building "
                        "them: comma-separated, each a change or a '+'-joined combination of pingpong, "
                        "overlap, tma, tile128 (default: a standard set)")
    for p in (s, c):
        p.add_argument("--format", choices=FORMATS, default="table", help="table, json (one record per launch) or csv (default: %(default)s)")
    g.add_argument("--format", choices=("table", "json"), default="table", help="output form (default: %(default)s)")
    for p in (s, c, g):
        p.add_argument("--no-cache", action="store_true", help="do not read or write the parquet cache")
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def _check_writable(folder: Path) -> None:
    """Refuse, with one line, a --write folder that cannot take the result."""
    import tempfile
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ReportError(f"--write {folder}: {probe} is not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=probe, prefix=".flashprof-write-check"):
            pass
    except OSError as e:
        raise ReportError(f"--write {folder}: cannot write there ({e.strerror})") from None


def _issue_records(ns: argparse.Namespace, cache: bool) -> list[dict]:
    """The committed issue-model result when nothing it was computed from has changed and
    no reports were named; otherwise the model itself (minutes), written if --write."""
    import time

    from flashprof.analysis.gap import frozen
    from flashprof.analysis.gap.issue_report import gap_issue_paths

    if ns.write and ns.reports:
        raise ReportError("--write stores the result of the default inputs: name no reports")
    if ns.write:
        _check_writable(Path(ns.write))  # before the minutes of model time, not after
    if not (ns.reports or ns.write or ns.recompute):
        recs, why = frozen.fresh()
        if recs is not None:
            return recs
        print(f"{PROG}: note: {why}; running the issue model (takes minutes; "
              "--write reports/gap/ stores the result)", file=sys.stderr)
    t0 = time.perf_counter()
    recs = gap_issue_paths(_expand(ns.reports), cache=cache)
    if ns.write:
        frozen.write(recs, ns.write, runtime_s=time.perf_counter() - t0)
    return recs


def _run(ns: argparse.Namespace) -> str:
    cache = not ns.no_cache
    if ns.command == "gap" and ns.model != "issue" and (ns.plot or ns.write or ns.recompute):
        raise ReportError("--plot, --write and --recompute need --model issue")
    if ns.command == "gap" and ns.model == "issue" and (ns.sass or ns.bench):
        raise ReportError("--sass and --bench belong to --model pipes (the issue model reads reports/sass/loops)")
    if ns.command == "gap" and ns.what_if:
        if ns.model != "issue" or ns.plot or ns.write or ns.reports:
            raise ReportError("--what-if takes no reports, --plot or --write (it predicts kernel 7's changes alone)")
        from flashprof.analysis.gap import whatif
        from flashprof.analysis.gap.controls import SassError
        changes = whatif.DEFAULT if ns.what_if == "default" else tuple(c.strip() for c in ns.what_if.split(",") if c.strip())
        try:
            recs = whatif.predict(changes)
        except (SassError, KeyError, ValueError) as exc:
            raise ReportError(f"what-if: {exc}") from None
        return render_json(recs) if ns.format == "json" else whatif.render(recs)
    if ns.command == "gap" and ns.model == "issue":
        from flashprof.analysis.gap.issue_report import render as render_issue
        recs = _issue_records(ns, cache)
        if ns.plot:
            from flashprof.analysis.gap.issue_report import write_plot
            write_plot(recs, ns.plot)
        return render_json(recs) if ns.format == "json" else render_issue(recs)
    if ns.command == "gap":  # --model pipes: the superseded fitted model, imported for it alone
        from flashprof.analysis.gap.legacy_pipes.pipes_report import gap_paths
        from flashprof.analysis.gap.legacy_pipes.pipes_report import render_table as render_gap_table
        from flashprof.analysis.gap.legacy_pipes.pipes_report import to_records as gap_records

        table, errors = gap_paths(_expand(ns.reports), ns.sass, ns.bench, cache=cache)
        if ns.format == "json":
            return render_json(gap_records(table, errors))
        return render_gap_table(table, errors)
    if ns.command == "summary":
        try:
            choice = parse_choice(ns.launch)
        except ValueError as exc:
            raise ReportError(str(exc)) from None
        paths = _expand(ns.reports)
        # a folder or several reports: each unusable one is named and left out (exit 1 after
        # the rest is printed, 0 with --keep-going); a single named report is all or nothing
        skipped = [] if len(paths) > 1 else None
        rows = summarize_paths(paths, cache=cache, skipped=skipped)
        for path, why in skipped or ():
            print(f"{PROG}: skipped {path}: {why.removeprefix(str(path) + ': ')}", file=sys.stderr)
        if skipped:
            ns.exit_status = 0 if ns.keep_going else 1
        spread = clock_spread(rows)
        if spread:
            print(f"{PROG}: warning: {spread}", file=sys.stderr)
        if choice != ALL:
            try:
                rows = select_rows(rows, choice)
            except ValueError as exc:
                raise ReportError(str(exc)) from None
        return {"table": render_table, "json": render_json, "csv": render_csv}[ns.format](rows)
    a_path, b_path = _expand([ns.a]), _expand([ns.b])
    if len(a_path) != 1 or len(b_path) != 1:
        raise ReportError("compare takes exactly two report files")
    both = summarize_paths(a_path + b_path, cache=cache)
    a_rows = [r for r in both if r["path"] == str(a_path[0])]
    b_rows = [r for r in both if r["path"] == str(b_path[0])]
    if not b_rows:  # the same file twice: load_frame de-duplicates it
        b_rows = a_rows
    pairs = compare(a_rows, b_rows)
    spread = clock_spread(a_rows + b_rows)
    if spread:
        print(f"{PROG}: warning: {spread}", file=sys.stderr)
    if ns.format == "json":
        return render_json(pairs)
    if ns.format == "csv":
        return render_csv([{"a": p["a"], "b": p["b"], "launch_a": p["launch_a"], **r}
                           for p in pairs for r in p["rows"]])
    return render_compare_table(pairs)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (tests call it in-process)."""
    try:
        ns = _build_parser().parse_args(argv)
    except SystemExit as exc:  # a usage error (one line, 2) or --help (0), already printed
        return int(exc.code or 0)
    global PROG
    PROG = ns.command
    return run_cli(PROG, lambda: _run_and_print(ns))


def _run_and_print(ns: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        text = _run(ns)
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours
        sys.stdout = open(os.devnull, "w")
    return getattr(ns, "exit_status", 0)


if __name__ == "__main__":
    sys.exit(main())

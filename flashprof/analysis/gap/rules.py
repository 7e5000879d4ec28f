"""What the model-rule judgements (xu_rule.py, dispatch_rule.py, arbitration_rule.py) share: each
scores its candidate Machines on several record sets, pools the mean absolute errors, prints one
line per candidate and, asked to, stores its record as JSON. The choice itself is each rule's own.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from flashprof.analysis.gap.data import REPO


def score(models: dict, sets: dict) -> tuple[dict, dict, dict]:
    """(errs, mae, pooled): ``errs[c][s]`` is set ``s``'s {record: % error} under candidate ``c``
    (``sets[s](models[c])``), ``mae[c][s]`` that set's mean absolute error, ``pooled[c]`` the mean
    absolute error over every record of every set."""
    errs = {c: {s: f(m) for s, f in sets.items()} for c, m in models.items()}
    mae = {c: {s: statistics.fmean(abs(v) for v in e.values()) for s, e in by.items()} for c, by in errs.items()}
    pooled = {c: statistics.fmean(abs(v) for e in by.values() for v in e.values()) for c, by in errs.items()}
    return errs, mae, pooled


def print_candidates(rec: dict, candidates, fmt: str = "5.2f", extra=None) -> None:
    """One line per candidate: each set's MAE (``fmt``), the pooled MAE, then ``extra(c)`` if given."""
    for c in candidates:
        print(f"{c}: " + "  ".join(f"{s} {v:{fmt}} %" for s, v in rec["mae_pct"][c].items())
              + f"  pooled {rec['pooled_mae_pct'][c]:5.2f} %" + (extra(c) if extra else ""))


def write_record(path: Path, rec: dict, section: str | None = None) -> None:
    """Store ``rec`` as ``path``'s whole JSON (``section`` None) or as its ``section`` key, the rest
    of the file (if it reads) kept; says what it wrote."""
    if section is not None:
        from flashprof.analysis.gap.interplay import load

        rec = {**(load(path) or {}), section: rec}
    path.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path.relative_to(REPO)}" + (f" ({section})" if section else ""))


def main(argv, judge, candidates, choice_line, path: Path, section: str | None = None, fmt: str = "5.2f",
         extra=None) -> int:
    """A rule module's command line: judge, print each candidate (``extra(rec, c)``: a suffix) and
    ``choice_line(rec)``; with --write store the record (``write_record``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    rec = judge()
    print_candidates(rec, candidates, fmt=fmt, extra=(lambda c: extra(rec, c)) if extra else None)
    print(choice_line(rec))
    if "--write" in argv:
        write_record(path, rec, section)
    return 0

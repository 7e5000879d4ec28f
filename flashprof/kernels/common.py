"""Small helpers with no project knowledge, shared by every room (kernels, profiling,
analysis). They live here because kernels/ is the upstream end of the one-way flow:
profiling and analysis may import it, never the reverse.

* ``harmonic_mean``: the mean of rates (TFLOP/s) over sequence lengths.
* ``write_atomic``: a file appears whole or not at all (temp file + ``os.replace``).
* ``write_csv_atomic``: rows (dicts) as a CSV file, written atomically.
* ``move_to_history``: an old output and its JSON sidecar move to ``history/`` with their
  timestamp; nothing is ever deleted or overwritten.
"""
from __future__ import annotations

import csv
import math
import os
import time
from pathlib import Path
from typing import Callable, Iterable

__all__ = ["harmonic_mean", "write_atomic", "write_csv_atomic", "move_to_history"]


def harmonic_mean(values: Iterable) -> float:
    """Harmonic mean of positive rates; NaN when there are none or when any value is
    missing (None/NaN) or not positive. A mean over the survivors would silently average
    fewer sequence lengths for a target that failed at one of them, so a failure shows
    as NaN instead; callers that want a subset select it before calling."""
    v = [math.nan if x is None else float(x) for x in values]
    if not v or any(not x > 0 for x in v):  # `not x > 0` is also true for NaN
        return math.nan
    return len(v) / sum(1.0 / x for x in v)


def write_atomic(path: Path, content: str | bytes | Callable[[Path], object]) -> Path:
    """Write ``content`` (text, bytes, or a function writing to the path it is given) to a
    temp file beside ``path`` and move it into place: a concurrent reader never sees half
    a file. The temp file is removed if writing fails."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if isinstance(content, str):
            tmp.write_text(content)
        elif isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            content(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_csv_atomic(path: Path, fieldnames, rows, float_format: str | None = None) -> Path:
    """``rows`` (dicts) under a header of ``fieldnames``; floats as ``float_format`` (e.g.
    ``"{:.6g}"``) when given."""
    def write(tmp: Path) -> None:
        with tmp.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(fieldnames))
            w.writeheader()
            for r in rows:
                w.writerow(r if float_format is None else
                           {k: float_format.format(v) if isinstance(v, float) else v for k, v in r.items()})
    return write_atomic(path, write)


def move_to_history(path: Path, suffix: str | None = None, history: Path | None = None) -> Path | None:
    """Move ``path`` (and ``<stem>.json`` beside it, if any) to ``history/`` as
    ``<stem>.<mtime UTC>[-n]<suffix>``; returns the new path, or None if ``path`` does not
    exist. ``suffix`` defaults to ``path.suffix`` (give ``".ncu-rep"`` style double
    suffixes explicitly). Raises OSError; an existing history file is never replaced."""
    path = Path(path)
    if not path.exists():
        return None
    suffix = path.suffix if suffix is None else suffix
    if not path.name.endswith(suffix):
        raise ValueError(f"{path.name} does not end with {suffix}")
    stem = path.name[: len(path.name) - len(suffix)]
    history = Path(history) if history else path.parent / "history"
    side = path.with_name(stem + ".json")
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(path.stat().st_mtime))
    name, n = f"{stem}.{stamp}", 1
    while (history / f"{name}{suffix}").exists() or (history / f"{name}.json").exists():
        name, n = f"{stem}.{stamp}-{n}", n + 1
    history.mkdir(parents=True, exist_ok=True)
    dest = history / f"{name}{suffix}"
    os.replace(path, dest)
    if side.exists() and side != path:
        os.replace(side, history / f"{name}.json")
    return dest

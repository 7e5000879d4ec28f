"""Errors and warnings raised by the analysis package.

Input: nothing. Output: the two classes every stage raises, so that callers (the CLI,
the figures code) can catch report problems without catching programming errors.
"""
from __future__ import annotations

from flashprof.kernels.cli import FlashprofError


class ReportError(FlashprofError):
    """A report file that cannot be analysed: missing, unreadable, not a report, empty."""


class FlashprofWarning(UserWarning):
    """Something the analysis can work around (e.g. a smaller section set: values become NaN)."""


def read_table(path, **kwargs):
    """``pandas.read_csv`` of one of the project's CSVs (bench, autotune, SASS opcodes, ...):
    a file that is not a readable CSV is a ReportError naming it, never a parser traceback."""
    import pandas as pd

    try:
        return pd.read_csv(path, **kwargs)
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except (ValueError, UnicodeDecodeError, OSError, pd.errors.ParserError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReportError(f"{path}: not a readable CSV ({first})") from None

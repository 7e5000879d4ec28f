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

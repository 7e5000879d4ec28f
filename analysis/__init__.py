"""flashprof analysis: Nsight Compute reports -> tidy frames -> roofline, pipes, stalls.

Stages (each a module with one job):
  parse     reports (+ sidecar JSON) -> long frame (report, launch, metric, unit, value)
  roofline  long frame -> hierarchical roofline rows (Nsight Compute chart convention)
  pipes     long frame -> pipe utilisation, issue activity, instruction mix
  stalls    long frame -> warp-stall breakdown, bank conflicts; per-PC frame -> hot lines
  summary   long frame -> per-launch records, comparisons (CLI: python -m analysis)
No plotting here: figures take these frames.
"""
from .errors import FlashprofWarning, ReportError
from .parse import load_frame, load_source_frame, pivot_metrics, validate_frame
from .pipes import pipes
from .roofline import roofline
from .stalls import STALL_REASONS, bank_conflicts, stalls, top_stall_lines
from .summary import compare, summarize

__all__ = [
    "FlashprofWarning", "ReportError", "STALL_REASONS", "bank_conflicts", "compare",
    "load_frame", "load_source_frame", "pipes", "pivot_metrics", "roofline", "stalls",
    "summarize", "top_stall_lines", "validate_frame",
]

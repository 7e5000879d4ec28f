"""Gap stage: why the series' kernels reach ~101.5 % of FlashAttention-2 on an RTX 3090
but ~80 % on an A100 (issues 6 and 13).

Two models live here, each in its own module:
* ``throughput`` -- the issue-6 pipe-time bound (per-pipe times from executed counters,
  combined with a fitted alpha); kept because figures and the CLI's default table use it.
* the issue-13 instruction-level model: ``controls`` (SASS with decoded control codes),
  ``constants`` (per-GPU latencies / issue intervals with sources), ``scheduler`` (an
  in-order, per-sub-partition issue simulation of the KV loop) and ``issue_report``
  (predictions vs published / measured, sensitivity, rendering). Nothing in it is fitted.
"""
from .throughput import *  # noqa: F401,F403  (the public API the CLI, figures and tests use)
from .throughput import HERE, REPO  # noqa: F401

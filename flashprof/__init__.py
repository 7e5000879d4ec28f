"""flashprof: Nsight Compute profiling and roofline analysis of FlashAttention-2 forward kernels.

Its stages are its subpackages, and data flows one way between them:
``flashprof.kernels`` → ``flashprof.profiling`` → ``flashprof.analysis`` → figures.
Where it reads and writes is :mod:`flashprof.paths`. The command line is
``flashprof <verb>`` (:mod:`flashprof.verbs`; also ``python -m flashprof``).
"""
from __future__ import annotations

__version__ = "0.2.0"

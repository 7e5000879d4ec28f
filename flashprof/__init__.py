"""flashprof: Nsight Compute profiling and roofline analysis of FlashAttention-2 forward kernels.

One installed package. Its stages keep the repository's top-level folders:
``flashprof.kernels`` (kernels/), ``flashprof.profiling`` (profiling/) and
``flashprof.analysis`` (analysis/); data flows kernels -> profiling -> analysis -> figures.
In a wheel they are subpackages of this folder; in a source checkout this package's
search path also holds the checkout root, so the same import names reach the folders.
The command line is ``flashprof <verb>`` (``python -m flashprof``; flashprof.verbs).
"""
from __future__ import annotations

from pathlib import Path

__version__ = "0.2.0"

_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parent
# A source checkout (or an editable install of one): kernels/, profiling/, analysis/ sit
# beside this folder rather than inside it.
if not (_HERE / "kernels").is_dir() and (_CHECKOUT / "kernels" / "config.py").is_file():
    __path__.append(str(_CHECKOUT))  # noqa: F821 (the package's own search path)

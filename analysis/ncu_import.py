"""Locate and import Nsight Compute's Python report reader (``ncu_report``).

Input: the Python environment (and, as a fallback, an Nsight Compute install).
Output: the ``ncu_report`` module, imported once.

Preference order: the PyPI package ``ncu-report`` (CPU-only machines have it in the
venv); otherwise the copy every Nsight Compute install ships under ``extras/python``,
found next to ``ncu`` on PATH or under /opt/nvidia/nsight-compute/<version>/.
"""
from __future__ import annotations

import functools
import glob
import importlib
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

from .errors import ReportError

_INSTALL_GLOBS = ("/opt/nvidia/nsight-compute/*", "/usr/local/cuda*/nsight-compute*")


def _candidate_dirs() -> list[Path]:
    dirs: list[Path] = []
    ncu = shutil.which("ncu")
    if ncu:
        # `ncu` on PATH is often a symlink into the versioned install directory.
        dirs.append(Path(os.path.realpath(ncu)).parent / "extras" / "python")
    # Newest version first: sorted() on the version directory names is good enough here.
    for pattern in _INSTALL_GLOBS:
        for root in sorted(glob.glob(pattern), reverse=True):
            dirs.append(Path(root) / "extras" / "python")
    return [d for d in dirs if (d / "ncu_report.py").is_file() or (d / "ncu_report").is_dir()]


@functools.lru_cache(maxsize=1)
def ncu_report() -> ModuleType:
    """Return the imported ``ncu_report`` module or raise ReportError saying how to get it."""
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    for d in _candidate_dirs():
        sys.path.insert(0, str(d))
        try:
            return importlib.import_module("ncu_report")
        except ImportError:
            sys.path.remove(str(d))
    raise ReportError(
        "cannot import ncu_report: install the PyPI package 'ncu-report' "
        "or put Nsight Compute's extras/python directory on PYTHONPATH"
    )

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
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from flashprof.analysis.report.errors import ReportError

_INSTALL_GLOBS = ("/opt/nvidia/nsight-compute/*", "/usr/local/cuda*/nsight-compute*")
# A small real report (a GEMM, SpeedOfLight only) to try a candidate module on.
from flashprof.paths import PROBE_REPORT  # noqa: E402,F401


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


def probe(directory: Path, report: Path = PROBE_REPORT) -> str | None:
    """Try the ncu_report in ``directory`` on a real report in a child process.

    The copy an Nsight Compute install ships is a compiled module built for one Python;
    under another it can crash the interpreter (seen with Nsight Compute 2025.3.1's copy
    under Python 3.12: a segmentation fault). Returns None if it works, else why not.
    """
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import ncu_report; "
            "r = ncu_report.load_report(sys.argv[2]); assert r.num_ranges() > 0")
    try:
        r = subprocess.run([sys.executable, "-c", code, str(directory), str(report)],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return f"could not be tried ({e})"
    if r.returncode < 0:
        return f"crashed (signal {-r.returncode}) in Python {sys.version.split()[0]}"
    if r.returncode:
        last = (r.stderr.strip().splitlines() or ["exit " + str(r.returncode)])[-1]
        return f"failed: {last}"
    return None


@functools.lru_cache(maxsize=1)
def ncu_report() -> ModuleType:
    """Return the imported ``ncu_report`` module or raise ReportError saying how to get it."""
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    problems = []
    for d in _candidate_dirs():
        why = probe(d)
        if why:
            problems.append(f"{d}/ncu_report {why}")
            continue
        sys.path.insert(0, str(d))
        try:
            return importlib.import_module("ncu_report")
        except ImportError as e:
            sys.path.remove(str(d))
            problems.append(f"{d}/ncu_report failed: {e}")
    found = f" ({'; '.join(problems)})" if problems else ""
    raise ReportError(
        "cannot use ncu_report: install the PyPI package 'ncu-report' (pip install ncu-report; "
        f"on a machine without a registry, carry its wheel){found}"
    )

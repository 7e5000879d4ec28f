"""Where flashprof reads and writes, resolved once; every module asks here.

Two kinds of place:

- **package data**, shipped inside the package (CUDA sources, ``gpus.json``, the probe
  report, the notebook): under :data:`PACKAGE`, wherever the package is installed;
- **work folders** (``build/``, ``reports/``, ``figures/``), which belong to the user:
  under :data:`ROOT`, which is

  1. ``$FLASHPROF_HOME`` when set;
  2. else the source checkout this package sits in (a folder holding ``pyproject.toml``
     and ``flashprof/`` beside each other: ``make`` and an editable install);
  3. else the current directory (an installed wheel never writes into site-packages).
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
ENV_HOME = "FLASHPROF_HOME"


def find_root(env: dict | None = None, cwd: Path | None = None) -> Path:
    """The work-folder root by the rule above (arguments for tests)."""
    env = os.environ if env is None else env
    if env.get(ENV_HOME):
        return Path(env[ENV_HOME]).expanduser().resolve()
    checkout = PACKAGE.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "flashprof" / "paths.py").is_file():
        return checkout
    return (cwd or Path.cwd()).resolve()


def is_checkout() -> bool:
    """True when the package runs from a source checkout (not an installed wheel)."""
    return ROOT == PACKAGE.parent and (ROOT / "pyproject.toml").is_file()


ROOT = find_root()
BUILD = ROOT / "build"
REPORTS = ROOT / "reports"
FIGURES = ROOT / "figures"

# package data
KERNELS_PKG = PACKAGE / "kernels"
CSRC = KERNELS_PKG / "csrc"
ANALYSIS_PKG = PACKAGE / "analysis"
NOTEBOOK = ANALYSIS_PKG / "explore_stalls.ipynb"
PROBE_REPORT = ANALYSIS_PKG / "data" / "probe.ncu-rep"


def rel(p: Path) -> str:
    """``p`` relative to :data:`ROOT` when it lies under it (for messages), else as given."""
    try:
        return Path(p).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(p)

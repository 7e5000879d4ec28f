"""The profiling commands' errors and CLI helpers: those of kernels/cli.py, re-exported
(one exception base and one one-line-error parser for the whole project)."""
from __future__ import annotations

from kernels.cli import ArgumentParser, FlashprofError, run_cli

__all__ = ["ArgumentParser", "FlashprofError", "run_cli"]

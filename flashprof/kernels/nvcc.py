"""Running nvcc: one place that turns a command line into a finished file.

Input: an nvcc command whose output is a temp path beside the final one. Output: nvcc's
log (stdout + stderr); on failure the temp file is removed and ``BuildError`` names the
error lines, the exit status and the command. Every static build goes through here: the
cubins of ``flashprof.kernels.sass.static``, the ceilings benchmarks, the tuner's shared libraries. The
compiler itself comes from ``flashprof.kernels.toolchain.find_toolchain`` (never a bare ``nvcc``).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from flashprof.kernels.cli import FlashprofError
from flashprof.kernels.toolchain import find_toolchain

from flashprof.paths import ROOT as REPO  # noqa: E402 (the working directory nvcc runs in)


class BuildError(FlashprofError, RuntimeError):
    """nvcc failed, or its output is not what the caller needs."""

    exit_code = 1


def arch_flags(arch: str) -> list[str]:
    """nvcc flags that target ``arch`` (sm_XY or an arch-specific sm_XYa). ``-arch=sm_90a``
    alone would also embed generic compute_90 PTX, which cannot hold sm_90a-only
    instructions (wgmma) and fails in ptxas; an arch-specific target gets only its own code."""
    if arch[-1] in "af":
        return [f"-gencode=arch=compute_{arch[3:]},code={arch}"]
    return [f"-arch={arch}"]


def nvcc_path() -> str:
    """The nvcc (with a ptxas beside it) that kernels/toolchain.py finds."""
    return str(find_toolchain("nvcc", "ptxas").path("nvcc"))


def link_flags(nvcc: str) -> list[str]:
    """Flags for a linked output (binary, shared library): the cuda-toolkit wheels keep the
    static CUDA runtime in <root>/lib, where nvcc does not look by itself."""
    lib = Path(nvcc).parent.parent / "lib"
    return [f"-L{lib}"] if (lib / "libcudart_static.a").exists() else []


def run_nvcc(cmd: list[str], tmp: Path, what: str) -> str:
    """Run ``cmd`` (which writes ``tmp``) from the repository root; returns the log."""
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0 or not tmp.exists():
        tmp.unlink(missing_ok=True)
        errors = [ln for ln in log.splitlines() if "error" in ln.lower()] or log.splitlines()
        raise BuildError(f"nvcc failed for {what}, exit {proc.returncode}:\n" + "\n".join(errors[:20])
                         + f"\ncommand: {' '.join(cmd)}")
    return log


def build_file(cmd_for, out: Path, what: str) -> tuple[Path, str]:
    """``cmd_for(tmp)`` -> an nvcc command writing ``tmp``; the result is moved to ``out``
    only when nvcc succeeded, so a concurrent builder never sees half a file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp{out.suffix}")
    log = run_nvcc(cmd_for(tmp), tmp, what)
    os.replace(tmp, out)
    return out, log

"""The committed loop listings of the ceilings microbenchmarks the issue model runs
(``reports/sass/ceilings/*_sm_90a.sass``): one function's loop after another, as cuobjdump
prints them, from the ceilings cubin the venv's nvcc builds (no GPU)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from flashprof.analysis.gap.controls import main_loop, parse
from flashprof.analysis.gap.loops import listing_lines


def write_listing(path: Path, title: str, command: str, loops_of: Callable[[str], list[tuple[str, str]]]) -> Path:
    """Build the ceilings cubin (sm_90a, the venv's nvcc) and write, per function, the loops
    ``loops_of(function)`` names: ``(listing name, marker)`` pairs, each loop as
    ``controls.main_loop`` finds it around its marker, under a two-line header: ``title`` and
    the command that wrote it with nvcc's version."""
    from flashprof.kernels import ceilings
    from flashprof.kernels.sass.static import dump_sass
    from flashprof.kernels.toolchain import find_toolchain

    per_fn = parse(dump_sass(ceilings.build("sm_90a", cubin=True)))
    lines = [f"# {title}", f"# from: {command} (nvcc {find_toolchain('nvcc').nvcc_version})"]
    for fn in sorted(per_fn):
        for name, marker in loops_of(fn):
            lo, hi = main_loop(per_fn[fn], marker)
            lines.append(f"Function : {name}")
            lines += listing_lines(per_fn[fn][lo:hi + 1])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def write_loops(path: Path, title: str, command: str, select: Callable[[str], bool], marker: str) -> Path:
    """The loop around ``marker`` of every function ``select`` keeps, under its own name."""
    return write_listing(path, title, command, lambda fn: [(fn, marker)] if select(fn) else [])

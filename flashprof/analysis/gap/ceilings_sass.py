"""The committed loop listings of the ceilings microbenchmarks the issue model runs
(``reports/sass/ceilings/*_sm_90a.sass``): one function's loop after another, as cuobjdump
prints them, from the ceilings cubin the venv's nvcc builds (no GPU)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from flashprof.analysis.gap.controls import main_loop, parse
from flashprof.analysis.gap.loops import listing_lines


def built_functions(title: str, command: str) -> tuple[dict, list[str]]:
    """The ceilings cubin's functions (sm_90a, the venv's nvcc) and a listing's two header lines:
    ``title`` and the command that writes it, with nvcc's version."""
    from flashprof.kernels import ceilings
    from flashprof.kernels.sass.static import dump_sass
    from flashprof.kernels.toolchain import find_toolchain

    per_fn = parse(dump_sass(ceilings.build("sm_90a", cubin=True)))
    return per_fn, [f"# {title}", f"# from: {command} (nvcc {find_toolchain('nvcc').nvcc_version})"]


def write_loops(path: Path, title: str, command: str, select: Callable[[str], bool], marker: str) -> Path:
    """Write the loop (``controls.main_loop`` around ``marker``) of every function ``select``
    keeps, under a two-line header: ``title`` and the command that wrote it with nvcc's version."""
    per_fn, lines = built_functions(title, command)
    for fn in sorted(f for f in per_fn if select(f)):
        lo, hi = main_loop(per_fn[fn], marker)
        lines.append(f"Function : {fn}")
        lines += listing_lines(per_fn[fn][lo:hi + 1])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path

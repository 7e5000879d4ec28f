"""``flashprof <verb>``: the one command (also ``python -m flashprof``).

Each verb is the ``main(argv)`` of one module, imported only when that verb runs, so
``flashprof --help`` and the CPU-only verbs never import torch. ``flashprof VERB --help``
is that module's own help. The Makefile's targets call these verbs.
"""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Verb:
    module: str           # the module whose main(argv) runs the verb
    summary: str          # one line for `flashprof --help`
    prefix: tuple = ()    # arguments put before the user's (a sub-command of that module)
    gpu: bool = False     # needs a CUDA GPU (listed so, for a reader on a CPU machine)


VERBS: dict[str, Verb] = {
    "setup-gpu": Verb("flashprof.profiling.setup_gpu", "make the GPU machine's venv over its CUDA torch (wheels, no registry)"),
    "doctor": Verb("flashprof.profiling.doctor", "what this machine has (GPU, clocks, ncu, counters, ncu_report) and what each verb lacks"),
    "build": Verb("flashprof.kernels.build", "build kernel variants as torch extensions", gpu=True),
    "profile": Verb("flashprof.profiling.profile", "gate, Nsight Compute over one launch, sidecar, summary, figures", gpu=True),
    "bench": Verb("flashprof.profiling.bench", "kernels 1-7 (or your target) against FA2 over the benchmark shapes", gpu=True),
    "tune": Verb("flashprof.profiling.tune", "auto-tune kernel 7 on this GPU", gpu=True),
    "ceilings": Verb("flashprof.profiling.ceilings_run", "measure this GPU's ceilings (microbenchmarks)", gpu=True),
    "session": Verb("flashprof.profiling.session", "everything a GPU machine is needed for, in one call", gpu=True),
    "sass": Verb("flashprof.kernels.sass.command", "registers, spills, smem and SASS of a variant (static build, no GPU)"),
    "summary": Verb("flashprof.analysis.__main__", "one record per launch of reports (table, json, csv)", ("summary",)),
    "compare": Verb("flashprof.analysis.__main__", "two reports side by side, with regressions", ("compare",)),
    "gap": Verb("flashprof.analysis.__main__", "the cross-GPU model: why the series reaches ~101 % of FA2 on a 3090, ~80 % on an A100", ("gap",)),
    "figures": Verb("flashprof.analysis.charts.driver", "draw every figure from a folder of reports"),
    "report": Verb("flashprof.analysis.page.command", "one self-contained HTML page of a folder of reports (send it)"),
    "notebook": Verb("flashprof.verbs", "open the stall-exploration notebook (Jupyter)"),
}
from flashprof.paths import NOTEBOOK  # noqa: E402


def usage() -> str:
    width = max(map(len, VERBS))
    lines = ["usage: flashprof <verb> [options]   (flashprof <verb> --help for a verb's options)", "", "verbs:"]
    for name, v in VERBS.items():
        lines.append(f"  {name:<{width}}  {v.summary}{'  [GPU]' if v.gpu else ''}")
    return "\n".join(lines)


def jupyter_command(path: Path, extra: list[str], euid: int | None = None) -> list[str]:
    """The Jupyter command line; as root (CI, the GPU machine) Jupyter refuses to start without
    --allow-root, so it is added there."""
    import importlib.util
    if importlib.util.find_spec("notebook") is None and importlib.util.find_spec("jupyter_server") is None:
        from flashprof.kernels.cli import FlashprofError
        raise FlashprofError("Jupyter is not installed in this Python: 'make setup' installs it (CPU venv); "
                             "on the GPU machine run 'make setup GPU=1 EXTRAS=notebook' (without a registry "
                             "add WHEELS=dir holding the wheels of jupyter and its dependencies)")
    euid = os.geteuid() if euid is None and hasattr(os, "geteuid") else euid
    root = ["--allow-root"] if euid == 0 and "--allow-root" not in extra else []
    return [sys.executable, "-m", "jupyter", "notebook", *root, *extra, str(path)]


def notebook(argv: list[str]) -> int:
    from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli

    p = ArgumentParser(prog="flashprof notebook", description="open the stall-exploration notebook "
                       "(flashprof/analysis/explore_stalls.ipynb) in Jupyter; further options go to Jupyter")
    p.add_argument("--path", type=Path, default=NOTEBOOK, help="the notebook (default: %(default)s)")
    args, extra = p.parse_known_args(argv)

    def body() -> int:
        if not args.path.is_file():
            raise FlashprofError(f"no notebook at {args.path}")
        try:
            return subprocess.call(jupyter_command(args.path, extra))
        except OSError as e:
            raise FlashprofError(f"cannot start Jupyter: {e.strerror}") from None

    return run_cli("notebook", body)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] == "--version":
        from flashprof import __version__
        print(f"flashprof {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    verb = VERBS.get(name)
    if verb is None:
        print(f"flashprof: error: unknown verb {name!r}; verbs: {', '.join(VERBS)} (see flashprof --help)",
              file=sys.stderr)
        return 2
    if name == "notebook":
        return notebook(rest)
    module = importlib.import_module(verb.module)
    return module.main([*verb.prefix, *rest])


if __name__ == "__main__":
    sys.exit(main())

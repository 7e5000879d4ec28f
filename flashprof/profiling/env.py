"""Facts about the machine a measurement ran on: GPU, driver, clocks, versions, git revision.
Everything here goes into the JSON sidecars next to reports and CSVs."""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import subprocess
from pathlib import Path

from flashprof.kernels.common import write_atomic

from flashprof.kernels.cli import FlashprofError

from flashprof.paths import PACKAGE, ROOT  # noqa: E402


def run_command(cmd: list[str], timeout: float = 20) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def git_info(checkout: Path | None = None) -> dict:
    """The git revision of the flashprof checkout whose code runs: ``git rev-parse HEAD`` and
    whether tracked files differ from it; both null with a ``reason`` otherwise (an
    installed package, no git, not a repository). ``checkout``: for tests."""
    if checkout is None:
        checkout = PACKAGE.parent  # the code's own checkout, wherever the work folders are
        if not ((checkout / "pyproject.toml").is_file() and (checkout / "flashprof" / "paths.py").is_file()):
            return {"revision": None, "dirty": None,
                    "reason": "not run from a source checkout (an installed flashprof)"}
    if shutil.which("git") is None:
        return {"revision": None, "dirty": None, "reason": "git is not installed"}
    rev = run_command(["git", "-C", str(checkout), "rev-parse", "--verify", "HEAD"])
    if not rev:
        return {"revision": None, "dirty": None, "reason": f"{checkout} is not a git repository with a commit"}
    dirty = bool(run_command(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"]))
    return {"revision": rev, "dirty": dirty}


def require_gpu():
    """Import torch and make sure a CUDA GPU is visible; returns torch."""
    try:
        import torch
    except ImportError:
        raise FlashprofError("no CUDA GPU usable: torch is not installed (on a GPU machine: "
                             "make setup GPU=1; make doctor says what is missing)") from None
    if not torch.cuda.is_available():
        raise FlashprofError("no CUDA GPU is visible (torch.cuda.is_available() is False); "
                             "run this on a machine with an NVIDIA GPU (make doctor says what it sees)")
    return torch


def smi_clocks() -> dict:
    q = "clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,temperature.gpu,driver_version"
    out = run_command(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"])
    if not out:
        return {}
    vals = [v.strip() for v in out.splitlines()[0].split(",")]
    keys = ["sm_mhz", "max_sm_mhz", "mem_mhz", "max_mem_mhz", "power_w", "temp_c", "driver"]
    return dict(zip(keys, vals))


def gpu_info() -> dict:
    torch = require_gpu()
    from flashprof.kernels.gpus import slug_of

    p = torch.cuda.get_device_properties(0)
    name = torch.cuda.get_device_name(0)
    info = {
        "name": name,
        "slug": slug_of(name),
        "compute_capability": f"{p.major}.{p.minor}",
        "sm_count": p.multi_processor_count,
        "memory_bytes": p.total_memory,
        "l2_bytes": getattr(p, "L2_cache_size", None),
    }
    clocks = smi_clocks()
    info["driver"] = clocks.pop("driver", None)
    return info


def software() -> dict:
    import torch

    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": ".".join(map(str, __import__("sys").version_info[:3])),
    }


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def write_json_atomic(path: Path, data: dict) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def check_writable(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FlashprofError(f"cannot create {directory}: {e.strerror}") from None
    if not os.access(directory, os.W_OK):
        raise FlashprofError(f"{directory} is not writable")


def which(tool: str) -> str | None:
    return shutil.which(tool)

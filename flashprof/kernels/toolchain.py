"""Where the CUDA compiler tools are.

Input: the environment. Output: a ``Toolchain`` naming nvcc, ptxas, cuobjdump, nvdisasm
and the CUDA include directories, or a ``ToolchainError`` that says what is missing.

Order of search, first hit per tool wins:
  1. ``$FLASHPROF_CUDA_HOME`` (a CUDA root with ``bin/``),
  2. the NVIDIA PyPI wheels in the running interpreter's site-packages
     (``cuda-toolkit[nvcc,...]`` unpacks a CUDA root at ``site-packages/nvidia/cu13``),
  3. ``$PATH``, then ``/usr/local/cuda``.
The wheels come before ``$PATH`` so that a ``make setup`` venv always disassembles with
the pinned tools, whatever CUDA the machine happens to have: committed SASS data must
be reproducible bit for bit.
"""
from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from flashprof.kernels.cli import FlashprofError

TOOLS = ("nvcc", "ptxas", "cuobjdump", "nvdisasm")
ENV_HOME = "FLASHPROF_CUDA_HOME"
HOW_TO_GET = ("run `make setup` (it installs the cuda-toolkit wheels into .venv) and use "
              ".venv/bin/python, or point FLASHPROF_CUDA_HOME at a CUDA root")


class ToolchainError(FlashprofError, RuntimeError):
    """A CUDA tool that a static build needs cannot be found or does not run."""


@dataclass(frozen=True)
class Toolchain:
    tools: dict[str, Path]
    include_dirs: tuple[Path, ...]
    origin: dict[str, str] = field(default_factory=dict)  # tool -> "env" | "wheel" | "path"

    def path(self, name: str) -> Path:
        """Path of one tool (nvcc, ptxas, cuobjdump, nvdisasm)."""
        return self.require(name).tools[name]

    def require(self, *names: str) -> "Toolchain":
        missing = [n for n in names if n not in self.tools]
        if missing:
            raise ToolchainError(
                f"CUDA tool(s) not found: {', '.join(missing)} (searched "
                f"${ENV_HOME}, the cuda-toolkit wheels of {sys.executable}, $PATH, "
                f"/usr/local/cuda); {HOW_TO_GET}")
        return self

    @property
    def nvcc_version(self) -> str:
        return _tool_version(str(self.path("nvcc")))

    def describe(self) -> str:
        lines = [f"{n:10s} {self.tools.get(n, '-')}  ({self.origin.get(n, 'missing')})"
                 for n in TOOLS]
        lines.append("include    " + os.pathsep.join(map(str, self.include_dirs)))
        return "\n".join(lines)


@functools.lru_cache(maxsize=None)
def _tool_version(exe: str) -> str:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise ToolchainError(f"{exe} --version failed ({e}); {HOW_TO_GET}") from None
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown"


def _site_dirs() -> list[Path]:
    dirs: list[str] = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # some embedded interpreters lack it
        pass
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    seen: list[Path] = []
    for d in dirs:
        p = Path(d)
        if p.is_dir() and p not in seen:
            seen.append(p)
    return seen


def wheel_roots() -> list[Path]:
    """CUDA roots unpacked by NVIDIA's wheels (newest major first)."""
    roots: list[Path] = []
    for sp in _site_dirs():
        nv = sp / "nvidia"
        # CUDA 13 wheels: one shared root nvidia/cu13/{bin,include,lib,nvvm}
        for cu in sorted(nv.glob("cu[0-9]*"), reverse=True):
            if (cu / "bin").is_dir():
                roots.append(cu)
        # CUDA 12 wheels: one root per component, e.g. nvidia/cuda_nvcc/bin
        for comp in sorted(nv.glob("cuda_*")):
            if (comp / "bin").is_dir() or (comp / "include").is_dir():
                roots.append(comp)
    return roots


def _include_dirs(root: Path) -> list[Path]:
    cands = [root / "include", root / "include" / "cccl",
             root / "targets" / "x86_64-linux" / "include",
             root / "targets" / "sbsa-linux" / "include"]
    return [c for c in cands if (c / "cuda_fp16.h").exists() or (c / "cuda").is_dir()]


def _exe(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


@functools.lru_cache(maxsize=None)
def _find(env_home: str | None, path_env: str) -> Toolchain:
    candidates: list[tuple[str, Path]] = []
    if env_home:
        candidates.append(("env", Path(env_home)))
    candidates += [("wheel", r) for r in wheel_roots()]

    tools: dict[str, Path] = {}
    origin: dict[str, str] = {}
    includes: list[Path] = []
    for kind, root in candidates:
        for t in TOOLS:
            if t not in tools and _exe(root / "bin" / t):
                tools[t], origin[t] = root / "bin" / t, kind
        includes += [d for d in _include_dirs(root) if d not in includes]

    for t in TOOLS:
        if t in tools:
            continue
        hit = shutil.which(t, path=path_env)
        if hit:
            tools[t], origin[t] = Path(hit), "path"
        elif _exe(Path("/usr/local/cuda/bin") / t):
            tools[t], origin[t] = Path("/usr/local/cuda/bin") / t, "path"

    # Headers for a PATH nvcc (often a wrapper script, so its root cannot be derived):
    # the conventional roots, only when no env/wheel root supplied headers; mixing the
    # headers of two CUDA versions is worse than finding none.
    if not includes:
        for root in (Path("/usr/local/cuda"),
                     *sorted(Path("/usr/local").glob("cuda-*"), reverse=True)):
            includes += [d for d in _include_dirs(root) if d not in includes]
    unique: dict[Path, Path] = {}
    for d in includes:
        unique.setdefault(d.resolve(), d)  # /usr/local/cuda/include == targets/.../include
    includes = list(unique.values())
    return Toolchain(tools=tools, include_dirs=tuple(includes), origin=origin)


def find_toolchain(*required: str) -> Toolchain:
    """The toolchain; raises ToolchainError if any of ``required`` is missing."""
    tc = _find(os.environ.get(ENV_HOME) or None, os.environ.get("PATH", os.defpath))
    return tc.require(*required) if required else tc


if __name__ == "__main__":
    print(find_toolchain().describe())

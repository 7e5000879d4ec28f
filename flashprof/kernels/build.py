"""Build kernel variants as torch extensions (torch.utils.cpp_extension + ninja).

Input: KernelConfig(s). Output: an importable extension module per configuration, built
for the visible GPU's own architecture with line info, cached under build/ext/<slug>/.
`flashprof build 6` (or `all`, or several ids) builds in parallel processes.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli, doc_summary
from flashprof.kernels.config import KERNEL_IDS, KernelConfig, variant

from flashprof.paths import BUILD, CSRC  # noqa: E402
BUILD_ROOT = BUILD / "ext"
SOURCES = [CSRC / "flash_fwd.cu", CSRC / "torch_binding.cpp"]


class ExtensionBuildError(FlashprofError, RuntimeError):
    """The torch extension could not be built (no torch/CUDA, compiler error...); the
    static nvcc builds raise flashprof.kernels.nvcc.BuildError instead."""


def _arch_list() -> str:
    """Compile for the visible GPU's own architecture unless TORCH_CUDA_ARCH_LIST says otherwise."""
    env = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if env:
        return env
    try:
        import torch
    except ImportError:
        raise ExtensionBuildError("torch is not installed: building a kernel needs torch with CUDA "
                         "(the 'gpu' extra) on a machine with an NVIDIA GPU") from None
    if not torch.cuda.is_available():
        raise ExtensionBuildError("no CUDA GPU visible: set TORCH_CUDA_ARCH_LIST (e.g. 9.0) to build anyway")
    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


def _ninja_on_path() -> None:
    """torch runs `ninja` from PATH; a venv's pip-installed ninja is not there unless activated."""
    if shutil.which("ninja"):
        return
    try:
        import ninja  # PyPI's ninja keeps its binary in ninja.BIN_DIR
    except ImportError:
        return  # torch then says that ninja is missing
    if getattr(ninja, "BIN_DIR", None):
        os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")


def arch_list_for(cfg: KernelConfig) -> str:
    """TORCH_CUDA_ARCH_LIST for ``cfg``: the GPU's own arch; "9.0a" for a wgmma config (only a
    Hopper GPU can run one; elsewhere it is refused here rather than at launch)."""
    arch = _arch_list()
    if not cfg.wgmma:
        return arch
    archs = {a.strip() for a in arch.replace(";", " ").split()}
    if archs - {"9.0", "9.0a"}:
        raise ExtensionBuildError(f"{cfg.slug} uses wgmma, which only Hopper (compute capability 9.0) "
                                  f"runs; asked to build for {arch}")
    return "9.0a"


def cuda_flags(cfg: KernelConfig) -> list[str]:
    return ["-O3", "-lineinfo", "-Xptxas=-warn-spills", *cfg.nvcc_flags()]


def build(cfg: KernelConfig, verbose: bool = False):
    """Build (or load from cache) the extension for ``cfg`` and return the module."""
    try:
        import torch  # noqa: F401
        from torch.utils.cpp_extension import load
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ExtensionBuildError(f"torch with CUDA is needed to build extensions ({e}); "
                         "install the 'gpu' extra") from None
    os.environ["TORCH_CUDA_ARCH_LIST"] = arch_list_for(cfg)
    _ninja_on_path()
    build_dir = BUILD_ROOT / cfg.slug
    build_dir.mkdir(parents=True, exist_ok=True)
    try:
        module = load(
            name=cfg.module_name,
            sources=[str(s) for s in SOURCES],
            extra_cflags=["-O3", *cfg.nvcc_flags()],
            extra_cuda_cflags=cuda_flags(cfg),
            extra_include_paths=[str(CSRC)],
            build_directory=str(build_dir),
            verbose=verbose,
        )
    except Exception as e:  # torch raises RuntimeError/SubprocessError with the compiler log
        raise ExtensionBuildError(f"building {cfg.slug} failed: {str(e).strip().splitlines()[-1]}") from e
    built = dict(module.config())
    expected = {k: v for k, v in cfg.to_dict().items() if k != "fault"}
    mismatch = {k: (built.get(k), v) for k, v in expected.items() if built.get(k) != v}
    if mismatch:
        raise ExtensionBuildError(f"module {cfg.module_name} does not match its config: {mismatch}")
    return module


def _build_in_child(cfg_dict: dict) -> tuple[str, float]:
    t0 = time.perf_counter()
    cfg = KernelConfig.from_dict(cfg_dict)
    build(cfg)
    return cfg.slug, time.perf_counter() - t0


def build_many(cfgs: list[KernelConfig], jobs: int | None = None, progress=None) -> dict[str, float]:
    """Build several configs in parallel processes; returns slug -> seconds.

    Each child compiles one extension (ninja inside it uses MAX_JOBS threads), so the
    parent only imports cached modules afterwards.
    """
    cfgs = list(dict.fromkeys(cfgs))
    jobs = jobs or max(1, min(len(cfgs), (os.cpu_count() or 2) // 2))
    os.environ.setdefault("MAX_JOBS", "2")
    _arch_list()  # no torch / no GPU: one clear error before any child starts
    times: dict[str, float] = {}
    errors: list[str] = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futs = {pool.submit(_build_in_child, c.to_dict()): c for c in cfgs}
        for i, fut in enumerate(as_completed(futs), 1):
            cfg = futs[fut]
            try:
                slug, secs = fut.result()
                times[slug] = secs
                msg = f"built {cfg.slug} in {secs:.1f}s"
            except Exception as e:  # noqa: BLE001 - reported per config below
                errors.append(f"{cfg.slug}: {e}")
                msg = f"FAILED {cfg.slug}: {e}"
            if progress:
                progress(i, len(cfgs), msg)
    if errors:
        raise ExtensionBuildError("; ".join(errors))
    return times


def _progress(i: int, n: int, msg: str) -> None:
    print(f"[{i}/{n}] {msg}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="flashprof build", description=doc_summary(__doc__))
    p.add_argument("kernels", nargs="*", default=["all"], help="1-7 or 'all'")
    p.add_argument("--jobs", type=int, default=None, help="parallel builds (default: half the CPU cores, at most one per config)")
    args = p.parse_args(argv)
    return run_cli("build", lambda: _build_cli(args.kernels, args.jobs))


def _build_cli(kernels: list[str], jobs: int | None) -> int:
    ids = list(KERNEL_IDS) if "all" in kernels else kernels
    cfgs = [variant(k, gpu=local_gpu_slug()) for k in ids]
    t0 = time.perf_counter()
    build_many(cfgs, jobs=jobs, progress=_progress)
    print(f"{len(cfgs)} variant(s) ready in {time.perf_counter() - t0:.1f}s")
    return 0


def local_gpu_slug() -> str | None:
    """Slug of the GPU torch sees ('h200'), or None without torch or a GPU."""
    try:
        import torch

        if torch.cuda.is_available():
            from flashprof.kernels.config import gpu_slug

            return gpu_slug(torch.cuda.get_device_name())
    except ImportError:
        pass
    return None


if __name__ == "__main__":
    sys.exit(main())

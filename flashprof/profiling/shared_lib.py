"""A kernel variant as a plain shared library, called through ctypes (the tuner's way to
time hundreds of configs without building a torch extension for each).

Input: a ``KernelConfig`` and an arch. Output: ``<slug>.so`` exposing ``flashprof_fwd_c``
(kernels/csrc/flash_fwd.cu), built by the nvcc of kernels/toolchain.py through
kernels/nvcc.py, and ``SharedLibKernel``, a ``fn(q, k, v, out=None)`` over it.
"""
from __future__ import annotations

import ctypes
from pathlib import Path

from flashprof.kernels.config import KernelConfig
from flashprof.paths import CSRC
from flashprof.kernels.nvcc import BuildError, arch_flags, build_file, link_flags, nvcc_path

from flashprof.kernels.cli import FlashprofError

SHARED_FLAGS = ("-shared", "-Xcompiler", "-fPIC", "-O3", "-std=c++17", "-lineinfo")


def shared_lib_command(cfg: KernelConfig, arch: str, out: Path) -> list[str]:
    nvcc = nvcc_path()
    return [nvcc, *SHARED_FLAGS, *arch_flags(arch), *cfg.nvcc_flags(), *link_flags(nvcc),
            str(CSRC / "flash_fwd.cu"), "-o", str(out)]


def build_shared_lib(cfg: KernelConfig, arch: str, out_dir: Path) -> Path:
    """nvcc -> a plain .so exposing flashprof_fwd_c (reused when it exists)."""
    target = cfg.target_arch(arch)
    if target is None:
        raise FlashprofError(f"{cfg.slug} cannot run on {arch}: wgmma configs are sm_90a (Hopper) only")
    arch = target
    out = out_dir / f"{cfg.slug}.so"
    if out.exists():
        return out
    try:
        return build_file(lambda tmp: shared_lib_command(cfg, arch, tmp), out, f"{cfg.slug} ({arch})")[0]
    except BuildError as e:  # one line for the tuner's log: the status and the first error
        head, *errors = str(e).splitlines()
        raise FlashprofError(f"{head.rstrip(':')}: {errors[0] if errors else 'no output'}") from None

class SharedLibKernel:
    """fn(q, k, v, out=None) over a variant loaded with ctypes."""

    def __init__(self, path: Path, cfg: KernelConfig):
        self.cfg = cfg
        self.lib = ctypes.CDLL(str(path))
        f = self.lib.flashprof_fwd_c
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 4 + [ctypes.c_void_p]
        self.f = f

    def __call__(self, q, k, v, out=None):
        import torch

        from flashprof.kernels.api import check_inputs

        check_inputs(q, k, v, self.cfg, out)
        o = out if out is not None else torch.empty_like(q)
        b, s, h, _ = q.shape
        err = self.f(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), b, s, h,
                     0 if q.dtype == torch.float16 else 1, torch.cuda.current_stream().cuda_stream)
        if err:
            raise FlashprofError(f"{self.cfg.slug}: launch failed with cudaError {err}")
        return o

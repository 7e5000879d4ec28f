"""Python face of the kernels: load variant N, call it on (batch, seq, heads, 128) tensors.

Inputs are checked here first, so a wrong dtype, device, layout, head dim or a sequence
length that is not a multiple of the tile raises a clear ``InputError`` in Python rather
than reaching the launcher (which checks again, as the last line of defence).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flashprof.kernels.cli import FlashprofError
from flashprof.kernels.config import Dispatch, KernelConfig, dispatch, variant_origin

DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


class InputError(FlashprofError, ValueError):
    """Arguments a kernel variant cannot run on."""


def check_inputs(q: Any, k: Any, v: Any, cfg: KernelConfig, out: Any = None) -> None:
    """Validate torch tensors (duck-typed: shape, dtype, device, is_contiguous)."""
    for name, t in (("q", q), ("k", k), ("v", v)) + ((("out", out),) if out is not None else ()):
        shape = tuple(getattr(t, "shape", ()))
        if len(shape) != 4:
            raise InputError(f"{name} must be 4-D (batch, seq, heads, d_head); got shape {shape}")
        dt = str(getattr(t, "dtype", "")).replace("torch.", "")
        if dt not in DTYPES.values():
            raise InputError(f"{name} has dtype {dt}; kernels take float16 or bfloat16")
        if getattr(getattr(t, "device", None), "type", None) != "cuda":
            raise InputError(f"{name} is on {getattr(t, 'device', '?')}; kernels need CUDA tensors")
        if not t.is_contiguous():
            raise InputError(f"{name} must be contiguous in (batch, seq, heads, d_head) order")
        if shape[3] != cfg.d_head:
            raise InputError(f"{name} head dim is {shape[3]}; this kernel is built for d_head={cfg.d_head}")
        if shape != tuple(q.shape):
            raise InputError(f"{name} shape {shape} differs from q {tuple(q.shape)}")
        if str(t.dtype) != str(q.dtype):
            raise InputError(f"{name} dtype {t.dtype} differs from q {q.dtype}")
        if t.device != q.device:
            raise InputError(f"{name} is on {t.device}, q on {q.device}")
    b, s, h, _ = q.shape
    if min(b, s, h) <= 0:
        raise InputError(f"empty input shape {tuple(q.shape)}")
    mult = cfg.seq_multiple()
    if s % mult:
        raise InputError(f"seq={s} must be a multiple of {mult} (B_r={cfg.B_r}, B_c={cfg.B_c})")


@dataclass
class Kernel:
    """A built variant: ``kernel(q, k, v)`` returns o, ``kernel(q, k, v, out=o)`` writes o."""

    config: KernelConfig
    module: Any
    label: str = ""
    source: str = ""   # where the config came from: "tuned for h200 (kernels/tuned.json)", ...

    def __str__(self) -> str:
        return f"{self.label}: {self.config.slug} ({self.source})"

    def __call__(self, q, k, v, out=None):
        check_inputs(q, k, v, self.config, out)
        if out is None:
            import torch

            out = torch.empty_like(q)
        err = self.module.fwd(q, k, v, out)
        if err:
            raise RuntimeError(f"{self.label}: {err}")
        return out


@dataclass
class DispatchKernel:
    """Kernel 7 with a per-shape table (kernels/tuned.json buckets): each call runs the
    config dispatched for its (seq, dtype); ``choice(seq, dtype)`` says which, and
    ``str(kernel)`` lists the whole table. Every config is built when loaded."""

    table: Dispatch
    kernels: dict[str, Kernel]  # config slug -> built kernel
    label: str = ""
    source: str = ""

    def choice(self, seq: int, dtype: str = "fp16") -> KernelConfig:
        return self.table.pick(seq, dtype)

    def kernel_for(self, seq: int, dtype: str = "fp16") -> Kernel:
        return self.kernels[self.choice(seq, dtype).slug]

    @property
    def config(self) -> KernelConfig:
        """The default config (shapes without a bucket): what code without a shape sees."""
        return self.table.default

    def configs(self) -> list[KernelConfig]:
        return self.table.configs()

    def __str__(self) -> str:
        return f"{self.label}: {self.table.describe()} ({self.source})"

    def __call__(self, q, k, v, out=None):
        dt = str(getattr(q, "dtype", "")).replace("torch.", "")
        name = {v_: k_ for k_, v_ in DTYPES.items()}.get(dt, "fp16")
        shape = tuple(getattr(q, "shape", ()))
        if len(shape) != 4:
            raise InputError(f"q must be 4-D (batch, seq, heads, d_head); got shape {shape}")
        return self.kernel_for(int(shape[1]), name)(q, k, v, out=out)


def load(n: int | str | KernelConfig, gpu: str | None = None, seq: int | None = None,
         dtype: str | None = None) -> Kernel | DispatchKernel:
    """Build (cached) and return kernel ``n`` (1-7) or an explicit config.

    Kernel 7 is the config tuned for ``gpu`` (default: the GPU torch sees) when
    kernels/tuned.json has one, else the series' own; ``str(kernel)`` says which. When the
    tuned entry has per-S buckets, kernel 7 is a ``DispatchKernel`` that picks per call,
    unless ``seq`` is given: then the one config for that shape (and ``dtype``, default fp16).
    An explicit ``KernelConfig`` is used as given.
    """
    from flashprof.kernels.build import build, build_many, local_gpu_slug

    if isinstance(n, KernelConfig):
        return Kernel(n, build(n), n.slug, "explicit config")
    gpu = gpu or local_gpu_slug()
    table = dispatch(n, gpu)
    label = f"kernel{int(n)}"
    if seq is not None or not table.buckets:
        cfg = table.pick(seq, dtype)
        return Kernel(cfg, build(cfg), label, variant_origin(n, gpu, seq, dtype))
    cfgs = table.configs()
    if len(cfgs) > 1:
        build_many(cfgs)  # in parallel processes; the loads below import the cached modules
    kernels = {c.slug: Kernel(c, build(c), label, variant_origin(n, gpu)) for c in cfgs}
    return DispatchKernel(table, kernels, label, variant_origin(n, gpu))

"""The one record that defines a kernel variant.

Everything downstream reads a variant from here: the CUDA compile-time constants
(``defines()``), the extension module name, the launch geometry, the shared-memory
size, the FLOP count used by benchmarks and the analysis. Kernels 1-7 of the
"Flash Attention 2 from scratch" series are seven instances of ``KernelConfig``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from flashprof.kernels.cli import FlashprofError

TUNED_FILE = Path(__file__).with_name("tuned.json")

# Faults that can be compiled into a variant on purpose, so that tests can prove the
# correctness gate rejects a wrong kernel. Never used by kernels 1-7.
FAULTS = ("none", "skip_rescale", "drop_last_block")


class ConfigError(FlashprofError, ValueError):
    """A configuration that the kernel template cannot build."""


def _pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


@dataclass(frozen=True)
class KernelConfig:
    """One kernel variant. Each field reaches the CUDA code as one ``-D`` macro (``defines``)
    and the file names as one slug token (``slug``); the comment names both."""
    d_head: int = 128                     # head dimension; FP_D_HEAD, "d128"
    B_r: int = 64                         # query rows per CTA tile; FP_B_R, "br64"
    B_c: int = 64                         # key/value rows per KV block; FP_B_C, "bc64"
    n_warps: int = 4                      # warps per CTA (each owns B_r / n_warps rows); FP_N_WARPS, "w4"
    async_copy: bool = True               # cp.async global->shared copies; FP_ASYNC_COPY, "async"/"sync"
    eager_load_blocks: bool = False       # next K/V block loaded while this one computes; FP_EAGER, "eager"
    swizzled: bool = False                # XOR-swizzled shared-memory tiles; FP_SWIZZLED, "swz"
    Q_mma_load_K_fragments: int = 0       # Q k-fragments loaded per MMA step (0: all up front); FP_Q_FRAGS, "f<QKV>"
    K_mma_load_K_fragments: int = 0       # same for K; FP_K_FRAGS
    V_mma_load_K_fragments: int = 0       # same for V; FP_V_FRAGS
    mma_double_buffer_loads: bool = False  # ldmatrix of step i+1 issued before the MMAs of step i; FP_DBUF, "dbuf"
    optimized_softmax: bool = False       # FP32 softmax with fused scale/FFMA; FP_OPT_SOFTMAX, "optsm"
    fault: str = "none"                   # a deliberate bug for the correctness gate's tests; FP_FAULT

    def __post_init__(self) -> None:
        self.validate()

    # ----------------------------------------------------------------- rules
    def validate(self) -> None:
        def bad(msg: str) -> None:
            raise ConfigError(f"invalid kernel config ({self.slug_unchecked()}): {msg}")

        if self.d_head != 128:
            bad("only d_head=128 is implemented")
        if self.n_warps not in (4, 8):
            bad("n_warps must be 4 or 8")
        if self.B_r % (16 * self.n_warps):
            bad(f"B_r={self.B_r} must be a multiple of 16*n_warps={16 * self.n_warps} "
                "(each warp owns whole 16-row MMA tiles)")
        if self.B_c not in (16, 32, 64, 128):
            bad("B_c must be one of 16, 32, 64, 128")
        if self.B_r not in (64, 128, 256):
            bad("B_r must be one of 64, 128, 256")
        qk_steps = self.d_head // 16
        pv_steps = self.B_c // 16
        for name, val, steps in (
            ("Q_mma_load_K_fragments", self.Q_mma_load_K_fragments, qk_steps),
            ("K_mma_load_K_fragments", self.K_mma_load_K_fragments, qk_steps),
            ("V_mma_load_K_fragments", self.V_mma_load_K_fragments, pv_steps),
        ):
            if val != 0 and (val < 2 or not _pow2(val)):
                bad(f"{name}={val}: must be 0 (whole extent) or a power of two >= 2")
            if val > steps:
                bad(f"{name}={val} exceeds the {steps} k-steps of that product")
        if self.Q_mma_load_K_fragments not in (0, self.K_mma_load_K_fragments):
            bad("Q_mma_load_K_fragments must be 0 (Q resident) or equal K_mma_load_K_fragments")
        if self.eager_load_blocks and not self.async_copy:
            bad("eager_load_blocks needs async_copy")
        if self.fault not in FAULTS:
            bad(f"fault must be one of {FAULTS}")
        if self.smem_bytes > 227 * 1024:
            bad(f"needs {self.smem_bytes} B of shared memory per block (> 227 KiB)")

    # ------------------------------------------------------------- geometry
    @property
    def threads(self) -> int:
        return 32 * self.n_warps

    @property
    def smem_bytes(self) -> int:
        return (self.B_r + 2 * self.B_c) * self.d_head * 2

    @property
    def q_resident(self) -> bool:
        return self.Q_mma_load_K_fragments == 0

    def grid(self, batch: int, seq: int, heads: int) -> tuple[int, int, int]:
        return (seq // self.B_r, heads, batch)

    def seq_multiple(self) -> int:
        """Sequence lengths must be a multiple of this."""
        return max(self.B_r, self.B_c)

    @staticmethod
    def flops(batch: int, seq: int, heads: int, d_head: int = 128) -> int:
        """FLOPs of the two matmuls (the seed's count): 4*B*H*S^2*d."""
        return 4 * batch * heads * seq * seq * d_head

    # ---------------------------------------------------------------- names
    def slug_unchecked(self) -> str:
        parts = [f"d{self.d_head}", f"br{self.B_r}", f"bc{self.B_c}", f"w{self.n_warps}"]
        parts.append("async" if self.async_copy else "sync")
        if self.eager_load_blocks:
            parts.append("eager")
        if self.swizzled:
            parts.append("swz")
        parts.append(f"f{self.Q_mma_load_K_fragments}{self.K_mma_load_K_fragments}"
                     f"{self.V_mma_load_K_fragments}")
        if self.mma_double_buffer_loads:
            parts.append("dbuf")
        if self.optimized_softmax:
            parts.append("optsm")
        if self.fault != "none":
            parts.append(f"FAULT-{self.fault}")
        return "_".join(parts)

    @property
    def slug(self) -> str:
        """A readable, unique, filesystem-safe name for this configuration."""
        return self.slug_unchecked()

    @property
    def module_name(self) -> str:
        """Python extension module name; unique per configuration."""
        h = hashlib.sha1(self.slug.encode()).hexdigest()[:8]
        return f"flashprof_{h}"

    def defines(self) -> dict[str, int]:
        """Compile-time constants handed to nvcc as -D macros (see csrc/config.cuh)."""
        return {
            "FP_D_HEAD": self.d_head,
            "FP_B_R": self.B_r,
            "FP_B_C": self.B_c,
            "FP_N_WARPS": self.n_warps,
            "FP_ASYNC_COPY": int(self.async_copy),
            "FP_EAGER": int(self.eager_load_blocks),
            "FP_SWIZZLED": int(self.swizzled),
            "FP_Q_FRAGS": self.Q_mma_load_K_fragments,
            "FP_K_FRAGS": self.K_mma_load_K_fragments,
            "FP_V_FRAGS": self.V_mma_load_K_fragments,
            "FP_DBUF": int(self.mma_double_buffer_loads),
            "FP_OPT_SOFTMAX": int(self.optimized_softmax),
            "FP_FAULT": FAULTS.index(self.fault),
        }

    def nvcc_flags(self) -> list[str]:
        return [f"-D{k}={v}" for k, v in self.defines().items()]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "KernelConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"unknown config fields: {sorted(unknown)}")
        return cls(**d)


_ON = dict(d_head=128, B_r=64, B_c=64, n_warps=4, async_copy=True)

#: Kernels 1-6 exactly as the series defines them, and kernel 7's fallback (the seed's
#: RTX 3090 winner). Kernel 7 on a GPU with a tuned entry uses that entry instead.
VARIANTS: dict[int, KernelConfig] = {
    1: KernelConfig(**_ON),
    2: KernelConfig(**_ON, swizzled=True),
    3: KernelConfig(**_ON, swizzled=True, eager_load_blocks=True),
    4: KernelConfig(**_ON, swizzled=True, eager_load_blocks=True,
                    Q_mma_load_K_fragments=2, K_mma_load_K_fragments=2, V_mma_load_K_fragments=2),
    5: KernelConfig(**_ON, swizzled=True, eager_load_blocks=True,
                    Q_mma_load_K_fragments=2, K_mma_load_K_fragments=2, V_mma_load_K_fragments=2,
                    mma_double_buffer_loads=True),
    6: KernelConfig(**_ON, swizzled=True, eager_load_blocks=True,
                    Q_mma_load_K_fragments=2, K_mma_load_K_fragments=2, V_mma_load_K_fragments=2,
                    mma_double_buffer_loads=True, optimized_softmax=True),
    7: KernelConfig(**_ON, swizzled=True, eager_load_blocks=True,
                    Q_mma_load_K_fragments=0, K_mma_load_K_fragments=2, V_mma_load_K_fragments=0,
                    mma_double_buffer_loads=True, optimized_softmax=True),
}

TITLES = {
    1: "base",
    2: "swizzling",
    3: "eager K/V loads",
    4: "fragment interleaving",
    5: "register double buffering",
    6: "FP32 instruction fusion",
    7: "auto-tuned",
}

KERNEL_IDS = tuple(VARIANTS)
#: The references every kernel is compared with, as targets: "ref" = FlashAttention-2
#: (PyTorch SDPA flash backend), "cudnn" = cuDNN SDPA; profiling/reference.py runs them.
REFERENCE_IDS = ("ref", "cudnn")


def load_tuned(path: Path = TUNED_FILE) -> dict[str, KernelConfig]:
    """GPU slug -> tuned kernel-7 config, from the tuner's data file (may be absent)."""
    if not path.exists():
        return {}
    raw = json.loads(path.read_text())
    return {gpu: KernelConfig.from_dict(entry["config"]) for gpu, entry in raw.items()}


def variant(n: int | str, gpu: str | None = None) -> KernelConfig:
    """Config of kernel ``n`` (1-7). Kernel 7 uses the tuned entry for ``gpu`` if any."""
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise ConfigError(f"unknown kernel {n!r}: valid kernels are 1-7") from None
    if n not in VARIANTS:
        raise ConfigError(f"unknown kernel {n!r}: valid kernels are 1-7")
    if n == 7 and gpu is not None:
        tuned = load_tuned()
        if gpu in tuned:
            return tuned[gpu]
    return VARIANTS[n]


def variant_origin(n: int | str, gpu: str | None = None) -> str:
    """Where ``variant(n, gpu)`` comes from, in words."""
    variant(n, gpu)  # the same errors for a bad n
    n = int(n)
    if n == 7 and gpu is not None and gpu in load_tuned():
        return f"tuned for {gpu} ({TUNED_FILE.name})"
    if n == 7:
        why = f"{TUNED_FILE.name} has no entry for {gpu}" if gpu else "no GPU to pick a tuned one for"
        return f"the series' RTX 3090 config ({why})"
    return "the series' config"


def gpu_slug(name: str) -> str:
    """'NVIDIA H200' -> 'h200', 'NVIDIA GeForce RTX 3090' -> 'rtx3090', 'NVIDIA A100-SXM4-80GB' -> 'a100'."""
    s = name.lower().replace("nvidia", "").replace("geforce", "").strip()
    s = s.replace(" ", "")
    for sep in ("-", "_"):
        s = s.split(sep)[0]
    return "".join(ch for ch in s if ch.isalnum()) or "gpu"

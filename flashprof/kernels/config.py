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

from flashprof.kernels import gpus
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
    # Kernel-7-only template options (kernels 1-6 keep the defaults):
    persistent: bool = False              # one wave of CTAs loops over the Q tiles, prefetching the next
                                          # tile's Q and K_0 during the last KV block (warp-specialised:
                                          # the producer runs a tile ahead, under the epilogue too);
                                          # FP_PERSISTENT, "pers"
    min_blocks_per_sm: int = 0            # __launch_bounds__ minimum CTAs/SM (caps registers; 0: unset);
                                          # FP_MIN_BLOCKS, "mb<N>"
    wgmma: bool = False                   # Hopper warpgroup MMAs (sm_90a only) for both products, one
                                          # warpgroup per 64 query rows; FP_WGMMA, "wgmma"
    warp_specialized: bool = False        # wgmma + a producer warpgroup loading K/V with TMA into
                                          # kv_stages buffers (mbarriers, setmaxnreg); n_warps counts the
                                          # consumer warps; FP_WS, "ws<kv_stages>"
    kv_stages: int = 2                    # K/V buffers of the warp-specialised ring; FP_KV_STAGES
    intra_wg_overlap: bool = False        # softmax(S_j) under O += P_{j-1} V_{j-1} in one warpgroup
                                          # (FA3's pipelining); FP_OVERLAP, "ovl"
    pingpong: bool = False                # two consumer warpgroups take turns at the MMAs (named
                                          # barriers; FA3's ping-pong); FP_PINGPONG, "pp"

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
        if not isinstance(self.persistent, bool):
            bad(f"persistent must be a bool, got {self.persistent!r}")
        if self.persistent and not self.eager_load_blocks:
            bad("persistent needs eager_load_blocks (the next tile's Q and K_0 are issued where "
                "an eager variant issues K_{j+1})")
        if not isinstance(self.min_blocks_per_sm, int) or isinstance(self.min_blocks_per_sm, bool) \
                or not 0 <= self.min_blocks_per_sm <= 4:
            bad(f"min_blocks_per_sm={self.min_blocks_per_sm!r}: must be an int from 0 (unset) to 4")
        if self.min_blocks_per_sm and self.min_blocks_per_sm * self.n_warps > 16:
            bad(f"min_blocks_per_sm={self.min_blocks_per_sm} x {self.n_warps} warps would cap registers "
                "below 128 per thread (the O and S accumulators alone need more)")
        if self.min_blocks_per_sm and self.min_blocks_per_sm * (self.smem_bytes + 1024) > 228 * 1024:
            bad(f"min_blocks_per_sm={self.min_blocks_per_sm} CTAs of {self.smem_bytes} B shared memory "
                "do not fit in one SM's 228 KiB")
        if not isinstance(self.wgmma, bool):
            bad(f"wgmma must be a bool, got {self.wgmma!r}")
        if self.wgmma:
            if self.B_r != 16 * self.n_warps:
                bad(f"wgmma: B_r={self.B_r} must be 64 rows per warpgroup (16 x n_warps = {16 * self.n_warps})")
            if self.B_c not in (64, 128):
                bad("wgmma: B_c must be 64 or 128 (the N of S = Q K^T's m64nNk16)")
            if not (self.async_copy and self.eager_load_blocks):
                bad("wgmma: needs async_copy and eager_load_blocks (its one pipeline)")
            if self.persistent and not self.warp_specialized:
                bad("wgmma: the persistent form is the warp-specialised kernel's (warp_specialized)")
            if self.Q_mma_load_K_fragments or self.K_mma_load_K_fragments or self.V_mma_load_K_fragments \
                    or self.mma_double_buffer_loads:
                bad("wgmma: operands are read by the instruction from shared memory, so fragment "
                    "staging (f<QKV>, dbuf) does not apply: leave them 0/False")
        for name in ("warp_specialized", "intra_wg_overlap", "pingpong"):
            if not isinstance(getattr(self, name), bool):
                bad(f"{name} must be a bool, got {getattr(self, name)!r}")
        if not isinstance(self.kv_stages, int) or isinstance(self.kv_stages, bool):
            bad(f"kv_stages must be an int, got {self.kv_stages!r}")
        if self.warp_specialized:
            if not self.wgmma:
                bad("warp_specialized: needs wgmma (the TMA ring feeds warpgroup MMAs)")
            if not 2 <= self.kv_stages <= 4:
                bad(f"warp_specialized: kv_stages={self.kv_stages} must be 2 to 4")
        elif self.kv_stages != 2 or self.intra_wg_overlap or self.pingpong:
            bad("kv_stages, intra_wg_overlap and pingpong are options of warp_specialized")
        if self.pingpong and not (self.intra_wg_overlap and self.n_warps == 8):
            bad("pingpong: needs two consumer warpgroups (n_warps=8) and intra_wg_overlap (the turn "
                "is the window that issues S_j and P_{j-1} V_{j-1})")
        if self.smem_bytes > 227 * 1024:
            bad(f"needs {self.smem_bytes} B of shared memory per block (> 227 KiB)")

    # ------------------------------------------------------------- geometry
    @property
    def threads(self) -> int:
        """Threads per CTA: the MMA warps, and the producer warpgroup of a warp-specialised one."""
        return 32 * self.n_warps + (128 if self.warp_specialized else 0)

    @property
    def q_buffers(self) -> int:
        """Q tiles in shared memory: 2 for the persistent kernel (this tile's and the next's)."""
        return 2 if self.persistent else 1

    @property
    def smem_bytes(self) -> int:
        kv_buffers = self.kv_stages if self.warp_specialized else 1
        tiles = (self.q_buffers * self.B_r + 2 * kv_buffers * self.B_c) * self.d_head * 2
        # wgmma's swizzled tiles start on 1024-byte boundaries: room to align the base.
        return tiles + (1024 if self.wgmma else 0)

    def target_arch(self, arch: str) -> str | None:
        """The architecture to compile this config for when ``arch`` (sm_XY) is asked, or None
        when it cannot run there: wgmma configs exist only as sm_90a (Hopper's arch-specific
        instructions), everything else compiles for ``arch`` itself."""
        if not self.wgmma:
            return arch
        return "sm_90a" if arch in ("sm_90", "sm_90a") else None

    def n_tiles(self, batch: int, seq: int, heads: int) -> int:
        """Q tiles of B_r rows over all (batch, head) pairs."""
        return (seq // self.B_r) * heads * batch

    @property
    def q_resident(self) -> bool:
        return self.Q_mma_load_K_fragments == 0

    def grid(self, batch: int, seq: int, heads: int, wave: int | None = None) -> tuple[int, int, int]:
        """Launch grid. The persistent kernel launches min(tiles, wave) CTAs, where ``wave`` is
        SMs x resident CTAs per SM (the launcher asks the driver; pass it here to predict)."""
        if self.persistent:
            if wave is None:
                raise ConfigError(f"{self.slug}: a persistent grid depends on the GPU; pass wave=SMs*CTAs/SM")
            return (min(self.n_tiles(batch, seq, heads), wave), 1, 1)
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
        if self.persistent:
            parts.append("pers")
        if self.min_blocks_per_sm:
            parts.append(f"mb{self.min_blocks_per_sm}")
        if self.wgmma:
            parts.append("wgmma")
        if self.warp_specialized:
            parts.append(f"ws{self.kv_stages}")
        if self.intra_wg_overlap:
            parts.append("ovl")
        if self.pingpong:
            parts.append("pp")
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
        """Compile-time constants handed to nvcc as -D macros (see csrc/config.cuh). The
        warp-specialised options appear only on a warp-specialised config (config.cuh has the
        same defaults), so every earlier config keeps its exact command line."""
        d = {
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
            "FP_PERSISTENT": int(self.persistent),
            "FP_MIN_BLOCKS": self.min_blocks_per_sm,
            "FP_WGMMA": int(self.wgmma),
        }
        if self.warp_specialized:
            d.update(FP_WS=1, FP_KV_STAGES=self.kv_stages, FP_OVERLAP=int(self.intra_wg_overlap),
                     FP_PINGPONG=int(self.pingpong))
        return d

    def nvcc_flags(self) -> list[str]:
        return [f"-D{k}={v}" for k, v in self.defines().items()]

    def to_dict(self) -> dict[str, Any]:
        """All fields; the kernel-7-only options only when set, so that configs written before
        they existed (tuned.json, autotune.csv, sidecars) and configs without them read alike."""
        d = dataclasses.asdict(self)
        for name in _OPTIONAL_FIELDS:
            if d[name] == _FIELD_DEFAULTS[name]:
                del d[name]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "KernelConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"unknown config fields: {sorted(unknown)}")
        return cls(**d)


_OPTIONAL_FIELDS = ("persistent", "min_blocks_per_sm", "wgmma", "warp_specialized", "kv_stages",
                    "intra_wg_overlap", "pingpong")
_FIELD_DEFAULTS = {f.name: f.default for f in fields(KernelConfig)}

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
#: Kernel 7's mma.sync form, a target of its own: on a GPU whose tuned kernel 7 is the
#: Hopper wgmma config, "7mma" is the best mma.sync config of the same sweep (tuned.json's
#: ``mma_sync`` entry for that GPU), the code path the series' A100 and RTX 3090 kernels
#: share; without such an entry it is the series' kernel 7 (``VARIANTS[7]``).
MMA_SYNC_KEY = "7mma"
MMA_SYNC_TITLE = "auto-tuned, mma.sync path"
#: The references every kernel is compared with, as targets: "ref" = FlashAttention-2
#: (PyTorch SDPA flash backend), "cudnn" = cuDNN SDPA; profiling/reference.py runs them.
REFERENCE_IDS = ("ref", "cudnn")


DISPATCH_DTYPES = ("fp16", "bf16", "any")


@dataclass(frozen=True)
class Bucket:
    """Kernel 7's choice for sequence lengths up to ``max_seq`` in ``dtype`` ("any": both)."""
    max_seq: int
    dtype: str
    config: KernelConfig

    def __post_init__(self) -> None:
        if not isinstance(self.max_seq, int) or isinstance(self.max_seq, bool) or self.max_seq <= 0:
            raise ConfigError(f"bucket max_seq={self.max_seq!r}: must be a positive int")
        if self.dtype not in DISPATCH_DTYPES:
            raise ConfigError(f"bucket dtype {self.dtype!r}: must be one of {DISPATCH_DTYPES}")

    def matches(self, seq: int, dtype: str) -> bool:
        return seq <= self.max_seq and self.dtype in (dtype, "any") and seq % self.config.seq_multiple() == 0

    @property
    def label(self) -> str:
        return f"S<={self.max_seq} {self.dtype}"


@dataclass(frozen=True)
class Dispatch:
    """Kernel 7 per shape: the first bucket (smallest max_seq; an exact dtype before "any")
    that holds (seq, dtype) and whose tile divides seq, else ``default``. Like FlashAttention's
    launch heuristics, the choice is made per call from the shape; FlashAttention picks by
    head dim and GPU, this table by sequence length and dtype, from measurements."""
    default: KernelConfig
    buckets: tuple[Bucket, ...] = ()

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.buckets, key=lambda b: (b.max_seq, b.dtype == "any", b.dtype)))
        seen = set()
        for b in ordered:
            if (b.max_seq, b.dtype) in seen:
                raise ConfigError(f"two kernel-7 buckets for {b.label}")
            seen.add((b.max_seq, b.dtype))
        object.__setattr__(self, "buckets", ordered)

    def bucket_for(self, seq: int, dtype: str) -> Bucket | None:
        for b in self.buckets:
            if b.matches(seq, dtype):
                return b
        return None

    def pick(self, seq: int | None = None, dtype: str | None = None) -> KernelConfig:
        if seq is None:
            return self.default
        b = self.bucket_for(seq, dtype or "fp16")
        return b.config if b else self.default

    def why(self, seq: int, dtype: str) -> str:
        b = self.bucket_for(seq, dtype)
        return f"bucket {b.label}" if b else "default (all other shapes)"

    def configs(self) -> list[KernelConfig]:
        """Every config this table can dispatch to, the default first, each once."""
        return list(dict.fromkeys([self.default, *(b.config for b in self.buckets)]))

    def describe(self) -> str:
        if not self.buckets:
            return self.default.slug
        parts = [f"{b.label}: {b.config.slug}" for b in self.buckets]
        return "; ".join(parts + [f"otherwise: {self.default.slug}"])

    def to_dict(self) -> dict[str, Any]:
        return {"default": self.default.to_dict(),
                "buckets": [{"max_seq": b.max_seq, "dtype": b.dtype, "config": b.config.to_dict()}
                            for b in self.buckets]}


def _dispatch_from_entry(gpu: str, entry: dict) -> Dispatch:
    try:
        default = KernelConfig.from_dict(entry["config"])
        buckets = tuple(Bucket(int(b["max_seq"]), b.get("dtype", "any"), KernelConfig.from_dict(b["config"]))
                        for b in entry.get("buckets", ()))
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise ConfigError(f"{TUNED_FILE.name}, entry {gpu!r}: {e}") from None
        raise ConfigError(f"{TUNED_FILE.name}, entry {gpu!r}: malformed ({e!r})") from None
    return Dispatch(default, buckets)


def load_dispatch(path: Path | None = None) -> dict[str, Dispatch]:
    """GPU slug -> kernel 7's dispatch table, from the tuner's data file (may be absent;
    default ``TUNED_FILE``, looked up at call time so tests can point it elsewhere)."""
    path = path or TUNED_FILE
    if not path.exists():
        return {}
    raw = json.loads(path.read_text())
    return {gpu: _dispatch_from_entry(gpu, entry) for gpu, entry in raw.items()}


def load_tuned(path: Path | None = None) -> dict[str, KernelConfig]:
    """GPU slug -> tuned kernel-7 default config (all shapes without a bucket of their own)."""
    return {gpu: d.default for gpu, d in load_dispatch(path).items()}


def tuned_configs(path: Path | None = None) -> list[tuple[str, str, KernelConfig]]:
    """(gpu, "default" or the bucket label, config) for every config kernel 7 can dispatch to."""
    out = []
    for gpu, d in sorted(load_dispatch(path).items()):
        out.append((gpu, "default", d.default))
        out += [(gpu, b.label, b.config) for b in d.buckets]
    return out


def _check_kernel(n: int | str) -> int:
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise ConfigError(f"unknown kernel {n!r}: valid kernels are 1-7 and {MMA_SYNC_KEY}") from None
    if n not in VARIANTS:
        raise ConfigError(f"unknown kernel {n!r}: valid kernels are 1-7 and {MMA_SYNC_KEY}")
    return n


def mma_sync_entry(gpu: str | None, path: Path | None = None) -> dict | None:
    """tuned.json's ``mma_sync`` entry of ``gpu`` (None where it has none)."""
    path = path or TUNED_FILE
    if gpu is None or not path.exists():
        return None
    entry = json.loads(path.read_text()).get(gpu) or {}
    return entry.get("mma_sync") if isinstance(entry.get("mma_sync"), dict) else None


def mma_sync_variant(gpu: str | None = None, path: Path | None = None) -> KernelConfig:
    """Kernel 7's mma.sync config on ``gpu`` (see ``MMA_SYNC_KEY``)."""
    entry = mma_sync_entry(gpu, path)
    if entry is None:
        return VARIANTS[7]
    try:
        cfg = KernelConfig.from_dict(entry["config"])
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"{TUNED_FILE.name}, entry {gpu!r}, mma_sync: malformed ({e})") from None
    if cfg.wgmma:
        raise ConfigError(f"{TUNED_FILE.name}, entry {gpu!r}, mma_sync: {cfg.slug} is a wgmma config")
    return cfg


def dispatch(n: int | str, gpu: str | None = None) -> Dispatch:
    """Kernel ``n``'s dispatch table: kernels 1-6 (and 7 without a tuned entry) have one config;
    ``MMA_SYNC_KEY`` has one per GPU."""
    if str(n) == MMA_SYNC_KEY:
        return Dispatch(mma_sync_variant(gpu))
    n = _check_kernel(n)
    if n == 7 and gpu is not None:
        table = load_dispatch()
        if gpu in table:
            return table[gpu]
    return Dispatch(VARIANTS[n])


def variant(n: int | str, gpu: str | None = None, seq: int | None = None,
            dtype: str | None = None) -> KernelConfig:
    """Config of kernel ``n`` (1-7). Kernel 7 uses the tuned entry for ``gpu`` if any; with
    ``seq`` (and ``dtype``, default fp16) it is the config dispatched for that shape."""
    return dispatch(n, gpu).pick(seq, dtype)


def variant_origin(n: int | str, gpu: str | None = None, seq: int | None = None,
                   dtype: str | None = None) -> str:
    """Where ``variant(n, gpu, seq, dtype)`` comes from, in words."""
    table = dispatch(n, gpu)  # the same errors for a bad n
    if str(n) == MMA_SYNC_KEY:
        entry = mma_sync_entry(gpu)
        return (f"kernel 7's best mma.sync config for {gpu} ({TUNED_FILE.name}, {entry.get('source', 'mma_sync')})"
                if entry else "the series' kernel 7 (mma.sync)")
    n = int(n)
    if n == 7 and gpu is not None and gpu in load_dispatch():
        if seq is not None:
            return f"tuned for {gpu}, {table.why(seq, dtype or 'fp16')} ({TUNED_FILE.name})"
        if table.buckets:
            return f"tuned for {gpu} per S bucket ({TUNED_FILE.name})"
        return f"tuned for {gpu} ({TUNED_FILE.name})"
    if n == 7:
        why = f"{TUNED_FILE.name} has no entry for {gpu}" if gpu else "no GPU to pick a tuned one for"
        return f"the series' RTX 3090 config ({why})"
    return "the series' config"


def gpu_slug(name: str) -> str:
    """A device name's slug ('NVIDIA H200' -> 'h200'): its record in kernels/gpus.py, else
    one made from the name ('NVIDIA GeForce RTX 4090' -> 'rtx4090')."""
    return gpus.slug_of(name)

"""Workloads: the seed's benchmark shapes and fresh random inputs.

Tensors are (batch, seq, heads, d_head), contiguous, as the kernels and FlashAttention-2
itself store them; SDPA receives transposed views of the same memory.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from flashprof.kernels.config import KernelConfig

from flashprof.kernels.cli import FlashprofError

DTYPE_NAMES = ("fp16", "bf16")
HEADS = 16
D_HEAD = 128
#: The seed's batch per sequence length (16 heads, d=128).
SEED_BATCH = {512: 16, 1024: 16, 2048: 16, 4096: 16, 8192: 8, 16384: 4}
BENCH_SEQS = tuple(SEED_BATCH)


@dataclass(frozen=True)
class Shape:
    batch: int
    seq: int
    heads: int = HEADS
    d_head: int = D_HEAD

    def __post_init__(self) -> None:
        for name in ("batch", "seq", "heads", "d_head"):
            v = getattr(self, name)
            if not isinstance(v, int) or v <= 0:
                raise FlashprofError(f"bad shape: {name}={v!r} must be a positive integer")
        if self.d_head != D_HEAD:
            raise FlashprofError(f"bad shape: d_head={self.d_head}; the kernels implement d_head={D_HEAD}")

    @property
    def flops(self) -> int:
        return KernelConfig.flops(self.batch, self.seq, self.heads, self.d_head)

    def to_dict(self) -> dict:
        return asdict(self)


def seed_shape(seq: int) -> Shape:
    """The seed's benchmark shape for a sequence length (batch from its table, else 16)."""
    return Shape(batch=SEED_BATCH.get(seq, 16), seq=seq)


def check_dtype(name: str) -> str:
    if name not in DTYPE_NAMES:
        raise FlashprofError(f"bad dtype {name!r}: choose one of {', '.join(DTYPE_NAMES)}")
    return name


def torch_dtype(name: str):
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}[check_dtype(name)]


def make_inputs(shape: Shape, dtype: str, seed: int | None = None, device: str = "cuda"):
    """Fresh randn q, k, v. Never zeros: zeros hide unwritten outputs and run faster."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed if seed is not None else torch.seed() % (2**63))
    dims = (shape.batch, shape.seq, shape.heads, shape.d_head)
    return tuple(torch.randn(dims, generator=gen, device=device, dtype=torch_dtype(dtype)) for _ in range(3))

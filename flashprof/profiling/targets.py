"""What can be measured: kernels 1-7 (our variants), the references "ref" (FA2) and
"cudnn", and user code named by a target spec (path/to/file.py:fn or module:fn, see
user_target.py). One place maps a user's KERNEL value to a callable, its config and the
name regex Nsight Compute uses to pick its launch."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from flashprof.kernels.config import KERNEL_IDS, MMA_SYNC_KEY, MMA_SYNC_TITLE, REFERENCE_IDS, TITLES, KernelConfig, variant

from flashprof.kernels.cli import FlashprofError
from flashprof.profiling.reference import REFERENCES
from flashprof.profiling.user_target import UserSpec, is_spec, parse_spec

TARGET_NAMES = tuple(str(k) for k in KERNEL_IDS) + (MMA_SYNC_KEY,) + REFERENCE_IDS
#: Targets whose config depends on the GPU (kernels/tuned.json): known only once the GPU is.
PER_GPU = ("7", MMA_SYNC_KEY)
OUR_KERNEL_REGEX = "flash_fwd_kernel"
#: Kernel 7 may dispatch to any of the template's five kernel functions (grid, persistent,
#: wgmma, warp-specialised wgmma, its persistent form); which one is known only once the GPU is (the NVTX range
#: keeps FA2's out).
KERNEL7_REGEX = "flash_fwd_(wgmma_ws_persistent_|wgmma_ws_|wgmma_|persistent_)?kernel"
#: User targets: every kernel launched inside the NVTX range (KERNEL_REGEX= narrows it).
USER_KERNEL_REGEX = ".*"
#: Kernel 7's mma.sync form: the grid or the persistent kernel, never the wgmma one.
MMA_SYNC_REGEX = "flash_fwd_(persistent_)?kernel"
VALID_HINT = f"{', '.join(TARGET_NAMES)} or all, or your own path/to/file.py:function"


@dataclass(frozen=True)
class Target:
    name: str                      # "1".."7", "7mma", "ref", "cudnn", or a user target's name
    title: str
    config: KernelConfig | None    # None for references and user targets
    kernel_regex: str
    user: UserSpec | None = None   # set for user code
    user_fn: Callable | None = None  # the user's fn(q, k, v) wrapped as run(q, k, v, out=None)

    @property
    def stem(self) -> str:
        return f"kernel{self.name}" if self.config is not None else self.name

    def callable(self):
        """Build/load and return fn(q, k, v, out=None)."""
        if self.user_fn is not None:
            return self.user_fn
        if self.config is None:
            from flashprof.profiling.reference import sdpa

            return sdpa(self.name)
        from flashprof.kernels.api import load

        return load(self.config)


def parse_names(spec: str | list[str]) -> list[str]:
    """'6' / 'all' / 'ref' / '1,2,ref' / 'file.py:fn' -> validated target names (specs kept as given)."""
    items = spec if isinstance(spec, list) else [spec]
    names: list[str] = []
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if part == "all":
                names.extend(TARGET_NAMES)
            elif part in TARGET_NAMES:
                names.append(part)
            elif is_spec(part):
                parse_spec(part)
                names.append(part)
            else:
                raise FlashprofError(f"unknown KERNEL {part!r}: valid values are {VALID_HINT}")
    return list(dict.fromkeys(names))


def resolve(name: str, gpu: str | None = None, seq: int | None = None, dtype: str | None = None) -> Target:
    """The target ``name``; for kernel 7 with ``seq`` (and ``dtype``), the config kernels/tuned.json
    dispatches that shape to."""
    names = parse_names(name)
    if len(names) != 1:
        raise FlashprofError(f"one KERNEL expected here, got {name!r} ({len(names)} targets)")
    (name,) = names
    if is_spec(name):
        return user_target(name)
    if name in REFERENCES:
        backend, title, regex = REFERENCES[name]
        return Target(name, title, None, regex)
    if name == MMA_SYNC_KEY:
        return Target(name, f"kernel 7: {MMA_SYNC_TITLE}", variant(name, gpu=gpu), MMA_SYNC_REGEX)
    n = int(name)
    cfg = variant(n, gpu=gpu, seq=seq, dtype=dtype)
    return Target(name, f"kernel {n}: {TITLES[n]}", cfg, KERNEL7_REGEX if n == 7 else OUR_KERNEL_REGEX)


def user_target(spec: str) -> Target:
    """Import the user's code (no GPU needed) and wrap it as a Target."""
    from flashprof.profiling.user_target import adapt, load, title_of

    us = parse_spec(spec)
    fn, layout = load(us)
    return Target(us.name, title_of(fn, us), None, USER_KERNEL_REGEX, user=us, user_fn=adapt(fn, layout, spec))

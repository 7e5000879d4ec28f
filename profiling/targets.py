"""What can be measured: kernels 1-7 (our variants) and the references "ref" (FA2) and
"cudnn". One place maps a user's KERNEL value to a callable, its config and the name
regex Nsight Compute uses to pick its launch."""
from __future__ import annotations

from dataclasses import dataclass

from kernels.config import KERNEL_IDS, TITLES, KernelConfig, variant

from .errors import FlashprofError
from .reference import REFERENCES

TARGET_NAMES = tuple(str(k) for k in KERNEL_IDS) + tuple(REFERENCES)
OUR_KERNEL_REGEX = "flash_fwd_kernel"


@dataclass(frozen=True)
class Target:
    name: str                      # "1".."7", "ref", "cudnn"
    title: str
    config: KernelConfig | None    # None for references
    kernel_regex: str

    @property
    def stem(self) -> str:
        return f"kernel{self.name}" if self.config is not None else self.name

    def callable(self):
        """Build/load and return fn(q, k, v, out=None)."""
        if self.config is None:
            from .reference import sdpa

            return sdpa(self.name)
        from kernels.api import load

        return load(self.config)


def parse_names(spec: str | list[str]) -> list[str]:
    """'6' / 'all' / 'ref' / '1,2,ref' -> validated target names."""
    items = spec if isinstance(spec, list) else [spec]
    names: list[str] = []
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if part == "all":
                names.extend(TARGET_NAMES)
            elif part in TARGET_NAMES:
                names.append(part)
            else:
                raise FlashprofError(f"unknown KERNEL {part!r}: valid values are "
                                     f"{', '.join(TARGET_NAMES)} or all")
    return list(dict.fromkeys(names))


def resolve(name: str, gpu: str | None = None) -> Target:
    names = parse_names(name)
    if len(names) != 1:
        raise FlashprofError(f"one KERNEL expected here, got {name!r} ({len(names)} targets)")
    (name,) = names
    if name in REFERENCES:
        backend, title, regex = REFERENCES[name]
        return Target(name, title, None, regex)
    n = int(name)
    cfg = variant(n, gpu=gpu)
    return Target(name, f"kernel {n}: {TITLES[n]}", cfg, OUR_KERNEL_REGEX)

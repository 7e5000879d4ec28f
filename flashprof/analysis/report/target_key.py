"""Which target a report is, in the one vocabulary of docs/ARCHITECTURE.md.

A *target* is what was measured: "1".."7" (the kernel series, titles from
kernels/config.py), "ref" (FlashAttention-2, the PyTorch SDPA flash backend), "cudnn"
(cuDNN SDPA), or a user target (its sidecar's name, else the report's stem). The
*function* is the CUDA name of a launch (the frame's ``kernel`` column). Labels, order
and tick texts of the targets live here; colours are drawing, in plot/identity.py.
"""
from __future__ import annotations

import math
import re

import pandas as pd

from flashprof.kernels import config
from flashprof.profiling.sidecar import Sidecar

# Targets as strings ("1".."7", "ref", "cudnn"); the kernels' titles come from kernels/config.py.
KERNEL_IDS = tuple(str(i) for i in config.KERNEL_IDS)
MMA_SYNC_KEY = config.MMA_SYNC_KEY  # kernel 7's mma.sync form, a target of its own
ANCHORS = config.REFERENCE_IDS
KERNEL_ORDER = KERNEL_IDS + (MMA_SYNC_KEY,) + ANCHORS
KERNEL_NAMES = {**{str(i): t for i, t in config.TITLES.items()}, MMA_SYNC_KEY: config.MMA_SYNC_TITLE,
                "ref": "FA2 (PyTorch flash backend)", "cudnn": "cuDNN SDPA (Hopper wgmma)"}
# Two-line tick labels for bar charts with one bar (group) per kernel.
KERNEL_TICKS = {"1": "base", "2": "swizzling", "3": "eager K/V", "4": "fragment\ninterleave",
                "5": "register\ndbl. buffer", "6": "FP32\nfusion", "7": "auto-tuned", MMA_SYNC_KEY: "auto-tuned\nmma.sync",
                "ref": "PyTorch\nflash", "cudnn": "SDPA\nwgmma"}


def _given(v) -> bool:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return False
    return not pd.isna(v) and str(v) not in ("", "nan", "None")


def sidecar_key(side) -> str | None:
    """The target key a sidecar records, or None if it records none: ``Sidecar.target_key``
    (``flashprof.profiling.sidecar``, where the older spellings are migrated) of a sidecar
    or its parsed JSON."""
    return Sidecar.coerce(side).target_key


def stem_key(stem) -> str:
    """The guess for a report without a sidecar (a foreign report, or one whose sidecar
    records no target): 'kernel6_s1024_...' -> '6', 'ref_...' -> 'ref', else the stem."""
    stem = str(stem).rsplit("/", 1)[-1]
    if stem == f"kernel{MMA_SYNC_KEY}" or stem.startswith(f"kernel{MMA_SYNC_KEY}_"):
        return MMA_SYNC_KEY
    hit = re.match(r"^kernel_?(\d+)", stem)
    if hit:
        return hit.group(1)
    for a in ANCHORS:
        if stem == a or stem.startswith(a + "_"):
            return a
    return stem


def kernel_key(report, variant=None) -> str:
    """A launch's target key: ``variant`` (the frame column, the sidecar's key from
    ``sidecar_key``) where the report has one, else the guess from the report stem."""
    return str(variant) if _given(variant) else stem_key(report)


def kernel_rank(key: str) -> tuple:
    return (KERNEL_ORDER.index(key), "") if key in KERNEL_ORDER else (len(KERNEL_ORDER), key)


def is_series(key) -> bool:
    """A kernel of the flashprof series (1-7) or one of its anchors (FA2, cuDNN)."""
    return str(key) in KERNEL_ORDER


def gpu_name(name) -> str:
    """One spelling per GPU: Nsight Compute names it 'NVIDIA GeForce RTX 3080' in some
    versions and 'GeForce RTX 3080' in others; both become the latter ('' if unknown)."""
    s = str(name or "").strip()
    return "" if s in ("nan", "None") else re.sub(r"^NVIDIA\s+", "", s)

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

# Targets as strings ("1".."7", "ref", "cudnn"); the kernels' titles come from kernels/config.py.
KERNEL_IDS = tuple(str(i) for i in config.KERNEL_IDS)
ANCHORS = config.REFERENCE_IDS
KERNEL_ORDER = KERNEL_IDS + ANCHORS
KERNEL_NAMES = {**{str(i): t for i, t in config.TITLES.items()},
                "ref": "FA2 (PyTorch flash backend)", "cudnn": "cuDNN SDPA (Hopper wgmma)"}
# Two-line tick labels for bar charts with one bar (group) per kernel.
KERNEL_TICKS = {"1": "base", "2": "swizzling", "3": "eager K/V", "4": "fragment\ninterleave",
                "5": "register\ndbl. buffer", "6": "FP32\nfusion", "7": "auto-tuned",
                "ref": "PyTorch\nflash", "cudnn": "SDPA\nwgmma"}


def kernel_key(report, variant=None) -> str:
    """'1'..'7', 'ref', 'cudnn' from the sidecar variant, else from the report stem."""
    if variant is not None and not (isinstance(variant, float) and math.isnan(variant)) \
            and not pd.isna(variant) and str(variant) not in ("", "nan", "None"):
        return str(variant)
    stem = str(report).rsplit("/", 1)[-1]
    hit = re.match(r"^kernel_?(\d+)", stem)
    if hit:
        return hit.group(1)
    for a in ANCHORS:
        if stem == a or stem.startswith(a + "_"):
            return a
    return stem


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

"""How many kernels one call of a user target launches, and the limit on them.

Counted twice: before Nsight Compute runs, with the PyTorch profiler (CUPTI) on one call
after warm-up, so "launches nothing" and "launches too many" are refused before anything is
written; and from ncu's own output ("==PROF== Profiling "<name>" ..." once per profiled
kernel), which is the authority: ncu runs with --launch-count limit+1, so a call that
launched more than the limit inside the NVTX range is seen and its report discarded.
"""
from __future__ import annotations

import os
import warnings
import re

from flashprof.kernels.cli import FlashprofError

_PROFILED = re.compile(r'^==PROF== Profiling "([^"]*)"', re.M)
_COPIES = ("Memcpy", "Memset")  # CUPTI activity records that are not kernels (ncu skips them too)


def ncu_kernels(output: str) -> list[str]:
    """Names of the kernels ncu profiled, in order, from its console output."""
    return _PROFILED.findall(output)


def check_regex(regex: str | None) -> str | None:
    if regex is None:
        return None
    if not regex.strip():
        raise FlashprofError("KERNEL_REGEX is empty: leave it unset to profile every kernel in the range")
    try:
        re.compile(regex)
    except re.error as e:
        raise FlashprofError(f"bad KERNEL_REGEX {regex!r}: {e}") from None
    return regex


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or limit < 1:
        raise FlashprofError(f"bad MAX_LAUNCHES {limit!r}: must be a positive integer")
    return limit


def check_count(kernels: list[str], limit: int, spec: str, regex: str | None = None) -> None:
    """Refuse a call that launched no kernel (matching ``regex``) or more than ``limit``."""
    if not kernels:
        what = f"no kernel matching KERNEL_REGEX={regex}" if regex else "no CUDA kernel"
        raise FlashprofError(f"target {spec} launched {what} in one call: nothing to profile")
    if len(kernels) > limit:
        distinct = list(dict.fromkeys(_short(k) for k in kernels))
        shown = ", ".join(distinct[:3]) + (", ..." if len(distinct) > 3 else "")
        raise FlashprofError(f"target {spec} launched {len(kernels)} kernels in one call ({shown}), more than "
                             f"MAX_LAUNCHES={limit}: raise MAX_LAUNCHES or pick some with KERNEL_REGEX=")


def _short(name: str) -> str:
    """'void at::native::foo_kernel<4, float>(int, float*)' -> 'foo_kernel'."""
    head = name.replace("(anonymous namespace)", "anonymous").split("(", 1)[0]
    depth, cut = 0, len(head)
    for i, ch in enumerate(head):  # drop template arguments
        if ch == "<":
            if depth == 0:
                cut = min(cut, i)
            depth += 1
        elif ch == ">":
            depth -= 1
    base = head[:cut].strip().split()[-1] if head[:cut].strip() else head
    return base.rsplit("::", 1)[-1]


def matching(kernels: list[str], regex: str | None) -> list[str]:
    """The kernels ncu's ``--kernel-name regex:`` would keep (it matches the function name)."""
    if regex is None:
        return list(kernels)
    pat = re.compile(regex)
    return [k for k in kernels if pat.search(_short(k)) or pat.search(k)]


def profiler_kernels(call) -> list[str] | None:
    """Kernels ``call()`` launches, in order, seen by the PyTorch profiler; None when the
    profiler cannot see kernels on this machine at all (then only ncu's count is used)."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # keep libkineto's console chatter off stderr
    import torch
    from torch.profiler import ProfilerActivity, profile

    def record(f) -> list[str]:
        torch.cuda.synchronize()
        # torch 2.11 warns on stderr that the profiler "clears events at the end of each
        # cycle" even for this single, unscheduled cycle; the CLI promises one line.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                f()
                torch.cuda.synchronize()
            events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        events.sort(key=lambda e: e.time_range.start)
        return [e.name for e in events if not e.name.startswith(_COPIES)]

    names = record(call)
    if names:
        return names
    probe = record(lambda: torch.ones(1024, device="cuda").mul_(2))
    return [] if probe else None

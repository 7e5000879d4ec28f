"""Nsight Compute invocation: the command line (a pure function of the options), finding
ncu, running it with progress, recognising its failure modes, and keeping old reports.
"""
from __future__ import annotations

import codecs
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from flashprof.kernels.common import move_to_history

from flashprof.kernels.cli import FlashprofError
from flashprof.profiling.ncu_program import NVTX_RANGE

#: Section sets accepted by --set; "full" is what the shipped reports use.
SECTION_SETS = ("full", "detailed", "basic", "roofline")
#: For SET=roofline: the sections the suite's analysis reads, without the rest of "full".
ROOFLINE_SECTIONS = (
    "SpeedOfLight", "SpeedOfLight_HierarchicalTensorRooflineChart",
    "SpeedOfLight_HierarchicalSingleRooflineChart", "ComputeWorkloadAnalysis",
    "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables", "InstructionStats",
    "WarpStateStats", "SchedulerStats", "SourceCounters", "LaunchStats", "Occupancy",
)
CLOCK_CONTROLS = ("none", "base")
CACHE_CONTROLS = ("all", "none")


@dataclass(frozen=True)
class NcuOptions:
    output: Path                       # without the .ncu-rep suffix
    kernel_regex: str
    section_set: str = "full"
    clock_control: str = "none"        # leave the GPU's clocks alone by default
    cache_control: str = "all"         # flush caches between replay passes
    import_source: bool = True
    launch_count: int = 1
    extra: tuple[str, ...] = field(default_factory=tuple)


def ncu_command(ncu: str, opts: NcuOptions, program: list[str]) -> list[str]:
    """The full ncu command line. Every option the suite relies on is spelled out here."""
    if opts.section_set not in SECTION_SETS:
        raise FlashprofError(f"unknown section set {opts.section_set!r}: choose one of {', '.join(SECTION_SETS)}")
    if opts.clock_control not in CLOCK_CONTROLS:
        raise FlashprofError(f"unknown clock control {opts.clock_control!r}: choose one of {', '.join(CLOCK_CONTROLS)}")
    if opts.cache_control not in CACHE_CONTROLS:
        raise FlashprofError(f"unknown cache control {opts.cache_control!r}: choose one of {', '.join(CACHE_CONTROLS)}")
    if not isinstance(opts.launch_count, int) or opts.launch_count < 1:
        raise FlashprofError(f"bad launch count {opts.launch_count!r}: must be a positive integer")
    cmd = [ncu]
    if opts.section_set == "roofline":
        for s in ROOFLINE_SECTIONS:
            cmd += ["--section", s]
    else:
        cmd += ["--set", opts.section_set]
    cmd += [
        "--clock-control", opts.clock_control,
        "--cache-control", opts.cache_control,
        "--import-source", "yes" if opts.import_source else "no",
        "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
        "--kernel-name", f"regex:{opts.kernel_regex}",
        "--launch-count", str(opts.launch_count),
        "--export", str(opts.output),
        *opts.extra,
        *program,
    ]
    return cmd


def find_ncu() -> str:
    env = os.environ.get("FLASHPROF_NCU")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise FlashprofError(f"FLASHPROF_NCU={env} is not an executable")
        return env
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/bin/ncu"):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    raise FlashprofError("Nsight Compute ('ncu') not found: install Nsight Compute, put ncu on PATH "
                         "or set FLASHPROF_NCU=/path/to/ncu")


def ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise FlashprofError(f"cannot run {ncu}: {e}") from None
    m = re.search(r"Version\s+([\d.]+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


_PERM = re.compile(r"ERR_NVGPUCTRPERM|permission to access NVIDIA GPU Performance Counters", re.I)
_PASSES = re.compile(r"(\d+)\s+passes")
_PERCENT = re.compile(r"(\d+)%")


def diagnose(output: str, returncode: int) -> str | None:
    """Map ncu's output to one user-facing problem, or None when it succeeded."""
    if _PERM.search(output):
        return ("ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM): run as root, or "
                "load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
                "(see NVIDIA's ERR_NVGPUCTRPERM page)")
    if "No kernels were profiled" in output:
        return ("ncu profiled no kernel: the NVTX range or the kernel-name filter matched nothing "
                "(is the target's kernel name what the filter expects?)")
    if returncode != 0:
        # The profiled program's own one-line error (a user target that raised, say) says more
        # than ncu's "The application returned an error code" after it.
        own = [ln for ln in output.splitlines() if ln.startswith("target: error: ")]
        if own:
            return f"the profiled program failed under ncu: {own[-1][len('target: error: '):].strip()}"
        errs = [ln for ln in output.splitlines() if "==ERROR==" in ln or "error:" in ln]
        tail = errs[-1] if errs else (output.strip().splitlines() or ["(no output)"])[-1]
        return f"ncu failed (exit {returncode}): {tail.strip()}"
    return None


def run_ncu(cmd: list[str], label: str, stream=None, on_start=None) -> tuple[str, float]:
    """Run ncu, showing replay progress with elapsed time; returns (output, seconds).

    ncu draws its replay progress ("0%....50%....100% - 38 passes") on one line without
    newlines, so output is read in chunks and each new percentage is shown as it comes.
    ``on_start(proc)`` is called once ncu runs (a caller working in parallel may stop it);
    ncu never outlives this call: an exception here (Ctrl-C) stops it.
    """
    t0 = time.perf_counter()
    stream = stream or sys.stderr  # looked up per call: the caller may have redirected it
    try:
        # Its own process group: stopping ncu also stops the program it runs.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as e:
        raise FlashprofError(f"cannot start ncu: {e}") from None
    try:
        if on_start is not None:
            on_start(proc)
        out, rc = _relay(proc, label, stream, t0)
    finally:
        if proc.poll() is None:
            stop(proc)
        if proc.stdout is not None:
            proc.stdout.close()
    problem = diagnose(out, rc)
    if problem:
        raise FlashprofError(problem)
    return out, time.perf_counter() - t0


def stop(proc, grace: float = 5.0) -> None:
    """Stop ncu and the program it runs (its process group): SIGTERM, then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _relay(proc, label: str, stream, t0: float) -> tuple[str, int]:
    """Read ncu's output to its end, showing progress; returns (output, exit status)."""

    def say(msg: str) -> None:
        print(f"  [{label}] {msg} ... {time.perf_counter() - t0:5.1f}s", file=stream, flush=True)

    lines: list[str] = []
    pending, shown = "", None
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    assert proc.stdout is not None
    while True:
        chunk = os.read(proc.stdout.fileno(), 65536)
        pending += decoder.decode(chunk, final=not chunk)
        *complete, pending = pending.split("\n")
        for line in complete:
            lines.append(line + "\n")
            if line.startswith("==PROF== Profiling"):
                m = _PASSES.search(line)
                say(f"replayed{f' {m.group(1)} passes' if m else ''}")
                shown = None
            elif line.startswith("==PROF== Report"):
                say(line.strip()[9:])
        if pending.startswith("==PROF== Profiling"):
            pcts = _PERCENT.findall(pending)
            if pcts and pcts[-1] != shown:
                shown = pcts[-1]
                say(f"replaying {shown}%")
        if not chunk:
            break
    if pending:
        lines.append(pending)
    return "".join(lines), proc.wait()


def retire(report: Path, history: Path | None = None) -> Path | None:
    """Move an existing report (and its sidecar) to history/ with a timestamp; never delete."""
    try:
        return move_to_history(report, suffix=".ncu-rep", history=history)
    except OSError as e:
        raise FlashprofError(f"cannot move the old {report.name} to {history or report.parent / 'history'}: "
                             f"{e.strerror}; nothing was overwritten") from None

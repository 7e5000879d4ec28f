"""Launch records: the long frame -> one record per kernel launch, each launch's recipes
evaluated once (pure apart from reading a user target's sidecar for its launches per call).

Input: the long frame from ``flashprof.analysis.report.parse.load_frame``.
Output: ``launch_records(frame)``, a list of ``Launch`` in frame order, which the roofline,
pipes, stalls and summary stages and the figures read (none of them evaluates a recipe);
``select(records, choice)`` picks the launches a per-report chart is about.

``time_share`` = this launch's ``gpu__time_duration.sum`` / the sum over the launches of
its report (of its call, for a user target) whose duration the report holds; NaN when
its own duration is unknown. ``dominant`` marks the launch with the largest duration per
report (per call for a user target; ties go to the first); a report whose launches all
lack a duration has no dominant launch. A user target's sidecar lists the kernels one
call launches (``target.profiler_kernels``); its launches are split into calls of that
many, in launch order.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from flashprof.analysis.metrics import recipes
from flashprof.analysis.report.parse import LAUNCH_KEY, launch_identity, per_launch
from flashprof.profiling.sidecar import SidecarError, sidecar_path
from flashprof.profiling.sidecar import load as load_sidecar

ALL, DOMINANT = "all", "dominant"


@dataclass(frozen=True)
class Launch:
    key: tuple                 # (report, range_idx, launch)
    ident: dict                # the identity columns of the long frame
    eval: recipes.LaunchEval   # metrics, every recipe's Result, missing quantities
    call: int                  # 0.. within its report (a user target's calls), else 0
    time_share: float
    dominant: bool

    @property
    def metrics(self) -> dict:
        return self.eval.metrics

    @property
    def results(self) -> dict:
        return self.eval.results

    def value(self, quantity: str) -> float:
        return self.eval.results[quantity].value

    def provenance(self, quantity: str) -> str | None:
        return self.eval.results[quantity].provenance


@lru_cache(maxsize=256)
def _per_call_cached(path: str, mtime: float) -> int | None:
    try:
        kernels = load_sidecar(sidecar_path(path)).profiler_kernels
    except SidecarError:
        return None
    return len(kernels) if isinstance(kernels, list) and kernels else None


def launches_per_call(path) -> int | None:
    """Kernels one call of a user target launches (its sidecar's ``target.profiler_kernels``),
    None for anything else (a report without such a sidecar is one call)."""
    side = sidecar_path(Path(str(path)))
    try:
        mtime = side.stat().st_mtime
    except OSError:
        return None
    return _per_call_cached(str(path), mtime)


def _duration(ev: recipes.LaunchEval) -> float:
    v = ev.results["duration_ns"].value
    return v if isinstance(v, float) and math.isfinite(v) and v >= 0 else math.nan


_RECORDS: dict[int, tuple] = {}


def launch_records(frame: pd.DataFrame) -> list[Launch]:
    """Every launch of ``frame`` (see module docstring), its recipes evaluated once."""
    evals = recipes.evaluate_launches(frame, per_launch)
    hit = _RECORDS.get(id(frame))
    if hit is not None and hit[0] is evals and hit[2]() is frame:
        return hit[1]
    ident = {tuple(r[k] for k in LAUNCH_KEY): r for r in launch_identity(frame).to_dict("records")}
    keys = list(evals)
    calls: dict[tuple, int] = {}
    by_report: dict[str, list[tuple]] = {}
    for k in keys:
        by_report.setdefault(k[0], []).append(k)
    for report, ks in by_report.items():
        per = launches_per_call(ident[ks[0]].get("path", ""))
        for i, k in enumerate(ks):
            calls[k] = i // per if per else 0
    groups: dict[tuple, list[tuple]] = {}
    for k in keys:
        groups.setdefault((k[0], calls[k]), []).append(k)
    share, dominant = {}, set()
    for ks in groups.values():
        durs = {k: _duration(evals[k]) for k in ks}
        known = {k: d for k, d in durs.items() if not math.isnan(d)}
        total = sum(known.values())
        for k in ks:
            share[k] = durs[k] / total if k in known and total > 0 else math.nan
        if known:
            dominant.add(max(known, key=lambda k: (known[k], -ks.index(k))))
    out = [Launch(k, ident[k], evals[k], calls[k], share[k], k in dominant) for k in keys]
    for fid in [f for f, v in _RECORDS.items() if v[2]() is None]:
        del _RECORDS[fid]
    _RECORDS[id(frame)] = (evals, out, weakref.ref(frame))
    return out


def parse_choice(text) -> str | int:
    """``--launch`` value: 'all', 'dominant' or a launch index (>= 0); ValueError otherwise."""
    t = str(text).strip().lower()
    if t in (ALL, DOMINANT):
        return t
    try:
        n = int(t)
    except ValueError:
        raise ValueError(f"--launch {text!r}: expected a launch index (0, 1, ...), 'dominant' or 'all'") from None
    if n < 0:
        raise ValueError(f"--launch {text!r}: a launch index is 0 or more")
    return n


def select(records: list[Launch], choice: str | int = DOMINANT) -> list[Launch]:
    """The launches per-report charts show: every launch (``all``), each report's dominant
    launch(es) (``dominant``; a report without a known duration keeps its first launch),
    or launch N of each report (a report with one launch keeps it). ValueError when a
    report with several launches has no launch N."""
    if choice == ALL:
        return list(records)
    by_report: dict[str, list[Launch]] = {}
    for r in records:
        by_report.setdefault(r.key[0], []).append(r)
    out = []
    for report, rs in by_report.items():
        if choice == DOMINANT:
            pick = [r for r in rs if r.dominant] or rs[:1]
        elif len(rs) == 1:
            pick = rs
        else:
            pick = [r for r in rs if r.key[2] == choice]
            if not pick:
                have = ", ".join(str(r.key[2]) for r in rs)
                raise ValueError(f"--launch {choice}: report {report} has no launch {choice} (launches {have})")
        out += pick
    return out


def selected_keys(records: list[Launch], choice: str | int = DOMINANT) -> set[tuple]:
    return {r.key for r in select(records, choice)}

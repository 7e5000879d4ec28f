"""Limiter stage: what bounds each launch (pure: long frame + roofline frame in, frame out).

Two independent readings, both kept:

* **Speed of light** (Nsight Compute's GPU Throughput breakdown, section SpeedOfLight):
  ``sm__throughput.avg.pct_of_peak_sustained_elapsed`` (compute: the busiest SM unit) and
  ``gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed`` (memory: the busiest
  memory unit). The larger names the bound; when neither reaches ``SOL_BUSY_PCT`` (60 %,
  the threshold of Nsight Compute's own SOL bottleneck rule) the launch is **latency**
  bound: no unit is near its peak. The busiest memory unit is named from
  ``l1tex__throughput`` (L1/shared), ``lts__throughput`` (L2) and ``gpu__dram_throughput``
  (DRAM), all ``.avg.pct_of_peak_sustained_elapsed``.
* **Roofline** (the launch's own FLOP kind's chart, ``flashprof.analysis.stages.roofline``):
  at each memory level the attainable rate is min(compute roof, intensity x bandwidth
  roof); the **binding roof** is the lowest of them (the compute roof, or the level whose
  bandwidth caps it), and ``pct_of_roof`` = achieved FLOP/s / that attainable rate.

Output: ``limiters(frame, roof)`` -> one row per launch, LIMITER_COLUMNS; NaN / None where the
report lacks the metrics (never a guess).
"""
from __future__ import annotations

import math

import pandas as pd

SOL_BUSY_PCT = 60.0
SOL_COMPUTE = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
SOL_MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_UNITS = {  # metric -> the unit it names
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed": "L1/shared",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": "L2",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "DRAM",
}
LIMITER_COLUMNS = ("report", "range_idx", "launch", "compute_pct", "memory_pct", "memory_unit",
                   "memory_unit_pct", "sol_bound", "roof", "roof_level", "attainable_flops", "pct_of_roof")


def _num(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f if math.isfinite(f) else math.nan


def sol_bound(compute_pct, memory_pct, busy: float = SOL_BUSY_PCT) -> str | None:
    """'compute', 'memory' or 'latency' from the two speed-of-light percentages; None
    when either is missing."""
    c, m = _num(compute_pct), _num(memory_pct)
    if math.isnan(c) or math.isnan(m):
        return None
    if max(c, m) < busy:
        return "latency"
    return "compute" if c >= m else "memory"


def busiest_unit(unit_pcts: dict[str, float]) -> tuple[str | None, float]:
    """(unit, %) of the busiest memory unit among those with a value."""
    vals = {u: _num(v) for u, v in unit_pcts.items()}
    vals = {u: v for u, v in vals.items() if not math.isnan(v)}
    if not vals:
        return None, math.nan
    u = max(vals, key=vals.get)
    return u, vals[u]


def binding_roof(flops, compute_ceiling, levels: dict[str, tuple[float, float]]) -> tuple[str | None, float, float]:
    """(roof, attainable FLOP/s, % of it achieved) for one launch on its kind's chart.

    ``levels`` = {level: (intensity FLOP/B, bandwidth roof B/s)}. ``roof`` is 'compute' or
    the level name whose bandwidth roof is lowest at the launch's intensity there; a level
    with a missing value is left out; no level and no compute roof -> (None, nan, nan)."""
    f, peak = _num(flops), _num(compute_ceiling)
    cands: dict[str, float] = {}
    if peak > 0:
        cands["compute"] = peak
    for level, (ai, bw) in levels.items():
        a, b = _num(ai), _num(bw)
        if a > 0 and b > 0:
            cands[level] = a * b
    if not cands:
        return None, math.nan, math.nan
    roof = min(cands, key=lambda k: (cands[k], k != "compute"))  # a tie: the compute roof
    att = cands[roof]
    return roof, att, (100.0 * f / att if f >= 0 else math.nan)


def limiters(frame: pd.DataFrame, roof: pd.DataFrame) -> pd.DataFrame:
    """One row per launch of ``frame`` (LIMITER_COLUMNS)."""
    keys = ["report", "range_idx", "launch"]
    wanted = [SOL_COMPUTE, SOL_MEMORY, *MEMORY_UNITS]
    sub = frame[frame["metric"].isin(wanted)]
    metrics: dict[tuple, dict] = {}
    for rec in sub[keys + ["metric", "value"]].itertuples(index=False):
        metrics.setdefault(tuple(rec[:3]), {})[rec[3]] = rec[4]
    roofs: dict[tuple, tuple] = {}
    for key, g in roof.groupby(keys, sort=False, observed=True):
        first = g.iloc[0]
        lv = {str(r["level"]): (r["ai"], r["bw_ceiling"]) for r in g.to_dict("records")}
        roofs[tuple(key)] = binding_roof(first["flops"], first["compute_ceiling"], lv) if pd.notna(first["flops_kind"]) else (None, math.nan, math.nan)
    launches = frame[keys].drop_duplicates()
    rows = []
    for key in launches.itertuples(index=False):
        key = tuple(key)
        m = metrics.get(key, {})
        c, mem = _num(m.get(SOL_COMPUTE)), _num(m.get(SOL_MEMORY))
        unit, unit_pct = busiest_unit({u: m.get(k) for k, u in MEMORY_UNITS.items()})
        r, att, pct = roofs.get(key, (None, math.nan, math.nan))
        rows.append({"report": key[0], "range_idx": key[1], "launch": key[2], "compute_pct": c, "memory_pct": mem,
                     "memory_unit": unit, "memory_unit_pct": unit_pct, "sol_bound": sol_bound(c, mem),
                     "roof": r, "roof_level": None if r in (None, "compute") else r,
                     "attainable_flops": att, "pct_of_roof": pct})
    out = pd.DataFrame(rows, columns=list(LIMITER_COLUMNS))
    for col in ("memory_unit", "sol_bound", "roof", "roof_level"):  # a missing name is None, not NaN
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    return out


def verdict_text(row: dict) -> str:
    """One short phrase: 'memory 77 % (busiest: L1/shared)', 'compute (SM 92 %)', 'latency (SM 9 %, memory 12 %)'."""
    b = row.get("sol_bound")
    if b is None:
        return "unknown (no SpeedOfLight section)"
    c, m = row.get("compute_pct"), row.get("memory_pct")
    if b == "compute":
        return f"compute (SM {c:.0f} %)"
    if b == "memory":
        unit = row.get("memory_unit")
        return f"memory {m:.0f} %" + (f" (busiest: {unit})" if unit else "")
    return f"latency (SM {c:.0f} %, memory {m:.0f} %)"

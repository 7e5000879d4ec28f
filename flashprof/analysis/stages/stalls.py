"""Stalls stage: long frame -> warp-stall breakdown, shared-memory bank conflicts;
per-PC source frame -> hottest SASS lines (all pure: frame in, frame out).

Input: the long frame from ``flashprof.analysis.report.parse.load_frame`` (``stalls``, ``bank_conflicts``)
or the per-PC frame from ``flashprof.analysis.report.parse.load_source_frame`` (``top_stall_lines``).
Output: long frames, reasons always in STALL_REASONS order (figures rely on it).

Per-issue stall ratio: ``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio``
= average number of warps in that state per issued instruction. Summed over all reasons
(including ``selected``, the warp that issues) it equals the average warp latency per
issued instruction, so ``fraction`` = ratio / sum over reasons is the share of warp
cycles spent in each state; fractions sum to 1 per launch.
"""
from __future__ import annotations

import math

import pandas as pd

from flashprof.analysis.metrics import recipes
from flashprof.analysis.stages.launches import launch_records

# Canonical order: grouped by family, largest-impact families first.
STALL_FAMILIES: dict[str, tuple[str, ...]] = {
    # Target pipe oversubscribed (math_pipe_throttle); waiting on wgmma (gmma,
    # warpgroup_arrive: the latter only exists as a PC-sampling reason).
    "tensor/math": ("math_pipe_throttle", "gmma", "warpgroup_arrive"),
    # MIO queue full (shared memory, ldmatrix, MUFU) / waiting on an MIO result.
    "shared memory/MIO": ("mio_throttle", "short_scoreboard"),
    "memory (global)": ("long_scoreboard", "lg_throttle", "drain", "imc_miss", "tex_throttle"),
    "barrier": ("barrier",),
    "issue/scheduling": ("wait", "dispatch_stall", "no_instruction", "branch_resolving",
                         "not_selected", "selected", "misc", "sleeping", "membar"),
}
STALL_REASONS: tuple[str, ...] = tuple(r for rs in STALL_FAMILIES.values() for r in rs)
REASON_FAMILY: dict[str, str] = {r: fam for fam, rs in STALL_FAMILIES.items() for r in rs}
FAMILY_ORDER: tuple[str, ...] = tuple(STALL_FAMILIES)
# "selected" is the issuing warp, not a stall; it stays in the fractions (they describe
# where warp cycles go) but is flagged and excluded from "top stall" rankings.
NOT_A_STALL = frozenset({"selected"})
_RATIO = recipes.STALL_METRIC

STALLS_COLUMNS = ("report", "range_idx", "launch", "kernel", "variant", "reason", "family",
                  "is_stall", "per_issue", "fraction", "metric")
BANK_COLUMNS = ("report", "range_idx", "launch", "kernel", "variant", "op", "conflicts",
                "wavefronts", "nway", "ldsm_inst")


def _reasons_in(frame: pd.DataFrame) -> list[str]:
    """Canonical reasons plus any a newer Nsight Compute reports that we do not know."""
    seen = [r for r in map(recipes.stall_reason, frame["metric"].unique()) if r]
    return list(STALL_REASONS) + sorted(set(seen) - set(STALL_REASONS))


def stalls(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (launch, reason): per_issue ratio, fraction of the total, family."""
    reasons = _reasons_in(frame)
    rows = []
    for rec in launch_records(frame):
        key, m = rec.key, rec.metrics
        ratios = {r: m.get(_RATIO.format(r), math.nan) for r in reasons}
        known = [v for v in ratios.values() if not math.isnan(v)]
        total = sum(known) if known else math.nan
        for r in reasons:
            rows.append({
                "report": key[0], "range_idx": key[1], "launch": key[2],
                "kernel": rec.ident["kernel"], "variant": rec.ident["variant"],
                "reason": r, "family": REASON_FAMILY.get(r, "other"), "is_stall": r not in NOT_A_STALL,
                "per_issue": ratios[r],
                "fraction": ratios[r] / total if total and not math.isnan(ratios[r]) else math.nan,
                "metric": _RATIO.format(r),
            })
    out = pd.DataFrame(rows, columns=list(STALLS_COLUMNS))
    out["reason"] = pd.Categorical(out["reason"], categories=reasons, ordered=True)
    return out


def bank_conflicts(frame: pd.DataFrame) -> pd.DataFrame:
    """Shared-memory bank conflicts per launch and op ("ld", "st").

    ``conflicts`` = l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_<op>.sum, the extra
    wavefronts caused by conflicts; ``wavefronts`` = l1tex__data_pipe_lsu_wavefronts_mem_
    shared_op_<op>.sum, all wavefronts. ``nway`` = wavefronts / (wavefronts - conflicts):
    the average number of wavefronts per conflict-free wavefront, i.e. an average n-way
    conflict degree (1.0 = conflict-free). It is an estimate: accesses wider than 4 B per
    thread need several wavefronts even without conflicts, and those are not counted as
    conflicts, so it averages over all wavefronts. ``ldsm_inst`` (ldmatrix warp
    instructions, smsp__inst_executed_op_ldsm.sum) is repeated on both rows.
    """
    rows = []
    for rec in launch_records(frame):
        key, m = rec.key, rec.metrics
        for op in ("ld", "st"):
            conflicts = m.get(recipes.BANK_CONFLICT_METRIC.format(op), math.nan)
            wavefronts = m.get(recipes.SMEM_WAVEFRONT_METRIC.format(op), math.nan)
            ideal = wavefronts - conflicts
            rows.append({
                "report": key[0], "range_idx": key[1], "launch": key[2],
                "kernel": rec.ident["kernel"], "variant": rec.ident["variant"],
                "op": op, "conflicts": conflicts, "wavefronts": wavefronts,
                "nway": wavefronts / ideal if ideal > 0 else math.nan,
                "ldsm_inst": m.get(recipes.LDSM_METRIC, math.nan),
            })
    return pd.DataFrame(rows, columns=list(BANK_COLUMNS))


def top_stall_lines(source_frame: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The ``n`` SASS instructions with the most stall samples, with their dominant reason.

    Input: ``load_source_frame`` output. Stall samples exclude ``selected`` (issuing) and
    the ``_not_issued`` variants (a subset of the same samples). Columns: pc, pc_offset,
    sass, location ("file:line", empty without -lineinfo), stall_samples, share (of all
    stall samples in the launch), dominant_reason, dominant_samples, dominant_share,
    family.
    """
    cols = [c for c in source_frame.columns if c.startswith("stall_") and not c.endswith("_not_issued")
            and c[len("stall_"):] not in NOT_A_STALL]
    out_cols = ["report", "launch", "pc", "pc_offset", "sass", "location", "stall_samples", "share",
                "dominant_reason", "dominant_samples", "dominant_share", "family"]
    if not cols or source_frame.empty:
        return pd.DataFrame(columns=out_cols)
    counts = source_frame[cols]
    total = counts.sum(axis=1)
    df = source_frame[["report", "launch", "pc", "pc_offset", "sass"]].copy()
    df["location"] = [f"{f}:{int(ln)}" if f and not pd.isna(ln) else ""
                      for f, ln in zip(source_frame["file"], source_frame["line"])]
    df["stall_samples"] = total
    grand = total.sum()
    df["share"] = total / grand if grand else math.nan
    dominant = counts.idxmax(axis=1).str[len("stall_"):]
    df["dominant_reason"] = dominant
    df["dominant_samples"] = counts.max(axis=1)
    df["dominant_share"] = df["dominant_samples"] / total.where(total > 0)
    df["family"] = dominant.map(lambda r: REASON_FAMILY.get(r, "other"))
    df = df[df["stall_samples"] > 0]
    return df.sort_values(["stall_samples", "pc"], ascending=[False, True]).head(n).reset_index(drop=True)[out_cols]

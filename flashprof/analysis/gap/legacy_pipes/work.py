"""Gap stage, pipes model, step 1-2: the work each target does per pipe, on the GPU it
was profiled on and carried over to another GPU.

Input: the long frame of ``flashprof.analysis.report.parse.load_frame`` and the static SASS opcode frame
(``load_static``). Output: ``estimate_work`` (a target's work on a GPU, with where it came
from); step 1, the work of each launch (``launch_work``), is in ``flashprof.analysis.gap.data``.

1. Work. For every target (kernels "1".."7" and "ref" = FA2) the work per pipe is taken
   from executed-instruction counters (``sass__inst_executed_per_opcode[OP]``, warp
   instructions), grouped into pipes by OPCODE_PIPE, plus the shared-memory wavefronts
   (``l1tex__data_pipe_lsu_wavefronts_mem_shared.sum``, bank-conflict replays included)
   and DRAM bytes. Tensor work = HMMA x 4096 FLOP (every HMMA in these kernels is
   m16n8k16: 2*16*8*16).
2. Other architectures. A GPU with its own report for the target uses it unchanged.
   Otherwise the work is carried over from the report of another GPU (the H200 here)
   and corrected by the static SASS of the main loop (``reports/sass/opcodes_loop.csv``:
   the KV-block loop body, [backward-branch target, branch], which holds every HMMA and
   runs seq/B_c times; of the config the report ran, from its sidecar, else the config of
   the series' published RTX 3090 winner). trips = executed HMMA / loop HMMA on the source
   arch (loop bodies executed, x warps); each opcode's executed count becomes executed +
   trips x (loop(target arch) - loop(source arch)). Per pipe group this scales the loop
   part of the executed count by the loop-scope static ratio and leaves prologue/epilogue
   as executed: whole-kernel ratios let prologue code (IMAD/LEA address set-up, which
   differs a lot per arch) weigh in. ASSUMPTION: the same loop trip count on both arches
   (same config). Chosen on H200 data only: predicting kernel k+1's executed pipe counts
   from kernel k's with the loop delta is within 5 % for IMAD where a plain ratio misses
   by up to 38 %. Shared-memory wavefronts change by trips x the static delta of (4 x LDSM
   + LDS + STS + LDGSTS); DRAM bytes do not scale. Without loop data the whole-kernel
   per-opcode ratio (``scale_opcodes``) is the fallback. FA2 ("ref") has no static SASS
   per arch here and only sm_90 counters, so FA2 on the A100 / 3090 is modelled with its
   sm_90 instruction mix: a known limitation (FA2's sm_80 build differs, e.g. in spills).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from flashprof.analysis.gap.data import (FLOP_PER_HMMA, REF, SEQ, SMEM_PROXY, WORK_COLUMNS, empty_work, pipe_of, work_from_opcodes)
from flashprof.analysis.report.errors import read_table


def static_counts(opcodes: pd.DataFrame | None, kernel: str, arch: str, dtype: str = "fp16",
                  scope: str = "kernel", config: str | None = None) -> dict:
    """{opcode: static count} of one kernel's cubin for one arch (empty if unknown).

    ``scope`` "kernel": the whole function (opcodes.csv); "loop": the main-loop body
    (opcodes_loop.csv, see ``load_static``). A frame without a ``scope`` column is all
    kernel scope. For the loop scope, ``config`` (a config slug) picks that config's rows
    when present (the tuned kernel 7 a report ran); otherwise the seed config's rows."""
    if opcodes is None or opcodes.empty:
        return {}
    if "scope" in opcodes.columns:
        sel = opcodes[opcodes["scope"] == scope]
    else:
        sel = opcodes if scope == "kernel" else opcodes.iloc[0:0]
    sel = sel[(sel["kernel"].astype(str) == str(kernel)) & (sel["arch"] == arch) & (sel["dtype"] == dtype)]
    if "config" in sel.columns and len(sel):
        own = sel[sel["config"] == config] if config else sel.iloc[0:0]
        if len(own):
            sel = own
        elif "tuned_gpu" in sel.columns:
            sel = sel[sel["tuned_gpu"].fillna("").astype(str) == ""]
    return {str(o): float(c) for o, c in zip(sel["opcode"], sel["count"])}


def load_static(path: str | Path) -> pd.DataFrame:
    """Static opcode frame with a ``scope`` column: opcodes.csv (scope "kernel") plus the
    ``<stem>_loop.csv`` beside it (scope "loop") when it exists. A CSV that already has a
    ``scope`` column is returned as is."""
    path = Path(path)
    kern = read_table(path)
    if "scope" in kern.columns:
        return kern
    kern["scope"] = "kernel"
    loop_file = path.with_name(f"{path.stem}_loop{path.suffix}")
    if not loop_file.is_file():
        return kern
    loop = read_table(loop_file, dtype={"tuned_gpu": str, "config": str})
    loop["scope"] = "loop"
    return pd.concat([kern, loop], ignore_index=True)


def loop_trips(dynamic: Mapping[str, float], loop_from: Mapping[str, float]) -> float:
    """Executed main-loop bodies (iterations x warps) on the source arch: executed HMMA /
    HMMA in the loop body (every HMMA of kernels 1-7 lies in the loop; checked against
    the reports in tests/test_sass.py). NaN without HMMA in the loop."""
    h = loop_from.get("HMMA", 0.0)
    return float(dynamic.get("HMMA", 0.0)) / h if h else math.nan


def scale_by_loop(dynamic: Mapping[str, float], loop_from: Mapping[str, float],
                  loop_to: Mapping[str, float]) -> dict:
    """Executed counts on the source arch -> estimated executed counts on the target arch,
    changing only the main-loop part: executed(op) + trips x (loop_to(op) - loop_from(op)),
    floored at 0. Equivalently, per pipe group g: the loop part of the executed count
    (trips x loop_from[g]) is scaled by the loop-scope static ratio loop_to[g] /
    loop_from[g]; the prologue/epilogue part stays as executed on the source arch."""
    trips = loop_trips(dynamic, loop_from)
    if math.isnan(trips):
        return dict(dynamic)
    out = {op: float(n) for op, n in dynamic.items()}
    for op in set(loop_from) | set(loop_to):
        delta = trips * (loop_to.get(op, 0.0) - loop_from.get(op, 0.0))
        out[op] = max(0.0, out.get(op, 0.0) + delta)
    return out


def group_ratios(loop_from: Mapping[str, float], loop_to: Mapping[str, float]) -> dict:
    """Loop-scope static ratio per pipe group: sum loop_to[g] / sum loop_from[g]."""
    num: dict[str, float] = {}
    den: dict[str, float] = {}
    for op, n in loop_to.items():
        num[pipe_of(op)] = num.get(pipe_of(op), 0.0) + n
    for op, n in loop_from.items():
        den[pipe_of(op)] = den.get(pipe_of(op), 0.0) + n
    return {g: (num.get(g, 0.0) / den[g] if den.get(g) else math.inf) for g in set(num) | set(den)}


def scale_opcodes(dynamic: Mapping[str, float], static_from: Mapping[str, float],
                  static_to: Mapping[str, float]) -> dict:
    """Executed counts on the source arch -> estimated executed counts on the target arch
    (the static-mix assumption of the module docstring, step 2)."""
    if not static_from or not static_to:
        return dict(dynamic)
    out: dict[str, float] = {}
    group_dyn: dict[str, float] = {}
    group_static: dict[str, float] = {}
    for op, n in dynamic.items():
        g = pipe_of(op)
        s_from = static_from.get(op, 0.0)
        if s_from > 0:
            group_dyn[g] = group_dyn.get(g, 0.0) + n
            group_static[g] = group_static.get(g, 0.0) + s_from
            out[op] = n * static_to.get(op, 0.0) / s_from
        else:  # executed but not in the static histogram (should not happen): keep it
            out[op] = n
    for op, s_to in static_to.items():
        if op not in out and s_to > 0:
            g = pipe_of(op)
            per_static = group_dyn.get(g, 0.0) / group_static[g] if group_static.get(g) else 0.0
            out[op] = s_to * per_static
    return out


def _smem_proxy(counts: Mapping[str, float]) -> float:
    return sum(SMEM_PROXY.get(op, 0.0) * n for op, n in counts.items())


def estimate_work(target: str, gpu_key: str, gpus: dict, launches: pd.DataFrame,
                  opcodes: pd.DataFrame | None = None, dtype: str = "fp16") -> tuple[dict, str, pd.Series | None]:
    """(work, source note, measured launch row or None) for one target on one GPU."""
    arch = gpus["gpus"][gpu_key]["arch"]
    cand = launches[(launches["target"] == target) & launches["has_opcodes"]] if len(launches) else launches
    if len(cand):
        # Prefer the profiled shape the published numbers use (S=4096).
        cand = cand.assign(_pref=(cand["seq"] != SEQ)).sort_values("_pref", kind="stable")
        own = cand[cand["gpu_key"] == gpu_key]
        if len(own):
            row = own.iloc[0]
            return {c: float(row[c]) for c in WORK_COLUMNS}, f"measured ({row['report']})", row
        row = cand.iloc[0]
        dyn = row["opcodes"]
        if target == REF:
            w = work_from_opcodes(dyn, row["smem_wavefronts"], row["dram_bytes"])
            return w, f"{row['arch']} counters of {row['report']}, unscaled (no per-arch FA2 SASS)", None
        config = row.get("config_slug") or None
        l_from = static_counts(opcodes, target, row["arch"], dtype, "loop", config)
        l_to = static_counts(opcodes, target, arch, dtype, "loop", config)
        if l_from.get("HMMA") and l_to:
            scaled = scale_by_loop(dyn, l_from, l_to)
            trips = loop_trips(dyn, l_from)
            wave = row["smem_wavefronts"] + trips * (_smem_proxy(l_to) - _smem_proxy(l_from))
            w = work_from_opcodes(scaled, max(0.0, wave), row["dram_bytes"])
            matched = config is not None and static_counts(opcodes, target, row["arch"], dtype, "loop", None) != l_from
            cfg_note = f" ({config})" if matched else (f" (seed-config static; report ran {config})" if config else "")
            note = ("counters" if row["arch"] == arch
                    else f"counters + loop-body delta {row['arch']}->{arch}{cfg_note}")
            return w, f"{row['report']} {note}", None
        s_from = static_counts(opcodes, target, row["arch"], dtype)
        s_to = static_counts(opcodes, target, arch, dtype)
        if not s_from or not s_to:
            w = work_from_opcodes(dyn, row["smem_wavefronts"], row["dram_bytes"])
            return w, f"{row['arch']} counters of {row['report']}, unscaled (no static SASS)", None
        scaled = scale_opcodes(dyn, s_from, s_to)
        smem_ratio = _smem_proxy(s_to) / _smem_proxy(s_from) if _smem_proxy(s_from) else 1.0
        w = work_from_opcodes(scaled, row["smem_wavefronts"] * smem_ratio, row["dram_bytes"])
        note = "counters" if row["arch"] == arch else f"counters x whole-kernel static mix {row['arch']}->{arch}"
        return w, f"{row['report']} {note}", None
    # No counters for this target anywhere: static proxy, normalised to the problem's FLOPs.
    ref_rows = launches[launches["target"] == REF] if len(launches) else launches
    flop = (float(ref_rows.iloc[0]["tensor_flop"]) if len(ref_rows)
            else 4.0 * 16 * 16 * SEQ * SEQ * 128)
    s_loop = static_counts(opcodes, target, arch, dtype, "loop")
    if s_loop.get("HMMA"):
        k = flop / (s_loop["HMMA"] * FLOP_PER_HMMA)
        w = work_from_opcodes({op: n * k for op, n in s_loop.items()})
        return w, f"static proxy ({arch} loop body x iterations; prologue/epilogue omitted)", None
    s_to = static_counts(opcodes, target, arch, dtype)
    if not s_to or not s_to.get("HMMA"):
        return empty_work(), "no data", None
    k = flop / (s_to["HMMA"] * FLOP_PER_HMMA)
    w = work_from_opcodes({op: n * k for op, n in s_to.items()})
    return w, f"static proxy ({arch} cubin x iterations; prologue/epilogue over-counted)", None

"""Roofline stage: long frame -> hierarchical roofline frame (pure; no I/O, no plotting).

Input: the long frame from ``flashprof.analysis.report.parse.load_frame``.
Output: ``roofline(frame)``, one row per (report, launch, level), columns ROOFLINE_COLUMNS.

Convention ("ncu-hierarchical-roofline"): the L1, L2 and DRAM levels use exactly the
definitions of Nsight Compute's SpeedOfLight_Hierarchical{Tensor,Single}RooflineChart
sections, so the intensities match what the Nsight Compute GUI shows:

* tensor FLOP/s = sum of ``sm__ops_path_tensor_*_src_{fp16,bf16}*_sparsity_off
  .sum.per_cycle_elapsed`` x ``sm__cycles_elapsed.avg.per_second`` ("ops" are FLOPs).
  The path is whichever the report has: ``op_hmma`` (mma.sync on sm_90), ``op_hgmma``
  (wgmma, e.g. cuDNN's Hopper kernel; fp16 has no dst split there) or the GA10x/GA100
  name without ``op_``; per (path, src type) dst-specific counters are preferred over a
  dst-less one so nothing is counted twice.
* FP32 FLOP/s = (fadd + fmul + 2 ffma thread instructions) per cycle elapsed x
  ``smsp__cycles_elapsed.avg.per_second``.
* L1 bytes/s = 128 x ``l1tex__lsu_writeback_active_mem_lgds.sum.per_second`` (sm_90;
  ``..._mem_lg`` on sm_75-8.9); L2 = 32 x ``lts__lts2xbar_cycles_active.sum.per_second``;
  DRAM = ``dram__bytes.sum.per_second``.
* ceilings = the report's own ``.peak_sustained`` (per cycle) x that unit's clock, so a
  report from any GPU gives its own roofs.

Extra level "shared memory" (convention "flashprof-smem-wavefronts", not in Nsight
Compute's chart): bytes = 128 B x ``l1tex__data_pipe_lsu_wavefronts_mem_shared.sum``
(every shared-memory wavefront: ld, st, ldmatrix, cp.async fills) / kernel duration.
A wavefront moves at most 128 B (32 banks x 4 B), so this is the bandwidth the shared
pipe *spent*; bank-conflicted wavefronts carry less useful data, so useful bytes can be
lower. Ceiling = 128 B/clk/SM x SMs x SM clock (one wavefront per clock per SM, the
peak Nsight Compute itself uses for ``..._wavefronts_mem_shared`` percentages).

Every number comes from ``flashprof.analysis.metrics.recipes`` (one table: quantity -> ordered recipes ->
provenance), so reports from other GPUs, versions and section sets give whatever their
metrics support: ``flops_provenance`` / ``bytes_provenance`` say ``exact`` (the chart's
own formula, as above), ``derived`` (raw counters, e.g. ``lts__t_sectors`` for L2: all L2
traffic, not only L2->SM) or ``estimated:<from>``; unsupported values are NaN.

FLOP kinds: ``flops_tensor`` (every dense FLOP source type: fp16, bf16, tf32, fp8, fp64
DMMA; ``tensor_src`` names the busiest), ``flops_fp32``, ``flops_fp16`` (HFMA2/HADD2/HMUL2,
non-tensor), ``flops_fp64`` (DFMA/DADD/DMUL, non-tensor). ``flops_kind`` is the kind with
the largest FLOP/s (ties: tensor, fp32, fp16, fp64) and ``flops``, ``compute_ceiling``,
``ai``, ``ridge`` are that kind's chart, as Nsight Compute draws an FP32 kernel on its
single-precision chart. ``flops_total`` = the sum of the kinds a report has.

Arithmetic intensity at a level = FLOP/s / that level's bytes/s: ``ai`` (the launch's own
kind), ``ai_tensor`` (what the Tensor Core chart plots), ``ai_fp32`` (the Single-precision
chart) and ``ai_total`` (all kinds; not an Nsight Compute chart value).
"""
from __future__ import annotations

import math

import pandas as pd

from flashprof.analysis.metrics import recipes
from flashprof.analysis.stages.launches import launch_records
from flashprof.analysis.metrics.recipes import (FLOP_KINDS, L1_BYTES_PER_CYCLE, L2_BYTES_PER_CYCLE, SMEM_BYTES_PER_CLK_PER_SM, SMEM_BYTES_PER_WAVEFRONT)  # noqa: F401 (re-exported)

CONVENTION = "ncu-hierarchical-roofline"
SMEM_CONVENTION = "flashprof-smem-wavefronts"
LEVELS = ("L1", "L2", "DRAM", "shared memory")
_LEVEL_Q = {"L1": ("bytes_l1", "l1_ceiling"), "L2": ("bytes_l2", "l2_ceiling"),
            "DRAM": ("bytes_dram", "dram_ceiling"), "shared memory": ("bytes_smem", "smem_ceiling")}

ROOFLINE_COLUMNS = (
    "report", "range_idx", "launch", "kernel", "variant", "gpu", "arch", "level",
    "convention", "in_ncu_chart", "duration_ns", "sm_clock_hz", "tensor_path",
    "flops_tensor", "flops_fp32", "flops_total", "tensor_ceiling", "fp32_ceiling",
    "bytes_per_s", "bw_ceiling", "ai_tensor", "ai_fp32", "ai_total",
    "ridge_tensor", "ridge_fp32", "bound_tensor",
    # the launch's own FLOP kind and every kind's rate
    "flops_kind", "flops", "compute_ceiling", "ai", "ridge", "tensor_src",
    "flops_fp16", "flops_fp64", "fp16_ceiling", "fp64_ceiling",
    "flops_provenance", "bytes_provenance",
)
_NAN = math.nan


def _div(a: float, b: float) -> float:
    return a / b if b and not (math.isnan(a) or math.isnan(b)) else _NAN


def flops_kind(rates: dict[str, float]) -> str | None:
    """The FLOP kind with the largest finite rate (ties: FLOP_KINDS order); None if no rate
    is known or every known rate is zero (no floating-point work was counted, e.g. an
    integer IMMA GEMM: it has no place on a FLOP roofline, rather than a point at 0)."""
    known = [(k, rates[k]) for k in FLOP_KINDS if not math.isnan(rates.get(k, _NAN))]
    if not known or max(v for _, v in known) <= 0:
        return None
    return max(known, key=lambda kv: (kv[1], -FLOP_KINDS.index(kv[0])))[0]


def launch_quantities(ev: recipes.LaunchEval) -> dict:
    """Per-launch roofline inputs from the launch's evaluated recipes: values, provenance
    and the tensor path."""
    res, m = ev.results, ev.metrics
    val = {q: r.value for q, r in res.items()}
    prov = {q: r.provenance for q, r in res.items()}
    rates = {k: val[f"flops_{k}"] for k in FLOP_KINDS}
    kind = flops_kind(rates)
    if kind not in (None, "tensor") and recipes.integer_mma_main(m):
        kind = None  # integer MMA: no FLOP roofline point from its floating-point epilogue
    _pc, _metric, path, src = recipes.tensor_detail(m)
    tensor_recipe = res["flops_tensor"].recipe or ""
    if "x512" in tensor_recipe:
        path, src = "tensor", None
    elif prov["flops_tensor"] and prov["flops_tensor"].startswith("estimated"):
        path, src = "hmma", "fp16"
    known = [v for v in rates.values() if not math.isnan(v)]
    return {"val": val, "prov": prov, "rates": rates, "kind": kind, "path": path, "src": src,
            "total": sum(known) if known else _NAN}


def roofline(frame: pd.DataFrame) -> pd.DataFrame:
    """Hierarchical roofline rows (see module docstring) for every launch in ``frame``."""
    rows = []
    for rec in launch_records(frame):
        key, info = rec.key, rec.ident
        q = launch_quantities(rec.eval)
        val, prov, kind = q["val"], q["prov"], q["kind"]
        tensor, fp32, total = val["flops_tensor"], val["flops_fp32"], q["total"]
        flops = val[f"flops_{kind}"] if kind else _NAN
        ceiling = val[f"{kind}_ceiling"] if kind else _NAN
        for level in LEVELS:
            bq, cq = _LEVEL_Q[level]
            bw, bw_ceiling = val[bq], val[cq]
            ai_tensor, ridge_tensor = _div(tensor, bw), _div(val["tensor_ceiling"], bw_ceiling)
            bound = _NAN
            if not (math.isnan(ai_tensor) or math.isnan(ridge_tensor)):
                bound = "memory" if ai_tensor < ridge_tensor else "compute"
            rows.append({
                "report": key[0], "range_idx": key[1], "launch": key[2],
                "kernel": info["kernel"], "variant": info["variant"], "gpu": info["gpu"],
                "arch": info["arch"], "level": level,
                "convention": SMEM_CONVENTION if level == "shared memory" else CONVENTION,
                "in_ncu_chart": level != "shared memory" and prov[bq] in (None, recipes.EXACT),
                "duration_ns": val["duration_ns"], "sm_clock_hz": val["sm_clock_hz"],
                "tensor_path": q["path"],
                "flops_tensor": tensor, "flops_fp32": fp32, "flops_total": total,
                "tensor_ceiling": val["tensor_ceiling"], "fp32_ceiling": val["fp32_ceiling"],
                "bytes_per_s": bw, "bw_ceiling": bw_ceiling,
                "ai_tensor": ai_tensor, "ai_fp32": _div(fp32, bw), "ai_total": _div(total, bw),
                "ridge_tensor": ridge_tensor, "ridge_fp32": _div(val["fp32_ceiling"], bw_ceiling),
                "bound_tensor": bound,
                "flops_kind": kind, "flops": flops, "compute_ceiling": ceiling,
                "ai": _div(flops, bw), "ridge": _div(ceiling, bw_ceiling), "tensor_src": q["src"],
                "flops_fp16": val["flops_fp16"], "flops_fp64": val["flops_fp64"],
                "fp16_ceiling": val["fp16_ceiling"], "fp64_ceiling": val["fp64_ceiling"],
                "flops_provenance": prov[f"flops_{kind}"] if kind else None,
                "bytes_provenance": prov[bq],
            })
    out = pd.DataFrame(rows, columns=list(ROOFLINE_COLUMNS))
    out["level"] = pd.Categorical(out["level"], categories=list(LEVELS), ordered=True)
    return out

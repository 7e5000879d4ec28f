"""Metric recipes: every number the analysis reports, and where it comes from, in one table.

Input: one launch's metrics as ``{metric name: value}`` (a row of the long frame) plus its
``arch`` (``sm_90``) for the few estimates that need a published peak.
Output: ``evaluate(metrics, arch)`` -> ``{quantity: Result(value, provenance, recipe)}``.

Each quantity (RECIPES' keys) has an ordered tuple of recipes. The first recipe whose
metrics are all present (and finite) wins. Order, per quantity:

1. Nsight Compute's hierarchical roofline chart metrics (sections
   ``SpeedOfLight_Hierarchical{Tensor,Single,Half,Double}RooflineChart``, 2022.x and later);
2. the older ``SpeedOfLight_RooflineChart`` section's metrics (``derived__..._x2``,
   ``derived__..._pipe_tensor_x512``);
3. raw counters (``dram__bytes_read.sum + dram__bytes_write.sum``, ``lts__t_sectors.sum``,
   ``..._pred_on.sum`` counts over the duration);
4. labelled estimates (tensor FLOP/s from the tensor pipe's active cycles x a published peak).

Provenance of a value: ``exact`` (Nsight Compute's own chart formula), ``derived`` (raw
counters, our arithmetic), ``estimated:<from what>``; a value no recipe supports is NaN and
the quantity is listed as missing, with COLLECT (the ``ncu`` option that collects it).
A recipe that uses another quantity inherits the weaker provenance of the two.

FLOP conventions: "ops" of ``sm__ops_path_tensor_*`` are FLOPs (dense, ``sparsity_off``;
integer sources are not FLOPs and are left out); an FMA is 2 FLOPs; an HFMA2/HADD2/HMUL2
thread instruction works on 2 lanes (Nsight Compute 2025's ``derived__..._hfma_pred_on_x4``;
the older chart's ``_hfma_pred_on_x2`` counts an HFMA2 as 2 FLOPs and is kept as it is).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

from flashprof.analysis.metrics.recipe_kit import (NAN, EXACT, DERIVED, TENSOR_FP16_FLOP_PER_CLK_PER_SM, SMEM_BYTES_PER_WAVEFRONT, SMEM_BYTES_PER_CLK_PER_SM, L2_BYTES_PER_CYCLE, L1_BYTES_PER_CYCLE, SECTOR_BYTES, FLOP_KINDS, Recipe, Result, make_recipe, tensor_counters, tensor_detail, tensor_exact, tensor_ceiling_exact, hmma_pct_elapsed, tensor_estimate, tensor_ceiling_estimate, has_tensor_counters, DPEAK, per_cycle_sum, peak_rate, fp_recipes, fp_ceilings, scaled_metric, over_time, from_pct, peak_at, l1_recipes, l1_ceiling_recipes, LTS, DRAM_PCT, is_finite, any_busy, tensor_fp_work)  # noqa: F401 (public names re-exported)


# --------------------------------------------------------------------------- the table
RECIPES: dict[str, tuple[Recipe, ...]] = {
    "duration_ns": (
        make_recipe(EXACT, "gpu__time_duration.sum", ("gpu__time_duration.sum",), (), scaled_metric("gpu__time_duration.sum", 1.0)),
    ),
    "sm_clock_hz": (
        make_recipe(EXACT, "sm__cycles_elapsed.avg.per_second", ("sm__cycles_elapsed.avg.per_second",), (),
           scaled_metric("sm__cycles_elapsed.avg.per_second", 1.0)),
        make_recipe(EXACT, "gpc__cycles_elapsed.avg.per_second (same clock domain)", ("gpc__cycles_elapsed.avg.per_second",), (),
           scaled_metric("gpc__cycles_elapsed.avg.per_second", 1.0)),
        make_recipe(DERIVED, "sm__cycles_elapsed.avg / duration", ("sm__cycles_elapsed.avg",), ("duration_ns",),
           lambda c: c.m["sm__cycles_elapsed.avg"] / (c.q("duration_ns") * 1e-9)),
        make_recipe(DERIVED, "gpc__cycles_elapsed.max / duration (the GPCs share the SM clock)", ("gpc__cycles_elapsed.max",),
           ("duration_ns",), lambda c: c.m["gpc__cycles_elapsed.max"] / (c.q("duration_ns") * 1e-9)),
    ),
    "smsp_clock_hz": (
        make_recipe(EXACT, "smsp__cycles_elapsed.avg.per_second", ("smsp__cycles_elapsed.avg.per_second",), (),
           scaled_metric("smsp__cycles_elapsed.avg.per_second", 1.0)),
        make_recipe(DERIVED, "SM clock (the SMSPs run on it)", (), ("sm_clock_hz",), lambda c: c.q("sm_clock_hz")),
    ),
    "sm_count": (
        make_recipe(EXACT, "launch__sm_count", ("launch__sm_count",), (), scaled_metric("launch__sm_count", 1.0)),
        make_recipe(EXACT, "device__attribute_multiprocessor_count", ("device__attribute_multiprocessor_count",), (),
           scaled_metric("device__attribute_multiprocessor_count", 1.0)),
    ),
    "flops_tensor": (
        make_recipe(EXACT, "sum of sm__ops_path_tensor_[op_<path>_]src_<type>[_dst_<type>]_sparsity_off.sum.per_cycle_elapsed"
                  " x SM clock [hierarchical Tensor chart]", (), ("sm_clock_hz",), tensor_exact),
        make_recipe(EXACT, "derived__smsp__inst_executed_pipe_tensor_x512 x smsp clock [older SpeedOfLight_RooflineChart]",
           ("derived__smsp__inst_executed_pipe_tensor_x512",), ("smsp_clock_hz",),
           per_cycle_sum({"derived__smsp__inst_executed_pipe_tensor_x512": 1})),
        make_recipe("estimated:tensor pipe active cycles x published dense FP16 peak",
           "HMMA pipe active % of elapsed cycles / 100 x dense FP16 FLOP/clk/SM x SMs x SM clock", (), ("sm_clock_hz", "sm_count"), tensor_estimate),
    ),
    "tensor_ceiling": (
        make_recipe(EXACT, "the busiest tensor counter's .sum.peak_sustained x SM clock", (), ("sm_clock_hz",),
           tensor_ceiling_exact),
        make_recipe(EXACT, "derived__sm__inst_executed_pipe_tensor_x512 x SM clock",
           ("derived__sm__inst_executed_pipe_tensor_x512",), ("sm_clock_hz",),
           peak_rate("derived__sm__inst_executed_pipe_tensor_x512", 1.0)),
        make_recipe("estimated:published dense FP16 peak", "FP16 FLOP/clk/SM x SMs x SM clock", (),
           ("sm_clock_hz", "sm_count"), tensor_ceiling_estimate),
    ),
    "flops_fp32": fp_recipes("fp32", "fadd", "fmul", "ffma", 1.0),
    "fp32_ceiling": fp_ceilings("ffma", 1.0, "ffma_pred_on_x2"),
    "flops_fp16": fp_recipes("fp16", "hadd", "hmul", "hfma", 2.0),
    "fp16_ceiling": fp_ceilings("hfma", 2.0, "hfma_pred_on_x4")
    + (make_recipe(EXACT, "derived__sm__..._hfma_pred_on_x2 x SM clock [older chart]", (DPEAK.format("hfma_pred_on_x2"),),
          ("sm_clock_hz",), peak_rate(DPEAK.format("hfma_pred_on_x2"), 1.0)),),
    "flops_fp64": fp_recipes("fp64", "dadd", "dmul", "dfma", 1.0),
    "fp64_ceiling": fp_ceilings("dfma", 1.0, "dfma_pred_on_x2"),
    # sm_90 names the L1 writeback _lgds (it counts distributed shared memory too), sm_75-8.9
    # _lg: every exact recipe of both before the derived ones.
    "bytes_l1": l1_recipes("lgds")[:2] + l1_recipes("lg")[:2] + l1_recipes("lgds")[2:] + l1_recipes("lg")[2:],
    "l1_ceiling": l1_ceiling_recipes("lgds")[:2] + l1_ceiling_recipes("lg")[:2] + l1_ceiling_recipes("lgds")[2:] + l1_ceiling_recipes("lg")[2:],
    "bytes_l2": (
        make_recipe(EXACT, f"32 B x {LTS}.per_second", (f"{LTS}.per_second",), (), scaled_metric(f"{LTS}.per_second", L2_BYTES_PER_CYCLE)),
        make_recipe(EXACT, "derived__lts__lts2xbar_bytes.sum.per_second", ("derived__lts__lts2xbar_bytes.sum.per_second",), (),
           scaled_metric("derived__lts__lts2xbar_bytes.sum.per_second", 1.0)),
        make_recipe(DERIVED, "lts__t_bytes.sum.per_second (all L2 traffic)", ("lts__t_bytes.sum.per_second",), (),
           scaled_metric("lts__t_bytes.sum.per_second", 1.0)),
        make_recipe(DERIVED, "32 B x lts__t_sectors.sum / duration (all L2 traffic)", ("lts__t_sectors.sum",), ("duration_ns",),
           over_time(("lts__t_sectors.sum",), SECTOR_BYTES)),
    ),
    "l2_ceiling": (
        make_recipe(EXACT, f"32 B x {LTS}.peak_sustained x L2 clock",
           (f"{LTS}.peak_sustained", "lts__cycles_elapsed.avg.per_second"), (),
           peak_at(f"{LTS}.peak_sustained", L2_BYTES_PER_CYCLE, "lts__cycles_elapsed.avg.per_second")),
        make_recipe(DERIVED, "32 B x lts__t_sectors.sum.per_second / (lts__t_sectors.sum.pct_of_peak_sustained_elapsed / 100)",
           ("lts__t_sectors.sum.per_second", "lts__t_sectors.sum.pct_of_peak_sustained_elapsed"), (),
           from_pct(("lts__t_sectors.sum.per_second", SECTOR_BYTES), "lts__t_sectors.sum.pct_of_peak_sustained_elapsed")),
    ),
    "bytes_dram": (
        make_recipe(EXACT, "dram__bytes.sum.per_second", ("dram__bytes.sum.per_second",), (), scaled_metric("dram__bytes.sum.per_second", 1.0)),
        make_recipe(DERIVED, "(dram__bytes_read.sum + dram__bytes_write.sum) / duration",
           ("dram__bytes_read.sum", "dram__bytes_write.sum"), ("duration_ns",),
           over_time(("dram__bytes_read.sum", "dram__bytes_write.sum"))),
        make_recipe(DERIVED, "32 B x (dram__sectors_read.sum + dram__sectors_write.sum) / duration",
           ("dram__sectors_read.sum", "dram__sectors_write.sum"), ("duration_ns",),
           over_time(("dram__sectors_read.sum", "dram__sectors_write.sum"), SECTOR_BYTES)),
        # GB20x (sm_120) spells the split dram__bytes_op_read / _op_write (gb20x chip lists).
        make_recipe(DERIVED, "(dram__bytes_op_read.sum + dram__bytes_op_write.sum) / duration [GB20x names]",
           ("dram__bytes_op_read.sum", "dram__bytes_op_write.sum"), ("duration_ns",),
           over_time(("dram__bytes_op_read.sum", "dram__bytes_op_write.sum"))),
    ),
    "dram_ceiling": (
        make_recipe(EXACT, "dram__bytes.sum.peak_sustained x DRAM clock",
           ("dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second"), (),
           peak_at("dram__bytes.sum.peak_sustained", 1.0, "dram__cycles_elapsed.avg.per_second")),
        make_recipe(DERIVED, f"dram__bytes_read.sum.per_second / ({DRAM_PCT} / 100)",
           ("dram__bytes_read.sum.per_second", DRAM_PCT), (),
           from_pct(("dram__bytes_read.sum.per_second", 1.0), DRAM_PCT)),
        make_recipe(DERIVED, "dram__bytes_op_read.sum.per_second / (its pct_of_peak_sustained_elapsed / 100) [GB20x names]",
           ("dram__bytes_op_read.sum.per_second", "dram__bytes_op_read.sum.pct_of_peak_sustained_elapsed"), (),
           from_pct(("dram__bytes_op_read.sum.per_second", 1.0), "dram__bytes_op_read.sum.pct_of_peak_sustained_elapsed")),
    ),
    "bytes_smem": (
        make_recipe(DERIVED, "128 B x l1tex__data_pipe_lsu_wavefronts_mem_shared.sum / duration [flashprof-smem-wavefronts]",
           ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",), ("duration_ns",),
           over_time(("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",), SMEM_BYTES_PER_WAVEFRONT)),
    ),
    "smem_ceiling": (
        make_recipe(DERIVED, "128 B/clk/SM x SMs x SM clock", (), ("sm_count", "sm_clock_hz"),
           lambda c: SMEM_BYTES_PER_CLK_PER_SM * c.q("sm_count") * c.q("sm_clock_hz")),
    ),
}

# Pipe utilisation (% of peak sustained active) and issue activity: first metric present
# wins; the first alternative is Compute Workload Analysis' own, later ones are labelled.
PIPE_METRICS: dict[str, tuple[str, ...]] = {
    "tensor": ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
    "fma": ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"),
    "alu": ("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"),
    "xu": ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",),
    "lsu": ("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",),
    "uniform": ("sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active",),
    "fp64": ("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",),
    "tma": ("sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active",),
}
ISSUE_METRIC = "smsp__issue_active.avg.pct_of_peak_sustained_active"
# Warp-state ratio of one stall reason: the one spelling of the name (stalls, the gap model).
STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
STALL_METRIC = STALL_PREFIX + "{}" + STALL_SUFFIX
BANK_CONFLICT_METRIC = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{}.sum"  # op: ld, st
SMEM_WAVEFRONT_METRIC = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{}.sum"
BANK_METRIC = BANK_CONFLICT_METRIC.format("ld")
LDSM_METRIC = "smsp__inst_executed_op_ldsm.sum"
INST_EXECUTED_METRIC = "smsp__inst_executed.sum"


def stall_reason(metric: str) -> str | None:
    """The reason in a STALL_METRIC name, None for any other metric."""
    if metric.startswith(STALL_PREFIX) and metric.endswith(STALL_SUFFIX) and len(metric) > len(STALL_PREFIX + STALL_SUFFIX):
        return metric[len(STALL_PREFIX):-len(STALL_SUFFIX)]
    return None

# The ncu option that collects each quantity's first recipe (what a user should add).
COLLECT: dict[str, str] = {
    "duration_ns": "--section SpeedOfLight", "sm_clock_hz": "--section SpeedOfLight",
    "flops_tensor": "--section SpeedOfLight_HierarchicalTensorRooflineChart",
    "flops_fp32": "--section SpeedOfLight_HierarchicalSingleRooflineChart",
    "flops_fp16": "--section SpeedOfLight_HierarchicalHalfRooflineChart",
    "flops_fp64": "--section SpeedOfLight_HierarchicalDoubleRooflineChart",
    "bytes_l1": "--section SpeedOfLight_HierarchicalSingleRooflineChart",
    "bytes_l2": "--section SpeedOfLight_HierarchicalSingleRooflineChart",
    "bytes_dram": "--section SpeedOfLight_HierarchicalSingleRooflineChart",
    "bytes_smem": "--section MemoryWorkloadAnalysis_Tables",
    "pipes": "--section ComputeWorkloadAnalysis", "issue_active": "--section SchedulerStats",
    "stalls": "--section WarpStateStats", "bank_conflicts": "--section MemoryWorkloadAnalysis_Tables",
}
LABELS: dict[str, str] = {
    "duration_ns": "duration", "sm_clock_hz": "SM clock", "flops_tensor": "tensor FLOP/s",
    "flops_fp32": "FP32 FLOP/s", "flops_fp16": "FP16 FLOP/s", "flops_fp64": "FP64 FLOP/s",
    "bytes_l1": "L1 bytes/s", "bytes_l2": "L2 bytes/s", "bytes_dram": "DRAM bytes/s",
    "bytes_smem": "shared-memory bytes/s", "pipes": "pipe utilisation", "issue_active": "issue activity",
    "stalls": "stall reasons", "bank_conflicts": "bank conflicts",
}
# Quantities a launch should have; the rest (ceilings, clocks) follow from the same sections.
EXPECTED = ("duration_ns", "sm_clock_hz", "flops_tensor", "flops_fp32", "flops_fp16", "flops_fp64",
            "bytes_l1", "bytes_l2", "bytes_dram", "bytes_smem", "pipes", "issue_active", "stalls",
            "bank_conflicts")


# --------------------------------------------------------------------------- per chip
# What a chip cannot have, and why. tests/test_chip_coverage.py checks every chip Nsight
# Compute 2025.3.1 lists (tests/data/chips) both ways: each quantity has a recipe whose
# metrics the chip has, or its reason here; no reason here where a recipe works.
_TU_NO_TC = ("tu116", "tu117")
_TEGRA = ("ga10b", "gb10b", "gb20b")
_NO_TC_WHY = ("TU116/TU117 (GTX 16xx) have no tensor cores: Nsight Compute lists no "
              "sm__ops_path_tensor_* for them (their HMMA-pipe counters count FP16 work)")
_TEGRA_WHY = ("integrated GPU (Orin, Thor, GB10): memory is the SoC's, shared with the CPU, and "
              "Nsight Compute lists no dram__ counters for it; L2 traffic is the last level measured")
NOT_ON_CHIP: dict[str, dict[tuple[str, ...], str]] = {
    "flops_tensor": {_TU_NO_TC: _NO_TC_WHY},
    "tensor_ceiling": {_TU_NO_TC: _NO_TC_WHY},
    "bytes_dram": {_TEGRA: _TEGRA_WHY},
    "dram_ceiling": {_TEGRA: _TEGRA_WHY},
}
# Tensor instruction families: the counters that show a chip has one, and the
# sm__ops_path_tensor_* counters (regex on op and src) that count its FLOPs.
TENSOR_PATHS: dict[str, dict] = {
    "hmma": {"what": "mma.sync / wmma on fp16, bf16, tf32 (HMMA)",
             "shown_by": ("sm__pipe_tensor_op_hmma_cycles_active", "sm__pipe_tensor_subpipe_hmma_cycles_active"),
             "op": r"^(hmma)?$", "src": r"^(fp16|bf16|tf32)(_|$)"},
    "dmma_tensor_pipe": {"what": "FP64 mma.sync (DMMA) on the tensor pipe",
                         "shown_by": ("sm__pipe_tensor_op_dmma_cycles_active", "sm__pipe_tensor_subpipe_dmma_cycles_active"),
                         "op": r"^$", "src": r"^fp64$"},
    "dmma_fp64_pipe": {"what": "FP64 mma.sync (DMMA) on the FP64 pipe",
                       "shown_by": ("sm__inst_executed_pipe_fp64_op_dmma",),
                       "op": r"^$", "src": r"^fp64$"},
    "wgmma": {"what": "warpgroup MMA (wgmma: HGMMA; QGMMA fp8 counts under src_fp8)",
              "shown_by": ("sm__inst_executed_pipe_tensor_op_gmma",), "op": r"^hgmma$", "src": r"."},
    "tcgen05": {"what": "tcgen05.mma on tensor memory (UTCHMMA / UTCQMMA / UTCOMMA)",
                "shown_by": ("sm__sass_inst_executed_op_utcmma",), "op": r"^utc[a-z]*mma$", "src": r"."},
}
_TURING = ("tu102", "tu104", "tu106", "tu116", "tu117")
_GA10X_AD10X = ("ga102", "ga103", "ga104", "ga106", "ga107", "ga10b", "ad102", "ad103", "ad104", "ad106", "ad107")
_GB20X = ("gb202", "gb203", "gb205", "gb206", "gb207", "gb20b")
_NOT_HOPPER = _TURING + ("ga100",) + _GA10X_AD10X + ("gb100", "gb102", "gb10b", "gb110") + _GB20X
TENSOR_PATH_ABSENT: dict[str, dict[tuple[str, ...], str]] = {
    "hmma": {_TU_NO_TC: _NO_TC_WHY},
    "dmma_tensor_pipe": {
        _TURING: "Turing has no FP64 MMA (DMMA arrived with sm_80)",
        _GA10X_AD10X + _GB20X + ("gb10b", "gb110"): (
            "no FP64 tensor path: DMMA runs on the FP64 pipe (sm__inst_executed_pipe_fp64_op_dmma), "
            "at FP64-pipe rate; GA100, GH100 and GB100/GB102 have the tensor-pipe DMMA")},
    "dmma_fp64_pipe": {
        _TURING: "Turing has no FP64 MMA (DMMA arrived with sm_80)",
        ("ga100", "gh100", "gb100", "gb102"): "DMMA runs on the tensor pipe on this chip (dmma_tensor_pipe)"},
    "wgmma": {_NOT_HOPPER: "wgmma (HGMMA/QGMMA) exists on sm_90 (Hopper) only: before Hopper there is "
                           "no warpgroup MMA, and Blackwell replaced it by tcgen05 (sm_100/103/110) or keeps "
                           "mma.sync only (sm_120/121)"},
    "tcgen05": {_TURING + ("ga100", "gh100") + _GA10X_AD10X + _GB20X: (
        "tcgen05 (UTC*MMA on tensor memory) exists on sm_100/103/110 only (GB100/GB102/GB110/GB10B); "
        "older chips and the GB20x consumer/GB10 chips (sm_120/121) have no tensor memory")},
}


def chip_reason(table: dict[str, dict[tuple[str, ...], str]], key: str, chip: str) -> str | None:
    """The reason ``table`` gives why ``key`` cannot exist on ``chip`` (None: it can)."""
    return next((why for chips, why in table.get(key, {}).items() if chip in chips), None)


# --------------------------------------------------------------------------- work shown
# Counters that show work of a quantity's kind, in the direction its recipes measure (L1:
# loads the LSU writes back; L2: reads returned to the SMs). Where one is > 0 but the
# quantity's recipes give 0 or nothing, the value is null with that reason, never 0.
WORK: dict[str, tuple[str, ...]] = {
    "flops_fp32": tuple(f"{u}__sass_thread_inst_executed_op_{op}_pred_on"
                        for op in ("ffma", "fadd", "fmul") for u in ("smsp", "sm")),
    "flops_fp16": tuple(f"{u}__sass_thread_inst_executed_op_{op}_pred_on"
                        for op in ("hfma", "hadd", "hmul") for u in ("smsp", "sm"))
    + ("sm__inst_executed_pipe_tensor_op_hmma_type_hfma2",),
    "flops_fp64": tuple(f"{u}__sass_thread_inst_executed_op_{op}_pred_on"
                        for op in ("dfma", "dadd", "dmul") for u in ("smsp", "sm")),
    "bytes_l1": ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld", "l1tex__t_requests_pipe_lsu_mem_global_op_ld",
                 "l1tex__t_sectors_pipe_lsu_mem_local_op_ld", "smsp__inst_executed_op_global_ld",
                 "smsp__inst_executed_op_local_ld"),
    "bytes_l2": ("lts__t_sectors_srcunit_tex_op_read", "lts__t_sectors_op_read"),
    "bytes_dram": ("dram__sectors_read", "dram__sectors_write", "dram__bytes_read", "dram__bytes_write",
                   "dram__sectors_op_read", "dram__sectors_op_write", "dram__bytes_op_read", "dram__bytes_op_write",
                   "dram__sectors", "dram__bytes", "fbpa__dram_read_sectors", "fbpa__dram_write_sectors",
                   "fbpa__dram_sectors"),
    "bytes_smem": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st",
                   "smsp__inst_executed_op_shared_ld", "smsp__inst_executed_op_shared_st",
                   "smsp__inst_executed_op_ldsm", "sm__sass_inst_executed_op_shared_ld",
                   "sm__sass_inst_executed_op_shared_st", "sm__sass_inst_executed_op_ldsm"),
}


def work_shown(quantity: str, m: dict) -> tuple[str, float] | None:
    """The counter (name, value) in ``m`` that shows work of ``quantity``'s kind, if any."""
    if quantity == "flops_tensor":
        return tensor_fp_work(m)
    return any_busy(m, WORK[quantity]) if quantity in WORK else None


def null_reason(quantity: str, result: Result, shown: tuple[str, float]) -> str:
    name, value = shown
    what = ("tensor-pipe MMA work (the HMMA path also carries HFMA2.MMA on sm_80/sm_90)"
            if quantity == "flops_tensor" else f"{LABELS[quantity]} work")
    if is_finite(result.value):
        return (f"{name} = {value:g} shows {what}, but the recipe the report supports "
                f"({result.recipe}) reads 0")
    counters = ("no tensor FLOP counter the recipes understand (sm__ops_path_tensor_*)"
                if quantity == "flops_tensor" else "no counter the recipes read for it")
    return f"{name} = {value:g} shows {what}, but the report has {counters}; {COLLECT[quantity]} collects one"


# --------------------------------------------------------------------------- evaluation
_RANK = {EXACT: 0, DERIVED: 1}  # the one ranking of provenances: anything else is weaker


def _weaker(a: str, b: str) -> str:
    return max((a, b), key=lambda p: _RANK.get(p, 2))


def weakest(*provs: str | None) -> str | None:
    """The weakest of several provenances (exact < derived < estimated:...); None if any is None."""
    if any(p is None for p in provs):
        return None
    out = provs[0]
    for p in provs[1:]:
        out = _weaker(out, p)
    return out


class _Ctx:
    def __init__(self, m: dict, arch):
        self.m = {k: float(v) for k, v in m.items() if is_finite(v)}
        self.arch = arch
        self.done: dict[str, Result] = {}

    def first(self, *names: str) -> float:
        return next((self.m[n] for n in names if n in self.m), NAN)

    def q(self, name: str) -> float:
        return self.get(name).value

    def get(self, name: str) -> Result:
        if name not in self.done:
            self.done[name] = Result(NAN, None, None)  # guards against cycles
            self.done[name] = self._solve(name)
        return self.done[name]

    def _solve(self, name: str) -> Result:
        res = self._first_recipe(name)
        if not is_finite(res.value) or res.value == 0:
            shown = work_shown(name, self.m)
            if shown:
                return Result(NAN, None, None, null_reason(name, res, shown))
        return res

    def _first_recipe(self, name: str) -> Result:
        for recipe in RECIPES[name]:
            if any(n not in self.m for n in recipe.metrics):
                continue
            if name.startswith(("flops_tensor", "tensor_ceiling")) and recipe.compute in (
                    tensor_exact, tensor_ceiling_exact) and not has_tensor_counters(self.m):
                continue
            if recipe.compute is tensor_estimate and not is_finite(hmma_pct_elapsed(self)):
                continue
            deps = [self.get(u) for u in recipe.uses]
            if any(d.provenance is None for d in deps):
                continue
            try:
                value = recipe.compute(self)
            except ZeroDivisionError:  # a 0 duration or clock: this recipe cannot say
                continue
            if not is_finite(value):
                continue
            prov = recipe.provenance
            for d in deps:
                prov = _weaker(prov, d.provenance)
            return Result(float(value), prov, recipe.formula)
        return Result(NAN, None, None)


def evaluate(m: dict, arch=None) -> dict[str, Result]:
    """Every quantity of RECIPES for one launch's metrics."""
    ctx = _Ctx(m, arch)
    return {name: ctx.get(name) for name in RECIPES}


@dataclass(frozen=True)
class LaunchEval:
    """One launch's recipes, evaluated once: its metrics, every quantity's Result, and the
    EXPECTED quantities it cannot support."""
    arch: str | None
    metrics: dict
    results: dict
    missing: tuple


# frame id -> (weak reference to the frame, fingerprint of its launch rows, evaluations)
_EVALUATED: dict[int, tuple] = {}


def _fingerprint(frame) -> tuple:
    import pandas as pd
    cols = [c for c in ("report", "range_idx", "launch", "arch", "metric", "value") if c in frame.columns]
    return len(frame), tuple(frame.columns), int(pd.util.hash_pandas_object(frame[cols], index=False).sum())


def evaluate_launches(frame, launches) -> dict:
    """{launch key: LaunchEval} for every launch of the long ``frame``, in frame order.

    ``launches(frame)`` yields ``(key, arch, {metric: value})`` per launch (the parse
    stage's ``per_launch``; recipes sit upstream of it). Each launch's recipes run once per
    frame: the warning at load time, the roofline, pipes, stalls, summary and figures of
    the same frame read the same evaluations (a frame changed in place is evaluated again).
    """
    fp = _fingerprint(frame)
    hit = _EVALUATED.get(id(frame))
    if hit is not None and hit[0]() is frame and hit[1] == fp:
        return hit[2]
    out = {}
    for key, arch, m in launches(frame):
        res = evaluate(m, arch)
        out[key] = LaunchEval(arch, m, res, tuple(missing(m, res)))
    for k in [k for k, v in _EVALUATED.items() if v[0]() is None]:
        del _EVALUATED[k]
    _EVALUATED[id(frame)] = (weakref.ref(frame), fp, out)
    return out


def missing(m: dict, results: dict[str, Result]) -> list[str]:
    """EXPECTED quantities this launch's metrics cannot support."""
    have = set(m)
    out = []
    for q in EXPECTED:
        if q in results:
            ok = results[q].provenance is not None
        elif q == "pipes":
            ok = any(a in have for alts in PIPE_METRICS.values() for a in alts)
        elif q == "issue_active":
            ok = ISSUE_METRIC in have
        elif q == "stalls":
            ok = any(stall_reason(n) for n in have)
        else:
            ok = BANK_METRIC in have
        if not ok:
            out.append(q)
    return out


def collect_hint(quantities) -> str:
    """The ncu options, de-duplicated in table order, that would collect ``quantities``."""
    return " ".join(dict.fromkeys(COLLECT[q] for q in quantities if q in COLLECT))


def markdown_table() -> str:
    """RECIPES as the Markdown table docs/METHOD.md carries (a test keeps the two equal)."""
    lines = ["| quantity | # | provenance | recipe |", "|---|---|---|---|"]
    for q, rs in RECIPES.items():
        for i, r in enumerate(rs, 1):
            formula = r.formula.replace("|", "\\|")
            lines.append(f"| `{q}` | {i} | {r.provenance} | {formula} |")
    return "\n".join(lines)

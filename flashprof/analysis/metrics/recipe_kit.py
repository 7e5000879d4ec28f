"""The building blocks of the metric recipes (analysis/metrics/recipes.py holds the table).

``Recipe`` (provenance, formula, metrics, uses, compute) and ``Result``; the hardware
constants the recipes multiply by (each with its source); the tensor-path helpers that pick
a launch's tensor counters; and the small factories (``scaled_metric``, ``over_time``,
``fp_recipes``, ``l1_recipes`` ...) that turn a metric name into a ``compute(ctx)`` function.
Nothing here evaluates anything: ``recipes.evaluate`` does.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

NAN = math.nan
EXACT, DERIVED = "exact", "derived"

# Dense FP16 tensor FLOP per clock per SM, for the estimate recipe only (never for a value
# a report's own counters give). sm_80: A100 312 TFLOPS / (108 SMs x 1.41 GHz), GA100
# whitepaper; sm_90: H100 SXM 989.4 TFLOPS / (132 SMs x 1.83 GHz), GH100 whitepaper (wgmma).
TENSOR_FP16_FLOP_PER_CLK_PER_SM = {"sm_80": 2048.0, "sm_90": 4096.0}

SMEM_BYTES_PER_WAVEFRONT = 128.0   # 32 banks x 4 B
SMEM_BYTES_PER_CLK_PER_SM = 128.0  # one wavefront per clock per SM
L2_BYTES_PER_CYCLE = 32.0          # lts2xbar moves one 32 B sector per active cycle
L1_BYTES_PER_CYCLE = 128.0         # one 128 B writeback per active cycle
SECTOR_BYTES = 32.0

FLOP_KINDS = ("tensor", "fp32", "fp16", "fp64")  # ties for flops_kind go to the first


def is_finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class Recipe:
    provenance: str
    formula: str                       # what a newcomer reads in METHOD.md
    metrics: tuple[str, ...] = ()      # all must be present
    uses: tuple[str, ...] = ()         # other quantities it needs
    compute: Callable | None = None    # (ctx) -> float


@dataclass(frozen=True)
class Result:
    value: float
    provenance: str | None
    recipe: str | None
    reason: str | None = None          # why the value is null although the report shows work


def make_recipe(provenance, formula, metrics=(), uses=(), compute=None) -> Recipe:
    return Recipe(provenance, formula, tuple(metrics), tuple(uses), compute)


# --------------------------------------------------------------------------- tensor
# A source is one floating-point type or several joined by "_": Turing counts its fp32-
# accumulate HMMA as src_fp16_bf16_tf32_dst_fp32 (tu10x chip lists), Blackwell its block-
# scaled MMA as src_fp4_fp6_fp8 / src_fp4_fp6. Integer sources (int1/4/8) are not FLOPs.
_FP_SRC = r"(?:fp16|bf16|tf32|fp64|fp8|fp6|fp4)"
_TENSOR_RE = re.compile(
    r"^sm__ops_path_tensor_(?:op_(?P<op>[a-z]+)_)?src_(?P<src>" + _FP_SRC + r"(?:_" + _FP_SRC + r")*)"
    r"(?:_dst_(?P<dst>[a-z0-9]+))?(?:_sparsity_(?P<sp>on|off))?\.sum\.per_cycle_elapsed$")
_PATH_PREFERENCE = ("hmma", "tensor", "hgmma")  # ceiling's path when no tensor op ran


def tensor_counters(m: dict) -> list[str]:
    """The ``sm__ops_path_tensor_*.sum.per_cycle_elapsed`` names to add up, without double
    counting: per source type, the per-instruction paths (``op_hmma``, ``op_hgmma``) if the
    report has any, else the aggregate name (GA100/GA10x, or ``src_fp64`` = DMMA); per path,
    dst-specific names over a dst-less one, ``sparsity_off`` over an unsuffixed one."""
    by_src: dict[str, dict[str, dict[tuple, str]]] = {}
    for name in m:
        hit = _TENSOR_RE.match(name)
        if not hit or hit["sp"] == "on":
            continue
        path = hit["op"] or "tensor"
        by_src.setdefault(hit["src"], {}).setdefault(path, {})[(hit["dst"], hit["sp"])] = name
    chosen = []
    for paths in by_src.values():
        ops = {p: v for p, v in paths.items() if p != "tensor"} or paths
        for variants in ops.values():
            with_dst = {k: v for k, v in variants.items() if k[0] is not None}
            pool = with_dst or variants
            dsts = {k[0] for k in pool}
            for dst in dsts:
                pick = {k[1]: v for k, v in pool.items() if k[0] == dst}
                chosen.append(pick.get("off") or pick[None])
    return sorted(chosen)


def tensor_detail(m: dict) -> tuple[float, str | None, str | None, str | None]:
    """(FLOP per SM-clock, ceiling metric, path, src) of the tensor counters in ``m``."""
    names = [n for n in tensor_counters(m) if is_finite(m.get(n))]
    if not names:
        return NAN, None, None, None
    per_cycle = sum(float(m[n]) for n in names)
    busy = [n for n in names if float(m[n]) > 0]
    if busy:
        metric = max(busy, key=lambda n: float(m[n]))
    else:
        def rank(n):
            hit = _TENSOR_RE.match(n)
            path = hit["op"] or "tensor"
            pref = _PATH_PREFERENCE.index(path) if path in _PATH_PREFERENCE else len(_PATH_PREFERENCE)
            return (pref, hit["src"] != "fp16", hit["dst"] != "fp32", n)
        metric = min(names, key=rank)
    hit = _TENSOR_RE.match(metric)
    return per_cycle, metric, hit["op"] or "tensor", hit["src"]


def tensor_exact(c) -> float:
    per_cycle, _metric, _p, _s = tensor_detail(c.m)
    return per_cycle * c.q("sm_clock_hz")


def tensor_ceiling_exact(c) -> float:
    _pc, metric, _p, _s = tensor_detail(c.m)
    peak = c.m.get(metric.replace(".sum.per_cycle_elapsed", ".sum.peak_sustained")) if metric else None
    return float(peak) * c.q("sm_clock_hz") if is_finite(peak) else NAN


def hmma_pct_elapsed(c) -> float:
    """Tensor pipe (HMMA only: the generic tensor pipe also counts IMMA/DMMA and, on sm_90,
    HFMA2) active cycles as % of elapsed cycles."""
    if _PIPE_PCT[0] in c.m:
        return c.m[_PIPE_PCT[0]]
    active, busy, elapsed = _PIPE_PCT[1], "sm__cycles_active.avg", "sm__cycles_elapsed.avg"
    if all(n in c.m for n in (active, busy, elapsed)) and c.m[elapsed] > 0:
        return c.m[active] * c.m[busy] / c.m[elapsed]
    return NAN


def tensor_estimate(c) -> float:
    per_clk = TENSOR_FP16_FLOP_PER_CLK_PER_SM.get(c.arch)
    if per_clk is None:
        return NAN
    return hmma_pct_elapsed(c) / 100.0 * per_clk * c.q("sm_count") * c.q("sm_clock_hz")


def tensor_ceiling_estimate(c) -> float:
    per_clk = TENSOR_FP16_FLOP_PER_CLK_PER_SM.get(c.arch)
    return NAN if per_clk is None else per_clk * c.q("sm_count") * c.q("sm_clock_hz")


def has_tensor_counters(m: dict) -> bool:
    return bool(tensor_counters(m))


_PIPE_PCT = ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
             "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active")

# --------------------------------------------------------------------------- FP32/16/64
_T = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
_DT = "derived__smsp__sass_thread_inst_executed_op_{}"
_PEAK = "sm__sass_thread_inst_executed_op_{}_pred_on.sum.peak_sustained"
DPEAK = "derived__sm__sass_thread_inst_executed_op_{}"
_PC = ".per_cycle_elapsed"


def per_cycle_sum(weights: dict[str, float]) -> Callable:
    def f(c):
        return sum(w * c.m[n] for n, w in weights.items()) * c.q("smsp_clock_hz")
    return f


def _counts_over_time(weights: dict[str, float]) -> Callable:
    def f(c):
        return sum(w * c.m[n] for n, w in weights.items()) / (c.q("duration_ns") * 1e-9)
    return f


def peak_rate(metric: str, factor: float) -> Callable:
    return lambda c: factor * c.m[metric] * c.q("sm_clock_hz")


def fp_recipes(kind: str, add: str, mul: str, fma: str, lanes: float) -> tuple[Recipe, ...]:
    """FLOP/s of a non-tensor kind: add + mul + 2 fma thread instructions (x lanes)."""
    raw_pc = {_T.format(add) + _PC: lanes, _T.format(mul) + _PC: lanes, _T.format(fma) + _PC: 2 * lanes}
    raw_n = {_T.format(add): lanes, _T.format(mul): lanes, _T.format(fma): 2 * lanes}
    out = []
    if kind == "fp16":
        new = {_DT.format("hadd_pred_on_x2"): 1, _DT.format("hmul_pred_on_x2"): 1, _DT.format("hfma_pred_on_x4"): 1}
        old = {_T.format("hadd") + _PC: 1, _T.format("hmul") + _PC: 1, _DT.format("hfma_pred_on_x2"): 1}
        out += [make_recipe(EXACT, "(derived hadd_x2 + hmul_x2 + hfma_x4 per cycle) x smsp clock [hierarchical Half chart]",
                   new, ("smsp_clock_hz",), per_cycle_sum(new)),
                make_recipe(EXACT, "(hadd + hmul + derived hfma_x2, per cycle) x smsp clock [older SpeedOfLight_RooflineChart]",
                   old, ("smsp_clock_hz",), per_cycle_sum(old))]
    out += [make_recipe(EXACT if kind != "fp16" else DERIVED,
               f"({lanes:g}x{add} + {lanes:g}x{mul} + {2 * lanes:g}x{fma} thread inst per cycle) x smsp clock",
               raw_pc, ("smsp_clock_hz",), per_cycle_sum(raw_pc)),
            make_recipe(DERIVED, f"({lanes:g}x{add} + {lanes:g}x{mul} + {2 * lanes:g}x{fma} thread inst) / duration",
               raw_n, ("duration_ns",), _counts_over_time(raw_n))]
    return tuple(out)


def fp_ceilings(fma: str, lanes: float, derived_peak: str) -> tuple[Recipe, ...]:
    return (
        make_recipe(EXACT, f"{DPEAK.format(derived_peak)} x SM clock", (DPEAK.format(derived_peak),), ("sm_clock_hz",),
           peak_rate(DPEAK.format(derived_peak), 1.0)),
        make_recipe(EXACT, f"{2 * lanes:g} x {_PEAK.format(fma)} x SM clock", (_PEAK.format(fma),), ("sm_clock_hz",),
           peak_rate(_PEAK.format(fma), 2 * lanes)),
    )


# --------------------------------------------------------------------------- bytes
def scaled_metric(metric: str, factor: float) -> Callable:
    return lambda c: factor * c.m[metric]


def over_time(metrics: tuple[str, ...], factor: float = 1.0) -> Callable:
    return lambda c: factor * sum(c.m[n] for n in metrics) / (c.q("duration_ns") * 1e-9)


def from_pct(rate: tuple[str, float], pct: str) -> Callable:
    """Ceiling = achieved rate / (its % of peak / 100)."""
    def f(c):
        p = c.m[pct]
        return rate[1] * c.m[rate[0]] / (p / 100.0) if p > 0 else NAN
    return f


def peak_at(metric: str, factor: float, clock: str) -> Callable:
    return lambda c: factor * c.m[metric] * c.m[clock]


def l1_recipes(kind: str) -> tuple[Recipe, ...]:
    wb = f"l1tex__lsu_writeback_active_mem_{kind}.sum"
    dwb = f"derived__l1tex__lsu_writeback_bytes_mem_{kind}.sum.per_second"
    return (
        make_recipe(EXACT, f"128 B x {wb}.per_second", (f"{wb}.per_second",), (), scaled_metric(f"{wb}.per_second", L1_BYTES_PER_CYCLE)),
        make_recipe(EXACT, dwb, (dwb,), (), scaled_metric(dwb, 1.0)),
        make_recipe(DERIVED, f"128 B x {wb} / duration", (wb,), ("duration_ns",), over_time((wb,), L1_BYTES_PER_CYCLE)),
    )


def l1_ceiling_recipes(kind: str) -> tuple[Recipe, ...]:
    wb = f"l1tex__lsu_writeback_active_mem_{kind}.sum"
    dwb = f"derived__l1tex__lsu_writeback_bytes_mem_{kind}.sum.peak_sustained"
    clk = "l1tex__cycles_elapsed.avg.per_second"
    return (
        make_recipe(EXACT, f"128 B x {wb}.peak_sustained x L1 clock", (f"{wb}.peak_sustained", clk), (),
           peak_at(f"{wb}.peak_sustained", L1_BYTES_PER_CYCLE, clk)),
        make_recipe(EXACT, f"{dwb} x L1 clock", (dwb, clk), (), peak_at(dwb, 1.0, clk)),
        make_recipe(DERIVED, f"L1 bytes/s / ({wb}.pct_of_peak_sustained_elapsed / 100)",
           (wb, f"{wb}.pct_of_peak_sustained_elapsed"), ("bytes_l1",),
           lambda c: c.q("bytes_l1") / (c.m[f"{wb}.pct_of_peak_sustained_elapsed"] / 100.0)
           if c.m[f"{wb}.pct_of_peak_sustained_elapsed"] > 0 else NAN),
    )


LTS = "lts__lts2xbar_cycles_active.sum"
DRAM_PCT = "dram__bytes_read.sum.pct_of_peak_sustained_elapsed"


# --------------------------------------------------------------------------- work shown
def busy(m: dict, base: str) -> tuple[str, float] | None:
    """(name, value) of the first metric of ``base`` that counts what ran and is > 0: any
    rollup / rate / %-of-peak, never a ``.peak_sustained*`` (the hardware's capacity)."""
    for name in sorted(m):
        if (name.startswith(base + ".") and ".peak_sustained" not in name
                and is_finite(m[name]) and float(m[name]) > 0):
            return name, float(m[name])
    return None


def any_busy(m: dict, bases) -> tuple[str, float] | None:
    return next((hit for hit in (busy(m, b) for b in bases) if hit), None)


def _present(m: dict, bases) -> bool:
    return any(n.startswith(b + ".") for n in m for b in bases)


# Floating-point MMA on the tensor pipe. HMMA counters also count HFMA2.MMA (an FP16 FMA
# that sm_80/sm_90 issue to the tensor pipe: "HMMA/HFMA2.MMA/HGMMA/QGMMA ops" in gh100's
# description), so they show tensor FLOP work only where no HFMA2 explains them.
_DMMA_WORK = ("sm__inst_executed_pipe_tensor_op_dmma", "sm__pipe_tensor_op_dmma_cycles_active",
              "sm__inst_executed_pipe_tensor_subpipe_dmma", "sm__pipe_tensor_subpipe_dmma_cycles_active",
              "sm__inst_executed_pipe_fp64_op_dmma")  # the last: GA10x/AD10x/GB20x run DMMA on the FP64 pipe
_HMMA_ONLY_WORK = ("sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active",)
_HMMA_WORK = ("sm__inst_executed_pipe_tensor_op_hmma", "sm__pipe_tensor_op_hmma_cycles_active",
              "sm__inst_executed_pipe_tensor_subpipe_hmma", "sm__pipe_tensor_subpipe_hmma_cycles_active")
_HFMA2_ON_TENSOR = ("sm__inst_executed_pipe_tensor_op_hmma_type_hfma2",
                    "sm__thread_inst_executed_pipe_tensor_op_hmma_type_hfma2_pred_on",
                    "smsp__sass_thread_inst_executed_op_hfma_pred_on",
                    "sm__sass_thread_inst_executed_op_hfma_pred_on")
# The whole tensor pipe (also IMMA/BMMA: integer work, no FLOPs); evidence only where the
# report has no per-instruction breakdown that could say which kind ran.
_TENSOR_PIPE = ("sm__pipe_tensor_cycles_active", "sm__inst_executed_pipe_tensor")
_TENSOR_BREAKDOWN = _DMMA_WORK + _HMMA_WORK + (
    "sm__inst_executed_pipe_tensor_op_imma", "sm__pipe_tensor_op_imma_cycles_active",
    "sm__inst_executed_pipe_tensor_subpipe_imma", "sm__pipe_tensor_subpipe_imma_cycles_active")


def tensor_fp_work(m: dict) -> tuple[str, float] | None:
    """The counter (name, value) that shows floating-point MMA work on the tensor pipe, or
    None where the report shows none (or only integer MMA / HFMA2.MMA)."""
    hit = any_busy(m, _DMMA_WORK + _HMMA_ONLY_WORK)
    if hit:
        return hit
    hit = any_busy(m, _HMMA_WORK)
    if hit and not any_busy(m, _HFMA2_ON_TENSOR):
        return hit
    if not _present(m, _TENSOR_BREAKDOWN):
        return any_busy(m, _TENSOR_PIPE)
    return None

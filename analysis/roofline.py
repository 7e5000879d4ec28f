"""Roofline stage: long frame -> hierarchical roofline frame (pure; no I/O, no plotting).

Input: the long frame from ``analysis.parse.load_frame``.
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

Arithmetic intensity at a level = FLOP/s / that level's bytes/s, given per FLOP kind:
``ai_tensor`` (what the Tensor Core chart plots), ``ai_fp32`` (the Single-precision
chart) and ``ai_total`` (tensor + FP32; not an Nsight Compute chart value).
"""
from __future__ import annotations

import math
import re

import pandas as pd

from .parse import LAUNCH_KEY, launch_identity

CONVENTION = "ncu-hierarchical-roofline"
SMEM_CONVENTION = "flashprof-smem-wavefronts"
LEVELS = ("L1", "L2", "DRAM", "shared memory")
SMEM_BYTES_PER_WAVEFRONT = 128.0   # 32 banks x 4 B
SMEM_BYTES_PER_CLK_PER_SM = 128.0  # one wavefront per clock per SM
L2_BYTES_PER_CYCLE = 32.0          # lts2xbar moves one 32 B sector per active cycle
L1_BYTES_PER_CYCLE = 128.0         # one 128 B writeback per active cycle

ROOFLINE_COLUMNS = (
    "report", "range_idx", "launch", "kernel", "variant", "gpu", "arch", "level",
    "convention", "in_ncu_chart", "duration_ns", "sm_clock_hz", "tensor_path",
    "flops_tensor", "flops_fp32", "flops_total", "tensor_ceiling", "fp32_ceiling",
    "bytes_per_s", "bw_ceiling", "ai_tensor", "ai_fp32", "ai_total",
    "ridge_tensor", "ridge_fp32", "bound_tensor",
)

_TENSOR_RE = re.compile(
    r"^sm__ops_path_tensor_(?:op_(?P<op>hmma|hgmma)_)?src_(?P<src>fp16|bf16)"
    r"(?:_dst_(?P<dst>fp16|fp32))?_sparsity_off\.sum\.per_cycle_elapsed$"
)
# When a kernel ran no tensor ops, the ceiling still has to name one path: mma.sync
# first, since that is what kernels 1-7 use.
_PATH_PREFERENCE = ("hmma", "tensor", "hgmma")
_NAN = math.nan


def _get(m: dict, name: str) -> float:
    v = m.get(name, _NAN)
    return _NAN if v is None else float(v)


def _tensor_counters(m: dict) -> dict[str, list[str]]:
    """{path: [per_cycle_elapsed metric names]} without double counting."""
    groups: dict[tuple[str, str], dict[bool, list[str]]] = {}
    for name in m:
        hit = _TENSOR_RE.match(name)
        if hit:
            path = hit["op"] or "tensor"
            groups.setdefault((path, hit["src"]), {True: [], False: []})[hit["dst"] is not None].append(name)
    paths: dict[str, list[str]] = {}
    for (path, _src), by_dst in groups.items():
        paths.setdefault(path, []).extend(by_dst[True] or by_dst[False])
    # The GA-style aggregate name must not be added on top of per-instruction paths.
    if len(paths) > 1:
        paths.pop("tensor", None)
    return paths


def _tensor(m: dict, sm_clock: float) -> tuple[float, float, str | None]:
    """(achieved tensor FLOP/s, tensor ceiling FLOP/s, path name)."""
    paths = _tensor_counters(m)
    if not paths:
        return _NAN, _NAN, None
    per_cycle = {p: sum(_get(m, n) for n in names) for p, names in paths.items()}
    achieved = sum(per_cycle.values()) * sm_clock
    busy = {p: v for p, v in per_cycle.items() if v > 0}
    if busy:
        path = max(busy, key=busy.get)
        metric = max(paths[path], key=lambda n: _get(m, n))
    else:
        path = next(p for p in _PATH_PREFERENCE if p in paths)
        # fp16 -> fp32 accumulate is the configuration the FA kernels use.
        metric = sorted(paths[path], key=lambda n: ("fp16" not in n, "dst_fp32" not in n))[0]
    peak = _get(m, metric.replace(".sum.per_cycle_elapsed", ".sum.peak_sustained"))
    return achieved, peak * sm_clock, path


def _fp32(m: dict, sm_clock: float) -> tuple[float, float]:
    base = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed"
    per_cycle = _get(m, base.format("fadd")) + _get(m, base.format("fmul")) + 2 * _get(m, base.format("ffma"))
    achieved = per_cycle * _get(m, "smsp__cycles_elapsed.avg.per_second")
    ceiling = 2 * _get(m, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained") * sm_clock
    return achieved, ceiling


def _l1_metric(m: dict) -> str:
    # sm_90 counts distributed shared memory too (_lgds); older chips name it _lg.
    lgds, lg = "l1tex__lsu_writeback_active_mem_lgds.sum", "l1tex__lsu_writeback_active_mem_lg.sum"
    if f"{lgds}.per_second" in m:
        return lgds
    if f"{lg}.per_second" in m:
        return lg
    return lgds


def _levels(m: dict, sm_clock: float) -> dict[str, tuple[float, float]]:
    """{level: (bytes/s, bytes/s ceiling)}."""
    l1 = _l1_metric(m)
    duration_s = _get(m, "gpu__time_duration.sum") * 1e-9
    sms = _get(m, "launch__sm_count")
    if math.isnan(sms):
        sms = _get(m, "device__attribute_multiprocessor_count")
    return {
        "L1": (L1_BYTES_PER_CYCLE * _get(m, f"{l1}.per_second"),
               L1_BYTES_PER_CYCLE * _get(m, f"{l1}.peak_sustained") * _get(m, "l1tex__cycles_elapsed.avg.per_second")),
        "L2": (L2_BYTES_PER_CYCLE * _get(m, "lts__lts2xbar_cycles_active.sum.per_second"),
               L2_BYTES_PER_CYCLE * _get(m, "lts__lts2xbar_cycles_active.sum.peak_sustained")
               * _get(m, "lts__cycles_elapsed.avg.per_second")),
        "DRAM": (_get(m, "dram__bytes.sum.per_second"),
                 _get(m, "dram__bytes.sum.peak_sustained") * _get(m, "dram__cycles_elapsed.avg.per_second")),
        "shared memory": (SMEM_BYTES_PER_WAVEFRONT * _get(m, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") / duration_s,
                          SMEM_BYTES_PER_CLK_PER_SM * sms * sm_clock),
    }


def _div(a: float, b: float) -> float:
    return a / b if b and not (math.isnan(a) or math.isnan(b)) else _NAN


def roofline(frame: pd.DataFrame) -> pd.DataFrame:
    """Hierarchical roofline rows (see module docstring) for every launch in ``frame``."""
    ident = launch_identity(frame).set_index(list(LAUNCH_KEY))
    rows = []
    for key, sub in frame.groupby(list(LAUNCH_KEY), sort=False):
        m = dict(zip(sub["metric"], sub["value"]))
        info = ident.loc[key]
        sm_clock = _get(m, "sm__cycles_elapsed.avg.per_second")
        flops_tensor, tensor_ceiling, path = _tensor(m, sm_clock)
        flops_fp32, fp32_ceiling = _fp32(m, sm_clock)
        # A report without the FP32 counters still has a meaningful tensor total.
        flops_total = flops_tensor + (0.0 if math.isnan(flops_fp32) else flops_fp32)
        for level, (bw, bw_ceiling) in _levels(m, sm_clock).items():
            ai_tensor = _div(flops_tensor, bw)
            ridge_tensor = _div(tensor_ceiling, bw_ceiling)
            bound = _NAN
            if not (math.isnan(ai_tensor) or math.isnan(ridge_tensor)):
                bound = "memory" if ai_tensor < ridge_tensor else "compute"
            rows.append({
                "report": key[0], "range_idx": key[1], "launch": key[2],
                "kernel": info["kernel"], "variant": info["variant"], "gpu": info["gpu"],
                "arch": info["arch"], "level": level,
                "convention": SMEM_CONVENTION if level == "shared memory" else CONVENTION,
                "in_ncu_chart": level != "shared memory",
                "duration_ns": _get(m, "gpu__time_duration.sum"), "sm_clock_hz": sm_clock,
                "tensor_path": path,
                "flops_tensor": flops_tensor, "flops_fp32": flops_fp32, "flops_total": flops_total,
                "tensor_ceiling": tensor_ceiling, "fp32_ceiling": fp32_ceiling,
                "bytes_per_s": bw, "bw_ceiling": bw_ceiling,
                "ai_tensor": ai_tensor, "ai_fp32": _div(flops_fp32, bw), "ai_total": _div(flops_total, bw),
                "ridge_tensor": ridge_tensor, "ridge_fp32": _div(fp32_ceiling, bw_ceiling),
                "bound_tensor": bound,
            })
    out = pd.DataFrame(rows, columns=list(ROOFLINE_COLUMNS))
    out["level"] = pd.Categorical(out["level"], categories=list(LEVELS), ordered=True)
    return out


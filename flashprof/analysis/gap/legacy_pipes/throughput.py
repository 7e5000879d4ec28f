"""Gap stage: why one kernel reaches ~101.5 % of FlashAttention-2 on an RTX 3090 but
~80 % on an A100 -- a pipe-time model built from H200 evidence (issue 6).

Input (all frames, nothing read here except the package data files named below):
* the long frame of ``flashprof.analysis.report.parse.load_frame`` (any reports, any GPU);
* the static SASS opcode frame of ``flashprof.kernels.sass.static`` (``load_static``: ``reports/sass/
  opcodes.csv``, kernel, arch, dtype, opcode, count -- instructions in the cubin, not
  executed -- with scope "kernel", plus ``opcodes_loop.csv``, the main-loop body only,
  with scope "loop" and the config slug);
* ``gpus.json`` (per-GPU throughputs with sources) and ``published.json`` (the series' published
  % of FA2 on A100 / RTX 3090), both next to this module;
* optionally a bench frame (``reports/<gpu>/bench.csv``) for measured % of FA2.

Output: ``gap_table`` (one row per target x GPU: per-pipe times, limiting pipe, predicted
and observed % of FA2, error), ``pipe_shares`` (where one target's time goes per GPU),
``ceilings`` (three-GPU roofline ceilings), ``model_errors`` (mean absolute error per GPU).

The model, stated plainly
-------------------------
1-2. Work per pipe and its carry-over to other GPUs: see ``work`` (and
   ``pipe_table`` for the opcode -> pipe table).
3. Time each pipe imposes, in SM cycles (the grid spreads evenly over all SMs):
   tensor = FLOP / (mma.sync FLOP/clk/SM x SMs); fma = max((FP32 + IMAD) x 32 / FP32
   lanes, IMAD x 32 / IMAD lanes) / SMs; alu = ALU x 32 / ALU lanes / SMs; xu = XU x 32 /
   MUFU lanes / SMs; lsu = LSU / (LSU warp inst/clk) / SMs; smem = wavefronts x 128 B /
   (128 B/clk) / SMs; issue = all warp instructions / 4 / SMs; dram = bytes x clock /
   bandwidth.
4. Combination: T = max_p t_p + alpha x sum of the other t_p. alpha (how badly the
   non-limiting pipes fail to overlap) is fitted ONLY on GPUs with measured cycles in the
   frame (the H200), by least squares on relative error of the measured SM cycles, and
   then applied unchanged to every other GPU. The pure bound (alpha = 0) is reported next
   to it. Predicted % of FA2 = 100 x T(ref) / T(target) on the same GPU (clock and SM
   count cancel except for the DRAM term).
5. Validation: A100 and RTX 3090 against the published % (S=4096); H200 against the
   measured bench (S=4096), else the reports' durations. Error = predicted - observed,
   percentage points.
What the model does not have: latency / occupancy (warps to hide it), barrier waits,
instruction-cache effects, clock differences between the two kernels, and any FA2
code that differs per arch. A residual it cannot explain points at those.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import pandas as pd

from flashprof.analysis.report.parse import per_launch
from flashprof.analysis.stages.pipes import INST_PIPE_PREFIX
from flashprof.analysis.metrics.recipe_kit import SMEM_BYTES_PER_WAVEFRONT
from flashprof.analysis.metrics.recipes import ISSUE_METRIC, PIPE_METRICS
from flashprof.analysis.gap.data import (REF, SEQ, SMEM_METRIC, TARGETS, WORK_COLUMNS, launch_work, load_gpus, load_published, match_gpu)
from flashprof.analysis.gap.legacy_pipes.pipe_table import DEFAULT_GPUS, MODEL_PIPES, entry_value
from flashprof.analysis.gap.legacy_pipes.work import estimate_work


# --------------------------------------------------------------------------- pipe times
def rates(gpu_key: str, gpus: dict, measured: pd.Series | None = None) -> dict:
    """Per-SM-per-clock rates for one GPU; a measured report's own peaks win."""
    g = gpus["gpus"][gpu_key]
    r = {
        "sm_count": entry_value(g["sm_count"]),
        "clock_hz": entry_value(g["boost_clock_mhz"]) * 1e6,
        "mma_sync_flop_per_clk_sm": entry_value(g["mma_sync_flop_per_clk_sm"]),
        "fp32_lanes_per_clk_sm": entry_value(g["fp32_lanes_per_clk_sm"]),
        "imad_lanes_per_clk_sm": entry_value(g["imad_lanes_per_clk_sm"]),
        "alu_lanes_per_clk_sm": entry_value(g["alu_lanes_per_clk_sm"]),
        "mufu_lanes_per_clk_sm": entry_value(g["mufu_lanes_per_clk_sm"]),
        "lsu_warp_inst_per_clk_sm": entry_value(g["lsu_warp_inst_per_clk_sm"]),
        "issue_warp_inst_per_clk_sm": entry_value(g["issue_warp_inst_per_clk_sm"]),
        "smem_bytes_per_clk_sm": entry_value(g["smem_bytes_per_clk_sm"]),
        "dram_bps": entry_value(g["dram_gbs"]) * 1e9,
    }
    if measured is not None:
        for k_rep, k in (("report_mma_sync_flop_per_clk_sm", "mma_sync_flop_per_clk_sm"),
                         ("report_fp32_lanes_per_clk_sm", "fp32_lanes_per_clk_sm"),
                         ("report_dram_bps", "dram_bps"), ("sm_count", "sm_count"),
                         ("sm_clock_hz", "clock_hz")):
            v = measured.get(k_rep, math.nan)
            if v is not None and not math.isnan(v) and v > 0:
                r[k] = float(v)
    return r


def pipe_times(work: Mapping[str, float], r: Mapping[str, float]) -> dict:
    """Lower bound each pipe imposes, in SM cycles (module docstring, step 3)."""
    sms = r["sm_count"]
    fma_all = work["fma_inst"] + work["imad_inst"]
    return {
        "tensor": work["tensor_flop"] / r["mma_sync_flop_per_clk_sm"] / sms,
        "fma": max(fma_all * 32 / r["fp32_lanes_per_clk_sm"],
                   work["imad_inst"] * 32 / r["imad_lanes_per_clk_sm"]) / sms,
        "alu": work["alu_inst"] * 32 / r["alu_lanes_per_clk_sm"] / sms,
        "xu": work["xu_inst"] * 32 / r["mufu_lanes_per_clk_sm"] / sms,
        "lsu": work["lsu_inst"] / r["lsu_warp_inst_per_clk_sm"] / sms,
        "smem": work["smem_wavefronts"] * SMEM_BYTES_PER_WAVEFRONT / r["smem_bytes_per_clk_sm"] / sms,
        "issue": work["issue_inst"] / r["issue_warp_inst_per_clk_sm"] / sms,
        "dram": work["dram_bytes"] * r["clock_hz"] / r["dram_bps"],
    }


def combine(times: Mapping[str, float], alpha: float) -> tuple[float, str]:
    """(predicted cycles, limiting pipe): max + alpha x sum of the rest."""
    limit = max(MODEL_PIPES, key=lambda p: times[p])
    rest = sum(times[p] for p in MODEL_PIPES if p != limit)
    return times[limit] + alpha * rest, limit


def fit_alpha(points: Iterable[tuple[Mapping[str, float], float]]) -> float:
    """Least-squares alpha on relative error: points = (pipe times, measured cycles).
    Returns 0 without points; never negative."""
    num = den = 0.0
    for times, measured in points:
        if not measured or math.isnan(measured):
            continue
        t_max = max(times[p] for p in MODEL_PIPES)
        rest = sum(times[p] for p in MODEL_PIPES) - t_max
        x, y = rest / measured, 1.0 - t_max / measured
        num += x * y
        den += x * x
    return max(0.0, num / den) if den else 0.0


# --------------------------------------------------------------------------- observed
def observed_pct(published: dict | None, bench: pd.DataFrame | None, gpus: dict,
                 seq: int = SEQ) -> dict[tuple[str, str], tuple[float, str]]:
    """{(target, gpu_key): (% of FA2, source)} from published data and bench frames."""
    out: dict[tuple[str, str], tuple[float, str]] = {}
    if published:
        for pub in published["gpus"].values():
            key = pub["gpu_key"]
            for target, vals in pub["pct_of_fa2"].items():
                v = vals.get(f"seq_{seq}")
                if v is not None:
                    out[(target, key)] = (float(v), "published")
    if bench is not None and len(bench):
        b = bench[(bench["seq"] == seq) & (bench["dtype"] == "fp16")]
        for rec in b.to_dict("records"):
            key = match_gpu(rec["gpu"], gpus)
            target = str(rec["target"])
            if key and target in TARGETS and (target, key) not in out and not pd.isna(rec["pct_of_ref"]):
                out[(target, key)] = (float(rec["pct_of_ref"]), "bench")
    return out


def _ncu_pct(launches: pd.DataFrame, target: str, gpu_key: str) -> float:
    if not len(launches):
        return math.nan
    own = launches[launches["gpu_key"] == gpu_key]
    t = own[own["target"] == target]
    ref = own[own["target"] == REF]
    if not len(t) or not len(ref):
        return math.nan
    return 100.0 * float(ref.iloc[0]["duration_ns"]) / float(t.iloc[0]["duration_ns"])


# --------------------------------------------------------------------------- front door
GAP_COLUMNS = (
    "target", "gpu_key", "gpu", "arch", "work_source", "limit", "limit_bound",
    *(f"t_{p}" for p in MODEL_PIPES), "pred_cycles", "measured_cycles",
    "pred_pct_max", "pred_pct", "observed_pct", "observed_source", "ncu_pct", "error_pp",
    "error_pp_max", "alpha",
)


def model(frame: pd.DataFrame | None, opcodes: pd.DataFrame | None = None,
          gpus: dict | None = None, gpu_keys: Iterable[str] | None = None,
          targets: Iterable[str] = TARGETS, dtype: str = "fp16",
          alpha: float | None = None) -> pd.DataFrame:
    """Pipe times and predicted cycles for every target x GPU (no observed data)."""
    gpus = gpus or load_gpus()
    launches = launch_work(frame, gpus) if frame is not None and len(frame) else pd.DataFrame()
    keys = list(gpu_keys or DEFAULT_GPUS)
    if len(launches):  # GPUs a user brought reports for join the table
        keys += [k for k in launches["gpu_key"].dropna().unique() if k not in keys]
    rows = []
    for key in keys:
        for target in targets:
            work, source, measured = estimate_work(target, key, gpus, launches, opcodes, dtype)
            r = rates(key, gpus, measured)
            times = pipe_times(work, r)
            rows.append({"target": target, "gpu_key": key, "gpu": gpus["gpus"][key]["name"],
                         "arch": gpus["gpus"][key]["arch"], "work_source": source,
                         "measured_cycles": (float(measured["measured_sm_cycles"])
                                             if measured is not None else math.nan),
                         **{f"t_{p}": t for p, t in times.items()}})
    out = pd.DataFrame(rows)
    if alpha is None:
        pts = [({p: row[f"t_{p}"] for p in MODEL_PIPES}, row["measured_cycles"])
               for row in out.to_dict("records") if not math.isnan(row["measured_cycles"])]
        alpha = fit_alpha(pts)
    preds = [combine({p: row[f"t_{p}"] for p in MODEL_PIPES}, alpha) for row in out.to_dict("records")]
    out["pred_cycles"] = [p[0] for p in preds]
    out["limit"] = [p[1] for p in preds]
    out["limit_bound"] = [row[f"t_{lim}"] for row, lim in zip(out.to_dict("records"), out["limit"])]
    out["alpha"] = alpha
    return out


def gap_table(frame: pd.DataFrame | None, opcodes: pd.DataFrame | None = None,
              gpus: dict | None = None, published: dict | None = None,
              bench: pd.DataFrame | None = None, gpu_keys: Iterable[str] | None = None,
              dtype: str = "fp16", alpha: float | None = None) -> pd.DataFrame:
    """One row per target x GPU: per-pipe cycles, limiting pipe, predicted % of FA2 (fitted
    combination and pure max bound), observed % (published / bench), error in points."""
    gpus = gpus or load_gpus()
    published = load_published() if published is None else published
    m = model(frame, opcodes, gpus, gpu_keys, TARGETS, dtype, alpha)
    launches = launch_work(frame, gpus) if frame is not None and len(frame) else pd.DataFrame()
    obs = observed_pct(published, bench, gpus)
    rows = []
    for key, sub in m.groupby("gpu_key", sort=False):
        ref = sub[sub["target"] == REF]
        ref_pred = float(ref["pred_cycles"].iloc[0]) if len(ref) else math.nan
        ref_bound = float(ref["limit_bound"].iloc[0]) if len(ref) else math.nan
        for row in sub.to_dict("records"):
            pred = 100.0 * ref_pred / row["pred_cycles"] if row["pred_cycles"] else math.nan
            pred_max = 100.0 * ref_bound / row["limit_bound"] if row["limit_bound"] else math.nan
            ncu = _ncu_pct(launches, row["target"], key)
            o, src = obs.get((row["target"], key), (math.nan, None))
            if math.isnan(o) and not math.isnan(ncu):
                o, src = ncu, "ncu durations"
            rows.append({**row, "pred_pct": pred, "pred_pct_max": pred_max, "observed_pct": o,
                         "observed_source": src, "ncu_pct": ncu, "error_pp": pred - o,
                         "error_pp_max": pred_max - o})
    out = pd.DataFrame(rows)
    return out.reindex(columns=list(GAP_COLUMNS))


def model_errors(table: pd.DataFrame) -> pd.DataFrame:
    """Mean absolute error (percentage points) per GPU over kernels 1-7 with an observed %,
    for the fitted combination and for the pure max bound."""
    t = table[(table["target"] != REF) & table["error_pp"].notna()]
    rows = []
    for key, sub in t.groupby("gpu_key", sort=False):
        k7 = sub[sub["target"] == "7"]
        rows.append({"gpu_key": key, "n": len(sub), "mae_pp": sub["error_pp"].abs().mean(),
                     "mae_pp_max": sub["error_pp_max"].abs().mean(),
                     "mae_pp_2to7": sub[sub["target"] != "1"]["error_pp"].abs().mean(),
                     "k7_pred_pct": float(k7["pred_pct"].iloc[0]) if len(k7) else math.nan,
                     "k7_observed_pct": float(k7["observed_pct"].iloc[0]) if len(k7) else math.nan,
                     "alpha": float(sub["alpha"].iloc[0])})
    return pd.DataFrame(rows, columns=["gpu_key", "n", "mae_pp", "mae_pp_max", "mae_pp_2to7",
                                       "k7_pred_pct", "k7_observed_pct", "alpha"])


def pipe_shares(table: pd.DataFrame, target: str = "7") -> pd.DataFrame:
    """Where one target's modelled time goes on each GPU (long): cycles per pipe, share of
    the sum of pipe times, and each pipe's time relative to the tensor time."""
    rows = []
    for row in table[table["target"] == target].to_dict("records"):
        total = sum(row[f"t_{p}"] for p in MODEL_PIPES)
        for p in MODEL_PIPES:
            t = row[f"t_{p}"]
            rows.append({"target": target, "gpu_key": row["gpu_key"], "gpu": row["gpu"], "pipe": p,
                         "cycles": t, "share_of_sum": t / total if total else math.nan,
                         "vs_tensor": t / row["t_tensor"] if row["t_tensor"] else math.nan,
                         "is_limit": p == row["limit"]})
    return pd.DataFrame(rows, columns=["target", "gpu_key", "gpu", "pipe", "cycles",
                                       "share_of_sum", "vs_tensor", "is_limit"])


def ceilings(gpus: dict | None = None, frame: pd.DataFrame | None = None,
             gpu_keys: Iterable[str] | None = None) -> pd.DataFrame:
    """Roofline ceilings per GPU at its boost clock (a GPU with a report in ``frame`` uses
    the report's own peaks and clock): mma.sync tensor, FP32, shared memory, DRAM, and
    the ridge points (FLOP per DRAM byte / per shared byte)."""
    gpus = gpus or load_gpus()
    launches = launch_work(frame, gpus) if frame is not None and len(frame) else pd.DataFrame()
    keys = list(gpu_keys or DEFAULT_GPUS)
    if len(launches):
        keys += [k for k in launches["gpu_key"].dropna().unique() if k not in keys]
    rows = []
    for key in keys:
        own = launches[launches["gpu_key"] == key] if len(launches) else launches
        measured = own.iloc[0] if len(own) else None
        r = rates(key, gpus, measured)
        g = gpus["gpus"][key]
        tensor = r["mma_sync_flop_per_clk_sm"] * r["sm_count"] * r["clock_hz"]
        fp32 = 2 * r["fp32_lanes_per_clk_sm"] * r["sm_count"] * r["clock_hz"]
        smem = r["smem_bytes_per_clk_sm"] * r["sm_count"] * r["clock_hz"]
        rows.append({
            "gpu_key": key, "gpu": g["name"], "arch": g["arch"], "source": "report" if measured is not None else "gpus.json",
            "sm_count": r["sm_count"], "clock_hz": r["clock_hz"],
            "tensor_flops": tensor, "fp32_flops": fp32, "dram_bps": r["dram_bps"], "smem_bps": smem,
            "tensor_datasheet_flops": entry_value(g["tensor_datasheet_tflops"]) * 1e12,
            "ridge_tensor_dram": tensor / r["dram_bps"], "ridge_fp32_dram": fp32 / r["dram_bps"],
            "ridge_tensor_smem": tensor / smem,
            "tensor_per_fp32": tensor / fp32,
        })
    return pd.DataFrame(rows)


def pipe_check(frame: pd.DataFrame, gpus: dict | None = None) -> pd.DataFrame:
    """The opcode->pipe mapping against Nsight Compute's own pipe utilisation: per launch
    and pipe, modelled busy % of active cycles vs ``sm__inst_executed_pipe_<p>`` (or
    ``sm__pipe_<p>_cycles_active``) % of peak sustained active."""
    gpus = gpus or load_gpus()
    launches = launch_work(frame, gpus)
    # Instruction-issue shares (what the opcode counts model), not cycles-active.
    metrics = {"tensor": PIPE_METRICS["tensor"][0],
               **{p: f"{INST_PIPE_PREFIX}{p}.avg.pct_of_peak_sustained_active" for p in ("fma", "alu", "xu", "lsu")},
               "issue": ISSUE_METRIC, "smem": f"{SMEM_METRIC}.pct_of_peak_sustained_elapsed"}
    by_launch = {(key[0], key[2]): m for key, _arch, m in per_launch(frame)}
    rows = []
    for row in launches.to_dict("records"):
        if not row["gpu_key"]:
            continue
        m = by_launch[(row["report"], row["launch"])]
        active = m.get("sm__cycles_active.avg", math.nan)
        times = pipe_times({c: row[c] for c in WORK_COLUMNS}, rates(row["gpu_key"], gpus, pd.Series(row)))
        for p, metric in metrics.items():
            rows.append({"report": row["report"], "target": row["target"], "pipe": p,
                         "model_pct": 100 * times[p] / active, "ncu_pct": m.get(metric, math.nan),
                         "metric": metric})
    return pd.DataFrame(rows)

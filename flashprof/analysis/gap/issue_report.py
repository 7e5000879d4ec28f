"""Predicted % of FA2 per GPU and kernel from the issue model, checked against the
published A100 / RTX 3090 numbers and the measured H200 reports; a sensitivity table.

Whole-kernel time, in SM cycles, for the benchmark shape (B16 H16 S4096 d128 fp16):
    CTAs = B*H*S/B_r; CTAs per SM from occupancy (ptxas registers, shared memory, warps);
    waves = ceil(CTAs / (SMs * CTAs per SM));
    per wave = trips * loop cycles (simulated, all resident CTAs together, trips = S/B_c
               less a KV pass the binary peels out of the loop: the FLOP of the tensor
               instructions outside it, LoopCode.outside_flop_per_warp)
               + tail, tail = loop cycles * (non-loop instructions / loop instructions);
    a persistent kernel (one CTA per SM looping over tiles): a wave is a tile, its tail the
    per-tile instructions of the loop over tiles, and trips the FLOP left to the KV loop;
    T = waves * per wave.  % of FA2 = 100 * T(FA2) / T(kernel), same GPU and clock.
The bank-conflict factor of shared-memory wavefronts (kernel 1 is unswizzled) comes from
the H200 reports of the same algorithm: wavefronts / (wavefronts - bank conflicts).
Two binaries per A100 / RTX 3090 row set: ``"series"`` -- the sm_80 SASS the series measured
(reports/sass/series: kernels 1-16 and the official FA2, the files its published numbers came
from) -- and ``"flashprof"`` -- flashprof's own kernels 1-7 (reports/sass/loops), never
measured on those GPUs. The H200 rows are flashprof's kernels against the H200's own reports.
Nothing is fitted: ``fitted_parameters`` lists the Machine constants whose gpus.json source
says they were fitted (none).
"""
from __future__ import annotations

import dataclasses
import math
import os
import random
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from flashprof.analysis.gap.constants import FLOP_PER_HMMA, SENSITIVE, SUBPARTITIONS, Machine, machine, occupancy
from flashprof.analysis.gap.controls import SassError
from flashprof.analysis.gap.loops import (SERIES_K7_SWEEP, SERIES_KERNELS, LoopCode, fa2_loop, kernel_loop,
                                         series_file, series_loop)
from flashprof.analysis.gap.scheduler import flop_per_warp, hgmma_shape, pipe, simulate
from flashprof.analysis.gap.data import REF, load_published
from flashprof.kernels.gpus import SHIPPED, by_slug
from flashprof.kernels.config import MMA_SYNC_KEY as MMA_SYNC

SHAPE = {"batch": 16, "heads": 16, "seq": 4096}
H200 = SHIPPED.model_key  # the GPU of the measured reports
PUBLISHED_KEY = {by_slug(s).model_key: s for s in load_published()["gpus"]}  # model key -> published.json key
GPUS = {**{k: by_slug(s).arch for k, s in PUBLISHED_KEY.items()}, H200: SHIPPED.arch}
A100 = next(k for k, s in PUBLISHED_KEY.items() if by_slug(s).chip == "ga100")  # the limitation text's GPU
CONFLICT_LD = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
# Model warp states -> Nsight Compute stall reasons (smsp__average_warps_issue_stalled_
# <reason>_per_issue_active.ratio), grouped where the model cannot tell them apart.
STALL_GROUPS = {
    "wait": (("stall count",), ("wait",)),
    "scoreboard": (("wait barrier",), ("short_scoreboard", "long_scoreboard")),
    # MUFU reaches its pipe through the MIO queue: Nsight Compute samples a warp held back by a
    # busy XU pipe as mio_throttle, not math_pipe_throttle (its stall-reason table: "MIO ...
    # special math instructions"; the H200 report of FA2 has no math_pipe sample on a MUFU PC)
    "mio": (("mio throttle", "lsu/mio", "xu pipe"), ("mio_throttle", "lg_throttle")),
    "math_pipe": (("tensor pipe", "fma pipe", "alu pipe"), ("math_pipe_throttle",)),
    # WARPGROUP.DEPBAR (a wait for warpgroup MMA) is sampled as "barrier": on the H200 report of
    # the wgmma kernel 7, 96 % of its barrier samples sit on its two WARPGROUP.DEPBAR PCs.
    "barrier": (("barrier", "wgmma wait"), ("barrier",)),
    "not_selected": (("not selected",), ("not_selected",)),
    # an HMMA's dispatch cycles, the register-file read cap, and an FP32 instruction held back
    # by a running HGMMA (the wgmma mix benchmark: Nsight samples those as dispatch_stall); an
    # HGMMA held while the tensor pipe is booked too far ahead (Machine.wgmma_issue_backlog)
    "dispatch": (("dispatch", "register file", "alu dispatch", "xu dispatch", "wgmma dispatch"), ("dispatch_stall",)),
}
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"


def model_stalls(warps_per_issue: dict) -> dict:
    return {g: sum(warps_per_issue.get(k, 0.0) for k in mine) for g, (mine, _) in STALL_GROUPS.items()}


def measured_stalls(metrics: dict) -> dict:
    return {g: sum(metrics.get(STALL_METRIC.format(k), math.nan) for k in theirs)
            for g, (_, theirs) in STALL_GROUPS.items()}


def kernel_time(code: LoopCode, m: Machine, conflict: float = 1.0, seeds=None,
                seq: int = SHAPE["seq"], opts: tuple = ()) -> dict:
    """``opts``: scheduler what-if options as sorted (name, value) pairs (scheduler.simulate)."""
    key = (code, m, conflict, tuple(seeds or SEEDS), seq, opts)
    if key not in _MEMO:  # the same FA2 serves several row sets: simulate it once
        _MEMO[key] = _kernel_time(code, m, conflict, seeds, seq, opts)
    return _MEMO[key]


_MEMO: dict = {}
_SIMS: dict = {}


def with_tma_writes(code: LoopCode, opts: tuple) -> tuple:
    """A loop fed by TMA (transaction-barrier waits, SYNCS, and no load of its own: the
    warp-specialised kernel 7) still has its K and V tiles written into shared memory every
    pass, by the producer's TMA: 2 x B_c x 128 x 2 bytes, 128 bytes a wavefront, taken from
    the data path as the what-if's ``tma`` change takes them (scheduler option
    ``background_wavefronts``)."""
    ops = {i.base for i in code.body}
    if "SYNCS" not in ops or ops & {"LDGSTS", "LDG", "LDS", "LDSM"} or dict(opts).get("background_wavefronts"):
        return opts
    return tuple(sorted({**dict(opts), "background_wavefronts": 2 * code.B_c * 128 * 2 / 128}.items()))


def passes(code: LoopCode, ctas: int) -> tuple[int, int]:
    """(loop passes simulated, passes before the steady-state window). Warpgroups fed by a TMA
    producer (HGMMA, SYNCS waits, no load of their own: the warp-specialised kernels), two or
    more per SM, start in phase and take a few passes to settle into the phase they keep (one's
    softmax under the other's HGMMAs, or both at once: which depends on the start): the shipped
    kernel 7 settles within 4-6 of its passes, so 8 passes with a window from the first would
    time mostly the transient. Such loops run 32 passes and are timed over the last 16
    (tests/test_gap_sched.py: 48 passes agree within 3 %). Every other loop runs 8 passes
    timed from the first; that includes HGMMA loops that load their own tiles (cp.async): on
    the GPU each pass's memory latency moves their warpgroups' phase, which the model's
    near-constant latencies do not, and their settled phase would be an optimum the GPU
    does not hold (METHOD.md, "Warp choice and the phase of two warpgroups")."""
    ops = {i.base for i in code.body}
    fed = "HGMMA" in ops and "SYNCS" in ops and not ops & {"LDGSTS", "LDG"}
    if ctas * code.warps >= 2 * SUBPARTITIONS and fed:
        return LONG_PASSES, LONG_PASSES // 2
    return 8, 1


LONG_PASSES = 32


def trips_and_tail(code: LoopCode, seq: int = SHAPE["seq"]) -> tuple[float, int]:
    """(KV-loop passes, instructions outside the loop) per CTA -- per tile for a persistent
    kernel -- for one warp: what the model counts each warp to issue (trips x body + tail).
    Trips come from the CTA's tensor work, 4 B_r S d FLOP, over the FLOP one pass of the body
    does (a compiler may split or unroll the KV loop), less the FLOP of the tensor
    instructions outside the loop: a pass peeled out of it (FA2 and the series' kernels 10-16
    run their first, masked KV block before the loop) is in the tail and not the loop's to do
    again. A persistent kernel's CTAs loop over tiles; per tile, the KV loop runs for the FLOP
    its peeled first / last GEMMs leave, and the per-tile code outside the KV loop is the tail
    (the producer warp's code and the once-per-CTA setup run beside it, uncounted)."""
    body_flop = sum(flop_per_warp(i) for i in code.body)
    if code.tile_insts is not None:
        outside, tail = code.tile_flop_per_warp, code.tile_insts
    else:
        outside, tail = code.outside_flop_per_warp or 0.0, code.total_insts - len(code.body)
    return (4.0 * code.B_r * seq * 128 - outside * code.warps) / (body_flop * code.warps), tail


def _kernel_time(code: LoopCode, m: Machine, conflict: float = 1.0, seeds=None,
                 seq: int = SHAPE["seq"], opts: tuple = ()) -> dict:
    occ = occupancy(m, code.registers, code.smem_bytes, code.warps)
    if occ["ctas"] < 1:
        raise SassError(f"{code.target} on {m.gpu_key}: does not fit on an SM ({occ})")
    seeds = tuple(seeds or SEEDS)
    opts = with_tma_writes(code, opts)
    key = (code, m, conflict, seeds, opts)
    if key not in _SIMS:  # the loop does not depend on the sequence length: simulate it once
        n_pass, warm = passes(code, occ["ctas"])
        args = [(list(code.body), m, occ["ctas"], code.warps, n_pass, conflict, s,
                 opts + ((("warmup", warm),) if warm > 1 else ())) for s in seeds]
        _SIMS[key] = list(_POOL.map(_sim, args)) if _POOL is not None else [_sim(a) for a in args]
    sims = _SIMS[key]
    loops = [x["cycles_per_iter"] for x in sims]
    loop = sum(loops) / len(loops)
    sim = sims[0]
    sim = {"slots": _mean_dicts([x["slots"] for x in sims]),
           "warps_per_issue": _mean_dicts([x["warps_per_issue"] for x in sims])}
    ctas = SHAPE["batch"] * SHAPE["heads"] * seq // code.B_r
    waves = math.ceil(ctas / (m.sm_count * occ["ctas"]))
    # Trips from the loop's own tensor work (a compiler may split or unroll the KV loop):
    # the CTA's FLOP (4 B_r S d) over the FLOP one pass of the body does (per warp x warps).
    trips, tail_insts = trips_and_tail(code, seq)
    tail = loop * tail_insts / len(code.body)
    cycles = waves * (trips * loop + tail)
    flop = 4.0 * SHAPE["batch"] * SHAPE["heads"] * seq ** 2 * 128
    slots = sim["slots"]
    limit = max((k for k in slots if k != "issued"), key=slots.get, default="-")
    # pipe cycles active, % of elapsed (Nsight Compute's sm__pipe_<p>_cycles_active sense):
    # per sub-partition, warp instructions of the pipe x cycles each occupies it, over the loop;
    # the prologue / epilogue (tail) counts as idle for every pipe.
    per_sp = occ["ctas"] * code.warps / SUBPARTITIONS
    n = {p: sum(1 for i in code.body if pipe(i) in p) for p in (("tensor",), ("fp32", "imad"), ("alu",), ("xu",))}
    wg = [hgmma_shape(i) for i in code.body if pipe(i) == "wgmma"]
    # an HMMA counts what Nsight Compute's counter adds for it (GA10x: half its pipe time, Machine.hmma_counted_interval)
    busy = {"tensor": n[("tensor",)] * (m.hmma_counted_interval or m.hmma_interval)
            + sum(m.wgmma_cycles(nn, rs) for nn, _k, rs, _c in wg),
            "fma": n[("fp32", "imad")] * m.fp32_interval / m.fp32_halves,
            "alu": n[("alu",)] * m.alu_interval, "xu": n[("xu",)] * m.mufu_interval}
    in_loop = trips * loop / (trips * loop + tail)
    pipe_pct = {k: 100 * per_sp * v / loop * in_loop for k, v in busy.items()}
    return {"pred_cycles": cycles, "loop_cycles": loop, "ctas_per_sm": occ["ctas"],
            "cycles_seeds": [cycles * x / loop for x in loops], "pipe_pct": pipe_pct,
            "occupancy_limit": occ["limit"], "waves": waves, "tail_cycles": tail,
            "tflops": flop / (cycles / (m.clock_mhz * 1e6)) / 1e12,
            # against the roof of the kernel's own tensor path (wgmma or mma.sync)
            "tensor_active_pct": 100 * flop / m.sm_count / (m.wgmma_flop_per_clk_sm if wg else
                                                             FLOP_PER_HMMA * SUBPARTITIONS / m.hmma_interval) / cycles,
            "tensor_path": "wgmma" if wg else "mma.sync", "issue_pct": 100 * slots.get("issued", 0.0),
            "loop_spread_pct": 100 * (max(loops) - min(loops)) / loop,
            "limiting": limit, "slots": slots, "stalls": model_stalls(sim["warps_per_issue"])}


SEEDS = tuple(range(1, 17))  # CTA start staggers + latency jitter averaged over (scheduler.simulate)
SENSITIVITY_SEEDS = (1, 2)  # fewer for the +-20 % table: its noise floor is the seed spread
def progress(what: str) -> None:
    """One line on stderr per stage of the model run (minutes in all): the user sees it move."""
    print(f"flashprof gap: {what}", file=sys.stderr, flush=True)


def die_with_parent() -> None:
    """Worker initializer: on Linux the kernel sends the worker SIGTERM when its parent dies, so a
    killed ``flashprof gap`` (SIGTERM or SIGKILL) leaves no model workers behind."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
        if os.getppid() == 1:  # the parent is already gone
            os._exit(1)


_POOL: ProcessPoolExecutor | None = None  # set by report(): seeds run in 2 processes


def _sim(a):
    body, m, ctas, warps, iters, conflict, seed, opts = a
    return simulate(body, m, ctas, warps, iterations=iters, conflict=conflict, seed=seed, **dict(opts))


def _mean_dicts(ds: list[dict]) -> dict:
    keys = {k for d in ds for k in d}
    return {k: sum(d.get(k, 0.0) for d in ds) / len(ds) for k in keys}


def _explain(r: dict, m: Machine) -> str:
    s = r["slots"]
    top = sorted(((v, k) for k, v in s.items() if k != "issued"), reverse=True)[:2]
    return (f"{r['ctas_per_sm']} CTA/SM ({r['occupancy_limit']}); issue slots: "
            f"{100 * s.get('issued', 0):.0f} % issuing, "
            + ", ".join(f"{100 * v:.0f} % {k}" for v, k in top)
            + (f"; HGMMA m64n128k16 {m.wgmma_cycles(128, False):.0f} cycles on the SM's tensor pipes"
               if r.get("tensor_path") == "wgmma" else f"; HMMA every {m.hmma_interval:.0f} cycles per sub-partition"))


def codes_for(gpu_key: str, slugs: dict[str, str]) -> dict[str, LoopCode]:
    """flashprof's own loops (reports/sass/loops) at the GPU's arch, plus torch's FA2 copy."""
    arch = GPUS[gpu_key]
    out = {}
    for t, slug in slugs.items():
        out[t] = kernel_loop(t, arch, slug)
    try:
        out[REF] = fa2_loop(arch)
    except SassError:
        pass
    return out


def series_codes(gpu_key: str, targets=SERIES_KERNELS) -> dict[str, LoopCode]:
    """The series' measured sm_80 binaries (kernels 1-16, the official FA2) for one GPU."""
    return {t: series_loop(t, series_file(gpu_key, t)) for t in (*targets, REF)}


def series_conflict(target: str, conflicts: dict[str, float], swizzled: bool = True) -> float:
    """Bank-conflict factor for a series binary: flashprof's kernel of the same step on the
    H200 (kernels 1-7, FA2); kernels 8-16 keep kernel 7's swizzled layout; an unswizzled
    variant gets kernel 1's (the only unswizzled one measured)."""
    if not swizzled:
        return conflicts.get("1", 1.0)
    if target == REF or int(target) <= 7:
        return conflicts.get(target, 1.0)
    return conflicts.get("7", 1.0)


def predict(gpu_key: str, slugs: dict[str, str], conflicts: dict[str, float],
            m: Machine | None = None, seeds=None) -> dict[str, dict]:
    m = m or machine(gpu_key)
    return {t: kernel_time(code, m, conflicts.get(t, 1.0), seeds)
            for t, code in codes_for(gpu_key, slugs).items()}


def predict_series(gpu_key: str, conflicts: dict[str, float], m: Machine | None = None, seeds=None,
                   targets=SERIES_KERNELS) -> tuple[dict[str, dict], dict[str, LoopCode]]:
    m = m or machine(gpu_key)
    codes = series_codes(gpu_key, targets)
    return {t: kernel_time(c, m, series_conflict(t, conflicts), seeds) for t, c in codes.items()}, codes


def fitted_parameters(m: Machine) -> list[str]:
    """Machine constants that are fitted or untraceable: those whose source says "fitted", and
    ``Machine.fitted`` (read constants with neither a citation nor a measurement behind them)."""
    return sorted({k for k, v in m.sources.items() if str(v).lower().startswith("fitted")} | set(m.fitted))


def _pct_stats(r: dict, ref: dict) -> tuple[float, float, list[float]]:
    """% of FA2 from the seed means; its spread (sd of a one-seed prediction: kernel and FA2
    seed spreads combined) and the per-seed values (kernel seed s against FA2's mean)."""
    pct = 100 * ref["pred_cycles"] / r["pred_cycles"]
    cv = lambda xs: statistics.pstdev(xs) / statistics.fmean(xs) if len(xs) > 1 else 0.0
    sd = pct * math.hypot(cv(r["cycles_seeds"]), cv(ref["cycles_seeds"]))
    return pct, sd, [100 * ref["pred_cycles"] / c for c in r["cycles_seeds"]]


def rows(slugs_by_gpu: dict[str, dict[str, str]], conflicts: dict[str, float],
         h200_measured: dict[str, dict] | None = None, series_gpus=tuple(PUBLISHED_KEY)) -> list[dict]:
    """JSON rows (kind row) for every GPU x target with a prediction: the series' binaries
    on the A100 / RTX 3090 and flashprof's kernels on every GPU in ``slugs_by_gpu``."""
    pub = load_published()["gpus"]
    out = []
    for key in series_gpus:
        progress(f"series binaries on {key}")
        m = machine(key)
        pred, codes = predict_series(key, conflicts, m)
        ref = pred[REF]
        for t, r in pred.items():
            pct, sd, per = _pct_stats(r, ref)
            obs = pub[PUBLISHED_KEY[key]]["pct_of_fa2"][t]["seq_4096"] if t != REF else math.nan
            out.append(_row(key, t, SHAPE["seq"], m, r, pct, obs, "published" if t != REF else None, None,
                            binary="series", code=codes[t], sd=sd, per_seed=per,
                            conflict=series_conflict(t, conflicts), ref=codes[REF]))
    for key, slugs in slugs_by_gpu.items():
        progress(f"flashprof kernels {', '.join(sorted(slugs))} on {key}")
        m = machine(key)
        codes = codes_for(key, slugs)
        pred = {t: kernel_time(c, m, conflicts.get(t, 1.0)) for t, c in codes.items()}
        ref, ref_code = pred.get(REF), codes.get(REF)
        if key in PUBLISHED_KEY:
            # the denominator the published % used: the official FA2 the series measured
            ref_code = series_loop(REF, series_file(key, REF))
            ref = kernel_time(ref_code, m, conflicts.get(REF, 1.0))
        for t, r in pred.items():
            if key in PUBLISHED_KEY and t == REF:
                continue  # torch's FA2 copy: not what the published % divides by
            pct, sd, per = _pct_stats(r, ref) if ref else (math.nan, math.nan, [])
            obs, src = math.nan, None
            if key in PUBLISHED_KEY:
                obs = pub[PUBLISHED_KEY[key]]["pct_of_fa2"][t]["seq_4096"]
                src = "published (the series' own binary of this step, not this one)"
            meas = (h200_measured or {}).get((t, SHAPE["seq"])) if key == H200 else None
            ref_meas = (h200_measured or {}).get((REF, SHAPE["seq"])) if key == H200 else None
            if meas and ref_meas and t != REF:
                # the H200's own % of FA2: FA2's measured SM cycles over this kernel's (ncu reports)
                obs = 100 * ref_meas["cycles"] / meas["cycles"]
                src = "measured (ncu cycles, reports/h200)"
            out.append(_row(key, t, SHAPE["seq"], m, r, pct, obs, src, meas, binary="flashprof",
                            code=codes[t], sd=sd, per_seed=per, conflict=conflicts.get(t, 1.0), ref=ref_code))
    return out


def other_shape_rows(meas: dict, slugs: dict, conflicts: dict) -> list[dict]:
    """H200 rows for the measured launches at other sequence lengths (same model, same
    loop simulation; only trips, waves and the tail change)."""
    m = machine(H200)
    out = []
    for (t, seq), mm in meas.items():
        if seq == SHAPE["seq"] or t == REF or (t, seq) not in slugs:
            continue
        code = kernel_loop(t, "sm_90", slugs[(t, seq)])
        r = kernel_time(code, m, conflicts.get(t, 1.0), seq=seq)
        out.append(_row(H200, t, seq, m, r, math.nan, math.nan, None, mm, binary="flashprof",
                        code=code, sd=math.nan, per_seed=[], conflict=conflicts.get(t, 1.0), ref=None))
    return out


_NOTE = {
    "series": "the binary the series measured on this GPU (sm_80 code, reports/sass/series/CHECK.md)",
    "flashprof": "flashprof's own kernel (nvcc 13.0, its own source): never measured on this GPU; the "
                 "published value belongs to the series' binary of the same step",
}


def _row(key, t, seq, m, r, pct, obs, src, meas, binary, code, sd, per_seed, conflict, ref) -> dict:
    is_pub = src is not None and src.startswith("published")
    note = _NOTE[binary] if key in PUBLISHED_KEY else (
        "flashprof's own kernel, profiled on this GPU (reports/h200)" if t != REF else "torch's FA2 copy, profiled here")
    return {
        "kind": "row", "gpu_key": key, "gpu": m.name, "target": t, "binary": binary, "seq": seq,
        "arch": "sm_80" if binary == "series" else GPUS[key], "clock_mhz": m.clock_mhz,
        "sass": code.source, "fa2_sass": ref.source if ref is not None else None,
        "config": f"B_r {code.B_r} x B_c {code.B_c}, {code.warps} warps, {code.registers} registers, "
                  f"{code.smem_bytes} B shared memory, bank-conflict factor {conflict:.4g}",
        "binary_note": note,
        "pred_pct_of_fa2": pct, "pred_pct_sd": sd, "pred_pct_seeds": per_seed, "pred_cycles_seeds": r["cycles_seeds"], "seeds": len(r["cycles_seeds"]),
        "published_pct": obs if is_pub else math.nan,
        "observed_pct": obs, "observed_source": src,
        "error_pp": pct - obs if not (math.isnan(pct) or math.isnan(obs)) else math.nan,
        "pred_tflops": r["tflops"], "pred_cycles": r["pred_cycles"],
        "pred_pipe_pct": {k: r["pipe_pct"][k] for k in ("tensor", "fma", "alu", "xu")},
        "pred_issue_pct": r["issue_pct"], "pred_stalls": dict(r["stalls"]),
        "measured_cycles": meas["cycles"] if meas else math.nan,
        "cycles_error_pct": 100 * (r["pred_cycles"] / meas["cycles"] - 1) if meas else math.nan,
        "measured_tensor_active_pct": meas["tensor_pct"] if meas else math.nan,
        "pred_tensor_active_pct": r["tensor_active_pct"],
        "limiting_resource": r["limiting"], "explanation": _explain(r, m),
        "loop_cycles": r["loop_cycles"], "loop_spread_pct": r["loop_spread_pct"],
        "ctas_per_sm": r["ctas_per_sm"],
        "fitted_parameters": fitted_parameters(m),
        **{f"stall_model_{g}": v for g, v in r["stalls"].items()},
        **{f"stall_measured_{g}": (meas["stalls"][g] if meas else math.nan) for g in STALL_GROUPS},
    }


def _mae(errs) -> float:
    return sum(map(abs, errs)) / len(errs) if errs else math.nan


def _mae_spread(rows_: list[dict], ref: dict, draws: int = 400, seed: int = 0) -> float:
    """SD of the MAE when FA2's and each kernel's seeds are resampled (bootstrap): how much
    of the MAE is the model's own run-to-run noise."""
    f_c = ref["pred_cycles_seeds"]
    if len(f_c) < 2 or any(len(r["pred_cycles_seeds"]) < 2 for r in rows_):
        return math.nan
    rng = random.Random(seed)
    maes = []
    for _ in range(draws):
        f = statistics.fmean(rng.choices(f_c, k=len(f_c)))
        maes.append(_mae([100 * f / statistics.fmean(rng.choices(r["pred_cycles_seeds"], k=len(r["pred_cycles_seeds"])))
                          - r["observed_pct"] for r in rows_]))
    return statistics.pstdev(maes)


def summaries(recs: list[dict], ref_tflops: dict | None = None) -> list[dict]:
    """Per GPU and binary: MAE (with its seed spread) over the rows with an observed value,
    next to the trivial baselines (every kernel = 100 %; every kernel at FA2's pipe-bound
    limit: the tensor roof at the bench clock over FA2's published TFLOP/s)."""
    pub = load_published()["gpus"]
    out = []
    keys = dict.fromkeys((r["gpu_key"], r.get("binary", "flashprof")) for r in recs if r["kind"] == "row")
    for key, binary in keys:
        rs = [r for r in recs if r["kind"] == "row" and r["gpu_key"] == key and r.get("binary") == binary
              and r.get("seq", SHAPE["seq"]) == SHAPE["seq"]]
        scored = [r for r in rs if not math.isnan(r["error_pp"])]
        ref = next((r for r in rs if r["target"] == REF), None)
        cyc = [r["cycles_error_pct"] for r in recs if r["kind"] == "row" and r["gpu_key"] == key
               and r.get("binary") == binary and not math.isnan(r["cycles_error_pct"])]
        by = {r["target"]: r for r in rs}
        s = {"kind": "summary", "gpu_key": key, "binary": binary, "n": len(scored),
             "mae_pp": _mae([r["error_pp"] for r in scored]),
             "cycles_mape_pct": _mae(cyc) if cyc else math.nan,
             "k7_error_pp": by["7"]["error_pp"] if "7" in by else math.nan,
             "k7mma_error_pp": by[MMA_SYNC]["error_pp"] if MMA_SYNC in by else math.nan,
             # the kernels as shipped (1-7): kernel 7's mma.sync form left out
             "mae_shipped_pp": _mae([r["error_pp"] for r in scored if r["target"] != MMA_SYNC]),
             "fitted_parameters": sorted({p for r in rs for p in r["fitted_parameters"]})}
        if binary == "series" and ref is not None and scored:
            s["mae_sd_pp"] = _mae_spread(scored, ref)
            m = machine(key)
            roof = m.sm_count * 4 * FLOP_PER_HMMA / m.hmma_interval * m.clock_mhz * 1e6 / 1e12
            fa2 = pub[PUBLISHED_KEY[key]]["reference_tflops"]["seq_4096"]
            s["baseline_100_mae_pp"] = _mae([100 - r["observed_pct"] for r in scored])
            s["baseline_pipe_bound_pct"] = 100 * roof / fa2
            s["baseline_pipe_bound_mae_pp"] = _mae([100 * roof / fa2 - r["observed_pct"] for r in scored])
            s["pred_fa2_tflops"], s["published_fa2_tflops"] = ref["pred_tflops"], fa2
            if "9" in by:
                s["climb_7_to_9_pred_pp"] = by["9"]["pred_pct_of_fa2"] - by["7"]["pred_pct_of_fa2"]
                s["climb_7_to_9_published_pp"] = by["9"]["observed_pct"] - by["7"]["observed_pct"]
            late = [by[str(k)] for k in range(8, 17) if str(k) in by]
            if late:
                s["k8_16_pred_range_pct"] = [min(r["pred_pct_of_fa2"] for r in late), max(r["pred_pct_of_fa2"] for r in late)]
                s["k8_16_published_range_pct"] = [min(r["observed_pct"] for r in late), max(r["observed_pct"] for r in late)]
        out.append(s)
    return out


def published_pipes(recs: list[dict]) -> list[dict]:
    """The series' own Nsight Compute pipe utilisation (published.json ``pipe_utilisation``) next
    to the model's pipe % for the same binaries (series rows, S = 4096), and per pipe the work
    ratio: published % x published time over predicted % x predicted time, the times from the
    published and predicted TFLOP/s. A ratio of 1 means the model's instruction accounting for
    that pipe is the GPU's whatever its time error; a pipe named "fma+alu" is their sum (the
    page gives only that on the RTX 3090)."""
    data = load_published()
    pu, pub = data.get("pipe_utilisation"), data["gpus"]
    if not pu:
        return []
    out = []
    for slug, kernels in pu["gpus"].items():
        key = pub[slug]["gpu_key"]
        by = {r["target"]: r for r in recs if r["kind"] == "row" and r["gpu_key"] == key
              and r.get("binary") == "series" and r.get("seq", SHAPE["seq"]) == SHAPE["seq"]}
        fa2 = pub[slug]["reference_tflops"]["seq_4096"]
        for t, pipes in kernels.items():
            r = by.get(t)
            if r is None:
                continue
            pub_tflops = fa2 * (1.0 if t == REF else pub[slug]["pct_of_fa2"][t]["seq_4096"] / 100)
            pred = {p: sum(r["pred_pipe_pct"][q] for q in p.split("+")) for p in pipes}
            time_ratio = pub_tflops / r["pred_tflops"]  # predicted time over published time
            out.append({"kind": "published_pipes", "gpu_key": key, "target": t, "source": pu["id"], "sass": r["sass"],
                        "published_pct": dict(pipes), "pred_pct": pred, "published_tflops": pub_tflops,
                        "pred_tflops": r["pred_tflops"], "pred_time_over_published": time_ratio,
                        "work_ratio": {p: pipes[p] / pred[p] / time_ratio for p in pipes}})
    return out


def sensitivity(conflicts: dict, gpus=tuple(PUBLISHED_KEY), names=SENSITIVE, targets=("7", "9")) -> list[dict]:
    """Series kernels 7 and 9 (% of FA2) with each assumed / simulator-setting constant at 0.8x and 1.2x."""
    out = []
    for key in gpus:
        base_m = machine(key)
        base, _ = predict_series(key, conflicts, base_m, SENSITIVITY_SEEDS, targets)
        for name in names:
            row = {"kind": "sensitivity", "gpu_key": key, "binary": "series", "constant": name,
                   "value": getattr(base_m, name), "source": base_m.sources.get(name, "")}
            for t in targets:
                row[f"k{t}_pct"] = 100 * base[REF]["pred_cycles"] / base[t]["pred_cycles"]
            for f in (0.8, 1.2):
                p, _ = predict_series(key, conflicts, base_m.scaled(name, f), SENSITIVITY_SEEDS, targets)
                for t in targets:
                    row[f"k{t}_pct_x{f}"] = 100 * p[REF]["pred_cycles"] / p[t]["pred_cycles"]
            out.append(row)
    return out


WGMMA_SENSITIVE = ("wgmma_group_latency", "wgmma_group8_latency", "wgmma_rs_group_latency",
                   "wgmma_rs_group8_latency", "wgmma_flop_per_clk_sm", "wgmma_fp32_share", "wgmma_fp32_steal",
                   "wgmma_alu_factor", "xu_issue_steal", "wgmma_xu_factor")


def sensitivity_wgmma(slugs: dict[str, str], conflicts: dict) -> list[dict]:
    """H200, the shipped wgmma kernel 7: % of FA2 with each wgmma constant at 0.8x and 1.2x,
    and with the HGMMA operand reads off the shared-memory data path (wgmma_smem_share 0)."""
    if "7" not in slugs:
        return []
    m = machine(H200)
    if m.wgmma_flop_per_clk_sm is None:
        return []
    code = kernel_loop("7", GPUS[H200], slugs["7"])
    ref = kernel_time(fa2_loop(GPUS[H200]), m, conflicts.get(REF, 1.0), SENSITIVITY_SEEDS)
    pct = lambda mm: 100 * ref["pred_cycles"] / kernel_time(code, mm, conflicts.get("7", 1.0), SENSITIVITY_SEEDS)["pred_cycles"]
    base = pct(m)
    out = []
    for name in WGMMA_SENSITIVE:
        if getattr(m, name) is None:
            continue
        out.append({"kind": "sensitivity_wgmma", "gpu_key": H200, "target": "7", "constant": name,
                    "value": getattr(m, name), "source": m.sources.get(name, ""), "pct": base,
                    "pct_x0.8": pct(m.scaled(name, 0.8)), "pct_x1.2": pct(m.scaled(name, 1.2))})
    off = dataclasses.replace(m, wgmma_smem_share=0.0)
    out.append({"kind": "sensitivity_wgmma", "gpu_key": H200, "target": "7", "constant": "wgmma_smem_share",
                "value": m.wgmma_smem_share, "source": "assumption (scheduler docstring)", "pct": base,
                "pct_share_0": pct(off)})
    return out


NOT_BUILT_K7 = ("64x32", "128x64")


def k7_sweep(conflicts: dict, gpus=tuple(PUBLISHED_KEY)) -> list[dict]:
    """The series' kernel-7 configurations that exist as SASS (reports/sass/series), predicted
    TFLOP/s on each GPU; the 64x32 and 128x64 tiles have no listing in the series' repository
    and were not built."""
    out = []
    for key in gpus:
        m = machine(key)
        ref_code = series_loop(REF, series_file(key, REF))
        ref = kernel_time(ref_code, m, conflicts.get(REF, 1.0))
        for stem in SERIES_K7_SWEEP:
            code = series_loop("7", f"{stem}_sm_80")
            swz = "no_swizzling" not in stem
            c = series_conflict("7", conflicts, swizzled=swz)
            r = kernel_time(code, m, c)
            pct, sd, _ = _pct_stats(r, ref)
            tf = [r["tflops"] * r["pred_cycles"] / x for x in r["cycles_seeds"]]
            out.append({"kind": "k7_sweep", "gpu_key": key, "sass": code.source, "tile": f"{code.B_r}x{code.B_c}",
                        "swizzled": swz, "measured_on_this_gpu": stem == "7_64_64_swizzling",
                        "registers": code.registers, "ctas_per_sm": r["ctas_per_sm"], "conflict": c,
                        "pred_tflops": r["tflops"], "pred_tflops_sd": statistics.pstdev(tf) if len(tf) > 1 else math.nan,
                        "pred_pct_of_fa2": pct, "pred_pct_sd": sd})
        out.append({"kind": "k7_sweep_missing", "gpu_key": key, "tiles": list(NOT_BUILT_K7),
                    "why": "no kernel_sass listing of these tiles in sonnyli/flash_attention_from_scratch@58b7e33; "
                           "phase 1 built the listed configurations only"})
    return out


def h200_evidence(frame) -> tuple[dict, dict, dict]:
    """From parsed H200 reports (load_frame long frame), keyed by (target, seq): measured SM
    cycles, tensor-active % and stall mix, and the config slug each report ran; per target
    the bank-conflict factor (from the S=4096 report)."""
    from flashprof.analysis.report.parse import per_launch
    from flashprof.analysis.metrics.recipes import PIPE_METRICS
    from flashprof.analysis.gap.data import launch_work

    meas, conflicts, slugs = {}, {}, {}
    if frame is None or not len(frame):
        return meas, conflicts, slugs
    lw = launch_work(frame, wgmma=True)
    lw = lw[lw["gpu_key"] == H200]
    by_launch = {(key[0], key[2]): m for key, _arch, m in per_launch(frame)}
    for r in lw.to_dict("records"):
        m = by_launch[(r["report"], r["launch"])]
        t, seq = r["target"], int(r["seq"])
        meas[(t, seq)] = {"cycles": m.get("sm__cycles_elapsed.avg", math.nan),
                   "tensor_pct": m.get(PIPE_METRICS["tensor"][0], math.nan),
                   "stalls": measured_stalls(m)}
        wf, bc = m.get(WAVEFRONTS), m.get(CONFLICT_LD)
        if wf and bc is not None and wf > bc and seq == SHAPE["seq"]:
            conflicts[t] = wf / (wf - bc)
        if t != REF and r.get("config_slug"):
            slugs[(t, seq)] = r["config_slug"]
    return meas, conflicts, slugs


def report(frame=None, workers: int = 2) -> list[dict]:
    """Every record of ``python -m flashprof.analysis gap --model issue``: rows (series and
    flashprof binaries), summaries, the kernel-7 sweep, sensitivity, limitations."""
    global _POOL
    from flashprof.kernels.config import variant

    meas, conflicts, slugs = h200_evidence(frame)
    ours = {str(k): variant(k).slug for k in range(1, 8)}
    by_gpu = {k: ours for k in PUBLISHED_KEY}
    h200 = {t: slug for (t, seq), slug in slugs.items() if seq == SHAPE["seq"]}
    if h200:
        by_gpu[H200] = h200
    pool = ProcessPoolExecutor(workers, initializer=die_with_parent) if workers > 1 else None
    _POOL = pool
    try:
        recs = rows(by_gpu, conflicts, meas)
        progress("other shapes")
        recs += other_shape_rows(meas, slugs, conflicts)
        recs += summaries(recs)
        recs += published_pipes(recs)
        progress("kernel-7 tile sweep")
        recs += k7_sweep(conflicts)
        progress("sensitivity to each assumed constant")
        recs += sensitivity(conflicts)
        recs += sensitivity_wgmma(h200, conflicts)
        progress("done")
    finally:
        _POOL = None
        if pool is not None:
            pool.shutdown()
    recs += [{"kind": "limitation", "text": t} for t in limitations(recs)]
    return recs


def _a100_pipes_sentence(recs: list[dict]) -> str:
    """What the series' own A100 profiles (published_pipes records) say of the FA2 miss."""
    pp = {r["target"]: r for r in recs if r["kind"] == "published_pipes" and r["gpu_key"] == A100}
    f, k = pp.get(REF), pp.get("7")
    if not f or not k:
        return ""
    w = lambda r: ", ".join(f"{p} {v:.3f}" for p, v in r["work_ratio"].items())
    return (f" The series' own A100 profiles (Part 7's pipe utilisation) put the miss in FA2's time: pipe work "
            f"published / predicted, kernel 7 {w(k)} (time {k['pred_time_over_published']:.3f} of the model's over "
            f"the published), FA2 {w(f)} (time {f['pred_time_over_published']:.3f}). The FA2 rebuild does not move "
            "with the toolchain the series named (reports/sass/series/fa2_toolchain.json: ptxas 12.8.61 and 12.8.93 "
            "give the same SASS, and so do the CUDA 12.8 and 13.0 front ends), so its ALU reading is the one "
            "measured number the rebuild's loop does not reproduce.")


def limitations(recs: list[dict]) -> list[str]:
    summ = {(r["gpu_key"], r["binary"]): r for r in recs if r["kind"] == "summary"}
    out = []
    a = summ.get((A100, "series"))
    if a:
        out.append(
            f"A100, series binaries: MAE {a['mae_pp']:.1f} +- {a['mae_sd_pp']:.1f} pp; the model predicts FA2 at "
            f"{a['pred_fa2_tflops']:.0f} TFLOP/s (published {a['published_fa2_tflops']:.0f}) and puts kernels 8-16 at "
            f"{a['k8_16_pred_range_pct'][0]:.0f}-{a['k8_16_pred_range_pct'][1]:.0f} % of it (published "
            f"{a['k8_16_published_range_pct'][0]:.0f}-{a['k8_16_published_range_pct'][1]:.0f} %). Kernels 9-16 run FA2's "
            "tile (128x64, 4 warps, 255 registers, 2 CTAs/SM, the same HMMA / LDSM / MUFU / FP32 counts per pass), "
            "so what separates them from FA2 on the hardware is below this model's resolution: "
            "register-bank / dispatch conflicts, the spill traffic (9-14 LDL per pass against FA2's 8 LDL + 4 STL; "
            "modelled as L1 hits only), instruction fetch. An Nsight Compute profile of kernel 16 and FA2 on an A100 "
            "at 1110 MHz (stall reasons, dispatch stalls, L1 hit rate of local loads) would settle it."
            + _a100_pipes_sentence(recs))
    out += [
        "H200 kernel 7 is the shipped wgmma kernel (HGMMA simulated: the measured SS / RS wgmma rates and the "
        "group latency from make ceilings' wgmma probes, nothing fitted; a WARPGROUP.DEPBAR wait counts as "
        "Nsight Compute's 'barrier', where its PC sampling puts it); 7mma is its mma.sync form. The HGMMA's "
        "shared-memory operand reads share the 128 B/clk data path with the other shared-memory traffic "
        "(an assumption: wgmma_smem_share in the sensitivity of the what-if). FP32 work beside a running HGMMA "
        "costs both sides, as the wgmma mix benchmark's split-role run measured it (H100, the same SM): the "
        "HGMMA takes the FP32 datapaths for about 49 of its 64 cycles (wgmma_fp32_share) and each FP32 / IMAD "
        "instruction issued while it runs holds the tensor pipe about one cycle longer (wgmma_fp32_steal); the "
        "17 FP32 mix points, none used, are predicted at 8.8 % MAE (26 % with no such cost). An ALU-pipe "
        "instruction (FMNMX, F2FP, ...) issued beside a running HGMMA takes wgmma_alu_factor (1.99) times its "
        "time and the HGMMA nothing (the split-role run's FMNMX; the FMNMX mix points, not used, 7 % MAE "
        "against 30 % without). On the H200 the XU pipe (MUFU) is held 0.65 cycles longer by each FP32 "
        "instruction issued at full rate while it is busy (xu_issue_steal, scope fp32_full: the XU rule judged "
        "on wgsplit3, wgsplit5 and the XU probe) and 1.33 times as long beside a running HGMMA "
        "(wgmma_xu_factor), both from the split-role run wgsplit3 (EX2 one in five among FFMAs alone; EX2 "
        "beside HGMMAs): held out, the other EX2 mixes and kernel 7's softmax mix alone 2.3 % MAE (7.9 % "
        "without), the mixes beside HGMMAs 12.9 % (21.8 %), the EX2 and softmax mix points 2.8 % (6.1 %); "
        "not measured on the A100 or RTX 3090 (0 there). Still not modelled: beside HGMMAs the softmax mix "
        "leaves them their whole rate where the FP32 steal takes about a quarter (wgmma_interplay.json, "
        "split_sim). The warp instructions "
        "between an HGMMA group's issue and its wait run faster than on the GPU (its report has their warps "
        "in wait and dispatch_stall where the model has them at WARPGROUP.DEPBAR, 'barrier'; "
        "reports/gap/pc_stalls_h200.json, by_region). The A100 / RTX 3090 rows have no HGMMA.",
        "The issue cost around HMMA (an HMMA holds its sub-partition's dispatch hmma_issue_cycles; each other "
        "instruction issued beside a busy tensor pipe holds it tensor_issue_steal longer) is measured on the H200 "
        "(make ceilings' mix, reports/h200/mma_mix/interplay.json) and carried unchanged to the A100 and the "
        "RTX 3090 (not measured there; both constants in the sensitivity table). Not modelled: what else "
        "Nsight Compute counts as dispatch_stall (register-bank conflicts), instruction fetch, the yield bit, "
        "and the extra fixed wait the H200 reports show after an instruction of stall count 2 or more (about "
        "S - 1 + 0.3 ... 1 cycles where the model waits S - 1: reports/gap/pc_stalls_h200.json).",
        "Loop bodies run straight-line: forward branches inside the KV loop fall through, a predicated CALL "
        "(kernels 13-16: a slow path) is not followed; an out-of-line block the loop branches to and returns "
        "from (FA2's next-K cp.async block, in the series' and PyTorch's FA2 alike) is spliced in "
        "(loops.with_out_of_line; tests/test_gap_loop_cover.py checks every H200 loop against its report's "
        "per-PC instruction counts). "
        "Shared-memory bank conflicts enter as one factor per kernel measured on the H200 for flashprof's "
        "kernel of the same step (series kernels 8-16: kernel 7's; unswizzled kernel-7 variant: kernel 1's).",
        "L2: every LDGSTS hits; its bytes queue on the SM's share of the measured L2 bandwidth (A100 35.5, "
        "GA102 (A40) 17.0 B/clk/SM, RRZE-HPC/gpu-benches); the H200 has no measured L2 rate in the model "
        "(no term). Far-partition L2 latency on the A100 (402 vs 206 cycles near) is in the sensitivity table "
        "only as l2_latency x1.2.",
        f"Steady states differ by a few per cent between CTA starts (loop_spread_pct); rows average {len(SEEDS)} "
        f"seeds (pred_pct_sd: the sd of a one-seed prediction; mae_sd_pp: the MAE's bootstrap sd over the seeds), "
        f"the sensitivity table {len(SENSITIVITY_SEEDS)} -- its +-1-2 pp wiggles are that noise.",
        "A100 / GA102 constants (gpus.json): L1 and L2 latency and L2 bandwidth measured (RRZE-HPC/gpu-benches, "
        "A40 for GA102); shared-memory and MUFU latency are Accel-Sim simulator settings (SM80_A100, "
        "SM86_RTX3070 = GA104); BAR.SYNC latency, MIO queue depth and the LSU rate are assumptions -- each in the "
        "sensitivity table. The H200's LDS/LDSM/MUFU/BAR/cp.async latencies and HMMA/MUFU rates are measured "
        "(ceilings.json), and so is its MIO queue depth (12 requests a sub-partition: ceilings mio2 on the H100, "
        "the same SM, one warp on each scheduler issuing ldmatrix.x4 at once; analysis/gap/mio_probe.py); its L1 "
        "latency is not.",
        "The RTX 3090 rows run the sm_80 binaries (the series built sm_80 only, on both GPUs); flashprof's rows "
        "run its own sm_80 / sm_86 builds, divided by the official FA2 the series measured.",
    ]
    return out


def _f(v, fmt="{:.1f}") -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def render(recs: list[dict]) -> str:
    lines = ["issue model (analysis/gap/scheduler.py): predicted % of FA2 at S=4096 (B16 H16 d128 fp16), nothing fitted",
             f"{'gpu':<10} {'binary':<9} {'target':>6} {'MHz':>6} {'pred%':>6} {'sd':>4} {'obs%':>6} {'err pp':>7} "
             f"{'TFLOP/s':>8} {'tensor%':>7} {'fma%':>5} {'alu%':>5} {'issue%':>6} {'cyc err%':>8} {'limit':<13} explanation"]
    for r in recs:
        if r["kind"] == "row":
            tgt = r["target"] if r.get("seq", SHAPE["seq"]) == SHAPE["seq"] else f"{r['target']}@S{r['seq']}"
            pp = r["pred_pipe_pct"]
            lines.append(f"{r['gpu_key']:<10} {r['binary']:<9} {tgt:>6} {r['clock_mhz']:>6.0f} {_f(r['pred_pct_of_fa2']):>6} "
                         f"{_f(r['pred_pct_sd']):>4} {_f(r['observed_pct']):>6} {_f(r['error_pp'], '{:+.1f}'):>7} "
                         f"{r['pred_tflops']:>8.1f} {pp['tensor']:>7.1f} {pp['fma']:>5.1f} {pp['alu']:>5.1f} "
                         f"{r['pred_issue_pct']:>6.1f} {_f(r['cycles_error_pct'], '{:+.1f}'):>8} "
                         f"{r['limiting_resource']:<13} {r['explanation']}")
    lines.append("")
    for r in recs:
        if r["kind"] == "summary":
            line = (f"{r['gpu_key']} ({r['binary']}): MAE {_f(r['mae_pp'])}"
                    + (f" +- {_f(r['mae_sd_pp'])}" if "mae_sd_pp" in r else "")
                    + f" pp over {r['n']} kernels; kernel 7 error {_f(r['k7_error_pp'], '{:+.1f}')} pp")
            if "baseline_100_mae_pp" in r:
                line += (f"; baselines: every kernel 100 % -> MAE {r['baseline_100_mae_pp']:.1f}, every kernel at "
                         f"FA2's pipe-bound limit ({r['baseline_pipe_bound_pct']:.1f} %) -> {r['baseline_pipe_bound_mae_pp']:.1f}"
                         f"; 7->9 predicted {r['climb_7_to_9_pred_pp']:+.1f} pp, published {r['climb_7_to_9_published_pp']:+.1f}")
            if not math.isnan(r["cycles_mape_pct"]):
                line += f"; cycles MAPE {_f(r['cycles_mape_pct'])} %"
            lines.append(line + f"; fitted parameters: {', '.join(r['fitted_parameters']) or 'none'}")
    h = [r for r in recs if r["kind"] == "row" and not math.isnan(r["measured_cycles"])]
    if h:
        lines += ["", "stall mix (warps stalled per issued instruction), model / measured:",
                  f"{'gpu':<10} {'target':>6} {'tensor% m/meas':>15} " + " ".join(f"{g:>14}" for g in STALL_GROUPS)]
        for r in h:
            lines.append(f"{r['gpu_key']:<10} {r['target']:>6} {r['pred_tensor_active_pct']:>6.1f}/{r['measured_tensor_active_pct']:<6.1f}   "
                         + " ".join(f"{r[f'stall_model_{g}']:>6.2f}/{r[f'stall_measured_{g}']:<6.2f}"
                                    for g in STALL_GROUPS))
    sw = [r for r in recs if r["kind"] == "k7_sweep"]
    if sw:
        lines += ["", "series kernel-7 configurations (predicted TFLOP/s, sd over seeds; % of FA2):"]
        for r in sw:
            lines.append(f"  {r['gpu_key']:<10} {r['tile']:>7} {'swizzled' if r['swizzled'] else 'unswizzled':<10} "
                         f"{r['pred_tflops']:7.1f} +- {_f(r['pred_tflops_sd'])}  {r['pred_pct_of_fa2']:6.1f} %"
                         f"{'  (measured config)' if r['measured_on_this_gpu'] else ''}  {r['sass']}")
        for r in recs:
            if r["kind"] == "k7_sweep_missing":
                lines.append(f"  {r['gpu_key']:<10} not built: {', '.join(r['tiles'])} ({r['why']})")
    sens = [r for r in recs if r["kind"] == "sensitivity"]
    if sens:
        lines += ["", "sensitivity: series kernels 7 and 9, % of FA2 with each constant at 0.8x / 1.0x / 1.2x"]
        for r in sens:
            lines.append(f"  {r['gpu_key']:<10} {r['constant']:<16} {r['value']:>7.1f}  k7 {r['k7_pct_x0.8']:6.1f} "
                         f"{r['k7_pct']:6.1f} {r['k7_pct_x1.2']:6.1f}   k9 {r['k9_pct_x0.8']:6.1f} {r['k9_pct']:6.1f} "
                         f"{r['k9_pct_x1.2']:6.1f}")
    sw = [r for r in recs if r["kind"] == "sensitivity_wgmma"]
    if sw:
        lines += ["", "sensitivity: H200 wgmma kernel 7, % of FA2 with each wgmma constant at 0.8x / 1.0x / 1.2x"]
        for r in sw:
            if "pct_share_0" in r:
                lines.append(f"  {r['constant']:<22} {r['value']:>7.2f}  {r['pct']:6.1f} -> {r['pct_share_0']:6.1f} "
                             "with the HGMMA operand reads off the shared-memory path")
            else:
                lines.append(f"  {r['constant']:<22} {r['value']:>7.1f}  {r['pct_x0.8']:6.1f} {r['pct']:6.1f} {r['pct_x1.2']:6.1f}")
    lines += ["", "limitations:"] + [f"- {r['text']}" for r in recs if r["kind"] == "limitation"]
    return "\n".join(lines)


def gap_issue_paths(reports=None, cache: bool = True) -> list[dict]:
    """``report`` over report files (default: reports/h200/ at S=4096)."""
    import warnings

    from flashprof.analysis.report.parse import load_frame
    from flashprof.analysis.gap.frozen import default_report_paths

    from flashprof.analysis.report.errors import ReportError

    paths = list(reports) if reports else default_report_paths()
    frame = None
    if paths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame = load_frame(paths, cache=cache)
    try:
        return report(frame)
    except (SassError, KeyError) as exc:  # a missing / unreadable SASS or constants entry
        raise ReportError(f"issue model: {exc}") from None


def write_plot(recs: list[dict], path) -> Path:
    from flashprof.analysis.charts.gap_charts import issue_gap_titles, plot_issue_gap

    title, subtitle = issue_gap_titles(recs)
    fig = plot_issue_gap(recs, title=title, subtitle=subtitle)
    from flashprof.analysis.report.errors import ReportError

    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=130)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{out}: cannot write the figure ({exc})") from None
    return out

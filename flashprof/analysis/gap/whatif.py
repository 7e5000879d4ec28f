"""What-if: the issue model's prediction for named changes to the single-pipeline wgmma kernel 7
(the one shipped before the warp-specialised form; ``base_slug``), made before anyone built
them (issue 34 measured them: docs/HOPPER_STEPS.md).

Each change is a transformation of kernel 7's committed KV-loop SASS (reports/sass/loops)
and of its launch shape, simulated by the same scheduler with the same H200 constants:

* ``pingpong``: the two warpgroups resident on an SM take turns at their GEMM phases
  (FlashAttention-3's named-barrier ordering), so one's softmax runs under the other's
  HGMMAs (scheduler option ``pingpong``).
* ``overlap``: softmax of block j overlaps QK^T of block j+1 inside a warpgroup: the wait
  that follows the QK^T group goes, the one after P V waits for both groups. Needs the S
  accumulators of two blocks live (64 more registers per thread than kernel 7's 252), so
  it is only buildable together with register reallocation.
* ``tma``: a producer loads K/V with TMA: the consumers' LDGSTS, their cp.async commits and
  waits, the CTA barrier and the proxy fences leave the loop; the tiles' bytes still cross
  the shared-memory data path (scheduler option ``background_wavefronts``). The
  instructions that compute the LDGSTS addresses stay (an overestimate of what remains).
* ``tile128``: B_r = 128 as two consumer warpgroups of one CTA (8 warps, one CTA per SM by
  registers): each warp issues half of the LDGSTS.
* combinations, e.g. ``tma+pingpong+overlap`` (FlashAttention-3's recipe).

Output: per change, predicted cycles, TFLOP/s at the bench clock, % of FA2 (the model's
FA2 on the same machine) and speed-up over the shipped kernel 7, with the seed spread.
Nothing is fitted; the numbers are predictions, to be compared with issue 34's
measurements.
"""
from __future__ import annotations

import dataclasses
import math
import statistics

from flashprof.analysis.gap.constants import machine
from flashprof.analysis.gap.controls import Inst, SassError
from flashprof.analysis.gap.loops import LoopCode, fa2_loop, kernel_loop
from flashprof.analysis.gap.scheduler import hgmma_shape

CHANGES = ("pingpong", "overlap", "tma", "tile128")
DEFAULT = ("pingpong", "overlap", "tma", "tile128", "tma+pingpong", "tma+overlap", "tma+pingpong+overlap",
           "tile128+tma+pingpong", "tile128+tma+pingpong+overlap")
_TMA_DROP = ("LDGSTS", "LDGDEPBAR", "DEPBAR", "BAR", "MEMBAR", "FENCE")


def _commits(body) -> list[int]:
    return [k for k, i in enumerate(body) if i.base == "HGMMA" and hgmma_shape(i)[3]]


def _group_waits(body) -> list[int]:
    return [k for k, i in enumerate(body) if i.base == "WARPGROUP" and ".DEPBAR" in i.op]


def drop_qk_wait(body: list[Inst]) -> list[Inst]:
    """The loop without the WARPGROUP.DEPBAR that follows the first HGMMA group (QK^T)."""
    commits, waits = _commits(body), _group_waits(body)
    if len(commits) < 2:
        raise SassError("overlap: the loop has fewer than two HGMMA groups (QK^T and P V)")
    first = next((k for k in waits if commits[0] < k < commits[1]), None)
    if first is None:
        raise SassError("overlap: no warpgroup wait between the QK^T and the P V group")
    return [i for k, i in enumerate(body) if k != first]


def tma_body(body: list[Inst]) -> tuple[list[Inst], float]:
    """(consumer loop without the cp.async machinery and the CTA barrier, wavefronts its
    LDGSTS wrote per warp and pass)."""
    waves = sum(4 for i in body if i.base == "LDGSTS")  # .128: 512 B a warp instruction
    keep = [i for i in body if i.base not in _TMA_DROP]
    return keep, float(waves)


def halve_loads(body: list[Inst]) -> list[Inst]:
    """Every second LDGSTS dropped: twice the warps share one CTA's tile loads."""
    out, k = [], 0
    for i in body:
        if i.base == "LDGSTS":
            k += 1
            if k % 2 == 0:
                continue
        out.append(i)
    return out


def variant_code(base: LoopCode, change: str) -> tuple[LoopCode, tuple]:
    """(loop code, scheduler options) of one change or a '+'-joined combination."""
    parts = change.split("+")
    bad = [p for p in parts if p not in CHANGES]
    if bad or not parts:
        raise SassError(f"unknown what-if change {'+'.join(bad) or change!r}: known {', '.join(CHANGES)}")
    body, opts, code = list(base.body), {}, base
    if "tile128" in parts:
        body = halve_loads(body)
        code = dataclasses.replace(code, warps=2 * base.warps, B_r=2 * base.B_r,
                                   smem_bytes=base.smem_bytes + base.B_r * 128 * 2)
    if "overlap" in parts:
        body = drop_qk_wait(body)  # registers as shipped: see the module note
    if "tma" in parts:
        body, waves = tma_body(body)
        opts["background_wavefronts"] = waves * code.warps
    if "pingpong" in parts:
        opts["pingpong"] = True
    code = dataclasses.replace(code, target=f"7:{change}", body=tuple(body), source=base.source + f" ({change})")
    return code, tuple(sorted(opts.items()))


def predict(changes=DEFAULT, gpu_key: str | None = None, slug: str | None = None, seeds=None,
            m=None) -> list[dict]:
    """One record per change (and the shipped kernel 7 as ``baseline``)."""
    from flashprof.analysis.gap import issue_report as ir
    from flashprof.kernels.config import load_tuned

    gpu_key = gpu_key or ir.H200
    m = m or machine(gpu_key)
    if m.wgmma_flop_per_clk_sm is None:
        raise SassError(f"{gpu_key}: no measured wgmma rate (make ceilings on an sm_90 GPU)")
    if slug is None:
        slug = base_slug(load_tuned())
    base = kernel_loop("7", "sm_90", slug)
    seeds = tuple(seeds or ir.SEEDS)
    ref = ir.kernel_time(fa2_loop("sm_90"), m, 1.0, seeds)
    shipped = ir.kernel_time(base, m, 1.0, seeds)
    out = [_record("baseline", base, (), shipped, shipped, ref, m)]
    for ch in changes:
        code, opts = variant_code(base, ch)
        r = ir.kernel_time(code, m, 1.0, seeds, opts=opts)
        out.append(_record(ch, code, opts, r, shipped, ref, m))
    return out


def base_slug(tuned: dict) -> str:
    """The kernel the changes apply to: the tuned single-pipeline wgmma kernel 7. Once the
    tuner has picked a warp-specialised one (the changes built), it is the newest default it
    replaced (tuned.json's ``previous_default``, then ``earlier_defaults``): the predictions stay what they were, made
    before the build, and ``flashprof gap`` compares them with what was measured."""
    import json

    from flashprof.kernels.config import TUNED_FILE, KernelConfig

    for gpu, cfg in tuned.items():
        if not cfg.wgmma:
            continue
        if not cfg.warp_specialized:
            return cfg.slug
        entry = json.loads(TUNED_FILE.read_text()).get(gpu, {})
        for old in [entry.get("previous_default", {}), *entry.get("earlier_defaults", [])]:
            prev = old.get("config")
            if prev and KernelConfig.from_dict(prev).wgmma and not KernelConfig.from_dict(prev).warp_specialized:
                return KernelConfig.from_dict(prev).slug
    raise SassError("no single-pipeline wgmma kernel 7 in kernels/tuned.json (default, previous_default or "
                    "earlier_defaults)")


def _record(change, code, opts, r, shipped, ref, m) -> dict:
    cyc = r["cycles_seeds"]
    speed = [shipped["pred_cycles"] / c for c in cyc]
    return {
        "kind": "what_if", "gpu_key": m.gpu_key, "change": change, "config": f"B_r {code.B_r} x B_c {code.B_c}, "
        f"{code.warps} warps, {code.registers} registers, {code.smem_bytes} B shared memory",
        "options": dict(opts), "ctas_per_sm": r["ctas_per_sm"], "loop_instructions": len(code.body),
        "pred_cycles": r["pred_cycles"], "pred_tflops": r["tflops"],
        "pred_pct_of_fa2": 100 * ref["pred_cycles"] / r["pred_cycles"],
        "speedup_vs_shipped": shipped["pred_cycles"] / r["pred_cycles"],
        "speedup_sd": statistics.pstdev(speed) if len(speed) > 1 else math.nan,
        "pred_tensor_active_pct": r["tensor_active_pct"], "pred_issue_pct": r["issue_pct"],
        "pred_stalls": dict(r["stalls"]), "clock_mhz": m.clock_mhz,
    }


def render(recs: list[dict]) -> str:
    lines = ["what-if (issue model, H200 constants; predictions before building): shipped wgmma kernel 7 and "
             "named changes, B16 H16 S4096 d128 fp16",
             f"{'change':<22} {'CTA/SM':>6} {'TFLOP/s':>8} {'% FA2':>6} {'x K7':>6} {'sd':>5} {'tensor%':>7} "
             f"{'issue%':>6}  top stalls (warps per issue)"]
    for r in recs:
        top = sorted(r["pred_stalls"].items(), key=lambda kv: -kv[1])[:3]
        sd = "-" if math.isnan(r["speedup_sd"]) else f"{r['speedup_sd']:.3f}"
        lines.append(f"{r['change']:<22} {r['ctas_per_sm']:>6} {r['pred_tflops']:>8.0f} {r['pred_pct_of_fa2']:>6.1f} "
                     f"{r['speedup_vs_shipped']:>6.3f} {sd:>5} {r['pred_tensor_active_pct']:>7.1f} "
                     f"{r['pred_issue_pct']:>6.1f}  " + ", ".join(f"{k} {v:.2f}" for k, v in top))
    lines.append("overlap needs the S accumulators of two KV blocks (64 more registers per thread than 252): "
                 "buildable only with register reallocation (setmaxnreg) and a producer warpgroup; "
                 "tma keeps the LDGSTS address arithmetic in the loop (an overestimate of what remains).")
    return "\n".join(lines)



"""docs/GAP.md, generated from the committed model result (never edited by hand).

Inputs: ``reports/gap/issue_model.json`` (the issue model's records), and where present
``reports/gap/whatif.json`` (``flashprof gap --what-if --format json``) and
``reports/sass/autotune_wgmma_issue_model.csv`` (``autotune_check --wgmma``) and
``reports/gap/series_h200.json`` (``series_measured --write``) and
``reports/gap/fa2_official_<gpu>.json`` (``fa2_official --write``). Output: the
page text. ``python -m flashprof.analysis.gap.gap_doc`` writes it; a test checks that the
committed page is what this renders from the committed data.

Skill per GPU is stated against the trivial baselines on the series' kernels 2-16 (kernel
1 is an outlier every model gets): MAE, and the Spearman rank correlation between
predicted and published % of FA2 (a constant baseline has none).
"""
from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

import pandas as pd

from flashprof.analysis.gap.data import REF, REPO
from flashprof.analysis.gap import frozen
from flashprof.analysis.gap.issue_report import A100, H200, PUBLISHED_KEY
from flashprof.kernels.gpus import GPUS, SHIPPED, by_model_key

PAGE = REPO / "docs" / "GAP.md"
WHATIF = frozen.DIR / "whatif.json"
WGMMA_CHECK = REPO / "reports" / "sass" / "autotune_wgmma_issue_model.csv"
# The series' binaries measured on the shipped GPU (analysis/gap/series_measured.py --write).
SERIES_HERE = frozen.DIR / "series_h200.json"
# FA2 as the series measured it (the fork's kernel) built for sm_90 and profiled (analysis/gap/fa2_official.py --write).
# (the shipped GPU's first, then any other sm_90 part's: the GH100 SM)
OFFICIAL = tuple(frozen.DIR / f"fa2_official_{g.slug}.json"
                 for g in sorted((g for g in GPUS if g.arch == SHIPPED.arch), key=lambda g: g is not SHIPPED))
SERIES_GPUS = tuple(PUBLISHED_KEY)  # the GPUs with published numbers (model keys, kernels/gpus.py)



def _wgmma_mix_sentence(k7: dict, ref: dict | None = None) -> str:
    """What the wgmma mix microbenchmark and the seeds say of kernel 7's error, or ''."""
    from flashprof.analysis.gap import wgmma_interplay

    rec = wgmma_interplay.load()
    soft = ((rec or {}).get("second_run") or {}).get("points", {})
    if not rec or not rec.get("adopted") or not soft:
        return ""
    errs = ", ".join(f"{v['error_pct']:+.1f}" for _, v in sorted(soft.items(), key=lambda kv: int(kv[0].split("_k")[1]))
                     if "_softmax_" in _)
    ex = rec.get("exchange") or {}
    if ex.get("adopted"):
        mae = ex.get("mae_pct", {})
        out = (f" Its softmax runs beside its HGMMAs, and that costs both sides, as the wgmma mix benchmark's "
               f"split-role run measured it: a running HGMMA takes the FP32 datapaths for "
               f"{ex['fp32_cycles_lost_per_hgmma']:.0f} of its {ex['hgmma_cycles_alone']:.0f} cycles (`wgmma_fp32_share` "
               f"{ex['wgmma_fp32_share']:.3f}) and each FP32 instruction issued beside it holds the pipe "
               f"{ex['wgmma_fp32_steal']:.2f} cycles (`wgmma_fp32_steal`); from that run alone, the {ex['n']} FP32 mix points "
               f"are predicted at {_f(mae.get('exchange'))} % MAE ({_f(mae.get('none'))} % with no such cost, "
               f"{_f(mae.get('share'))} % for the one-sided share chosen on five of them).")
        alu = rec.get("alu") or {}
        if alu.get("adopted"):
            am = alu.get("mae_pct") or {}
            out += (f" An ALU-pipe instruction (FMNMX, F2FP, ...) beside a running HGMMA takes "
                    f"{alu['wgmma_alu_factor']:.2f} times its time and the HGMMA nothing (`wgmma_alu_factor`, the split "
                    f"run's FMNMX; the FMNMX mix points, not used, {_f((am.get('with') or {}).get('fmnmx'))} % MAE against "
                    f"{_f((am.get('without') or {}).get('fmnmx'))} % without).")
        mu = rec.get("mufu") or {}
        if mu.get("adopted"):
            w, wo = (mu.get("mae_pct") or {}).get("with") or {}, (mu.get("mae_pct") or {}).get("without") or {}
            out += (f" Its MUFU.EX2s pay twice (the split-role run wgsplit3): each other instruction issued while "
                    f"the XU pipe works holds it {mu['xu_issue_steal']:.2f} cycles longer (`xu_issue_steal`) and beside a "
                    f"running HGMMA an EX2 takes {mu['wgmma_xu_factor']:.2f} times its time (`wgmma_xu_factor`); held out, "
                    f"the EX2 and softmax mixes alone {_f(w.get('alone_mae_pct'))} % MAE ({_f(wo.get('alone_mae_pct'))} % "
                    f"without), beside HGMMAs {_f(w.get('beside_mae_pct'))} % ({_f(wo.get('beside_mae_pct'))} %), the mix "
                    f"points {_f(w.get('mix_mae_pct'))} % ({_f(wo.get('mix_mae_pct'))} %).")
            rule = rec.get("xu_rule") or {}
            if rule.get("choice"):
                pm = rule.get("pooled_mae_pct") or {}
                out += (f" Which instructions pay that steal was then judged on every XU record of the SM (wgsplit3, "
                        f"wgsplit5's neighbour warps, the XU probe's softmax mix at 1-4 warps; analysis/gap/xu_rule.py, "
                        f"rule written before scoring): pooled MAE as committed before {_f(pm.get('C0'))} %, no steal "
                        f"{_f(pm.get('C1'))} %, FP32 at full rate only {_f(pm.get('C2'))} %; the model takes "
                        f"{rule['choice']} (`xu_steal_scope` {rule['xu_steal_scope']}, steal {rule['xu_issue_steal']:g}).")
        return out + _settle_sentence(k7, ref)
    out = (f" Its softmax runs beside its HGMMAs: the measured FP32 cost of that (`wgmma_fp32_share` "
           f"{rec['wgmma_fp32_share']:g}, from the wgmma mix microbenchmark) predicted kernel 7's softmax mix there "
           f"before it was measured ({errs} % at 10-40 instructions per HGMMA), so the cost's size holds; "
           "the model charges it to the FP32 instruction, while " + _split_sentence())
    return out + _settle_sentence(k7, ref)


def _settle_sentence(k7: dict, ref: dict | None = None) -> str:
    """How the seeds' two-warpgroup phase came out: settled (one's softmax under the other's
    HGMMAs: within 5 % of the fastest seed) or locked, and the settled seeds' cycles error."""
    cyc, meas = k7.get("pred_cycles_seeds") or [], k7.get("measured_cycles")
    if not cyc or _nan(meas):
        return ""
    fast = min(cyc)
    settled = [c for c in cyc if c <= 1.05 * fast]
    if len(settled) == len(cyc):
        return (f" Timed after its two warpgroups settle (32 loop passes, the last 16), all {len(cyc)} seeds reach "
                f"the same phase (within {100 * (max(cyc) / fast - 1):.1f} %) and come out "
                f"{100 * (statistics.fmean(cyc) / meas - 1):+.1f} % in cycles; FA2's, the denominator, "
                f"{_f((ref or {}).get('cycles_error_pct'), '{:+.1f}')} %. Where the time goes differs: the model's "
                f"warps reach WARPGROUP.DEPBAR early and wait there (Nsight Compute's barrier: "
                f"{_f(k7.get('stall_model_barrier'), '{:.2f}')} warps per issued instruction, the report's "
                f"{_f(k7.get('stall_measured_barrier'), '{:.2f}')}); the GPU's spend it on the way, in wait "
                f"({_f(k7.get('stall_measured_wait'), '{:.2f}')}, the model's {_f(k7.get('stall_model_wait'), '{:.2f}')}) and "
                f"dispatch_stall ({_f(k7.get('stall_measured_dispatch'), '{:.2f}')}, the model's "
                f"{_f(k7.get('stall_model_dispatch'), '{:.2f}')}).")
    return (f" Timed after its two warpgroups settle (32 loop passes, the last 16: METHOD.md, \"Warp choice and "
            f"the phase of two warpgroups\"), {len(settled)} of {len(cyc)} seeds keep one's softmax under the "
            f"other's HGMMAs and come out {100 * (statistics.fmean(settled) / meas - 1):+.1f} % in cycles; "
            f"{len(cyc) - len(settled)} lock both softmaxes in phase (up to {100 * (max(cyc) / fast - 1):.0f} % slower); "
            f"the GPU does not: its barrier stall, where Nsight Compute samples the WARPGROUP.DEPBAR waits, is "
            f"{_f(k7.get('stall_measured_barrier'), '{:.2f}')} warps per issued instruction, the model's "
            f"{_f(k7.get('stall_model_barrier'), '{:.2f}')}. FA2's cycles, the denominator, are predicted "
            f"{_f((ref or {}).get('cycles_error_pct'), '{:+.1f}')} %, so the mean's error is the locked seeds'.")


def _split_sentence() -> str:
    """The split-role run: each side's rate while FFMAs and HGMMAs run in different warpgroups."""
    from flashprof.analysis.gap import wgmma_interplay

    try:
        rates = wgmma_interplay.split_rates()
    except (OSError, KeyError, ValueError):
        return "(no split-role run)."
    parts = "; ".join(f"{8 * k} FFMAs per group period: FFMAs at {100 * v['ffma_rate']:.0f} %, HGMMAs at "
                      f"{100 * v['hgmma_rate']:.0f} %" for k, v in rates.items())
    return (f"with HGMMAs and FFMAs in different warpgroups (wgmma_split.raw.jsonl), each side's rate against "
            f"its rate alone is {parts}: both slow, the HGMMAs the more the more FFMAs issue.")

def _name(rows: list[dict], key: str) -> str:
    """The GPU's name as the rows carry it, without the vendor prefix."""
    name = next((r.get("gpu") for r in rows if r["gpu_key"] == key and r.get("gpu")), key)
    return str(name).removeprefix("NVIDIA ").removeprefix("GeForce ")


def _f(v, fmt="{:.1f}") -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def spearman(a: list[float], b: list[float]) -> float:
    """Rank correlation (average ranks for ties); NaN when either side is constant."""
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    return float(pd.Series(a).rank().corr(pd.Series(b).rank()))


def skill(rows: list[dict]) -> dict:
    """Series rows of one GPU, kernels 2-16: MAE and rank correlation of the model and of
    the trivial baselines."""
    rs = [r for r in rows if r["target"] not in (REF, "1") and not _nan(r["observed_pct"])]
    obs = [r["observed_pct"] for r in rs]
    pred = [r["pred_pct_of_fa2"] for r in rs]
    mean = sum(obs) / len(obs) if obs else math.nan
    return {"n": len(rs), "model_mae": _mae(p - o for p, o in zip(pred, obs)),
            "model_rho": spearman(pred, obs), "all100_mae": _mae(100 - o for o in obs),
            "mean_mae": _mae(mean - o for o in obs)}


def _nan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _mae(errs) -> float:
    e = [abs(x) for x in errs]
    return sum(e) / len(e) if e else math.nan


def render(recs: list[dict], whatif: list[dict] | None = None, wgmma_check: pd.DataFrame | None = None,
           series_here: list[dict] | None = None, official: dict | None = None) -> str:
    rows = [r for r in recs if r["kind"] == "row" and r.get("seq", 4096) == 4096]
    summ = {(r["gpu_key"], r["binary"]): r for r in recs if r["kind"] == "summary"}
    out = ["# Why the same code trails FA2 more on an A100 than on an RTX 3090, and where the H200 kernels lose time",
           "",
           "Generated by `python -m flashprof.analysis.gap.gap_doc` from `reports/gap/issue_model.json` "
           "(the issue model's committed result; `flashprof gap` prints it, `figures/gap.png` draws it) — do not "
           "edit by hand. The model: an in-order issue simulation of each kernel's KV loop over its own SASS, "
           "constants cited or measured, **nothing fitted** ([METHOD.md](METHOD.md#cross-gpu-gap-model-analysisgap)).",
           ""]
    # ---- verdict
    out += ["## Verdict", ""]
    h = summ.get((H200, "flashprof"))
    k7 = next((r for r in rows if r["gpu_key"] == H200 and r["target"] == "7"), None)
    ref = next((r for r in rows if r["gpu_key"] == H200 and r["target"] == "ref" and r.get("seq") == 4096), None)
    if h:
        out.append(f"- **{_name(rows, H200)}** (vs its own Nsight Compute reports): MAE {_f(h['mae_pp'])} pp over {h['n']} kernels "
                   f"(1–7 as shipped: {_f(h.get('mae_shipped_pp'))} pp); cycles MAPE {_f(h['cycles_mape_pct'])} %.")
    if k7 and not _nan(k7["observed_pct"]):
        top = lambda d: ", ".join(k for k, _ in sorted(d.items(), key=lambda kv: -kv[1])[:2])
        meas = {g: k7[f"stall_measured_{g}"] for g in k7["pred_stalls"]}
        out.append(f"- **The shipped wgmma kernel 7 on the {_name(rows, H200)}**: predicted {_f(k7['pred_pct_of_fa2'])} ± "
                   f"{_f(k7['pred_pct_sd'])} % of FA2, measured {_f(k7['observed_pct'])} % ({_f(k7['error_pp'], '{:+.1f}')} pp); "
                   f"top stalls predicted {top(k7['pred_stalls'])}, measured {top(meas)}; tensor active "
                   f"{_f(k7['pred_tensor_active_pct'])} % predicted, {_f(k7['measured_tensor_active_pct'])} % measured."
                   + _wgmma_mix_sentence(k7, ref))
    for key in SERIES_GPUS:
        sk = skill([r for r in rows if r["gpu_key"] == key and r["binary"] == "series"])
        s = summ.get((key, "series"), {})
        if not sk["n"]:
            continue
        better = sk["model_mae"] < min(sk["all100_mae"], sk["mean_mae"])
        out.append(f"- **{_name(rows, key)}**, the series' binaries, kernels 2–16: model MAE {_f(sk['model_mae'])} pp, "
                   f"rank correlation {_f(sk['model_rho'], '{:.2f}')}; baselines: every kernel 100 % → "
                   f"{_f(sk['all100_mae'])} pp, every kernel at the published mean → {_f(sk['mean_mae'])} pp "
                   f"(no rank skill). {'Better' if better else 'Not better'} than the trivial baselines in MAE"
                   + (f"; all 16 kernels MAE {_f(s.get('mae_pp'))} ± {_f(s.get('mae_sd_pp'))} pp (seed spread)." if s else "."))
    if series_here:
        out.append(_series_here_verdict(series_here))
    if official:
        out.append(_official_verdict(official))
    out.append("")
    # ---- per-kernel tables
    out += _series_here_table(series_here, rows) if series_here else []
    out += _official_table(official) if official else []
    for key in SERIES_GPUS:
        sub = sorted((r for r in rows if r["gpu_key"] == key and r["binary"] == "series" and r["target"] != REF),
                     key=lambda r: int(r["target"]))
        if not sub:
            continue
        clock = sub[0]["clock_mhz"]
        out += [f"## {_name(rows, key)} at {clock:.0f} MHz: the series' kernels 1–16 (sm_80 binaries), % of FA2", "",
                "| kernel | " + " | ".join(r["target"] for r in sub) + " |",
                "|---|" + "---|" * len(sub),
                "| published | " + " | ".join(_f(r["observed_pct"]) for r in sub) + " |",
                "| predicted | " + " | ".join(_f(r["pred_pct_of_fa2"]) for r in sub) + " |",
                "| error, pp | " + " | ".join(_f(r["error_pp"], "{:+.1f}") for r in sub) + " |", ""]
    out += _published_pipes_section(recs, rows)
    hr = sorted((r for r in rows if r["gpu_key"] == H200 and r["target"] != REF),
                key=lambda r: (len(r["target"]), r["target"]))
    if hr:
        out += [f"## {_name(rows, H200)} at {hr[0]['clock_mhz']:.0f} MHz (bench clock): flashprof's kernels vs their Nsight Compute reports", "",
                "| kernel | tensor path | measured % of FA2 | predicted | ± sd | error, pp | cycles error | "
                "stalls predicted (top 2) | stalls measured (top 2) |", "|---|---|---|---|---|---|---|---|---|"]
        for r in hr:
            st = lambda pre: ", ".join(f"{g} {r[pre + g]:.2f}" for g in sorted(
                r["pred_stalls"], key=lambda g: -(r[pre + g] if not _nan(r[pre + g]) else -1))[:2])
            path = "wgmma" if "wgmma" in str(r.get("sass")) else "mma.sync"
            out.append(f"| {r['target']} | {path} | {_f(r['observed_pct'])} | {_f(r['pred_pct_of_fa2'])} | "
                       f"{_f(r['pred_pct_sd'])} | {_f(r['error_pp'], '{:+.1f}')} | {_f(r['cycles_error_pct'], '{:+.1f}')} % | "
                       f"{st('stall_model_')} | {st('stall_measured_')} |")
        out += ["", "Stall groups: warps stalled per issued instruction (Nsight Compute's "
                "`smsp__average_warps_issue_stalled_*_per_issue_active`); the model's WARPGROUP.DEPBAR wait is "
                "counted as `barrier`, where Nsight Compute's PC sampling of the wgmma kernel 7 puts it.", ""]
    sw = [r for r in recs if r["kind"] == "sensitivity_wgmma"]
    if sw:
        out += ["### Sensitivity of the wgmma kernel 7's prediction (% of FA2)", "",
                "| constant | value | ×0.8 | ×1.0 | ×1.2 | source |", "|---|---|---|---|---|---|"]
        for r in sw:
            if "pct_share_0" in r:
                out.append(f"| {r['constant']} (HGMMA operand reads on the shared-memory path) | {r['value']:.0f} | "
                           f"off: {_f(r['pct_share_0'])} | {_f(r['pct'])} | – | {r['source']} |")
            else:
                out.append(f"| {r['constant']} | {r['value']:.1f} | {_f(r['pct_x0.8'])} | {_f(r['pct'])} | "
                           f"{_f(r['pct_x1.2'])} | {r['source']} |")
        out.append("")
    if wgmma_check is not None and len(wgmma_check):
        d = wgmma_check
        rho = spearman(list(d["pred_pct_of_fa2"]), list(d["measured_pct_of_fa2"]))
        out += ["### The wgmma tile candidates (not fitted, not used by the model)", "",
                f"The extended kernel-7 sweep's wgmma candidates, measured in one bench run at S = 4096 fp16 "
                f"(`kernels/tuned.json`), against the model: rank correlation {_f(rho, '{:.2f}')}, MAE "
                f"{_f((d['pred_pct_of_fa2'] - d['measured_pct_of_fa2']).abs().mean())} pp "
                "(bench timing, not Nsight Compute cycles).", "",
                "| candidate | CTAs/SM | registers | measured % of FA2 | predicted |", "|---|---|---|---|---|"]
        for r in d.to_dict("records"):
            out.append(f"| {r['name']} | {r['ctas_per_sm']} | {r['registers']} | {_f(r['measured_pct_of_fa2'])} | "
                       f"{_f(r['pred_pct_of_fa2'])} |")
        out.append("")
    if whatif:
        out += ["## What-if: changes to the single-pipeline wgmma kernel 7 (64 x 128, cp.async), by today's model", "",
                "`flashprof gap --what-if` (`analysis/gap/whatif.py`): each change transforms kernel 7's real KV-loop "
                "SASS and launch shape and runs the same simulation. The predictions made with the model of the day, "
                "before the changes were built, and the built kernels' measurements are in "
                "[HOPPER_STEPS.md](HOPPER_STEPS.md); the shipped kernel 7 is the built form of tile128+tma+overlap "
                "on a persistent grid.", "",
                "| change | CTAs/SM | TFLOP/s | % of FA2 | × baseline | sd | tensor active % | top stalls |",
                "|---|---|---|---|---|---|---|---|"]
        for r in whatif:
            top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["pred_stalls"].items(), key=lambda kv: -kv[1])[:2])
            out.append(f"| {r['change']} | {r['ctas_per_sm']} | {r['pred_tflops']:.0f} | {r['pred_pct_of_fa2']:.1f} | "
                       f"{r['speedup_vs_shipped']:.3f} | {_f(r['speedup_sd'], '{:.3f}')} | "
                       f"{r['pred_tensor_active_pct']:.1f} | {top} |")
        out += ["", "`overlap` needs the S accumulators of two KV blocks live (64 more registers per thread than "
                "kernel 7's 252): buildable only with a producer warpgroup and `setmaxnreg`. `tma` leaves the LDGSTS "
                "address arithmetic in the consumers' loop (an overestimate of what remains). DRAM and L2 "
                "bandwidth are not modelled, so the large predictions are upper bounds.", ""]
    out += ["![% of FA2: published / measured vs the issue model, per GPU](../figures/gap.png)", "",
            "## Limits", ""] + [f"- {r['text']}" for r in recs if r["kind"] == "limitation"]
    return "\n".join(out) + "\n"


def _published_pipes_section(recs: list[dict], rows: list[dict]) -> list[str]:
    """The series' own pipe utilisation (its Part 7 profiles) against the model's pipe %, with each
    pipe's work ratio (issue_report.published_pipes)."""
    pp = [r for r in recs if r["kind"] == "published_pipes"]
    if not pp:
        return []
    kname = lambda t: "FA2" if t == REF else f"kernel {t}"
    out = ["## The series' own Nsight Compute profiles: pipe utilisation, published and predicted", "",
           "Kernel 7 and FA2 as the series profiled them (S = 4096, d = 128; `published.json` "
           "`pipe_utilisation`, from lubits.ch/flash/Part-7), against the model's pipe % for the same binaries. "
           "*Pipe work, published / predicted* is the published % times the published time over the predicted % "
           "times the predicted time (times from the TFLOP/s): 1.00 where the model's instruction accounting for "
           "that pipe is the GPU's, whatever its time error. Nothing here is fitted; these numbers are not "
           "used by the model.", "",
           "| GPU | kernel | predicted time / published | pipe | published % | predicted % | pipe work, published / predicted |",
           "|---|---|---|---|---|---|---|"]
    for r in pp:
        for k, (p, v) in enumerate(r["published_pct"].items()):
            head = (f"{_name(rows, r['gpu_key'])} | {kname(r['target'])} | {r['pred_time_over_published']:.3f}"
                    if k == 0 else " | | ")
            out.append(f"| {head} | {p} | {v:.1f} | {r['pred_pct'][p]:.1f} | {r['work_ratio'][p]:.3f} |")
    out.append("")
    off = [(r, p, w) for r in pp for p, w in r["work_ratio"].items() if abs(w - 1) > 0.03]
    agree = [abs(w - 1) for r in pp for p, w in r["work_ratio"].items() if abs(w - 1) <= 0.03]
    if agree:
        out.append(f"- {len(agree)} of {len(agree) + len(off)} pipe readings agree with the model's accounting within "
                   f"{100 * max(agree):.1f} %" + ("; " + ", ".join(
                       f"{_name(rows, r['gpu_key'])} {kname(r['target'])}'s {p} {100 * (w - 1):+.1f} %" for r, p, w in off)
                       + " do not." if off else "."))
    for r in pp:
        if abs(r["pred_time_over_published"] - 1) > 0.05:
            out.append(f"- {_name(rows, r['gpu_key'])} {kname(r['target'])}: the model's time is "
                       f"{100 * (r['pred_time_over_published'] - 1):+.1f} % of the published one; where its pipe work "
                       "agrees, what misses is elapsed time (stalls), not the instructions counted.")
    ga10x = [m for m in (_machine(r["gpu_key"]) for r in pp) if m is not None and m.hmma_counted_interval]
    for m in dict.fromkeys(ga10x):
        f = m.hmma_interval / m.hmma_counted_interval
        ts = [(kname(r["target"]), r["pred_pct"]["tensor"], r["published_pct"]["tensor"])
              for r in pp if r["gpu_key"] == m.gpu_key and "tensor" in r["published_pct"]]
        out.append(f"- Tensor pipe % on the {m.name}, in Nsight Compute's unit: `sm__pipe_tensor_op_hmma_cycles_active` "
                   f"counts an HMMA.16816.F32 at the fp16-accumulate rate, {f:g} times the fp32-accumulate rate it runs at "
                   f"(gpus.json `tensor_pipe_counted_flop_per_clk_sm`), so such a kernel reads at most {100 / f:.0f} %. "
                   "Counted as pipe time the model would print " + ", ".join(
                       f"{t} {f * v:.1f} %" for t, v, _ in ts) + " where the profiles read " + ", ".join(
                       f"{pub:.1f} %" for _, _, pub in ts) + ".")
    return out + [""]


def _machine(key: str):
    from flashprof.analysis.gap.constants import machine
    try:
        return machine(key)
    except KeyError:
        return None


def _series_here_verdict(res: list[dict]) -> str:
    """One verdict line: the series' own binaries measured on a GPU at hand (series_measured)."""
    from flashprof.analysis.gap.series_measured import published_tag

    on, off = res[0], res[1]
    a, a0 = published_tag(on), published_tag(off)
    rows = {r["listing"]: r for r in on["rows"]}
    cyc = lambda r: sum(abs(x["cycles_error_pct"]) for x in r["rows"]) / len(r["rows"])
    k16, ref = rows.get("16_A100"), rows.get(REF)
    top = lambda d: ", ".join(k for k, _ in sorted(d.items(), key=lambda kv: -(kv[1] if not _nan(kv[1]) else -1))[:2])
    return (f"- **The series' kernels 1–16 on the {on['gpu'].upper()}, measured** (their A100 configs built for sm_90 "
            f"from the series' source, `reports/{on['gpu']}/series/`): model MAE {_f(a['mae_pp'])} pp over kernels "
            f"2–16 (bias {_f(a['bias_pp'], '{:+.1f}')}), rank correlation {_f(a['spearman'], '{:.2f}')}; baselines "
            f"every kernel 100 % → {_f(a['baseline_100_mae_pp'])} pp, the measured mean → "
            f"{_f(a['baseline_mean_mae_pp'])} pp. Cycles MAPE {_f(cyc(on))} % with the measured HMMA interplay, "
            f"{_f(cyc(off))} % without it (MAE {_f(a0['mae_pp'])} pp, rank {_f(a0['spearman'], '{:.2f}')})"
            + (f"; top-2 stalls kernel 16 measured {top(k16['meas_stalls'])} / predicted {top(k16['pred_stalls'])}, "
               f"FA2 measured {top(ref['meas_stalls'])} / predicted {top(ref['pred_stalls'])}." if k16 and ref else ".")
            + "".join(f" The {s['tiles']} configurations of 8–16 (profiled in a later call, against that call's FA2): "
                      f"MAE {_f(s['mae_pp'])} pp over kernels 2–16 (bias {_f(s['bias_pp'], '{:+.1f}')}), rank "
                      f"{_f(s['spearman'], '{:.2f}')}; baselines {_f(s['baseline_100_mae_pp'])} / "
                      f"{_f(s['baseline_mean_mae_pp'])} pp." for s in on["skill"] if s is not a)
            + (f" FA2's own SM cycles are predicted {_f(ref['cycles_error_pct'], '{:+.1f}')} %: that error is in "
               "every % of FA2 above." if ref else "")
            + _same_bank_lead(on["rows"]))


def _same_bank_lead(rows: list[dict]) -> str:
    """The unmodelled candidate the reports point at: same-bank register reads (interplay.same_bank_reads)."""

    have = [r for r in rows if r.get("same_bank_extra_per_hmma") is not None]
    ref = next((r for r in have if r["listing"] == REF), None)
    others = [r["same_bank_extra_per_hmma"] for r in have if r["listing"] != REF]
    if ref is None or not others:
        return ""
    rho = spearman([r["same_bank_extra_per_hmma"] for r in have], [r["cycles_error_pct"] for r in have])
    return (f" Not modelled, the lead: FA2's loop has {ref['same_bank_extra_per_hmma']:.2f} same-bank register reads "
            f"per HMMA beyond one per bank (two banks assumed; the series' kernels {min(others):.2f}–{max(others):.2f}); "
            f"over all {len(have)} rows that count ranks against the cycles error at {rho:.2f} (Spearman). No "
            "microbenchmark has measured a bank-conflict cost yet.")


def _series_here_table(res: list[dict], rows: list[dict]) -> list[str]:
    """The series' binaries on the GPU at hand: measured and predicted % of FA2 per kernel,
    beside the A100's published value for the same step."""
    from flashprof.analysis.gap import series_measured as sm

    on, off = res[0], res[1]
    a100 = sm.published_steps()
    off_by = {r["listing"]: r for r in off["rows"]}
    top = lambda d: ", ".join(f"{k} {v:.2f}" for k, v in sorted(d.items(), key=lambda kv: -(kv[1] if not _nan(kv[1]) else -1))[:2])
    out = [f"## {on['gpu'].upper()}: the series' own binaries, measured here and predicted", "",
           f"`python -m flashprof.analysis.gap.series_measured --gpu {on['gpu']} --write` → `reports/gap/series_{on['gpu']}.json`. "
           "Measured % of FA2 = FA2's SM cycles / the kernel's (Nsight Compute, S = 4096, B = 16, H = 16, d = 128, "
           "same run; FA2 = PyTorch's SDPA flash backend). Predicted: the issue model on the SASS of the shared "
           "library that ran, each with the bank-conflict factor of its own report.", "",
           f"| kernel (config) | {_name(rows, A100)} published | measured here | predicted | no interplay | cycles error | "
           "conflicts | tensor pipe % meas / pred | stalls measured (top 2) | predicted (top 2) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in on["rows"]:
        k = r["listing"]
        p = a100.get(r["kernel"]) if r["kernel"] and sm.tile_set(k) in ("both", (sm.published_tag(on) or {}).get("tiles")) else None
        out.append(f"| {k} | {_f(p)} | {_f(r['measured_pct'])} | {_f(r['predicted_pct'])} | "
                   f"{_f(off_by[k]['predicted_pct'])} | {_f(r['cycles_error_pct'], '{:+.1f}')} % | {_f(r['conflict'], '{:.2f}')} | "
                   f"{_f(r['meas_tensor_pct'])} / {_f(r['pred_tensor_pct'])} | {top(r['meas_stalls'])} | {top(r['pred_stalls'])} |")
    return out + ["", "Cycles error: the model's SM cycles over the report's, minus 1. The interplay (an HMMA holds its "
                  "sub-partition's dispatch; other instructions issued beside a busy tensor pipe delay it) was chosen on "
                  "the `ceilings mix` microbenchmark (`reports/h200/mma_mix/interplay.json`), never on these kernels.", ""]


def _official_verdict(res: dict) -> str:
    """One verdict line: where the A100's miss sits (its absolute rows) and what the fork's FA2,
    built for sm_90 and profiled, says of the model's cost of that code."""
    a = res["published"]
    ks = {k: v["tflops_error_pct"] for k, v in a["kernels"].items() if k != REF and not _nan(v["tflops_error_pct"])}
    worst = max(ks, key=lambda k: abs(ks[k]))
    rows = {r["name"]: r for r in res["rows"]}
    fork, ref, k16 = rows["fa2_official"], rows[REF], rows.get("16_A100")
    gpu = res["gpu"].upper()
    name = by_model_key(a["gpu_key"]).name.replace("NVIDIA ", "")
    return (f"- **Where the {name}'s miss sits.** Against the published throughput (published % × FA2's "
            f"{_f(a['fa2_published_tflops'])} TFLOP/s) the model's throughput for the series' kernels 1–16 is off by "
            f"{_f(statistics.fmean(abs(v) for v in ks.values()))} % on average (worst: kernel {worst}, "
            f"{_f(ks[worst], '{:+.1f}')} %) and FA2, the fork's sm_80 build, at {_f(a['kernels'][REF]['tflops_error_pct'], '{:+.1f}')} %: "
            f"every {name} % of FA2 is high by about that one number. The same fork kernel built for sm_90 and profiled on the "
            f"{gpu} (`reports/{res['gpu']}/series/fa2_official/`; its loop {fork['loop_insts']} instructions, the sm_80 "
            f"build's {a['fa2_loop_insts']}) is priced like everything else there: SM cycles "
            f"{_f(fork['cycles_error_pct'], '{:+.1f}')} % (PyTorch's FA2 {_f(ref['cycles_error_pct'], '{:+.1f}')} %"
            + (f", kernel 16 {_f(k16['cycles_error_pct'], '{:+.1f}')} %" if k16 else "")
            + f"), {_f(fork['meas_pct_of_ref'])} % of PyTorch's FA2 measured, {_f(fork['pred_pct_of_ref'])} % predicted. "
            f"So the model's cost of that code is not what misses on the {name}; what is left is specific to "
            f"{by_model_key(a['gpu_key']).chip.upper()} (no sm_90 part can measure it) or to the binary the series ran "
            "(no listing of its FA2 exists to check the rebuild against).")


def _official_table(res: dict) -> list[str]:
    """FA2 as the series measured it, on the sm_90 part at hand, beside PyTorch's FA2 and series kernels."""
    top = lambda d: ", ".join(f"{k} {v:.2f}" for k, v in sorted(d.items(), key=lambda kv: -(kv[1] if not _nan(kv[1]) else -1))[:2])
    clock = statistics.fmean(r["clock_ghz"] for r in res["rows"])
    out = [f"## {res['gpu'].upper()}: FA2 as the series measured it (the fork's kernel, built for sm_90), beside PyTorch's", "",
           f"`python -m flashprof.analysis.gap.fa2_official --gpu {res['gpu']} --write` → `reports/gap/fa2_official_{res['gpu']}.json`. "
           "One run (`devjobs/fa2_official.sh`): each kernel gated, then profiled with Nsight Compute at S = 4096, B = 16, "
           f"H = 16, d = 128 (SM clock {clock:.2f} GHz); % of an FA2 = its SM cycles / the kernel's. `fa2_official` is the "
           "128 x 64 tile the A100 ran, `fa2_official_bn32` the 128 x 32 tile the RTX 3090 ran; the model's predictions were "
           f"committed before the run (`reports/{res['gpu']}/series/fa2_official/predictions.json`).", "",
           "| kernel | loop instructions | cycles error | % of the fork's FA2 meas / pred | % of PyTorch's FA2 meas / pred | "
           "tensor pipe % meas / pred | stalls measured (top 2) | predicted (top 2) |", "|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        out.append(f"| {r['name']} | {r['loop_insts']} | {_f(r['cycles_error_pct'], '{:+.1f}')} % | "
                   f"{_f(r['meas_pct_of_fa2_official'])} / {_f(r['pred_pct_of_fa2_official'])} | "
                   f"{_f(r['meas_pct_of_ref'])} / {_f(r['pred_pct_of_ref'])} | {_f(r['meas_tensor_pct'])} / {_f(r['pred_tensor_pct'])} | "
                   f"{top(r['meas_stalls'])} | {top(r['pred_stalls'])} |")
    return out + [""]


def _nan_for_null(v):
    """JSON null back to NaN (``flashprof gap --format json`` writes NaN as null)."""
    if v is None:
        return math.nan
    if isinstance(v, dict):
        return {k: _nan_for_null(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_nan_for_null(x) for x in v]
    return v


def inputs(folder: Path | None = None) -> tuple[list[dict], list[dict] | None, pd.DataFrame | None, list | None, dict | None]:
    recs, _meta = frozen.read(folder)
    wi = json.loads(WHATIF.read_text()) if WHATIF.is_file() else None
    wi = [_nan_for_null(r) for r in wi] if wi else None
    chk = pd.read_csv(WGMMA_CHECK) if WGMMA_CHECK.is_file() else None
    here = _nan_for_null(json.loads(SERIES_HERE.read_text())) if SERIES_HERE.is_file() else None
    off = next((_nan_for_null(json.loads(p.read_text())) for p in OFFICIAL if p.is_file()), None)
    return recs, wi, chk, here, off


def main(argv=None) -> int:
    PAGE.write_text(render(*inputs()))
    print(PAGE.relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Rank check of the issue model against the measured H200 kernel-7 sweep.

For a stratified sample of the configs in ``reports/h200/autotune.csv`` (S=4096), build
the sm_90 cubin (flashprof.kernels.sass.static, static, no GPU), simulate its KV loop on the H200 machine
and compare predicted with measured TFLOP/s: Spearman rank correlation, written with the
per-config numbers to ``reports/sass/autotune_issue_model.csv``.

    python -m flashprof.analysis.gap.autotune_check [--n 24]
    python -m flashprof.analysis.gap.autotune_check --wgmma

``--wgmma``: the wgmma candidates of the extended kernel-7 sweep (their configs in
``reports/h200/logs/k7/run3_k7_static.csv``, their measured % of FA2 at S=4096 fp16 in
``kernels/tuned.json``'s ``candidates_pct_of_ref``, one bench run), predicted by the
HGMMA-simulating model: % of FA2 against the model's FA2, rank correlation and MAE,
written to ``reports/sass/autotune_wgmma_issue_model.csv``. None of these numbers fed the
model (its wgmma constants are the ceilings' microbenchmarks).
"""
from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from flashprof.analysis.gap.constants import machine
from flashprof.analysis.gap.controls import main_loop, parse
from flashprof.analysis.gap.issue_report import SHAPE, kernel_time
from flashprof.analysis.gap.loops import LoopCode
from flashprof.analysis.gap.data import REPO
from flashprof.kernels.gpus import SHIPPED
from flashprof.analysis.report.errors import read_table

AUTOTUNE = REPO / SHIPPED.reports / "autotune.csv"
OUT = REPO / "reports" / "sass" / "autotune_issue_model.csv"
WGMMA_STATIC = REPO / SHIPPED.reports / "logs" / "k7" / "run3_k7_static.csv"
WGMMA_OUT = REPO / "reports" / "sass" / "autotune_wgmma_issue_model.csv"


def sample(n: int) -> pd.DataFrame:
    a = read_table(AUTOTUNE)
    a = a[a["seq"] == SHAPE["seq"]].sort_values("tflops").reset_index(drop=True)
    idx = sorted({round(k * (len(a) - 1) / max(1, n - 1)) for k in range(n)})
    return a.iloc[idx]


def loop_of(cfg) -> LoopCode:
    from flashprof.kernels.sass.static import dump_sass, log_path, pick_function, ptxas_report, compile_cubin

    cubin = compile_cubin(cfg, cfg.target_arch("sm_90"))
    per_fn = parse(dump_sass(cubin))
    fn = pick_function(per_fn, "fp16")
    insts = per_fn[fn]
    lo, hi = main_loop(insts, "HGMMA" if cfg.wgmma else "HMMA")
    regs = ptxas_report(log_path(cubin))[fn].registers
    return LoopCode("7", "sm_90", tuple(insts[lo:hi + 1]), len(insts), regs,
                    cfg.smem_bytes, cfg.n_warps, cfg.B_r, cfg.B_c, cfg.slug)


def run_wgmma() -> pd.DataFrame:
    """The wgmma candidates: predicted vs measured % of FA2 at S=4096, fp16."""
    from flashprof.analysis.gap.data import REF
    from flashprof.analysis.gap.loops import fa2_loop
    from flashprof.kernels.config import KernelConfig, TUNED_FILE

    m = machine(SHIPPED.model_key)
    measured = json.loads(TUNED_FILE.read_text())[SHIPPED.slug]["candidates_pct_of_ref"]
    ref = kernel_time(fa2_loop("sm_90"), m)
    rows = []
    for r in read_table(WGMMA_STATIC).to_dict("records"):
        cfg = KernelConfig.from_dict(json.loads(r["config"]))
        key = f"fp16 {SHAPE['seq']} {r['name']}"
        if not cfg.wgmma or key not in measured:
            continue
        t = kernel_time(loop_of(cfg), m)
        rows.append({"name": r["name"], "slug": cfg.slug, "measured_pct_of_fa2": measured[key],
                     "pred_pct_of_fa2": 100 * ref["pred_cycles"] / t["pred_cycles"], "pred_tflops": t["tflops"],
                     "ctas_per_sm": t["ctas_per_sm"], "registers": loop_of(cfg).registers,
                     "reference": REF, "source": f"{TUNED_FILE.name} candidates_pct_of_ref[{key!r}]"})
    return pd.DataFrame(rows)


def run(n: int) -> pd.DataFrame:
    from flashprof.kernels.config import KernelConfig

    m = machine(SHIPPED.model_key)
    rows = []
    for r in sample(n).to_dict("records"):
        cfg = KernelConfig.from_dict(json.loads(r["config"]))
        try:
            t = kernel_time(loop_of(cfg), m)
        except Exception as e:  # a config the model cannot run is reported, not hidden
            rows.append({"slug": cfg.slug, "measured_tflops": r["tflops"], "pred_tflops": float("nan"),
                         "note": f"{type(e).__name__}: {e}"})
            continue
        rows.append({"slug": cfg.slug, "measured_tflops": r["tflops"], "pred_tflops": t["tflops"],
                     "ctas_per_sm": t["ctas_per_sm"], "limiting": t["limiting"], "note": ""})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m flashprof.analysis.gap.autotune_check")
    p.add_argument("--n", type=int, default=24)
    p.add_argument("--wgmma", action="store_true", help="the wgmma candidates instead (see the module doc)")
    ns = p.parse_args(argv)
    if ns.wgmma:
        df = run_wgmma()
        rho = df["pred_pct_of_fa2"].rank().corr(df["measured_pct_of_fa2"].rank())
        mae = (df["pred_pct_of_fa2"] - df["measured_pct_of_fa2"]).abs().mean()
        df.to_csv(WGMMA_OUT, index=False)
        print(df.drop(columns=["source"]).to_string(index=False))
        print(f"Spearman rank correlation over {len(df)} wgmma configs: {rho:.3f}; MAE {mae:.1f} pp")
        return 0
    df = run(ns.n)
    ok = df.dropna(subset=["pred_tflops"])
    rho = ok["pred_tflops"].rank().corr(ok["measured_tflops"].rank())
    df.to_csv(OUT, index=False)
    print(df.to_string(index=False))
    print(f"Spearman rank correlation over {len(ok)} configs: {rho:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

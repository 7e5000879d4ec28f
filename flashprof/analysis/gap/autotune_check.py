"""Rank check of the issue model against the measured H200 kernel-7 sweep.

For a stratified sample of the configs in ``reports/h200/autotune.csv`` (S=4096), build
the sm_90 cubin (flashprof.kernels.sass.static, static, no GPU), simulate its KV loop on the H200 machine
and compare predicted with measured TFLOP/s: Spearman rank correlation, written with the
per-config numbers to ``reports/sass/autotune_issue_model.csv``.

    python -m flashprof.analysis.gap.autotune_check [--n 24]
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


def sample(n: int) -> pd.DataFrame:
    a = read_table(AUTOTUNE)
    a = a[a["seq"] == SHAPE["seq"]].sort_values("tflops").reset_index(drop=True)
    idx = sorted({round(k * (len(a) - 1) / max(1, n - 1)) for k in range(n)})
    return a.iloc[idx]


def loop_of(cfg) -> LoopCode:
    from flashprof.kernels.sass.static import dump_sass, log_path, pick_function, ptxas_report, compile_cubin

    cubin = compile_cubin(cfg, "sm_90")
    per_fn = parse(dump_sass(cubin))
    fn = pick_function(per_fn, "fp16")
    insts = per_fn[fn]
    lo, hi = main_loop(insts)
    regs = ptxas_report(log_path(cubin))[fn].registers
    return LoopCode("7", "sm_90", tuple(insts[lo:hi + 1]), len(insts), regs,
                    (cfg.B_r + 2 * cfg.B_c) * cfg.d_head * 2, cfg.n_warps, cfg.B_r, cfg.B_c, cfg.slug)


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
    ns = p.parse_args(argv)
    df = run(ns.n)
    ok = df.dropna(subset=["pred_tflops"])
    rho = ok["pred_tflops"].rank().corr(ok["measured_tflops"].rank())
    df.to_csv(OUT, index=False)
    print(df.to_string(index=False))
    print(f"Spearman rank correlation over {len(ok)} configs: {rho:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

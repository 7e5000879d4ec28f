"""FA2 as the series measured it, on the H200's SM: is the A100's miss in the model's denominator?

The series' published "% of FA2" divides each kernel's time by the time of its author's fork of
FlashAttention-2 (built with ``--use_fast_math``; reports/sass/series/CHECK.md section 4). On
the A100 the issue model puts every series kernel within a few per cent of its published
throughput (published % x 186.4 TFLOP/s) but that FA2 7.9 % slow, so every % of FA2 comes out
too high by about the same amount. On the H200 the series' kernels were profiled beside
PyTorch's FA2 (a different build of the same kernel: no fast math, 23 % more instructions a KV
pass), so nothing measured has yet tested the model on the fork's kernel itself.

devjobs/fa2_official.sh builds the fork's kernel for sm_90 from the same source (128 x 64, the
A100's tile, and 128 x 32, the RTX 3090's), gates it and profiles it beside PyTorch's FA2 and
the series' kernels 6, 9 and 16 in one run (``reports/<gpu>/series/fa2_official/``). This
module imports the SASS that ran, predicts each binary's SM cycles with the issue model, and
sets the errors side by side: if the model over-charges the fork's kernel here as it does on
the A100, the missing cost is in that binary and the H200 can localise it; if not, it is in the
A100.

    python -m flashprof.analysis.gap.fa2_official [--gpu h200] [--import-sass DIR] [--predict OUT.json] [--write]

``--predict`` writes the model's predictions from the local build's SASS before any
measurement exists (no report needed); ``--write`` writes reports/gap/fa2_official_<gpu>.json.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import statistics
import sys
from pathlib import Path

from flashprof.analysis.gap.data import REF, REPO
from flashprof.kernels.gpus import GPUS, SHIPPED, by_slug

# listing -> kBlockN (devjobs/series/series_targets.FA2_LISTINGS): 64 ran on the A100, 32 on the RTX 3090
OFFICIAL = {"fa2_official": 64, "fa2_official_bn32": 32}
# the series' kernels profiled in the same run: listing -> series_targets function
SERIES = {"6": "k6", "9_A100": "k9_A100", "16_A100": "k16_A100", "16_RTX3090": "k16_RTX3090"}
FOLDER = "fa2_official"
SLUGS = tuple(g.slug for g in GPUS if g.arch == "sm_90")
SEEDS = (1, 2, 3, 4)


def folder(gpu: str) -> Path:
    return REPO / "reports" / gpu / "series" / FOLDER


# ------------------------------------------------------------------ SASS
def header(name: str, gpu: str, ptxas: str, arch: str = "sm_90") -> list[str]:
    bn = OFFICIAL[name]
    regs = re.search(r"Used (\d+) registers", ptxas)
    stack = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", ptxas)
    return [f"# FlashAttention-2 forward as the series measured it: the fork's kernel, Flash_fwd_kernel_traits"
            f"<128,128,{bn},4,false,false,half_t>, flags 0,0,0,0,1,1,0,0, {arch}, fp16 d128",
            "# Source: sonnyli/flash-attention@84623a9 + NVIDIA/cutlass@e9627ce (devjobs/series/fa2/launch_fa2.cu, "
            "devjobs/fa2_official.sh); the fork's setup.py flags (--use_fast_math)",
            f"# built on the {gpu} machine for {arch}; cuobjdump -sass of the shared library that was profiled",
            f"# ptxas: {stack.group(0) if stack else 'no spill line'}",
            f"# registers: {regs.group(1) if regs else 'nan'}",
            f"# smem_bytes: {(128 + 2 * bn) * 128 * 2}", "# warps: 4", "# B_r: 128", f"# B_c: {bn}",
            f"# measured_on: {gpu}"]


def import_sass(src_dir: Path, gpu: str, arch: str = "sm_90") -> list[Path]:
    """Device ``cuobjdump -sass`` outputs of the fork's kernel (``<name>_<arch>.sass`` +
    ``.ptxas``) -> reports/sass/series/<gpu>/fa2_official/<name>_<arch>.sass with a provenance header."""
    from flashprof.analysis.gap.series_measured import SERIES_SASS

    out_dir = SERIES_SASS / gpu / FOLDER
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in OFFICIAL:
        sass = Path(src_dir) / f"{name}_{arch}.sass"
        if not sass.is_file():
            continue
        ptx = sass.with_suffix(".ptxas")
        path = out_dir / sass.name
        path.write_text("\n".join(header(name, gpu, ptx.read_text() if ptx.is_file() else "", arch)) + "\n"
                        + sass.read_text())
        written.append(path)
    return written


def official_code(name: str, gpu: str, arch: str = "sm_90"):
    """The model's LoopCode of one imported FA2 build (target 'ref')."""
    from flashprof.analysis.gap.loops import series_loop

    code = series_loop(REF, f"{gpu}/{FOLDER}/{name}_{arch}")
    return dataclasses.replace(code, arch=arch)


# ------------------------------------------------------------------ evidence
def evidence(gpu: str) -> dict[str, dict]:
    """name ('ref', 'fa2_official', 'fa2_official_bn32', series listings) -> its S = 4096 report's
    measurement (series_measured.evidence's record)."""
    from flashprof.analysis.gap.series_measured import evidence as series_evidence

    return series_evidence(folder(gpu), extra=tuple(OFFICIAL))


# ------------------------------------------------------------------ model
def codes(gpu: str) -> dict:
    from flashprof.analysis.gap.loops import fa2_loop
    from flashprof.analysis.gap.series_measured import series_code

    out = {REF: fa2_loop("sm_90")}
    out.update({n: official_code(n, gpu) for n in OFFICIAL})
    out.update({k: series_code(k, gpu) for k in SERIES})
    return out


def predictions(gpu: str, model_key: str, conflicts: dict | None = None, seeds=SEEDS) -> dict:
    """name -> the model's SM cycles (mean over seeds), their seeds, stalls, pipes, issue %."""
    from flashprof.analysis.gap import issue_report as ir
    from flashprof.analysis.gap.constants import machine

    m = machine(model_key)
    out = {}
    for name, code in codes(gpu).items():
        conf = (conflicts or {}).get(name, 1.0)
        r = ir.kernel_time(code, m, conf, seeds)
        out[name] = {"pred_cycles": r["pred_cycles"], "cycles_seeds": r["cycles_seeds"], "conflict": conf,
                     "pred_stalls": r["stalls"], "pred_tensor_pct": r["pipe_pct"]["tensor"],
                     "pred_issue_pct": r["issue_pct"], "ctas_per_sm": r["ctas_per_sm"], "sass": code.source,
                     "loop_insts": len(code.body), "registers": code.registers}
    return out


def ratio_pct(num: dict, den: dict) -> tuple[float, float]:
    """100 x den / num cycles (a kernel's % of a reference) and its sd over seed-paired ratios."""
    per = [100 * b / a for a, b in zip(num["cycles_seeds"], den["cycles_seeds"])]
    return 100 * den["pred_cycles"] / num["pred_cycles"], statistics.pstdev(per) if len(per) > 1 else math.nan


def compare(gpu: str) -> dict:
    """Measured vs predicted for every report of the run: SM cycles, % of the fork's FA2 (the
    series' metric) and of PyTorch's (flashprof's), stalls; and the same ratio on the A100."""
    ev = evidence(gpu)
    missing = [n for n in (REF, *OFFICIAL) if n not in ev]
    if missing:
        raise SystemExit(f"{folder(gpu).relative_to(REPO)}: no S = 4096 report for {', '.join(missing)}")
    key = by_slug(gpu).model_key
    conf = {n: e["conflict"] for n, e in ev.items() if not math.isnan(e["conflict"])}
    pred = predictions(gpu, key, conf)
    rows = []
    for name in [REF, *OFFICIAL, *SERIES]:
        if name not in ev:
            continue
        e, p = ev[name], pred[name]
        row = {"name": name, "report": e["report"], "sass": p["sass"], "loop_insts": p["loop_insts"],
               "registers": e["registers"], "conflict": p["conflict"], "clock_ghz": e["clock_ghz"],
               "meas_cycles": e["cycles"], "pred_cycles": p["pred_cycles"],
               "cycles_error_pct": 100 * (p["pred_cycles"] / e["cycles"] - 1),
               "meas_tensor_pct": e["tensor_pipe_pct"], "pred_tensor_pct": p["pred_tensor_pct"],
               "meas_issue_active_pct": e["issue_active_pct"], "pred_issue_pct": p["pred_issue_pct"],
               "meas_stalls": e["stalls"], "pred_stalls": p["pred_stalls"]}
        for den in (REF, "fa2_official"):
            mp = 100 * ev[den]["cycles"] / e["cycles"]
            pp, sd = ratio_pct(p, pred[den])
            row[f"meas_pct_of_{den}"], row[f"pred_pct_of_{den}"], row[f"sd_pct_of_{den}"] = mp, pp, sd
        rows.append(row)
    return {"gpu": gpu, "gpu_key": key, "seeds": list(SEEDS), "rows": rows, "published": published_context()}


def published_context(gpu_key: str | None = None) -> dict:
    """The committed rows of the GPU the series published first (the A100; reports/gap/issue_model.json):
    each series kernel's predicted TFLOP/s against its published one (published % x FA2's published
    TFLOP/s), and FA2's."""
    from flashprof.analysis.gap.data import load_published
    from flashprof.analysis.gap.issue_report import A100, PUBLISHED_KEY

    rows = json.loads((REPO / "reports" / "gap" / "issue_model.json").read_text())
    gpu_key = gpu_key or A100
    pub = load_published()["gpus"][PUBLISHED_KEY[gpu_key]]
    fa2 = (pub.get("reference_tflops") or {}).get("seq_4096")
    from flashprof.analysis.gap.loops import SERIES_FA2, series_loop

    out = {"gpu_key": gpu_key, "fa2_published_tflops": fa2, "fa2_sass": SERIES_FA2[gpu_key],
           "fa2_loop_insts": len(series_loop(REF, SERIES_FA2[gpu_key]).body), "kernels": {}}
    for r in rows:
        if r.get("kind") != "row" or r.get("gpu_key") != gpu_key or r.get("binary") != "series":
            continue
        t = r["target"]
        pct = 100.0 if t == REF else r.get("published_pct")
        meas = fa2 * pct / 100 if fa2 and pct is not None else None
        out["kernels"][t] = {"pred_tflops": r["pred_tflops"], "published_tflops": meas,
                             "tflops_error_pct": 100 * (r["pred_tflops"] / meas - 1) if meas else None}
    return out


def render(res: dict) -> str:
    lines = [f"FA2 as the series measured it (the fork's kernel, sm_90 build) on the {res['gpu']}, beside PyTorch's FA2",
             f"{'name':>18} {'loop':>5} {'cycles meas':>12} {'pred':>12} {'err':>7} {'% fork m/p':>13} "
             f"{'% torch m/p':>13} {'tensor m/p':>11}  stalls measured | predicted (top 2)"]
    top2 = lambda st: ",".join(k for k, v in sorted(st.items(), key=lambda kv: -(kv[1] if not math.isnan(kv[1]) else -1))[:2])
    for r in res["rows"]:
        lines.append(f"{r['name']:>18} {r['loop_insts']:5d} {r['meas_cycles']:12.0f} {r['pred_cycles']:12.0f} "
                     f"{r['cycles_error_pct']:+6.1f}% {r['meas_pct_of_fa2_official']:6.1f}/{r['pred_pct_of_fa2_official']:5.1f} "
                     f"{r['meas_pct_of_ref']:6.1f}/{r['pred_pct_of_ref']:5.1f} {r['meas_tensor_pct']:5.1f}/{r['pred_tensor_pct']:4.1f}"
                     f"  {top2(r['meas_stalls'])} | {top2(r['pred_stalls'])}")
    a = res["published"]["kernels"]
    errs = [v["tflops_error_pct"] for k, v in a.items() if k != REF and v["tflops_error_pct"] is not None]
    if errs and a.get(REF, {}).get("tflops_error_pct") is not None:
        lines.append(f"{res['published']['gpu_key']} (committed model vs published TFLOP/s): series kernels 1-16 mean |error| "
                     f"{statistics.fmean(abs(e) for e in errs):.1f} %, FA2 (the fork's sm_80 build) {a[REF]['tflops_error_pct']:+.1f} %")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m flashprof.analysis.gap.fa2_official")
    p.add_argument("--gpu", default=SHIPPED.slug, choices=SLUGS, help="the reports folder (GPU slug)")
    p.add_argument("--import-sass", type=Path, default=None, help="a device run's sass folder to import first")
    p.add_argument("--predict", type=Path, default=None,
                   help="write the model's cycles for the imported SASS (no report needed) to this JSON file and stop")
    p.add_argument("--write", action="store_true", help="write reports/gap/fa2_official_<gpu>.json")
    a = p.parse_args(argv)
    if a.import_sass:
        for w in import_sass(a.import_sass, a.gpu):
            print(w.relative_to(REPO))
    if a.predict:
        key = by_slug(a.gpu).model_key
        pred = predictions(a.gpu, key)
        ref = pred[REF]
        out = {"gpu": a.gpu, "gpu_key": key, "seeds": list(SEEDS), "conflict": 1.0,
               "note": "written before the run, from the SASS of a local build (venv nvcc) of the same source",
               "rows": {n: {**{k: v for k, v in r.items() if k != "cycles_seeds"},
                            "pct_of_ref": ratio_pct(r, ref)[0],
                            "pct_of_fa2_official": ratio_pct(r, pred["fa2_official"])[0]} for n, r in pred.items()}}
        a.predict.parent.mkdir(parents=True, exist_ok=True)
        a.predict.write_text(json.dumps(out, indent=1) + "\n")
        for n, r in out["rows"].items():
            print(f"{n:>18} loop {r['loop_insts']:4d}  cycles {r['pred_cycles']:12.0f}  % of torch FA2 {r['pct_of_ref']:6.1f}"
                  f"  % of fork FA2 {r['pct_of_fa2_official']:6.1f}")
        return 0
    res = compare(a.gpu)
    print(render(res))
    if a.write:
        out = REPO / "reports" / "gap" / f"fa2_official_{a.gpu}.json"
        out.write_text(json.dumps(res, indent=1, default=lambda v: None) + "\n")
        print(out.relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
